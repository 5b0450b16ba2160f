/*
 * sealing.h - the key that seals audit hook secrets at rest, read (and on
 * the first start made) where the configuration says, and the
 * hook_sealer port over it that catalog/ uses (catalog/hooksecrets.h).
 * The same key file keys the hashes of floe's client secrets, through a
 * key derived from it for that use alone (auth/secret.h).
 */
#ifndef FLOE_SEALING_H
#define FLOE_SEALING_H

#include "config.h"
#include "error.h"
#include "hooksecrets.h"
#include "secret.h"

struct sealing;

/* Reads the key of cfg->hook_secrets_key; the default path (and the data
 * directory's auth/, mode 0700) is made when missing, a configured one
 * must exist. Returns a new sealing (sealing_close), or NULL with
 * FE_INTERNAL and a message naming the file and the reason. */
struct sealing *sealing_open(const struct floe_config *cfg, struct floe_error *err) FLOE_WUR;

/* The port over the key, borrowed for the sealing's lifetime. */
const struct hook_sealer *sealing_sealer(const struct sealing *sg);

/* Fills k with the key of the client secrets' keyed hashes, derived from
 * the sealing key; false on a crypto failure. */
bool sealing_client_secret_key(const struct sealing *sg, struct secret_key *k) FLOE_WUR;

/* Zeroes the key and frees it; NULL is fine. */
void sealing_close(struct sealing *sg);

#endif
