/*
 * emptysnap.c - an empty snapshot and its manifest list. The manifest
 * list is an Avro object container file: the header (magic, metadata
 * with the schema Iceberg defines for manifest lists, a sync marker) and
 * no data block, i.e. zero manifests. Nothing else of Avro is needed.
 */
#include "emptysnap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "buf.h"
#include "ports.h"
#include "uuid.h"

#define HEADER_MAX 8192

/* The fields of Iceberg's manifest_file record (spec, "Manifest Lists"). */
static const struct {
	const char *name;
	int id;
	const char *type;
	int required_from; /* the first format version where it is required; 0: never */
	int since;         /* the first format version that has it */
} manifest_file_fields[] = {
	{ "manifest_path", 500, "string", 1, 1 },     { "manifest_length", 501, "long", 1, 1 },
	{ "partition_spec_id", 502, "int", 1, 1 },    { "content", 517, "int", 2, 2 },
	{ "sequence_number", 515, "long", 2, 2 },     { "min_sequence_number", 516, "long", 2, 2 },
	{ "added_snapshot_id", 503, "long", 1, 1 },   { "added_files_count", 504, "int", 2, 1 },
	{ "existing_files_count", 505, "int", 2, 1 }, { "deleted_files_count", 506, "int", 2, 1 },
	{ "added_rows_count", 512, "long", 2, 1 },    { "existing_rows_count", 513, "long", 2, 1 },
	{ "deleted_rows_count", 514, "long", 2, 1 },  { "partitions", 507, NULL, 0, 1 },
	{ "key_metadata", 519, "bytes", 0, 1 },       { "first_row_id", 520, "long", 0, 3 },
};

static json_t *field(const char *name, int id, json_t *type, bool required)
{
	if (required)
		return json_pack("{s:s, s:o, s:i}", "name", name, "type", type, "field-id", id);
	return json_pack("{s:s, s:[s, o], s:n, s:i}", "name", name, "type", "null", type, "default",
			 "field-id", id);
}

static json_t *manifest_list_schema(int format_version)
{
	json_t *fields = json_array();

	for (size_t i = 0; i < sizeof(manifest_file_fields) / sizeof(*manifest_file_fields); i++) {
		const char *name = manifest_file_fields[i].name;
		int id = manifest_file_fields[i].id;
		if (manifest_file_fields[i].since > format_version)
			continue;
		bool required = manifest_file_fields[i].required_from != 0 &&
				manifest_file_fields[i].required_from <= format_version;
		json_t *type;
		if (manifest_file_fields[i].type != NULL) {
			type = json_string(manifest_file_fields[i].type);
		} else {
			json_t *summary = json_pack(
				"{s:s, s:s, s:[o, o, o, o]}", "type", "record", "name", "r508",
				"fields", field("contains_null", 509, json_string("boolean"), true),
				field("contains_nan", 518, json_string("boolean"), false),
				field("lower_bound", 510, json_string("bytes"), false),
				field("upper_bound", 511, json_string("bytes"), false));
			type = json_pack("{s:s, s:o, s:i}", "type", "array", "items", summary,
					 "element-id", 508);
		}
		json_array_append_new(fields, field(name, id, type, required));
	}
	return json_pack("{s:s, s:s, s:o}", "type", "record", "name", "manifest_file", "fields",
			 fields);
}

/* Avro's zig-zag varint of a long. */
static size_t put_long(unsigned char *out, long long v)
{
	unsigned long long z = ((unsigned long long)v << 1) ^ (v < 0 ? ~0ULL : 0ULL);
	size_t n = 0;

	do {
		unsigned char b = z & 0x7f;
		z >>= 7;
		out[n++] = (unsigned char)(b | (z ? 0x80 : 0));
	} while (z);
	return n;
}

/* Avro bytes: the length, then the bytes. A failure stays in b->status. */
static void put_bytes(struct buf *b, const void *p, size_t n)
{
	unsigned char hdr[10];
	size_t h = put_long(hdr, (long long)n);

	(void)buf_append(b, hdr, h);
	(void)buf_append(b, p, n);
}

