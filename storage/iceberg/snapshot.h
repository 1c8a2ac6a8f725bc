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
#include "iceberg/manifest.h"
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
	/* Where the syncs of the new files' names are left (io.h); NULL: each
	 * is durable when written. */
	struct st_io_pending *pending;
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
	int64_t removed_files_size; /* sum of the DELETED entries' sizes (replace) */
	int64_t removed_eq_deletes; /* records of the DELETED equality delete files */
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

/* The manifest of a `replace` (compaction): the n new data files ADDED, as
 * above, then the n_deleted entries of the files it removes as DELETED.
 * Each deleted entry names its data file (content DATA; path, format,
 * partition, record_count and size at least) and carries the snapshot id
 * and data and file sequence numbers the file had; the status given is
 * ignored; n may be 0 (files with no rows) when n_deleted is not.  The
 * counts of both go to out->file, the removed sizes to
 * out->removed_files_size.  Errors as st_snapshot_manifest_write, and
 * FL_ERR_BAD_REQUEST for a deleted entry lacking those. */
int st_snapshot_manifest_write_replace(const struct st_snapshot_table *table, int64_t snapshot_id,
                                       const struct st_data_file *files, size_t n,
                                       const struct st_manifest_entry *deleted, size_t n_deleted,
                                       struct st_snapshot_manifest **out,
                                       struct fl_err *err) FL_MUST_CHECK;

/* The manifest of a `replace` that rewrites manifests only in part: n new
 * data files ADDED (content DATA only), then the n_kept entries of the
 * rewritten manifests' files that stay as EXISTING, then the n_deleted
 * entries of the files it removes as DELETED.  Kept and deleted entries
 * carry their own snapshot id and sequence numbers (and v3 data files
 * their first_row_id) and must match content; a DELETED one is written
 * with snapshot_id (the spec's "deleted if status is 2"); the statuses
 * given are ignored.  Errors as st_snapshot_manifest_write_replace. */
int st_snapshot_manifest_write_rewrite(const struct st_snapshot_table *table, int64_t snapshot_id,
                                       enum st_manifest_content content,
                                       const struct st_data_file *files, size_t n,
                                       const struct st_manifest_entry *kept, size_t n_kept,
                                       const struct st_manifest_entry *deleted, size_t n_deleted,
                                       struct st_snapshot_manifest **out,
                                       struct fl_err *err) FL_MUST_CHECK;

/* The manifest (content deletes) of the delete files and deletion vectors
 * a `replace` removes because every data file they apply to is rewritten: the n_deleted entries as DELETED, each a delete file with its
 * snapshot id and sequence numbers (a deletion vector with its
 * referenced_data_file, content_offset and content_size_in_bytes).  Pass
 * it as st_snapshot_opts.removed_deletes.  Errors as
 * st_snapshot_manifest_write_replace. */
int st_snapshot_manifest_write_removed_deletes(const struct st_snapshot_table *table,
                                               int64_t snapshot_id,
                                               const struct st_manifest_entry *deleted,
                                               size_t n_deleted, struct st_snapshot_manifest **out,
                                               struct fl_err *err) FL_MUST_CHECK;

/* The partition tuple of table->spec from a manifest entry's partition
 * record as st_avro_read_all decodes it (an object keyed by partition field
 * name): *out gets one value per spec field (NULL and 0 when
 * unpartitioned; free with st_free(table->alloc, ...)); string values
 * point into rec, which must outlive them; binary, fixed and uuid values
 * (base64 in rec) are decoded into the same block, a decimal's bytes into
 * its 16-byte form.  FL_ERR_BAD_REQUEST for a value that does not fit its
 * field's type (a length that is not the type's); FL_ERR_UNSUPPORTED for a
 * field of a type a partition cannot have. */
int st_snapshot_partition_parse(const struct st_snapshot_table *table, const json_t *rec,
                                struct st_value **out, size_t *n, struct fl_err *err) FL_MUST_CHECK;

