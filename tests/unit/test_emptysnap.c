/* The empty snapshot of a branch of a table without snapshots: its
 * manifest list is a whole Avro container header with no data block. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "emptysnap.h"
#include "fileio.h"

static struct floe_error err;

static json_t *table_at(const char *dir, int format_version)
{
	char loc[512];

	snprintf(loc, sizeof(loc), "file://%s", dir);
	return json_pack("{s:s, s:i, s:i, s:i}", "location", loc, "format-version", format_version,
			 "last-sequence-number", 4, "current-schema-id", 0);
}

static void check(int format_version)
{
	char dir[] = "/tmp/floe-emptysnap-XXXXXX";
	char meta[600];
	char *list = NULL;
	char *text = NULL;
	size_t len = 0;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(meta, sizeof(meta), "%s/metadata", dir);
	cr_assert_eq(mkdir(meta, 0755), 0);
	json_t *m = table_at(dir, format_version);
	json_t *snap = emptysnap_create(m, 1700000000000LL, &list, &err);
	cr_assert_not_null(snap, "%s", err.message);
	cr_assert(json_integer_value(json_object_get(snap, "snapshot-id")) > 0);
	cr_assert_str_eq(json_string_value(json_object_get(snap, "manifest-list")), list);
	cr_assert_null(json_object_get(snap, "parent-snapshot-id"));
	if (format_version >= 2)
		cr_assert_eq(json_integer_value(json_object_get(snap, "sequence-number")), 5);
	else
		cr_assert_null(json_object_get(snap, "sequence-number"));
	cr_assert(fileio_read(list, 1 << 20, &text, &len, &err), "%s", err.message);
	cr_assert(len > 4 + 16 && memcmp(text, "Obj\x01", 4) == 0);
	/* the schema names Iceberg's manifest_file record with its field ids */
	cr_assert_not_null(memmem(text, len, "\"manifest_file\"", 15));
	cr_assert_not_null(memmem(text, len, "\"field-id\":500", 14));
	cr_assert_eq(memmem(text, len, "\"sequence_number\"", 17) != NULL, format_version >= 2);
	fileio_remove(list);
	rmdir(meta);
	rmdir(dir);
	free(text);
	free(list);
	json_decref(snap);
	json_decref(m);
}

Test(emptysnap, manifest_list_v1)
{
	check(1);
}

Test(emptysnap, manifest_list_v2)
{
	check(2);
}

Test(emptysnap, no_location_is_an_error)
{
	char *list = NULL;
	json_t *m = json_pack("{s:i}", "format-version", 2);

	cr_assert_null(emptysnap_create(m, 0, &list, &err));
	cr_assert_null(list);
	json_decref(m);
}
