/*
 * auditcli.h - `floe audit ...`: verifying the audit log's hash chain and
 * exporting it, run instead of the daemon.
 */
#ifndef FLOE_AUDITCLI_H
#define FLOE_AUDITCLI_H

/* Runs `floe audit SUBCOMMAND ...`; argv[0] is "audit". Returns the exit
 * status: 0 the chain verified (or exported), 1 a problem found or the
 * log unreadable, 2 a usage error. */
int auditcli_main(int argc, char **argv);

#endif
