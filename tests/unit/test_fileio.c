/* fileio on a scratch directory: purges follow no symbolic link, the
 * location check refuses links below the warehouse, reads refuse what is
 * not a regular file or is too large, metadata writes land durably, a new
 * file is written once, and each location goes to its scheme's backend. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fileio.h"

/* Short, so that every path below fits in PATH_MAX. */
static char root[64];
static char wh[96];

static void scratch(void)
{
	snprintf(root, sizeof(root), "/tmp/floe-unit-fileio-XXXXXX");
	cr_assert_not_null(mkdtemp(root));
	snprintf(wh, sizeof(wh), "%s/wh", root);
	cr_assert_eq(mkdir(wh, 0755), 0);
}

static void cleanup(void)
{
	char cmd[sizeof(root) + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	cr_assert_eq(system(cmd), 0);
}

static void path_of(char *out, size_t len, const char *rel)
{
	cr_assert_lt((size_t)snprintf(out, len, "%s/%s", root, rel), len);
}

static void make_file(const char *rel, const char *text)
{
	char p[PATH_MAX];
	path_of(p, sizeof(p), rel);
	FILE *f = fopen(p, "w");
	cr_assert_not_null(f, "%s", p);
	fputs(text, f);
	fclose(f);
}

static void make_dir(const char *rel)
{
	char p[PATH_MAX];
	path_of(p, sizeof(p), rel);
	cr_assert_eq(mkdir(p, 0755), 0, "%s", p);
}

static bool exists(const char *rel)
{
	char p[PATH_MAX];
	struct stat st;
	path_of(p, sizeof(p), rel);
	return lstat(p, &st) == 0;
}

static void url_of(char *out, size_t len, const char *rel)
{
	cr_assert_lt((size_t)snprintf(out, len, "file://%s/%s", root, rel), len);
}

TestSuite(fileio, .init = scratch, .fini = cleanup);

Test(fileio, purge_removes_the_tree_and_never_follows_links)
{
	char url[PATH_MAX + 8], target[PATH_MAX], link[PATH_MAX];
	long removed = 0;
	struct floe_error err = { 0 };

	make_dir("outside");
	make_file("outside/precious", "keep");
	make_dir("wh/t");
	make_dir("wh/t/metadata");
	make_file("wh/t/metadata/00000-a.metadata.json", "{}");
	make_dir("wh/t/data");
	make_file("wh/t/data/part", "x");
	path_of(target, sizeof(target), "outside");
	path_of(link, sizeof(link), "wh/t/data/escape");
	cr_assert_eq(symlink(target, link), 0);

	url_of(url, sizeof(url), "wh/t");
	cr_assert_eq(fileio_purge(url, wh, &removed, &err), FILEIO_PURGE_DONE, "%s", err.message);
	cr_assert_eq(removed, 3);
	cr_assert_not(exists("wh/t"));
	cr_assert(exists("wh"));
	cr_assert(exists("outside/precious"));

	/* Nothing there: done. */
	cr_assert_eq(fileio_purge(url, wh, &removed, &err), FILEIO_PURGE_DONE);
}

Test(fileio, purge_refuses_a_linked_table_directory_and_the_outside)
{
	char url[PATH_MAX + 8], target[PATH_MAX], link[PATH_MAX];
	long removed = 0;
	struct floe_error err = { 0 };

	make_dir("outside");
	make_file("outside/precious", "keep");
	make_dir("wh/ns");
	path_of(target, sizeof(target), "outside");
	path_of(link, sizeof(link), "wh/ns/t");
	cr_assert_eq(symlink(target, link), 0);
	url_of(url, sizeof(url), "wh/ns/t");
	cr_assert_eq(fileio_purge(url, wh, &removed, &err), FILEIO_PURGE_REFUSED);
	cr_assert(strstr(err.message, "symbolic link") != NULL, "%s", err.message);
	/* a linked directory on the way */
	path_of(link, sizeof(link), "wh/via");
	cr_assert_eq(symlink(target, link), 0);
	url_of(url, sizeof(url), "wh/via/x");
	cr_assert_eq(fileio_purge(url, wh, &removed, &err), FILEIO_PURGE_REFUSED);
	url_of(url, sizeof(url), "outside");
	cr_assert_eq(fileio_purge(url, wh, &removed, &err), FILEIO_PURGE_REFUSED);
	url_of(url, sizeof(url), "wh");
	cr_assert_eq(fileio_purge(url, wh, &removed, &err), FILEIO_PURGE_REFUSED);
	cr_assert(exists("outside/precious"));
}

Test(fileio, check_beneath_refuses_links_and_allows_new_parts)
{
	char url[PATH_MAX + 8], target[PATH_MAX], link[PATH_MAX];
	struct floe_error err = { 0 };

	make_dir("outside");
	make_dir("wh/ns");
	path_of(target, sizeof(target), "outside");
	path_of(link, sizeof(link), "wh/ns/link");
	cr_assert_eq(symlink(target, link), 0);
	url_of(url, sizeof(url), "wh/ns/new/deeper");
	cr_assert(fileio_check_beneath(url, wh, &err), "%s", err.message);
	url_of(url, sizeof(url), "wh/ns/link/t");
	cr_assert_not(fileio_check_beneath(url, wh, &err));
	cr_assert_eq(err.kind, FE_BAD_REQUEST);
	url_of(url, sizeof(url), "wh/ns/./link");
	cr_assert_not(fileio_check_beneath(url, wh, &err));
	url_of(url, sizeof(url), "outside/t");
	cr_assert_not(fileio_check_beneath(url, wh, &err));
}

Test(fileio, read_takes_regular_files_only_and_bounded)
{
	char url[PATH_MAX + 8], p[PATH_MAX];
	char *text = NULL;
	size_t len = 0;
	struct floe_error err = { 0 };

	make_file("wh/m.json", "{\"a\":1}");
	url_of(url, sizeof(url), "wh/m.json");
	cr_assert(fileio_read(url, 1024, &text, &len, &err), "%s", err.message);
	cr_assert_str_eq(text, "{\"a\":1}");
	cr_assert_eq(len, 7);
	free(text);
	cr_assert_not(fileio_read(url, 6, &text, &len, &err));
	cr_assert(strstr(err.message, "larger than") != NULL, "%s", err.message);

	path_of(p, sizeof(p), "wh/pipe");
	cr_assert_eq(mkfifo(p, 0644), 0);
	url_of(url, sizeof(url), "wh/pipe");
	cr_assert_not(fileio_read(url, 1024, &text, &len, &err));
	cr_assert(strstr(err.message, "regular file") != NULL, "%s", err.message);

	url_of(url, sizeof(url), "wh");
	cr_assert_not(fileio_read(url, 1024, &text, &len, &err));
	char target[PATH_MAX];
	path_of(target, sizeof(target), "wh/m.json");
	path_of(p, sizeof(p), "wh/link.json");
	cr_assert_eq(symlink(target, p), 0);
	url_of(url, sizeof(url), "wh/link.json");
	cr_assert_not(fileio_read(url, 1024, &text, &len, &err));
}

Test(fileio, metadata_write_creates_directories_and_stale_tmp_goes)
{
	char url[PATH_MAX + 8], *loc = NULL;
	struct floe_error err = { 0 };

	url_of(url, sizeof(url), "wh/a//b/./t");
	cr_assert(fileio_write_metadata(url, 3, "{}", 2, &loc, &err), "%s", err.message);
	char want[PATH_MAX + 8];
	url_of(want, sizeof(want), "wh/a/b/t/metadata/00003-");
	cr_assert(strncmp(loc, want, strlen(want)) == 0, "%s", loc);
	free(loc);

	make_file("wh/a/b/t/metadata/00004-x.metadata.json.tmp", "partial");
	make_file("wh/a/b/t/metadata/00005-y.metadata.json.tmp", "partial");
	char p[PATH_MAX];
	path_of(p, sizeof(p), "wh/a/b/t/metadata/00004-x.metadata.json.tmp");
	struct timespec old[2] = { { time(NULL) - 3600, 0 }, { time(NULL) - 3600, 0 } };
	cr_assert_eq(utimensat(AT_FDCWD, p, old, 0), 0);
	url_of(url, sizeof(url), "wh/a/b/t");
	cr_assert_eq(fileio_remove_stale_tmp(url, wh, 600), 1);
	cr_assert_not(exists("wh/a/b/t/metadata/00004-x.metadata.json.tmp"));
	cr_assert(exists("wh/a/b/t/metadata/00005-y.metadata.json.tmp"));
}

/* --- fileio_write_new, and the backend each location goes to: local
 * files for file: (any case) and a bare path; a scheme no backend serves
 * is refused as it always was --- */

/* A table directory at root with its metadata directory. */
static void table_at_root(void)
{
	char meta[128];

	path_of(meta, sizeof(meta), "metadata");
	cr_assert_eq(mkdir(meta, 0755), 0);
}

static void write_new_at(const char *location)
{
	char *url = NULL;
	char *text = NULL;
	size_t len = 0;
	char want[160];
	struct floe_error err;

	cr_assert(fileio_write_new(location, "snap-1.avro", "Obj\1", 4, &url, &err), "%s",
		  err.message);
	snprintf(want, sizeof(want), "file://%s/metadata/snap-1.avro", root);
	cr_assert_str_eq(url, want);
	cr_assert(fileio_read(url, 100, &text, &len, &err), "%s", err.message);
	cr_assert_eq(len, 4);
	cr_assert_eq(memcmp(text, "Obj\1", 4), 0);
	free(text);
	fileio_remove(url);
	free(url);
}

Test(fileio, write_new_file_url_goes_to_local_files)
{
	char loc[96];

	table_at_root();
	snprintf(loc, sizeof(loc), "file://%s", root);
	write_new_at(loc);
}

Test(fileio, write_new_scheme_is_case_insensitive_and_a_bare_path_is_local)
{
	char loc[96];

	table_at_root();
	snprintf(loc, sizeof(loc), "FILE://%s", root);
	write_new_at(loc);
	write_new_at(root);
}

Test(fileio, write_new_a_scheme_no_backend_serves_is_refused_as_before)
{
	char *url = NULL;
	struct floe_error err;

	cr_assert_not(fileio_write_new("gs://bucket/t", "snap-1.avro", "x", 1, &url, &err));
	cr_assert_eq(err.kind, FE_BAD_REQUEST);
	cr_assert_null(url);
	char *path = fileio_local_path("gs://bucket/t", &err);
	cr_assert_null(path);
	cr_assert_eq(err.kind, FE_BAD_REQUEST);
	/* s3:// has a backend, which refuses while it is not set up, and is
	 * no local path. */
	cr_assert_not(fileio_write_new("s3://bucket/t", "snap-1.avro", "x", 1, &url, &err));
	cr_assert_eq(err.kind, FE_BAD_REQUEST);
	cr_assert(strstr(err.message, "not set up") != NULL, "%s", err.message);
	cr_assert_null(url);
	path = fileio_local_path("s3://bucket/t", &err);
	cr_assert_null(path);
	cr_assert_eq(err.kind, FE_BAD_REQUEST);
}

Test(fileio, write_new_never_writes_over_another_file)
{
	char loc[96];
	char *url = NULL;
	char *again = NULL;
	struct floe_error err;

	table_at_root();
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

Test(fileio, write_new_without_a_metadata_directory_fails_and_leaves_nothing)
{
	char loc[128];
	char *url = NULL;
	struct stat st;
	char path[192];
	struct floe_error err;

	snprintf(loc, sizeof(loc), "file://%s/other", root);
	cr_assert_not(fileio_write_new(loc, "snap-3.avro", "x", 1, &url, &err));
	cr_assert_eq(err.kind, FE_INTERNAL);
	cr_assert_str_eq(err.message, "Cannot write snap-3.avro");
	snprintf(path, sizeof(path), "%s/other/metadata/snap-3.avro", root);
	cr_assert_neq(stat(path, &st), 0);
}
