/* tablemeta.h - the Iceberg table-metadata model and the commit builder.
 *
 * Pure functions over jansson: no SQL, no HTTP, no object storage.  Metadata
 * documents are the JSON of the Iceberg table spec ("Table Metadata Fields",
 * format versions 1 to 3); requirements and updates are the TableRequirement
 * and TableUpdate objects of the REST spec.  The rules are those of the Java
 * reference (TableMetadata.Builder, UpdateRequirement, MetadataUpdate).
 *
 * Every document these functions return is a new reference owned by the
 * caller, written the way Java's TableMetadataParser writes it: every v2 field
 * present (empty lists and maps included), `schema` and `partition-spec` only
 * for v1, `last-sequence-number` for v2+, `next-row-id` for v3, and
 * `current-snapshot-id` -1 (v1/v2) or null (v3) when there is no snapshot.
 * Inputs are never modified.  All functions are thread-safe (no shared state).
 *
 * Error kinds: FL_ERR_BAD_REQUEST for malformed or invalid input (the message
 * names the requirement or update, its index and the field),
 * FL_ERR_COMMIT_FAILED when a requirement does not hold or a retryable
 * validation fails (the client must refresh and retry), FL_ERR_TOO_LARGE for
 * a bound exceeded, FL_ERR_NOMEM when out of memory. */
#ifndef CAT_META_TABLEMETA_H
#define CAT_META_TABLEMETA_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* Highest table format version this builder reads and writes. */
#define CAT_META_MAX_FORMAT_VERSION 3

/* Default table format version for new tables (as in Java). */
#define CAT_META_DEFAULT_FORMAT_VERSION 2

/* Size of a buffer that holds a metadata file name: 19 digits, '-', a UUID,
 * ".metadata.json" and the NUL. */
#define CAT_META_FILE_NAME_MAX 80

/* New table metadata from a CreateTableRequest JSON (name, schema,
 * location?, partition-spec?, write-order?, properties?, stage-create?).
 *
 * Ids are assigned fresh as Java does: schema field ids from 1 (the fields of
 * a struct first, then their nested types; list element and map key/value ids
 * too), identifier-field-ids remapped, schema-id 0, partition field ids from
 * 1000 in order (last-partition-id 999 when unpartitioned), spec-id 0, sort
 * order id 1 when sorted (0 = unsorted), source-ids remapped to the fresh
 * field ids.  Property "format-version" ("1", "2" or "3"; default 2) selects
 * the version and is not stored; the other reserved properties (uuid,
 * snapshot-count, current-snapshot-id, current-snapshot-summary,
 * current-snapshot-timestamp-ms, current-schema, default-partition-spec,
 * default-sort-order) are dropped, as Java's newTableMetadata drops them.
 * Like Java, "write.parquet.compression-codec" = "zstd" is added unless the
 * request sets it.  The request's own `location` is ignored: the caller
 * decides the location (trailing '/' removed) and the uuid (canonical form).
 * On failure *out is untouched. */
int cat_meta_create(const json_t *create_req, const char *location, const char *uuid,
                    int64_t now_ms, json_t **out, struct fl_err *err) FL_MUST_CHECK;

/* Checks every requirement (an array of TableRequirement) against base
 * (NULL = the table does not exist).  assert-create passes only when base is
 * NULL and must then be the only kind of requirement (else FL_ERR_BAD_REQUEST, as
 * Java's CatalogHandlers); every other type fails when base is NULL.
 * An unknown type or a malformed requirement is FL_ERR_BAD_REQUEST.  A
 * requirement that does not hold is FL_ERR_COMMIT_FAILED with a message that
 * names it and both values, e.g. "requirement assert-ref-snapshot-id failed:
 * branch main is at 81, expected 80".  Requirements are checked in order; the
 * first malformed or failing one decides the error. */
int cat_meta_check_requirements(const json_t *base, const json_t *requirements,
                                struct fl_err *err) FL_MUST_CHECK;

/* Applies updates (an array of TableUpdate) to base, or builds new metadata
 * from empty when base is NULL (stage-create commits with assert-create; the
 * format version then comes from the first upgrade-format-version update,
 * default 2, and the uuid from assign-uuid, else a random one).
 *
 * Builder semantics are Java's: -1 ids mean "last added in this change"
 * (FL_ERR_BAD_REQUEST when nothing was added); add-schema reuses an identical
 * schema and last-column-id becomes max(current, highest field id), whatever
 * the client sent; add-spec and add-sort-order reuse an identical spec or
 * order; add-snapshot needs a unique id and, for v2+, a sequence number above
 * last-sequence-number (else FL_ERR_COMMIT_FAILED: the client must retry) and
 * for v3 first-row-id >= next-row-id (else FL_ERR_COMMIT_FAILED) and
 * added-rows (missing: FL_ERR_BAD_REQUEST; commit.c fills it in from the
 * manifest list before calling), after which next-row-id grows by
 * added-rows; set-snapshot-ref on main moves current-snapshot-id and appends
 * to snapshot-log.  Full rules per action are in apply.c.
 *
 * On success *out is the new metadata (a new reference) with last-updated-ms
 * = now_ms, and when base_location is not NULL the previous file is appended
 * to metadata-log (timestamp = base's last-updated-ms), trimmed to the
 * property write.metadata.previous-versions-max (default 100).  *changed is
 * false when the updates change nothing; *out is then a copy of base and the
 * caller writes no new file.  More than max_updates updates is
 * FL_ERR_TOO_LARGE.  On failure *out and *changed are untouched. */
