/* manifest_list.c - manifest-list writer.
 *
 * Bytes produced: an Avro object container file (storage/avro/avro.c) whose
 * header carries avro.schema = the manifest_file schema below plus
 * snapshot-id, parent-snapshot-id ("null" without a parent),
 * sequence-number, format-version and, for v3, first-row-id; each datum is
 * one manifest_file record (apache/iceberg format/spec.md, "Manifest
 * Lists").  Fields follow the schema order of the Java ManifestFile, with
 * the field ids the spec assigns (500-520); optional fields are unions
 * ["null", T] and write branch 0 when absent.
 *
 * Invariant: next_row_id only grows, by the added and existing rows of each
 * v3 data manifest that had no first_row_id. */
#include "manifest_list.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define LIST_FIELDS_COMMON                                                                         \
	"{\"name\":\"manifest_path\",\"type\":\"string\",\"doc\":\"Location URI with FS scheme\"," \
	"\"field-id\":500},"                                                                       \
	"{\"name\":\"manifest_length\",\"type\":\"long\",\"doc\":\"Total file size in bytes\","    \
	"\"field-id\":501},"                                                                       \
	"{\"name\":\"partition_spec_id\",\"type\":\"int\",\"doc\":\"Spec ID used to write\","      \
	"\"field-id\":502},"                                                                       \
	"{\"name\":\"content\",\"type\":\"int\",\"doc\":\"Contents of the manifest: 0=data, "      \
	"1=deletes\",\"field-id\":517},"                                                           \
	"{\"name\":\"sequence_number\",\"type\":\"long\",\"doc\":\"Sequence number when the "      \
	"manifest was added\",\"field-id\":515},"                                                  \
	"{\"name\":\"min_sequence_number\",\"type\":\"long\",\"doc\":\"Lowest sequence number in " \
	"the manifest\",\"field-id\":516},"                                                        \
	"{\"name\":\"added_snapshot_id\",\"type\":\"long\",\"doc\":\"Snapshot ID that added the "  \
	"manifest\",\"field-id\":503},"                                                            \
	"{\"name\":\"added_files_count\",\"type\":\"int\",\"doc\":\"Added entry count\","          \
	"\"field-id\":504},"                                                                       \
	"{\"name\":\"existing_files_count\",\"type\":\"int\",\"doc\":\"Existing entry count\","    \
	"\"field-id\":505},"                                                                       \
	"{\"name\":\"deleted_files_count\",\"type\":\"int\",\"doc\":\"Deleted entry count\","      \
	"\"field-id\":506},"                                                                       \
	"{\"name\":\"added_rows_count\",\"type\":\"long\",\"doc\":\"Added rows count\","           \
	"\"field-id\":512},"                                                                       \
	"{\"name\":\"existing_rows_count\",\"type\":\"long\",\"doc\":\"Existing rows count\","     \
	"\"field-id\":513},"                                                                       \
	"{\"name\":\"deleted_rows_count\",\"type\":\"long\",\"doc\":\"Deleted rows count\","       \
	"\"field-id\":514},"                                                                       \
	"{\"name\":\"partitions\",\"type\":[\"null\",{\"type\":\"array\",\"items\":{\"type\":"     \
	"\"record\",\"name\":\"r508\",\"fields\":["                                                \
	"{\"name\":\"contains_null\",\"type\":\"boolean\",\"doc\":\"True if any file has a null "  \
	"partition value\",\"field-id\":509},"                                                     \
	"{\"name\":\"contains_nan\",\"type\":[\"null\",\"boolean\"],\"doc\":\"True if any file "   \
	"has a nan partition value\",\"default\":null,\"field-id\":518},"                          \
	"{\"name\":\"lower_bound\",\"type\":[\"null\",\"bytes\"],\"doc\":\"Partition lower "       \
	"bound for all files\",\"default\":null,\"field-id\":510},"                                \
	"{\"name\":\"upper_bound\",\"type\":[\"null\",\"bytes\"],\"doc\":\"Partition upper "       \
	"bound for all files\",\"default\":null,\"field-id\":511}]},\"element-id\":508}],"         \
	"\"doc\":\"Summary for each partition\",\"default\":null,\"field-id\":507},"               \
	"{\"name\":\"key_metadata\",\"type\":[\"null\",\"bytes\"],\"doc\":\"Encryption key "       \
	"metadata blob\",\"default\":null,\"field-id\":519}"