static void put_raw(struct buf *b, const void *p, size_t n)
{
	(void)buf_append(b, p, n);
}

static void put_meta(struct buf *b, const char *key, const char *value)
{
	put_bytes(b, key, strlen(key));
	put_bytes(b, value, strlen(value));
}

static long long random_snapshot_id(void)
{
	unsigned long long r = 0;

	if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
		return -1;
	r &= 0x7fffffffffffffffULL;
	return r == 0 ? 1 : (long long)r;
}

json_t *emptysnap_create(const json_t *m, long long now_ms, char **manifest_list,
			 struct floe_error *err)
{
	const char *location = json_string_value(json_object_get(m, "location"));
	int fv = (int)json_integer_value(json_object_get(m, "format-version"));
	long long seq = json_integer_value(json_object_get(m, "last-sequence-number")) + 1;
	long long id = random_snapshot_id();
	char uuid[UUID_STR_LEN];
	char name[96];
	char text[32];
	unsigned char sync[16];
	struct buf header;
	struct buf *b = &header;
	char *schema = NULL;
	json_t *snap = NULL;

	*manifest_list = NULL;
	buf_init(b, HEADER_MAX);
	if (location == NULL || id < 0 || !uuid_v4(uuid) ||
	    getrandom(sync, sizeof(sync), 0) != (ssize_t)sizeof(sync))
		return floe_err(err, FE_INTERNAL, "cannot make an empty snapshot"), NULL;
	if (fv < 1)
		fv = 1;
	(void)snprintf(name, sizeof(name), "snap-%lld-0-%s.avro", id, uuid);
	json_t *sc = manifest_list_schema(fv);
	schema = sc ? json_dumps(sc, JSON_COMPACT) : NULL;
	json_decref(sc);
	if (schema == NULL) {
		floe_err(err, FE_INTERNAL, "out of memory");
		goto done;
	}
	put_raw(b, "Obj\x01", 4);
	unsigned char count[10];
	size_t count_len = put_long(count, fv >= 2 ? 6 : 5);
	put_raw(b, count, count_len);
	put_meta(b, "avro.schema", schema);
	put_meta(b, "avro.codec", "null");
	(void)snprintf(text, sizeof(text), "%lld", id);
	put_meta(b, "snapshot-id", text);
	put_meta(b, "parent-snapshot-id", "null");
	(void)snprintf(text, sizeof(text), "%d", fv);
	put_meta(b, "format-version", text);
	if (fv >= 2) {
		(void)snprintf(text, sizeof(text), "%lld", seq);
		put_meta(b, "sequence-number", text);
	}
	put_raw(b, count, put_long(count, 0));
	put_raw(b, sync, sizeof(sync));
	if (b->status != BUF_OK) {
		floe_err(err, FE_INTERNAL,
			 b->status == BUF_FULL ? "manifest list header too large"
					       : "out of memory");
		goto done;
	}
	/* The metadata directory exists: the table's first metadata file
	 * is in it. */
	if (!fileio_write_new(location, name, b->data, b->len, manifest_list, err)) {
		if (err->kind == FE_INTERNAL)
			floe_err(err, FE_INTERNAL,
				 "cannot write the manifest list of an empty snapshot");
		goto done;
	}
	snap = json_pack("{s:I, s:I, s:s, s:{s:s, s:s, s:s, s:s, s:s, s:s, s:s}, s:O}",
			 "snapshot-id", (json_int_t)id, "timestamp-ms", (json_int_t)now_ms,
			 "manifest-list", *manifest_list, "summary", "operation", "append",
			 "total-records", "0", "total-files-size", "0", "total-data-files", "0",
			 "total-delete-files", "0", "total-position-deletes", "0",
			 "total-equality-deletes", "0", "schema-id",
			 json_object_get(m, "current-schema-id"));
	if (snap != NULL && fv >= 2)
		json_object_set_new(snap, "sequence-number", json_integer(seq));
	if (snap == NULL) {
		fileio_remove(*manifest_list);
		free(*manifest_list);
		*manifest_list = NULL;
		floe_err(err, FE_INTERNAL, "out of memory");
	}
done:
	buf_free(b);
	free(schema);
	return snap;
}
