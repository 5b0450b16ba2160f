/*
 * cliargs.c - reading one option of a subcommand (cliargs.h).
 */
#include "cliargs.h"

#include <string.h>

const char *cli_option(int argc, char **argv, int *i, const char *name, bool *missing)
{
	size_t n = strlen(name);
	const char *arg = *i < argc ? argv[*i] : NULL;

	if (arg == NULL || strncmp(arg, name, n) != 0)
		return NULL;
	if (arg[n] == '=')
		return arg + n + 1;
	if (arg[n] != '\0')
		return NULL;
	if (*i + 1 >= argc) {
		*missing = true;
		return NULL;
	}
	(*i)++;
	return argv[*i];
}
