/*
 * ports.h - the one door through which catalog/ reaches the layers that
 * do I/O: the store (PostgreSQL), table files (fileio) and audit webhook
 * delivery (hooks). catalog .c files include this header and none of
 * theirs, and catalog_lib links none of those libraries: the daemon links
 * the real ones, the unit tests link fakes of the same declarations
 * (tests/unit/fakes), which is how every failure path is reached.
 */
#ifndef FLOE_PORTS_H
#define FLOE_PORTS_H

#include "fileio.h"
#include "hooks.h"
#include "s3sign.h"
#include "store.h"

#endif