/* *out = table with the partition spec of id that meta (a table's
 * metadata) lists in "partition-specs": how the manifests of an older spec
 * see the table.  false, *out untouched, when meta lists none. */
bool st_snapshot_table_with_spec(const struct st_snapshot_table *table, const json_t *meta,
                                 int32_t id, struct st_snapshot_table *out);

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
	/* Further manifests of this snapshot, one per older partition spec
	 * whose files it rewrites or moves (a copy-on-write upsert keeps a
	 * rewritten file in the spec it was written for; compaction writes the
	 * DELETED entries of the files it moves out of a spec in a manifest of
	 * that spec), listed after manifest: data manifests (with manifest),
	 * whose counts add to manifest's in the summary, and delete manifests
	 * of removed delete files (with removed_deletes), whose counts add to
	 * removed_deletes'. */
	const struct st_snapshot_manifest *const *more;
	size_t n_more;
	const json_t *extra_summary; /* {string: string} added to the summary; may be NULL */
	/* A replace (compaction): manifests of the parent's list to leave out
	 * (their live files are the manifest's DELETED entries).  n_drop > 0
	 * makes the operation "replace". */
	const char *const *drop_manifests;
	size_t n_drop;
	/* With drop_manifests: the delete files the replace removes
	 * (st_snapshot_manifest_write_removed_deletes), listed after manifest;
	 * only then may a dropped manifest hold delete files.  NULL: none. */
	const struct st_snapshot_manifest *removed_deletes;
	/* The summary's operation; NULL: "replace" with drop_manifests, else
	 * "append".  A copy-on-write upsert that removes files says
	 * "overwrite". */
	const char *operation;
	/* A manifest rewrite: manifests of this snapshot
	 * (st_snapshot_manifest_merge) that replace drop_manifests, listed
	 * first.  The operation is "replace", the totals stay the parent's,
	 * and drop_manifests may name delete manifests too. */
	const struct st_snapshot_manifest *const *merged;
	size_t n_merged;
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
 * With drop_manifests, the operation is "replace", the summary adds
 * deleted-data-files, deleted-records and removed-files-size (Appendix F),
 * and with removed_deletes removed-delete-files, removed-position-deletes
 * and (when some go) removed-equality-deletes,
 * the totals subtract what the manifests' DELETED entries remove, the
 * dropped manifests are left out of the list, and each must be in the
 * parent's list (else FL_ERR_CONFLICT: a commit since the plan changed
 * them; rebuild the plan on the new state).
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

/* Merges the n manifests that the list records describe (as
 * st_avro_read_all decodes a manifest list; all of spec table->spec_id and
 * of one content, data or deletes) into one new manifest of snapshot_id
 * under table->metadata_dir: every live entry (ADDED or EXISTING) becomes
 * EXISTING with its snapshot id, data and file sequence numbers made
 * explicit (inherited from its manifest when null) and, v3 data files, its
 * first_row_id (inherited as spec "First Row ID Inheritance" says);
 * DELETED entries are dropped.  Entries are read with iceberg/entry.h and
 * written with st_snapshot_manifest_write_rewrite, so the whole bin is held
 * in memory (a bin is at most the target manifest size).  The new manifest's own sequence numbers
 * are left to the list (ST_SEQ_UNASSIGNED) and, for v3, its first_row_id
 * too, as Java's rewrite does.  *entries gets the number of entries
 * written; *out is NULL (nothing written) when no live entry remains.
 * FL_ERR_BAD_REQUEST for manifests of different specs or contents, or an
 * entry that does not decode (naming the manifest and entry);
 * FL_ERR_UNSUPPORTED for partition values st_snapshot_partition_parse
 * cannot read; the read errors; FL_ERR_NOMEM.  Nothing is left behind on
 * failure. */
int st_snapshot_manifest_merge(const struct st_snapshot_table *table, int64_t snapshot_id,
                               const json_t *const *records, size_t n,
                               struct st_snapshot_manifest **out, int64_t *entries,
                               struct fl_err *err) FL_MUST_CHECK;

#endif
