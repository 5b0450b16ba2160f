/*
 * authcli.h - `floe auth ...`: the operator's commands about identity,
 * run instead of the daemon.
 */
#ifndef FLOE_AUTHCLI_H
#define FLOE_AUTHCLI_H

/* Runs `floe auth SUBCOMMAND ...`; argv[0] is "auth". Returns the exit
 * status: 0 done, 1 a token refused or the issuer unusable, 2 a usage
 * error. */
int authcli_main(int argc, char **argv);

#endif
