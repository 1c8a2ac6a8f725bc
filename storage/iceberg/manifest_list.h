/* manifest_list.h - the Iceberg manifest-list writer (spec "Manifest
 * Lists"; manifest_file struct, field ids 500-520) and the description of
 * one manifest that both the manifest writer and the list writer use.
 *
 * One list is written per snapshot.  v2 and v3 layouts; v3 adds
 * first_row_id, which this writer assigns to data manifests that lack one. */
#ifndef ST_MANIFEST_LIST_H
#define ST_MANIFEST_LIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "avro/avro.h"
#include "base/alloc.h"
#include "base/sink.h"
#include "err.h"

/* Summary of one partition field across a manifest (field_summary, 508). */
struct st_field_summary {
	bool contains_null;
	bool has_contains_nan; /* false writes null (non-float fields) */
	bool contains_nan;
	bool has_lower;
	bool has_upper;
	uint8_t *lower; /* single-value serialized */
	size_t lower_len;
	uint8_t *upper;
	size_t upper_len;
};

enum st_manifest_content {
	ST_MANIFEST_DATA = 0,
	ST_MANIFEST_DELETES = 1,
};

/* Sequence numbers of -1 mean "assigned by this snapshot": the list writer
 * writes the snapshot's sequence number instead (spec "Sequence Number
 * Inheritance"). */
#define ST_SEQ_UNASSIGNED (-1)

struct st_manifest_file {
	const char *manifest_path;
	int64_t manifest_length;
	int32_t partition_spec_id;
	enum st_manifest_content content;
	int64_t sequence_number; /* or ST_SEQ_UNASSIGNED */
	int64_t min_sequence_number; /* or ST_SEQ_UNASSIGNED */
	int64_t added_snapshot_id;
	int32_t added_files_count;
	int32_t existing_files_count;
	int32_t deleted_files_count;
	int64_t added_rows_count;
	int64_t existing_rows_count;
	int64_t deleted_rows_count;
	struct st_field_summary *partitions; /* one per partition field */
	size_t n_partitions;
	const uint8_t *key_metadata; /* NULL: none */
	size_t key_metadata_len;
	bool has_first_row_id; /* v3: false lets the list writer assign it */
	int64_t first_row_id;
};

/* Releases the partition summaries a manifest writer allocated (with the
 * same allocator) and clears them; accepts an empty description. */
void st_manifest_file_release(struct st_manifest_file *mf, const struct st_alloc *alloc);

struct st_manifest_list_opts {
	int format_version; /* 2 or 3 */
	int64_t snapshot_id;
	bool has_parent;
	int64_t parent_snapshot_id;
	int64_t sequence_number;
	int64_t first_row_id; /* v3: the table's next-row-id before this snapshot */
	enum st_avro_codec codec;
	const uint8_t *sync; /* NULL: random (tests pass a fixed one) */
	struct st_sink sink;
	const struct st_alloc *alloc;
};

struct st_manifest_list_writer;

/* Writes the Avro header (keys snapshot-id, parent-snapshot-id ("null" when
 * there is none), sequence-number, format-version, and first-row-id for v3)
 * and returns a writer.  FL_ERR_BAD_REQUEST for an unsupported version. */
int st_manifest_list_writer_open(const struct st_manifest_list_opts *opts,
                                 struct st_manifest_list_writer **out,
                                 struct fl_err *err) FL_MUST_CHECK;

/* Appends one manifest.  For v3 data manifests without first_row_id it
 * assigns the next row id and advances it by added + existing rows. */
int st_manifest_list_writer_add(struct st_manifest_list_writer *w,
                                const struct st_manifest_file *mf,
                                struct fl_err *err) FL_MUST_CHECK;

/* Finishes the file and frees the writer whatever the outcome.  *bytes gets
 * the file length; *next_row_id (v3, may be NULL) the first row id after
 * this snapshot's rows, so added-rows = *next_row_id - opts.first_row_id. */
int st_manifest_list_writer_close(struct st_manifest_list_writer *w, uint64_t *bytes,
                                  int64_t *next_row_id, struct fl_err *err) FL_MUST_CHECK;

/* Frees without finishing; accepts NULL. */
void st_manifest_list_writer_free(struct st_manifest_list_writer *w);

/* The exact Avro schema JSON the list writer uses for a version (2 or 3),
 * for tests and readers; NULL for other versions.  Static storage. */
const char *st_manifest_list_schema(int format_version);

#endif
