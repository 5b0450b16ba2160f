/*
 * sealing.h - the key that seals audit hook secrets at rest, read (and on
 * the first start made) where the configuration says, and the
 * hook_sealer port over it that catalog/ uses (catalog/hooksecrets.h).
 */
#ifndef FLOE_SEALING_H
#define FLOE_SEALING_H

#include "config.h"
#include "error.h"
#include "hooksecrets.h"

struct sealing;

/* Reads the key of cfg->hook_secrets_key; the default path (and the data
 * directory's auth/, mode 0700) is made when missing, a configured one
 * must exist. Returns a new sealing (sealing_close), or NULL with
 * FE_INTERNAL and a message naming the file and the reason. */
struct sealing *sealing_open(const struct floe_config *cfg, struct floe_error *err) FLOE_WUR;

/* The port over the key, borrowed for the sealing's lifetime. */
const struct hook_sealer *sealing_sealer(const struct sealing *sg);

/* Zeroes the key and frees it; NULL is fine. */
void sealing_close(struct sealing *sg);

#endif
