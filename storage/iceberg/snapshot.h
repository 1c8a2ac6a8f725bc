/* snapshot.h - builds an Iceberg append snapshot on top of a parent: writes
 * the new data files' manifest once, then (per commit attempt) a manifest
 * list holding that manifest first and every manifest of the parent's list
 * after it, and returns the Snapshot JSON for an `add-snapshot` update
 * (apache/iceberg format/spec.md "Snapshots", "Manifest Lists", "Sequence
 * Number Inheritance", Appendix F summary keys).
 *
 * Retrying after a 409: keep the st_snapshot_manifest of the first attempt
 * and call st_snapshot_build again with the new parent, sequence number,
 * first row id and attempt number.  The manifest is not rewritten: its
 * entries carry null sequence numbers and inherit the one the new list
 * assigns.  The snapshot id stays the same across attempts, because the
 * manifest's entries already name it.
 *
 * Files are written with st_io_write_new (they must not exist) under
 * table->metadata_dir:
 *   <uuid>-m0.avro                         the new manifest
 *   snap-<snapshot id>-<attempt>-<uuid>.avro  the manifest list
 * Nothing here is shared between threads; every call is independent. */
#ifndef ST_SNAPSHOT_H
#define ST_SNAPSHOT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "avro/avro.h"
#include "base/alloc.h"
#include "err.h"
#include "iceberg/data_file.h"
#include "iceberg/manifest_list.h"
#include "io/io.h"

/* What the table's current metadata says; borrowed for each call. */
struct st_snapshot_table {
	int format_version; /* 2 or 3 */
	const json_t *schema; /* the current schema (Schema JSON object) */
	int32_t schema_id;
	/* The default partition spec (PartitionSpec JSON: {"spec-id", "fields":
	 * [{"field-id", "source-id", "name", "transform"}]}); NULL or no fields:
	 * unpartitioned.  Each data file's partition tuple has one value per
	 * field, typed by the transform's result type (types.h). */
	const json_t *spec;
	int32_t spec_id;
	const char *metadata_dir; /* "<table location>/metadata" as a URI */
	struct st_io *io; /* the table's storage (borrowed) */
	enum st_avro_codec codec; /* manifests and manifest lists */
	size_t max_read_bytes; /* bound on each parent file read; 0: 64 MiB */
	const struct st_alloc *alloc; /* NULL: the C library */
};

/* The new manifest, written once and reused by every attempt.  The fields
 * are public so that a caller may keep them (e.g. across a restart) and
 * rebuild the struct; st_snapshot_manifest_free releases what
 * st_snapshot_manifest_write allocated. */
struct st_snapshot_manifest {
	char *path; /* URI of the manifest; owned */
	struct st_manifest_file file; /* what the list records; file.manifest_path == path */
	int64_t snapshot_id; /* the snapshot its entries belong to */
	int64_t added_files_size; /* sum of the data files' sizes */
	int64_t changed_partitions; /* distinct partition tuples among the files */
	const struct st_alloc *alloc;
};

/* Writes the manifest of n new data files (content DATA, status ADDED,
 * snapshot_id = snapshot_id, sequence numbers null) to
 * <metadata_dir>/<uuid>-m0.avro and returns its description.
 * FL_ERR_BAD_REQUEST for no files, a delete file, an unsupported format
 * version, a spec whose source field or transform is unknown, or a
 * partition tuple that does not fit the spec; FL_ERR_NOMEM; the IO error.
 * *out untouched on failure (and nothing is left behind). */
int st_snapshot_manifest_write(const struct st_snapshot_table *table, int64_t snapshot_id,
                               const struct st_data_file *files, size_t n,
                               struct st_snapshot_manifest **out, struct fl_err *err) FL_MUST_CHECK;

/* Releases a manifest description (not the file); accepts NULL. */
void st_snapshot_manifest_free(struct st_snapshot_manifest *m);

/* The parent snapshot, as the table's metadata has it. */
struct st_snapshot_parent {
	int64_t snapshot_id;
	const char *manifest_list; /* URI, read with st_io_read */
	const json_t *summary; /* its summary object; NULL when unknown */
};

struct st_snapshot_opts {
	const struct st_snapshot_table *table;
	const struct st_snapshot_parent *parent; /* NULL: the table's first snapshot */
	int64_t snapshot_id;
	int64_t sequence_number; /* the table's last-sequence-number + 1 */
	int64_t timestamp_ms;
	int64_t first_row_id; /* v3: the table's next-row-id; ignored for v2 */
	int attempt; /* 1 for the first commit attempt, then 2, 3, ... */
	const struct st_snapshot_manifest *manifest; /* NULL: a snapshot adding no files */
	const json_t *extra_summary; /* {string: string} added to the summary; may be NULL */
};

/* Writes the manifest list and returns in *snapshot (a new reference) the
 * Snapshot JSON: snapshot-id, parent-snapshot-id (absent without a
 * parent), sequence-number, timestamp-ms, manifest-list, schema-id, summary
 * (operation "append", added-data-files, added-records, added-files-size,
 * changed-partition-count, total-records, total-files-size,
 * total-data-files, total-delete-files, total-position-deletes,
 * total-equality-deletes, then extra_summary) and, for v3, first-row-id and
 * added-rows.  Totals are the parent summary's plus what this snapshot
 * adds; a total the parent summary lacks (or holds as a non-number) is
 * recomputed from the parent's manifest list counts, and for sizes and
 * delete counts from its manifests.  The parent's manifests keep their
 * sequence numbers, counts, partition summaries, key_metadata and
 * first_row_id (a null partitions field is written as an empty list: see
 * manifest_list.c).  v3: the new manifest gets first_row_id, and data
 * manifests carried without one (written before an upgrade to v3) get the
 * ids after it, as Java's list writer does; added-rows counts them all, so
 * the table's next-row-id must grow by added-rows (spec "Row Lineage").
 * Fails with FL_ERR_BAD_REQUEST (bad options, an extra_summary key that
 * collides with a computed one or a non-string value, a manifest of
 * another snapshot id), FL_ERR_CONFLICT (the parent's list already holds
 * this manifest: an earlier attempt was committed), the parent files'
 * read or decode errors (naming the file), FL_ERR_NOMEM, or the IO error.
 * *snapshot untouched on failure. */
int st_snapshot_build(const struct st_snapshot_opts *opts, json_t **snapshot,
                      struct fl_err *err) FL_MUST_CHECK;

/* The added-rows of a v3 snapshot whose writer did not say (PyIceberg
 * never sends it), from its manifest list at list_uri, counted as Java's
 * list writer counts what it assigns (spec "Row Lineage"): data manifests
 * whose first_row_id is first_row_id or later span [first_row_id,
 * first_row_id + added_rows_count + existing_rows_count), and data
 * manifests without one count all their rows; manifests with an earlier
 * first_row_id were numbered by earlier snapshots, and delete manifests
 * get no row ids.  The result is first_row_id's distance to the end of the
 * highest span plus the unnumbered rows: an upper bound, so row ids stay
 * unique whatever the writer did.  Only table->max_read_bytes and
 * table->alloc are used.  FL_ERR_BAD_REQUEST for a malformed list or
 * negative counts or overflow (naming the file); the IO error (e.g.
 * FL_ERR_NOT_FOUND); FL_ERR_NOMEM.  *added untouched on failure. */
int st_snapshot_added_rows(const struct st_snapshot_table *table, const char *list_uri,
                           int64_t first_row_id, int64_t *added, struct fl_err *err) FL_MUST_CHECK;

#endif
