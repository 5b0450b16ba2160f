/* The metric families (lib/metric.c) and their page (server/prometheus.c). */
#include <criterion/criterion.h>
#include <string.h>

#include "buf.h"
#include "metric.h"
#include "prometheus.h"

static char *render(void)
{
	struct buf b;
	size_t len = 0;

	buf_init(&b, 4 * 1024 * 1024);
	cr_assert(prom_render(&b));
	return buf_take(&b, &len);
}

Test(metric, observations_land_in_the_first_bucket_that_holds_them)
{
	const struct metric_family *f = metric_family_get(METRIC_HOOK_DURATION);
	long long before[METRIC_HIST_STRIDE];

	for (size_t b = 0; b < METRIC_HIST_STRIDE; b++)
		before[b] = metric_read(f, b);
	metric_observe(METRIC_HOOK_DURATION, 0, 100);      /* le 0.0001, inclusive */
	metric_observe(METRIC_HOOK_DURATION, 0, 101);      /* le 0.00025 */
	metric_observe(METRIC_HOOK_DURATION, 0, 90000000); /* +Inf */
	metric_observe(METRIC_HOOK_DURATION, 0, -5);       /* a clock step: 0 */
	cr_assert_eq(metric_read(f, 0) - before[0], 2);
	cr_assert_eq(metric_read(f, 1) - before[1], 1);
	cr_assert_eq(metric_read(f, METRIC_BUCKETS) - before[METRIC_BUCKETS], 1);
	cr_assert_eq(metric_read(f, METRIC_BUCKETS + 1) - before[METRIC_BUCKETS + 1],
		     100 + 101 + 90000000);
}

Test(metric, cells_out_of_range_count_nothing)
{
	const struct metric_family *f = metric_family_get(METRIC_COMMITS);
	long long total = 0;

	metric_add(METRIC_COMMITS, METRIC_NO_CELL, 1);
	metric_add(METRIC_COMMITS, f->ncells, 1);
	metric_observe(METRIC_COMMITS, 0, 5);   /* not a histogram */
	metric_add(METRIC_HOOK_DURATION, 0, 1); /* not a counter */
	for (size_t c = 0; c < f->ncells; c++)
		total += metric_read(f, c);
	cr_assert_eq(total, 0);
	cr_assert_eq(metric_cell(METRIC_COMMITS, 0, 0), METRIC_NO_CELL);
	cr_assert_eq(metric_cell(METRIC_HTTP_REQUESTS, METRIC_ROUTE_SLOTS, 0), METRIC_NO_CELL);
	cr_assert_eq(metric_label_find(METRIC_POOL_SIZE, 0, "commit"), 1);
	cr_assert_eq(metric_label_find(METRIC_POOL_SIZE, 0, "nope"), METRIC_NO_CELL);
	cr_assert_eq(metric_label_find(METRIC_POOL_SIZE, 0, NULL), METRIC_NO_CELL);
}

Test(metric, statuses_and_sqlstate_classes_have_bounded_slots)
{
	char cls[16];

	cr_assert_str_eq(metric_status_label(metric_status_slot(409)), "409");
	cr_assert_str_eq(metric_status_label(metric_status_slot(418)), "other");
	cr_assert_str_eq(metric_status_label(metric_status_slot(0)), "other");
	metric_sqlstate_label(metric_sqlstate_slot("40001"), cls, sizeof(cls));
	cr_assert_str_eq(cls, "40");
	metric_sqlstate_label(metric_sqlstate_slot("57P01"), cls, sizeof(cls));
	cr_assert_str_eq(cls, "57");
	metric_sqlstate_label(metric_sqlstate_slot("HV000"), cls, sizeof(cls));
	cr_assert_str_eq(cls, "HV");
	metric_sqlstate_label(metric_sqlstate_slot(""), cls, sizeof(cls));
	cr_assert_str_eq(cls, "unknown");
	metric_sqlstate_label(metric_sqlstate_slot("4"), cls, sizeof(cls));
	cr_assert_str_eq(cls, "unknown");
	metric_sqlstate_label(metric_sqlstate_slot("a1"), cls, sizeof(cls));
	cr_assert_str_eq(cls, "unknown");
}

Test(metric, page_lists_counted_series_with_their_labels)
{
	metric_add(METRIC_PG_ERRORS, metric_sqlstate_slot("08006"), 3);
	metric_add(METRIC_HTTP_REQUESTS,
		   metric_cell(METRIC_HTTP_REQUESTS, 0, metric_status_slot(404)), 2);
	metric_observe(METRIC_HTTP_DURATION, 0, 1500);
	metric_add(METRIC_QUEUE_DEPTH, 1, 4);
	char *page = render();

	cr_assert_not_null(strstr(page, "# TYPE floe_postgres_errors_total counter\n"));
	cr_assert_not_null(strstr(page, "floe_postgres_errors_total{class=\"08\"} 3\n"));
	cr_assert_null(strstr(page, "floe_postgres_errors_total{class=\"40\"}"));
	cr_assert_not_null(strstr(
		page, "floe_http_requests_total{method=\"\",route=\"unrouted\",code=\"404\"} 2\n"));
	cr_assert_not_null(strstr(
		page,
		"floe_http_request_duration_seconds_bucket{method=\"\",route=\"unrouted\",le=\"0.001\"} 0\n"));
	cr_assert_not_null(strstr(
		page,
		"floe_http_request_duration_seconds_bucket{method=\"\",route=\"unrouted\",le=\"0.0025\"} 1\n"));
	cr_assert_not_null(strstr(
		page,
		"floe_http_request_duration_seconds_sum{method=\"\",route=\"unrouted\"} 0.001500\n"));
	cr_assert_not_null(strstr(page, "floe_queue_depth{queue=\"publish\"} 4\n"));
	/* Lists of fixed values are listed whole, zeros too. */
	cr_assert_not_null(strstr(page, "floe_commits_total{outcome=\"unknown\"} 0\n"));
	cr_assert_eq(page[strlen(page) - 1], '\n');
	free(page);
}

Test(metric, page_fails_cleanly_when_its_buffer_is_too_small)
{
	struct buf b;

	buf_init(&b, 100);
	cr_assert_not(prom_render(&b));
	cr_assert_eq(b.status, BUF_FULL);
	buf_free(&b);
}
