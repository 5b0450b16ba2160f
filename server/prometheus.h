/*
 * prometheus.h - the page GET /metrics answers: every metric family of
 * lib/metric.h in the Prometheus text exposition format, version 0.0.4.
 */
#ifndef FLOE_PROMETHEUS_H
#define FLOE_PROMETHEUS_H

#include <stdbool.h>

#include "buf.h"

#define PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* Appends the page to out. False when out filled up or memory ran out
 * (out->status says which); out keeps what it holds either way. */
bool prom_render(struct buf *out);

#endif
