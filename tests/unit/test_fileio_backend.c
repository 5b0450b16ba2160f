/* fileio's backend seam: each location goes to the backend of its scheme
 * (local files today, for file:, FILE: and a bare path), a scheme no
 * backend serves gets the refusal a client has always had, and a new
 * file is written once, never over another. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fileio.h"

static char root[64];
static char meta[96];
static struct floe_error err;

static void scratch(void)
{
	snprintf(root, sizeof(root), "/tmp/floe-unit-backend-XXXXXX");
	cr_assert_not_null(mkdtemp(root));
	snprintf(meta, sizeof(meta), "%s/metadata", root);
	cr_assert_eq(mkdir(meta, 0755), 0);
}

static void cleanup(void)
{
	char cmd[sizeof(root) + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(backend, .init = scratch, .fini = cleanup);

static void write_new_at(const char *location)
{
	char *url = NULL;
	char *text = NULL;
	size_t len = 0;
	char want[160];

	cr_assert(fileio_write_new(location, "snap-1.avro", "Obj\1", 4, &url, &err), "%s",
		  err.message);
	snprintf(want, sizeof(want), "file://%s/snap-1.avro", meta);
	cr_assert_str_eq(url, want);
	cr_assert(fileio_read(url, 100, &text, &len, &err), "%s", err.message);
	cr_assert_eq(len, 4);
	cr_assert_eq(memcmp(text, "Obj\1", 4), 0);
	free(text);
	fileio_remove(url);
	free(url);
}

Test(backend, file_url_goes_to_local_files)
{
	char loc[96];

	snprintf(loc, sizeof(loc), "file://%s", root);
	write_new_at(loc);
}

Test(backend, scheme_is_case_insensitive_and_a_bare_path_is_local)
{
	char loc[96];

	snprintf(loc, sizeof(loc), "FILE://%s", root);
	write_new_at(loc);
	write_new_at(root);
}

Test(backend, a_scheme_no_backend_serves_is_refused_as_before)
{
	char *url = NULL;

	cr_assert_not(fileio_write_new("s3://bucket/t", "snap-1.avro", "x", 1, &url, &err));
	cr_assert_eq(err.kind, FE_BAD_REQUEST);
	cr_assert_null(url);
	char *path = fileio_local_path("s3://bucket/t", &err);
	cr_assert_null(path);
	cr_assert_eq(err.kind, FE_BAD_REQUEST);
}

Test(backend, a_new_file_is_never_written_over_another)
{
	char loc[96];
	char *url = NULL;
	char *again = NULL;

	snprintf(loc, sizeof(loc), "file://%s", root);
	cr_assert(fileio_write_new(loc, "snap-2.avro", "first", 5, &url, &err), "%s", err.message);
	cr_assert_not(fileio_write_new(loc, "snap-2.avro", "second", 6, &again, &err));
	cr_assert_eq(err.kind, FE_INTERNAL);
	cr_assert_null(again);
	/* The first file is intact. */
	char *text = NULL;
	size_t len = 0;
	cr_assert(fileio_read(url, 100, &text, &len, &err), "%s", err.message);
	cr_assert_str_eq(text, "first");
	free(text);
	free(url);
}

Test(backend, a_missing_metadata_directory_fails_and_leaves_nothing)
{
	char loc[128];
	char *url = NULL;
	struct stat st;
	char path[192];

	snprintf(loc, sizeof(loc), "file://%s/other", root);
	cr_assert_not(fileio_write_new(loc, "snap-3.avro", "x", 1, &url, &err));
	cr_assert_eq(err.kind, FE_INTERNAL);
	cr_assert_str_eq(err.message, "cannot write snap-3.avro");
	snprintf(path, sizeof(path), "%s/other/metadata/snap-3.avro", root);
	cr_assert_neq(stat(path, &st), 0);
}
