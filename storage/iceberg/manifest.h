/* manifest.h - the Iceberg manifest writer (spec "Manifests": one Avro file
 * of manifest_entry records, each holding a data_file struct).
 *
 * Writes format v2 (and v3, which adds first_row_id, referenced_data_file,
 * content_offset and content_size_in_bytes).  While writing it keeps the
 * counts and partition summaries the manifest list needs, and hands them
 * back on close. */
#ifndef ST_MANIFEST_H
#define ST_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "avro/avro.h"
#include "base/alloc.h"
#include "base/sink.h"
#include "err.h"
#include "iceberg/data_file.h"
#include "iceberg/manifest_list.h"
#include "iceberg/types.h"

/* One field of the partition spec; `type` is the transform's result type
 * (identity: the source type; bucket: int; day: date; ...). */
struct st_partition_field {
	int32_t field_id; /* partition field id, usually 1000 and up */
	int32_t source_id;
	const char *name;
	const char *transform; /* "identity", "bucket[16]", "day", ... */
	struct st_type type;
};

enum st_entry_status {
	ST_ENTRY_EXISTING = 0,
	ST_ENTRY_ADDED = 1,
	ST_ENTRY_DELETED = 2,
};

struct st_manifest_entry {
	enum st_entry_status status;
	/* ADDED entries normally leave all three unset: snapshot_id then
	 * defaults to the writer's snapshot and the sequence numbers are null,
	 * to be inherited.  EXISTING and DELETED entries carry their own (a
	 * DELETED entry's snapshot_id is the snapshot that deleted it). */
	bool has_snapshot_id;
	int64_t snapshot_id;
	bool has_sequence_number;
	int64_t sequence_number;
	bool has_file_sequence_number;
	int64_t file_sequence_number;
	const struct st_data_file *file;
};

struct st_manifest_opts {
	int format_version; /* 2 or 3 */
	enum st_manifest_content content;
	const char *schema_json; /* the table schema as JSON (header key "schema") */
	int32_t schema_id; /* also written as "schema-id"; -1 leaves it out */
	int32_t spec_id;
	const struct st_partition_field *spec; /* copied at open */
	size_t n_spec;
	int64_t snapshot_id;
	enum st_avro_codec codec;
	const uint8_t *sync; /* NULL: random */
	struct st_sink sink;
	const struct st_alloc *alloc;
};

struct st_manifest_writer;

/* Writes the header (schema, schema-id, partition-spec, partition-spec-id,
 * format-version, content) and returns a writer.  FL_ERR_BAD_REQUEST for
 * an unsupported version or spec. */
int st_manifest_writer_open(const struct st_manifest_opts *opts, struct st_manifest_writer **out,
                            struct fl_err *err) FL_MUST_CHECK;

/* Appends one entry.  FL_ERR_BAD_REQUEST when the file's content does not
 * fit the manifest's, a required field is missing, or a partition value
 * count or type is wrong; the writer stays usable after such an error. */
int st_manifest_writer_add(struct st_manifest_writer *w, const struct st_manifest_entry *e,
                           struct fl_err *err) FL_MUST_CHECK;

/* Finishes the file and frees the writer whatever the outcome.  On success
 * *mf describes the manifest for the list (manifest_path left NULL, for the
 * caller to set); release it with st_manifest_file_release. */
int st_manifest_writer_close(struct st_manifest_writer *w, struct st_manifest_file *mf,
                             struct fl_err *err) FL_MUST_CHECK;

/* Frees without finishing; accepts NULL. */
void st_manifest_writer_free(struct st_manifest_writer *w);

#endif
