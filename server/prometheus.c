/*
 * prometheus.c - GET /metrics: lib/metric.c's families as a page of the
 * Prometheus text exposition format 0.0.4. The page is built in a capped
 * buffer; nothing is counted here. Families whose labels are routes,
 * statuses or SQLSTATE classes list only the label sets seen so far (most
 * of those combinations never happen); the others list every label set,
 * zeros included, so a rate over them exists from the first scrape.
 */
#include "prometheus.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "handlers.h"
#include "metric.h"
#include "router.h"

/* The page is a few hundred lines; this is far above it. */
#define PROM_PAGE_MAX ((size_t)4 * 1024 * 1024)

static void put(struct buf *out, const char *s)
{
	(void)buf_append(out, s, strlen(s));
}

static void putf(struct buf *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void putf(struct buf *out, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n > 0)
		(void)buf_append(out, line,
				 (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

/* A label value, escaped as the format asks (\\, \", \n). */
static void put_label_value(struct buf *out, const char *v)
{
	put(out, "\"");
	for (const char *p = v; *p != '\0'; p++) {
		if (*p == '\\')
			put(out, "\\\\");
		else if (*p == '"')
			put(out, "\\\"");
		else if (*p == '\n')
			put(out, "\\n");
		else
			(void)buf_append(out, p, 1);
	}
	put(out, "\"");
}

static void put_label(struct buf *out, const char *name, const char *value, bool *first)
{
	put(out, *first ? "" : ",");
	*first = false;
	put(out, name);
	put(out, "=");
	put_label_value(out, value);
}

/* The labels of index i of dimension d. */
static void put_dim(struct buf *out, const struct metric_dim *d, size_t i, bool *first)
{
	char sqlclass[16];

	switch (d->kind) {
	case METRIC_DIM_LIST:
		put_label(out, d->label, d->values[i], first);
		break;
	case METRIC_DIM_STATUS:
		put_label(out, d->label, metric_status_label(i), first);
		break;
	case METRIC_DIM_SQLSTATE:
		metric_sqlstate_label(i, sqlclass, sizeof(sqlclass));
		put_label(out, d->label, sqlclass, first);
		break;
	case METRIC_DIM_ROUTE: {
		const struct route *r = i > 0 ? router_at(i - 1) : NULL;
		put_label(out, "method", r != NULL ? r->method : "", first);
		put_label(out, d->label, r != NULL ? r->pattern : "unrouted", first);
		break;
	}
	}
}

/* "{labels}" of cell c, with an extra label (le) when given. */
static void put_labels(struct buf *out, const struct metric_family *f, size_t c, const char *extra,
		       const char *extra_value)
{
	bool first = true;

	if (f->ndims == 0 && extra == NULL)
		return;
	put(out, "{");
	if (f->ndims == 2) {
		put_dim(out, &f->dims[0], c / f->dims[1].size, &first);
		put_dim(out, &f->dims[1], c % f->dims[1].size, &first);
	} else if (f->ndims == 1) {
		put_dim(out, &f->dims[0], c, &first);
	}
	if (extra != NULL)
		put_label(out, extra, extra_value, &first);
	put(out, "}");
}

/* A route slot past the router's table never has a label: skip it. */
static bool cell_named(const struct metric_family *f, size_t c)
{
	for (size_t d = 0; d < f->ndims; d++) {
		size_t below = d + 1 < f->ndims ? f->dims[d + 1].size : 1;
		size_t i = (c / below) % f->dims[d].size;
		if (f->dims[d].kind == METRIC_DIM_ROUTE && i > router_count())
			return false;
	}
	return true;
}

static bool sparse(const struct metric_family *f)
{
	for (size_t d = 0; d < f->ndims; d++) {
		if (f->dims[d].kind != METRIC_DIM_LIST)
			return true;
	}
	return false;
}

static void put_histogram(struct buf *out, const struct metric_family *f, size_t c, bool all)
{
	long long counts[METRIC_HIST_STRIDE];
	long long total = 0;
	char le[32];

	for (size_t b = 0; b < METRIC_HIST_STRIDE; b++)
		counts[b] = metric_read(f, c * METRIC_HIST_STRIDE + b);
	for (size_t b = 0; b <= METRIC_BUCKETS; b++)
		total += counts[b];
	if (total == 0 && !all)
		return;
	long long cumulative = 0;
	for (size_t b = 0; b <= METRIC_BUCKETS; b++) {
		cumulative += counts[b];
		if (b < METRIC_BUCKETS)
			(void)snprintf(le, sizeof(le), "%g", (double)metric_bucket_us[b] / 1e6);
		else
			(void)snprintf(le, sizeof(le), "+Inf");
		putf(out, "%s_bucket", f->name);
		put_labels(out, f, c, "le", le);
		putf(out, " %lld\n", cumulative);
	}
	long long sum_us = counts[METRIC_BUCKETS + 1];
	putf(out, "%s_sum", f->name);
	put_labels(out, f, c, NULL, NULL);
	putf(out, " %lld.%06lld\n", sum_us / 1000000, sum_us % 1000000);
	putf(out, "%s_count", f->name);
	put_labels(out, f, c, NULL, NULL);
	putf(out, " %lld\n", cumulative);
}

static void put_family(struct buf *out, const struct metric_family *f)
{
	static const char *const types[] = { "counter", "gauge", "histogram" };
	bool all = !sparse(f);

	/* Version 0.0.4 names a counter's metadata as its samples are named,
	 * _total included. */
	putf(out, "# HELP %s %s\n", f->name, f->help);
	putf(out, "# TYPE %s %s\n", f->name, types[f->type]);
	for (size_t c = 0; c < f->ncells; c++) {
		if (!cell_named(f, c))
			continue;
		if (f->type == METRIC_HISTOGRAM) {
			put_histogram(out, f, c, all);
			continue;
		}
		long long v = metric_read(f, c);
		if (v == 0 && !all)
			continue;
		put(out, f->name);
		put_labels(out, f, c, NULL, NULL);
		putf(out, " %lld\n", v);
	}
}

bool prom_render(struct buf *out)
{
	for (int id = 0; id < METRIC_COUNT; id++)
		put_family(out, metric_family_get((enum metric_id)id));
	return out->status == BUF_OK;
}

void handle_metrics(struct call *c)
{
	struct http_request *req = c->req;
	struct buf page;
	size_t len = 0;

	buf_init(&page, PROM_PAGE_MAX);
	if (!prom_render(&page)) {
		struct floe_error err;
		buf_free(&page);
		floe_err(&err, FE_INTERNAL, "the metrics page could not be built");
		http_reply_error(req, &err);
		return;
	}
	char *text = buf_take(&page, &len);
	if (text == NULL) {
		struct floe_error err;
		floe_err(&err, FE_INTERNAL, "out of memory");
		http_reply_error(req, &err);
		return;
	}
	http_reply_typed(req, 200, text, len, PROM_CONTENT_TYPE);
}