static const char list_schema_v2[] =
        "{\"type\":\"record\",\"name\":\"manifest_file\",\"fields\":[" LIST_FIELDS_COMMON "]}";

static const char list_schema_v3[] =
        "{\"type\":\"record\",\"name\":\"manifest_file\",\"fields\":[" LIST_FIELDS_COMMON
        ",{\"name\":\"first_row_id\",\"type\":[\"null\",\"long\"],\"doc\":\"Starting row ID to "
        "assign to new rows in ADDED data files\",\"default\":null,\"field-id\":520}]}";

struct st_manifest_list_writer {
	const struct st_alloc *alloc;
	struct st_avro_writer *avro;
	int format_version;
	int64_t snapshot_id;
	int64_t sequence_number;
	int64_t next_row_id;
};

const char *st_manifest_list_schema(int format_version)
{
	if (format_version == 2)
		return list_schema_v2;
	if (format_version == 3)
		return list_schema_v3;
	return NULL;
}

void st_manifest_file_release(struct st_manifest_file *mf, const struct st_alloc *alloc)
{
	for (size_t i = 0; i < mf->n_partitions; i++) {
		st_free(alloc, mf->partitions[i].lower);
		st_free(alloc, mf->partitions[i].upper);
	}
	st_free(alloc, mf->partitions);
	mf->partitions = NULL;
	mf->n_partitions = 0;
}

void st_manifest_list_writer_free(struct st_manifest_list_writer *w)
{
	if (w == NULL)
		return;
	st_avro_writer_free(w->avro);
	st_free(w->alloc, w);
}

int st_manifest_list_writer_open(const struct st_manifest_list_opts *o,
                                 struct st_manifest_list_writer **out, struct fl_err *err)
{
	char snap[24], parent[24], seq[24], version[4], rowid[24];
	struct st_avro_meta meta[5];
	struct st_avro_writer_opts ao = {0};
	struct st_manifest_list_writer *w;
	size_t n = 0;

	if (o->format_version != 2 && o->format_version != 3)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "manifest list: format version %d is not supported (2 or 3)",
		                  o->format_version);
	snprintf(snap, sizeof(snap), "%" PRId64, o->snapshot_id);
	if (o->has_parent)
		snprintf(parent, sizeof(parent), "%" PRId64, o->parent_snapshot_id);
	else
		snprintf(parent, sizeof(parent), "null");
	snprintf(seq, sizeof(seq), "%" PRId64, o->sequence_number);
	snprintf(version, sizeof(version), "%d", o->format_version);
	snprintf(rowid, sizeof(rowid), "%" PRId64, o->first_row_id);
	meta[n++] = (struct st_avro_meta){"snapshot-id", snap, strlen(snap)};
	meta[n++] = (struct st_avro_meta){"parent-snapshot-id", parent, strlen(parent)};
	meta[n++] = (struct st_avro_meta){"sequence-number", seq, strlen(seq)};
	meta[n++] = (struct st_avro_meta){"format-version", version, strlen(version)};
	if (o->format_version >= 3)
		meta[n++] = (struct st_avro_meta){"first-row-id", rowid, strlen(rowid)};

	w = st_calloc(o->alloc, 1, sizeof(*w));
	if (w == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "manifest list: out of memory");
	w->alloc = o->alloc;
	w->format_version = o->format_version;
	w->snapshot_id = o->snapshot_id;
	w->sequence_number = o->sequence_number;
	w->next_row_id = o->first_row_id;
	ao.schema_json = st_manifest_list_schema(o->format_version);
	ao.codec = o->codec;
	ao.meta = meta;
	ao.n_meta = n;
	ao.sync = o->sync;
	ao.sink = o->sink;
	ao.alloc = o->alloc;
	if (st_avro_writer_open(&ao, &w->avro, err) != 0) {
		st_manifest_list_writer_free(w);
		return fl_err_prefix(err, "manifest list");
	}
	*out = w;
	return 0;
}

