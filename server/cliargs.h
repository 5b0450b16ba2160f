/*
 * cliargs.h - the one shape of option `floe auth` and `floe audit` read:
 * --name=VALUE or --name VALUE.
 */
#ifndef FLOE_CLIARGS_H
#define FLOE_CLIARGS_H

#include <stdbool.h>

/* The value of --name=VALUE or --name VALUE at argv[*i], or NULL when
 * argv[*i] is not that option (or is past argc). Advances *i past a
 * separate value; *missing is set when the value is absent. */
const char *cli_option(int argc, char **argv, int *i, const char *name, bool *missing);

#endif