int cat_meta_apply(const json_t *base, const char *base_location, const json_t *updates,
                   int64_t now_ms, size_t max_updates, json_t **out, bool *changed,
                   struct fl_err *err) FL_MUST_CHECK;

/* cat_meta_apply for a base that is an unmodified *out of an earlier
 * cat_meta_apply (a commit's base kept in memory): every snapshot and log
 * entry in it was checked when it joined, so the lists that grow with each
 * commit are not checked element by element again; the result is the same. */
int cat_meta_apply_built(const json_t *base, const char *base_location, const json_t *updates,
                         int64_t now_ms, size_t max_updates, json_t **out, bool *changed,
                         struct fl_err *err) FL_MUST_CHECK;

/* The ids of a built document's snapshots, in their order: what a build on
 * that document would otherwise read from each snapshot again (one lookup
 * in each of thousands of objects spread over the heap).  Immutable once
 * made; cat_meta_ids_free releases them. */
struct cat_meta_ids;

/* cat_meta_apply_built with the ids cat_meta_apply_kept returned with base
 * (NULL: read from base), returning those of *out in *out_ids (NULL when
 * out_ids is NULL, on failure, when nothing changed, or when out of memory,
 * which fails nothing else). */
int cat_meta_apply_kept(const json_t *base, const struct cat_meta_ids *ids,
                        const char *base_location, const json_t *updates, int64_t now_ms,
                        size_t max_updates, json_t **out, struct cat_meta_ids **out_ids,
                        bool *changed, struct fl_err *err) FL_MUST_CHECK;
void cat_meta_ids_free(void *ids);
/* Whether ids are exactly the ids of doc's snapshots, in order (every one
 * compared: for tests). */
bool cat_meta_ids_match(const struct cat_meta_ids *ids, const json_t *doc);

/* The arrays of a document cat_meta_apply emits whose elements its next
 * version shares, the same json_t, and never modifies: the snapshots and
 * the two logs, which grow with every commit.  NULL-ended; the keys of a
 * contended table's fl_json_dump_memo. */
extern const char *const cat_meta_shared_arrays[];

/* Validates a complete metadata document (register-table, and everything
 * this module emits): the fields each format version requires and their
 * types, schemas (unique field ids, known types for the version), specs and
 * sort orders bound to the current schema, and referential integrity
 * (current-schema-id, default-spec-id, default-sort-order-id exist; refs
 * point at snapshots; main is a branch at current-snapshot-id).
 * FL_ERR_BAD_REQUEST naming the field on failure. */
int cat_meta_validate(const json_t *metadata, struct fl_err *err) FL_MUST_CHECK;

/* ---- accessors: they expect a validated document and never fail loudly ---- */

/* format-version, or 0 when absent. */
int cat_meta_format_version(const json_t *metadata);

/* location / table-uuid; NULL when absent.  The strings live as long as
 * metadata. */
const char *cat_meta_location(const json_t *metadata);
const char *cat_meta_uuid(const json_t *metadata);

/* current-snapshot-id, or -1 when there is none (-1, null or absent). */
int64_t cat_meta_current_snapshot_id(const json_t *metadata);

/* The current snapshot's summary object (borrowed), or NULL when there is no
 * current snapshot or it has no summary. */
const json_t *cat_meta_current_summary(const json_t *metadata);

/* Writes "%05lld-<random uuid v4>.metadata.json" for a metadata file version
 * (the Java naming; the caller adds "<location>/metadata/"). */
void cat_meta_metadata_file_name(int64_t version, char out[CAT_META_FILE_NAME_MAX]);

/* Snapshot expiry by the table's own retention settings (refs' max-ref-age-ms,
 * max-snapshot-age-ms and min-snapshots-to-keep, else the table properties
 * history.expire.*; rules in expire.c).  *updates (a new reference) holds
 * the remove-snapshot-ref updates for expired refs and one remove-snapshots
 * with the ids in *removed (a new reference, an array of ids); both are
 * empty arrays when nothing expires.  FL_ERR_BAD_REQUEST names a malformed
 * history.expire.* property; FL_ERR_NOMEM. */
int cat_meta_expire_plan(const json_t *meta, int64_t now_ms, json_t **updates, json_t **removed,
                         struct fl_err *err) FL_MUST_CHECK;

#endif