static void put_opt_bytes(struct st_avro_writer *a, bool has, const uint8_t *p, size_t n)
{
	if (!has) {
		st_avro_write_union(a, 0);
		return;
	}
	st_avro_write_union(a, 1);
	st_avro_write_bytes(a, p, n);
}

int st_manifest_list_writer_add(struct st_manifest_list_writer *w,
                                const struct st_manifest_file *mf, struct fl_err *err)
{
	struct st_avro_writer *a = w->avro;
	int64_t seq = mf->sequence_number, min_seq = mf->min_sequence_number;
	bool assign_row_id;

	if (mf->manifest_path == NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "manifest list: manifest_path is required");
	if (seq == ST_SEQ_UNASSIGNED)
		seq = w->sequence_number;
	if (min_seq == ST_SEQ_UNASSIGNED)
		min_seq = w->sequence_number;
	st_avro_write_string(a, mf->manifest_path);
	st_avro_write_long(a, mf->manifest_length);
	st_avro_write_int(a, mf->partition_spec_id);
	st_avro_write_int(a, (int32_t)mf->content);
	st_avro_write_long(a, seq);
	st_avro_write_long(a, min_seq);
	st_avro_write_long(a, mf->added_snapshot_id);
	st_avro_write_int(a, mf->added_files_count);
	st_avro_write_int(a, mf->existing_files_count);
	st_avro_write_int(a, mf->deleted_files_count);
	st_avro_write_long(a, mf->added_rows_count);
	st_avro_write_long(a, mf->existing_rows_count);
	st_avro_write_long(a, mf->deleted_rows_count);
	/* partitions: always a list (possibly empty), as Java writes it. */
	st_avro_write_union(a, 1);
	st_avro_write_array_start(a, mf->n_partitions);
	for (size_t i = 0; i < mf->n_partitions; i++) {
		const struct st_field_summary *s = &mf->partitions[i];

		st_avro_write_bool(a, s->contains_null);
		if (s->has_contains_nan) {
			st_avro_write_union(a, 1);
			st_avro_write_bool(a, s->contains_nan);
		} else {
			st_avro_write_union(a, 0);
		}
		put_opt_bytes(a, s->has_lower, s->lower, s->lower_len);
		put_opt_bytes(a, s->has_upper, s->upper, s->upper_len);
	}
	st_avro_write_array_end(a);
	put_opt_bytes(a, mf->key_metadata != NULL, mf->key_metadata, mf->key_metadata_len);
	assign_row_id = false;
	if (w->format_version >= 3) {
		/* Spec "Row Lineage": only data manifests get a first_row_id. */
		if (mf->has_first_row_id) {
			st_avro_write_union(a, 1);
			st_avro_write_long(a, mf->first_row_id);
		} else if (mf->content == ST_MANIFEST_DATA) {
			st_avro_write_union(a, 1);
			st_avro_write_long(a, w->next_row_id);
			assign_row_id = true;
		} else {
			st_avro_write_union(a, 0);
		}
	}
	if (st_avro_writer_end_record(a, err) != 0)
		return fl_err_prefix(err, "manifest list");
	if (assign_row_id)
		w->next_row_id += mf->added_rows_count + mf->existing_rows_count;
	return 0;
}

int st_manifest_list_writer_close(struct st_manifest_list_writer *w, uint64_t *bytes,
                                  int64_t *next_row_id, struct fl_err *err)
{
	int rc = 0;
	uint64_t len = 0;

	if (st_avro_writer_close(w->avro, &len, err) != 0)
		rc = fl_err_prefix(err, "manifest list");
	w->avro = NULL;
	if (rc == 0) {
		if (bytes != NULL)
			*bytes = len;
		if (next_row_id != NULL)
			*next_row_id = w->next_row_id;
	}
	st_manifest_list_writer_free(w);
	return rc;
}
