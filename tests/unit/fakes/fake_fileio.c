/*
 * fake_fileio.c - fileio.h over an in-memory map of URL to content, for
 * the unit tests of failure paths. Location checks pass; writes and reads
 * can be scripted to fail (fakes.h).
 */
#include "fakes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "txguard.h"

static json_t *files;
static int removed;
static int written;

void fake_fileio_reset(void)
{
	json_decref(files);
	files = json_object();
	removed = 0;
	written = 0;
}

void fake_fileio_fsync_fails(int nth)
{
	/* What fileio/local.c answers when write, fsync or rename fails. */
	fake_fail("fileio_write_metadata", nth,
		  fake_error(FE_INTERNAL, FO_NOT_ATTEMPTED, "", "Cannot write the metadata file"),
		  false);
}

bool fake_fileio_exists(const char *url)
{
	return json_object_get(files, url) != NULL;
}

int fake_fileio_files(void)
{
	return (int)json_object_size(files);
}

int fake_fileio_removed(void)
{
	return removed;
}

char *fileio_local_path(const char *url, struct floe_error *err)
{
	const char *path = strncmp(url, "file://", 7) == 0 ? url + 7 : url;
	char *copy = strdup(path);

	if (copy == NULL)
		floe_err(err, FE_INTERNAL, "out of memory");
	return copy;
}

bool fileio_check_beneath(const char *url, const char *warehouse_path, struct floe_error *err)
{
	TXGUARD_ASSERT_NONE(); /* as the real one asserts */
	(void)url;
	(void)warehouse_path;
	return !fake_fault_due("fileio_check_beneath", err, NULL);
}

bool fileio_location_fits(const char *path, struct floe_error *err)
{
	(void)path;
	return !fake_fault_due("fileio_location_fits", err, NULL);
}

bool fileio_write_metadata(const char *table_location, long long version, const char *text,
			   size_t len, char **location, struct floe_error *err)
{
	TXGUARD_ASSERT_NONE(); /* as the real one asserts */
	char url[1024];

	*location = NULL;
	if (fake_fault_due("fileio_write_metadata", err, NULL))
		return false;
	snprintf(url, sizeof(url), "%s/metadata/%05lld-fake%d.metadata.json", table_location,
		 version, ++written);
	json_object_set_new(files, url, json_stringn(text, len));
	*location = strdup(url);
	return *location != NULL || floe_err(err, FE_INTERNAL, "out of memory");
}

bool fileio_write_metadata_in(const char *dir, long long version, const char *text, size_t len,
			      char **location, struct floe_error *err)
{
	TXGUARD_ASSERT_NONE(); /* as the real one asserts */
	char url[1024];

	*location = NULL;
	if (fake_fault_due("fileio_write_metadata", err, NULL))
		return false;
	snprintf(url, sizeof(url), "%s/%05lld-fake%d.metadata.json", dir, version, ++written);
	json_object_set_new(files, url, json_stringn(text, len));
	*location = strdup(url);
	return *location != NULL || floe_err(err, FE_INTERNAL, "out of memory");
}

bool fileio_read(const char *url, size_t max, char **text, size_t *len, struct floe_error *err)
{
	TXGUARD_ASSERT_NONE(); /* as the real one asserts */
	json_t *f = json_object_get(files, url);

	*text = NULL;
	*len = 0;
	if (fake_fault_due("fileio_read", err, NULL))
		return false;
	if (f == NULL)
		return floe_err(err, FE_BAD_REQUEST, "cannot read %.200s", url);
	if (json_string_length(f) > max)
		return floe_err(err, FE_BAD_REQUEST, "%.200s is larger than %zu bytes", url, max);
	*text = strdup(json_string_value(f));
	*len = json_string_length(f);
	return *text != NULL || floe_err(err, FE_INTERNAL, "out of memory");
}

void fileio_remove(const char *url)
{
	TXGUARD_ASSERT_NONE(); /* as the real one asserts */
	(void)fake_fault_due("fileio_remove", NULL, NULL);
	if (json_object_get(files, url) != NULL) {
		json_object_del(files, url);
		removed++;
	}
}

bool fileio_make_metadata_dir(const char *table_location, struct floe_error *err)
{
	TXGUARD_ASSERT_NONE(); /* as the real one asserts */
	(void)table_location;
	return !fake_fault_due("fileio_make_metadata_dir", err, NULL);
}

bool fileio_write_new(const char *table_location, const char *name, const void *data, size_t len,
		      char **location, struct floe_error *err)
{
	TXGUARD_ASSERT_NONE(); /* as the real one asserts */
	char url[1024];

	*location = NULL;
	if (fake_fault_due("fileio_write_new", err, NULL))
		return false;
	snprintf(url, sizeof(url), "%s/metadata/%s", table_location, name);
	if (json_object_get(files, url) != NULL)
		return floe_err(err, FE_INTERNAL, "cannot write %s", name);
	/* Kept as text: the tests look at names, not at bytes. */
	json_object_set_new(files, url, json_stringn(data, strnlen(data, len)));
	*location = strdup(url);
	return *location != NULL || floe_err(err, FE_INTERNAL, "out of memory");
}

/* Vending is off in the fakes: no test of the catalog asks for it. */
enum fileio_vend_mode fileio_vend_mode(void)
{
	return FILEIO_VEND_OFF;
}

bool fileio_vend_client(const char *table_location, struct fileio_vend_client *out)
{
	(void)table_location;
	(void)out;
	return false;
}

bool fileio_vend(const char *table_location, bool write, const char *session_name,
		 struct fileio_vended *out, struct floe_error *err)
{
	TXGUARD_ASSERT_NONE(); /* as the real one asserts */
	(void)table_location;
	(void)write;
	(void)session_name;
	memset(out, 0, sizeof(*out));
	return floe_err(err, FE_BAD_REQUEST, "credential vending is off");
}
