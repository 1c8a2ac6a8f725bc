/* meta_int.h - what the files of catalog/meta/ share: the decoded metadata
 * model, schema indexes, partition-spec and sort-order helpers.
 *
 * struct meta holds the scalar fields decoded and the list fields as jansson
 * arrays/objects it owns (deep copies of the input, except that the snapshot
 * objects are shared: nothing changes a snapshot once loaded), so that the
 * builder may change them in place; meta_emit writes them back in Java's
 * field order. */
#ifndef CAT_META_INT_H
#define CAT_META_INT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "err.h"
#include "tablemeta.h"

/* current-schema-id of metadata built from empty before any
 * set-current-schema: Java's int field then defaults to 0. */
#define META_UNSET INT64_MIN

/* Default of write.metadata.previous-versions-max (Java TableProperties). */
#define META_PREVIOUS_VERSIONS_DEFAULT 100

/* First partition field id; last-partition-id of an unpartitioned table is
 * one below it. */
#define META_PARTITION_ID_START 1000

/* A slot of the snapshot index: open addressing over the ids, linear
 * probing; snap NULL = empty. */
struct meta_snap_slot {
	int64_t id;
	json_t *snap;
};

struct meta {
	int format_version;
	json_t *uuid; /* string, or NULL (v1 only) */
	json_t *location; /* string */
	int64_t last_sequence_number;
	int64_t last_updated_ms;
	int64_t last_column_id;
	int64_t current_schema_id; /* META_UNSET while building from empty */
	json_t *schemas; /* array of normalized schemas */
	int64_t default_spec_id;
	json_t *specs; /* array of {spec-id, fields} */
	int64_t last_partition_id;
	int64_t default_sort_order_id;
	json_t *sort_orders; /* array of {order-id, fields} */
	json_t *properties; /* object of strings */
	int64_t current_snapshot_id; /* -1 = none */
	int64_t next_row_id;
	json_t *encryption_keys; /* array */
	json_t *refs; /* object name -> {snapshot-id, type, ...} */
	json_t *snapshots; /* array */
	struct meta_snap_slot *snap_slots; /* id -> snapshot (borrowed from snapshots) */
	size_t snap_cap, snap_n; /* slots (0 or a power of two), ids held */
	int64_t *snap_ids; /* the id of each of snapshots, in its order */
	size_t snap_ids_cap;
	/* No snapshot's sequence number is above it (INT64_MAX: not known).
	 * A built document passed meta_check, so its last-sequence-number
	 * bounds its snapshots; each added one raises the bound to its own. */
	int64_t seq_bound;
	json_t *statistics; /* array */
	json_t *partition_statistics; /* array */
	json_t *snapshot_log; /* array of {timestamp-ms, snapshot-id} */
	json_t *metadata_log; /* array of {timestamp-ms, metadata-file} */
};

/* Empty model as Java's Builder(formatVersion) starts it (no uuid, no
 * location, current schema unset). Returns -1 (FL_ERR_NOMEM) on OOM. */
int meta_init_empty(struct meta *m, int format_version, struct fl_err *err) FL_MUST_CHECK;

/* Decodes a metadata document into m (deep copies, except the snapshots,
 * which m shares with doc: neither may modify them), checking fields and
 * types; v1 documents with only `schema` / `partition-spec` are normalized.
 * Does not check referential integrity: meta_check does.  built: doc is an
 * unmodified document cat_meta_apply returned, whose snapshots, snapshot
 * log and metadata log were each checked when they joined it; those lists
 * (the part that grows with every commit) are then taken without checking
 * every element again, all the rest is checked as ever; ids, when not
 * NULL, are the snapshot ids cat_meta_apply_kept returned with doc, which
 * then are not read from the snapshots again.  On failure m is released. */
int meta_load(const json_t *doc, bool built, const struct cat_meta_ids *ids, struct meta *m,
              struct fl_err *err) FL_MUST_CHECK;

/* A copy of m's snapshot ids (snap_ids), or NULL when out of memory. */
struct cat_meta_ids *meta_ids_of(const struct meta *m);

/* Referential integrity and per-version rules of a complete model. */
int meta_check(const struct meta *m, struct fl_err *err) FL_MUST_CHECK;

/* The document for m (a new reference sharing m's sub-values), or NULL on
 * OOM. */
json_t *meta_emit(const struct meta *m);

void meta_free(struct meta *m);

/* Helpers over the model; NULL when absent. */
json_t *meta_schema_by_id(const struct meta *m, int64_t id);
json_t *meta_spec_by_id(const struct meta *m, int64_t id);
json_t *meta_order_by_id(const struct meta *m, int64_t id);
json_t *meta_snapshot_by_id(const struct meta *m, int64_t id);

/* Shape checks shared by loading and by the updates that carry these
 * objects; `what` names the object in messages. */
int meta_snapshot_check(const json_t *snap, int format_version, const char *what,
                        struct fl_err *err) FL_MUST_CHECK;
int meta_ref_check(const json_t *ref, const char *name, struct fl_err *err) FL_MUST_CHECK;
int meta_stats_check(const json_t *stats, bool partition, const char *what,
                     struct fl_err *err) FL_MUST_CHECK;
int meta_key_check(const json_t *key, const char *what, struct fl_err *err) FL_MUST_CHECK;

/* True for Java's reserved table properties (format-version, uuid, ...),
 * which are derived and never stored. */
bool meta_prop_reserved(const char *key);

/* Adds snap, whose snapshot-id is id (a reference is taken), to snapshots
 * and the index. */
int meta_snapshot_add(struct meta *m, json_t *snap, int64_t id) FL_MUST_CHECK;

