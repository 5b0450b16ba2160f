/*
 * confighelp.c - the option table (config.c) as --help and as the manual
 * page, floe(1).
 */
#include "config.h"
#include "configtable.h"

#include <stdio.h>

void config_print_help(FILE *out, const char *argv0)
{
	(void)fprintf(out,
		      "Usage: %s [OPTION...]\n"
		      "floe: an Apache Iceberg REST catalog backed by PostgreSQL.\n\n"
		      "Every option can be given as a flag (--name=value or --name value)\n"
		      "or as an environment variable; a flag wins over the variable.\n\n",
		      argv0);
	for (int i = 0; i < config_option_count; i++) {
		const struct option_def *o = &config_options[i];
		(void)fprintf(out, "  --%-16s %-20s %s\n", o->flag, o->env, o->help);
		if (o->defval != NULL)
			(void)fprintf(out, "  %-38s default: \"%s\"\n", "", o->defval);
	}
	(void)fprintf(out,
		      "\n  --help               print this text and exit\n"
		      "  --version            print the version and exit\n"
		      "  --print-routes       print every route floe serves, with the privileges\n"
		      "                       it needs and their object, and exit (=json: all of\n"
		      "                       the route table, as JSON)\n"
		      "  --print-man          print the manual page (roff) and exit\n");
	(void)fputs("\n  auth verify-token    check an external issuer's tokens (auth --help)\n"
		    "  audit verify         verify the audit log's hash chain (audit --help)\n"
		    "  audit export         export the audit log, verifiable offline\n",
		    out);
}

/* Writes text for roff: a leading '.' or '\'' would be a request, and
 * '\' and '-' have meanings of their own. */
static void man_text(FILE *out, const char *text)
{
	if (text[0] == '.' || text[0] == '\'')
		(void)fputs("\\&", out);
	for (const char *p = text; *p; p++) {
		if (*p == '\\')
			(void)fputs("\\e", out);
		else if (*p == '-')
			(void)fputs("\\-", out);
		else
			(void)fputc(*p, out);
	}
}

void config_print_man(FILE *out, const char *version)
{
	(void)fputs(".TH FLOE 1 \"\" \"floe ", out);
	man_text(out, version);
	(void)fputs(
		"\" \"User Commands\"\n"
		".SH NAME\n"
		"floe \\- an Apache Iceberg REST catalog backed by PostgreSQL\n"
		".SH SYNOPSIS\n"
		".B floe\n"
		"[\\fIOPTION\\fR...]\n"
		".SH DESCRIPTION\n"
		"floe serves the Iceberg REST catalog protocol over HTTP, keeps its state in\n"
		"PostgreSQL (its own embedded one when no database is given) and writes table\n"
		"metadata files under its warehouse. Beyond the protocol it serves refs, audit\n"
		"hooks, write\\-audit\\-publish runs and an append\\-only audit log.\n"
		".PP\n"
		"Every option is a flag (\\fB\\-\\-name=value\\fR or \\fB\\-\\-name value\\fR) and an\n"
		"environment variable; a flag wins over the variable.\n"
		".SH OPTIONS\n",
		out);
	for (int i = 0; i < config_option_count; i++) {
		const struct option_def *o = &config_options[i];
		(void)fputs(".TP\n.BR \\-\\-", out);
		man_text(out, o->flag);
		(void)fputs(" \" \" \\fI", out);
		man_text(out, o->env);
		(void)fputs("\\fR\n", out);
		man_text(out, o->help);
		(void)fputc('\n', out);
		if (o->defval != NULL) {
			(void)fputs(".br\nDefault: \"", out);
			man_text(out, o->defval);
			(void)fputs("\".\n", out);
		}
	}
	(void)fputs(
		".TP\n.B \\-\\-help\nPrint the options and exit.\n"
		".TP\n.B \\-\\-version\nPrint the version and exit.\n"
		".TP\n.B \\-\\-print\\-routes\\fR[\\fB=json\\fR]\nPrint every route floe serves, with the privileges it needs and the object "
		"they apply to, and exit; with =json, the whole route table as JSON.\n"
		".TP\n.B \\-\\-print\\-man\nPrint this manual page and exit.\n"
		".SH SIGNALS\n"
		"SIGTERM or SIGINT stops floe cleanly: in\\-flight requests get\n"
		"\\fB\\-\\-shutdown\\-grace\\-seconds\\fR to finish, queued commits and publishes are\n"
		"answered 503, and the embedded PostgreSQL is stopped.\n"
		".SH EXIT STATUS\n"
		"0 after a clean stop; 1 when floe cannot serve (its database or embedded\n"
		"PostgreSQL failed); 2 for a bad option.\n"
		".SH SEE ALSO\n"
		"The README and api\\-spec/openapi.yaml of the floe sources.\n",
		out);
}
