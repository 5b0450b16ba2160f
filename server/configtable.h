/*
 * configtable.h - the option table config.c parses and confighelp.c
 * prints: every option a flag and an environment variable.
 */
#ifndef FLOE_CONFIGTABLE_H
#define FLOE_CONFIGTABLE_H

struct option_def {
	const char *flag; /* without the leading "--" */
	const char *env;
	const char *defval; /* NULL: computed, see help */
	const char *help;
};

/* The options, config_option_count of them, in --help's order. */
extern const struct option_def config_options[];
extern const int config_option_count;

#endif