/* Drops the snapshot from the index (not from the list); false when it was not there. */
bool meta_snapshot_unindex(struct meta *m, int64_t id);

/* qsort / bsearch order of int64_t ids. */
static inline int meta_cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* Integer of a JSON value that must be an integer (not a real, not a bool). */
static inline bool meta_int(const json_t *v, int64_t *out)
{
	if (!json_is_integer(v))
		return false;
	*out = (int64_t)json_integer_value(v);
	return true;
}

/* Sets key of obj to a new value, stealing it; -1 when v is NULL or on OOM. */
int meta_set_new(json_t *obj, const char *key, json_t *v) FL_MUST_CHECK;

/* ---- schemas (schema.c) ---- */

/* Kinds of primitive types ("decimal(9,2)" is META_T_DECIMAL). */
enum meta_type {
	META_T_NESTED = 0, /* struct, list or map */
	META_T_BOOLEAN,
	META_T_INT,
	META_T_LONG,
	META_T_FLOAT,
	META_T_DOUBLE,
	META_T_DECIMAL,
	META_T_DATE,
	META_T_TIME,
	META_T_TIMESTAMP,
	META_T_TIMESTAMPTZ,
	META_T_TIMESTAMP_NS,
	META_T_TIMESTAMPTZ_NS,
	META_T_STRING,
	META_T_UUID,
	META_T_FIXED,
	META_T_BINARY,
	META_T_UNKNOWN, /* v3 */
	META_T_VARIANT, /* v3; not primitive in Java */
	META_T_GEOMETRY, /* v3 */
	META_T_GEOGRAPHY, /* v3 */
	META_T_INVALID,
};

/* Kind of a type JSON value (a string or a nested-type object). */
enum meta_type meta_type_kind(const json_t *type);

/* One field of a schema, nested ones included.  Pointers borrow from the
 * schema JSON. */
struct meta_field {
	int64_t id;
	const char *name; /* NULL for list elements and map keys/values */
	const json_t *type;
	enum meta_type kind;
	char *path; /* dotted name of struct fields from the top; NULL otherwise */
	bool primitive;
	bool required;
	int64_t parent; /* id of the enclosing field, -1 at the top */
	bool under_list_map; /* inside a list element or a map key/value */
	bool optional_parent; /* some enclosing struct field is optional */
};

struct meta_fields {
	struct meta_field *v;
	size_t n, cap;
	int64_t highest; /* highest field id, 0 when no field */
};

/* Checks a Schema JSON (struct type with fields; every type known to the
 * format version; field ids unique; names unique per struct; defaults only
 * in v3; identifier fields required primitives outside lists and maps) and
 * indexes its fields into f (release with meta_fields_free).  `what` names
 * the schema in messages. */
int meta_schema_index(const json_t *schema, int format_version, const char *what,
                      struct meta_fields *f, struct fl_err *err) FL_MUST_CHECK;
void meta_fields_free(struct meta_fields *f);
const struct meta_field *meta_fields_find(const struct meta_fields *f, int64_t id);

/* Normalized copy {type: struct, schema-id, identifier-field-ids?, fields}. */
json_t *meta_schema_normalize(const json_t *schema, int64_t schema_id);

/* True when both schemas have the same fields and identifier fields (Java
 * Schema.sameSchema: schema ids do not matter). */
bool meta_schema_same(const json_t *a, const json_t *b);

/* Copy of schema with fresh field ids from 1 in Java's order, schema-id
 * `schema_id`; *map receives an object "old id" -> new id (integers) and
 * *last the last id assigned. */
int meta_schema_fresh(const json_t *schema, int64_t schema_id, json_t **out, json_t **map,
                      int64_t *last, struct fl_err *err) FL_MUST_CHECK;

/* ---- partition specs and sort orders (spec.c) ---- */

/* Checks a PartitionSpec's fields against a schema (NULL: shape only) (source column exists, is
 * primitive, its parents are structs, the transform applies to its type;
 * names unique, not empty, and not another column's name) and returns a
 * normalized copy {spec-id, fields[{name, transform, source-id, field-id}]}.
 * Fields without field-id get *next_id (then incremented); when next_id is
 * NULL a missing field-id is an error.  *max_id receives the highest partition field id (999 if none). */
int meta_spec_bind(const json_t *spec, const struct meta_fields *schema, int64_t spec_id,
                   int64_t *next_id, int64_t *max_id, const char *what, json_t **out,
                   struct fl_err *err) FL_MUST_CHECK;

/* Java PartitionSpec.compatibleWith: same number of fields with equal
 * source-id, transform and name in order. */
bool meta_spec_compatible(const json_t *a, const json_t *b);

/* Checks a SortOrder against a schema (NULL: shape only) and returns a normalized copy
 * {order-id, fields[{transform, source-id, direction, null-order}]} with
 * order-id `order_id`. */
int meta_order_bind(const json_t *order, const struct meta_fields *schema, int64_t order_id,
                    const char *what, json_t **out, struct fl_err *err) FL_MUST_CHECK;

/* Same fields in the same order (Java SortOrder.sameOrder). */
bool meta_order_same(const json_t *a, const json_t *b);

/* Checks that an already stored spec / order still binds to schema (void
 * transforms excepted), as Java's build() does for the defaults. */
int meta_spec_check(const json_t *spec, const struct meta_fields *schema, const char *what,
                    struct fl_err *err) FL_MUST_CHECK;
int meta_order_check(const json_t *order, const struct meta_fields *schema, const char *what,
                     struct fl_err *err) FL_MUST_CHECK;

#endif
