/* apply.c - the commit builder: TableUpdate actions applied to metadata.
 *
 * Mirrors Java's TableMetadata.Builder as driven by MetadataUpdate.applyTo
 * (REST spec TableUpdate; reference brief §A.5, §C.1).  Per action:
 *   assign-uuid            sets the uuid when building from empty; on an
 *                          existing table only the same uuid (case-insensitive)
 *   upgrade-format-version no downgrade, at most CAT_META_MAX_FORMAT_VERSION
 *   add-schema             reuses an identical schema's id, else max(current,
 *                          highest id + 1); last-column-id = max(current,
 *                          highest field id) whatever the client sent
 *   set-current-schema     -1 = last added; the id must exist.  Unlike Java,
 *                          -1 also names a schema that add-schema found
 *                          already present (Java forgets it and rejects the
 *                          -1), so replaying a create's updates is a no-op;
 *                          the same holds for specs and sort orders
 *   add-spec               binds to the current schema (from empty: schema 0,
 *                          else the last added one, because DuckDB sends
 *                          set-current-schema last); reuses a compatible spec;
 *                          given field ids are kept, missing ones continue
 *                          after last-partition-id (v1: 1000 + position)
 *   set-default-spec       -1 = last added; the id must exist
 *   add-sort-order         unsorted is order 0; reuses an identical order;
 *                          new ids from 1
 *   set-default-sort-order -1 = last added; the id must exist
 *   add-snapshot           needs a schema, spec and order; unique id; the
 *                          operation is append|replace|overwrite|delete; v2+
 *                          sequence-number > last-sequence-number unless it
 *                          has no parent (else 409, retryable); v3 first-row-id
 *                          >= next-row-id (else 409) and added-rows required
 *                          (400; commit.c counts it from the manifest list
 *                          when a client such as PyIceberg leaves it out),
 *                          then next-row-id += added-rows
 *   set-snapshot-ref       type branch|tag in any case; the snapshot must
 *                          exist; main must be a branch; tags take no
 *                          retention but max-ref-age-ms;
 *                          main moves current-snapshot-id and appends to
 *                          snapshot-log (the snapshot's timestamp when it was
 *                          added in this change, else now)
 *   remove-snapshots       unknown ids ignored; drops their statistics and the
 *                          refs left dangling (main: no current snapshot)
 *   remove-snapshot-ref    main: no current snapshot
 *   set-location           trailing '/' removed
 *   set-properties         "format-version" becomes an upgrade and is not
 *                          stored; other reserved keys are dropped
 *   remove-properties      absent keys ignored
 *   set-/remove-statistics, set-/remove-partition-statistics  keyed by snapshot
 *   remove-partition-specs not the default; remove-schemas not the current
 *   add-/remove-encryption-key  v3 only; an existing key id is a no-op
 * Then, as Java's build(): intermediate snapshots leave snapshot-log, removed
 * ones cut the log before them, the default spec and sort order must bind to
 * the current schema, last-updated-ms = now and the previous file joins
 * metadata-log (trimmed to write.metadata.previous-versions-max).
 *
 * Invariant: the base document is never modified; the model works on deep
 * copies and *out is only set on success. */
#include "meta_int.h"
#include "tablemeta.h"
#include "uuid.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct build {
	struct meta m;
	bool from_empty;
	bool changed;
	int64_t now_ms;
	bool has_last_schema, has_last_spec, has_last_order;
	int64_t last_schema, last_spec, last_order;
	json_t *added; /* object: ids of snapshots added in this change */
	json_t *main_sets; /* array: snapshot ids main was set to, in order */
	bool removed_snaps; /* some snapshot was removed */
};

/* Reserved table properties (Java TableProperties.RESERVED_PROPERTIES):
 * derived values that are never stored. */
static const char *const reserved_props[] = {
        "format-version",           "uuid",
        "snapshot-count",           "current-snapshot-id",
        "current-snapshot-summary", "current-snapshot-timestamp-ms",
        "current-schema",           "default-partition-spec",
        "default-sort-order",
};

bool meta_prop_reserved(const char *key)
{
	for (size_t i = 0; i < sizeof(reserved_props) / sizeof(reserved_props[0]); i++) {
		if (strcmp(key, reserved_props[i]) == 0)
			return true;
	}
	return false;
}

/* ---- member access for update objects ---- */

static int req_int(const json_t *u, const char *key, int64_t *out, struct fl_err *err)
{
	const json_t *v = json_object_get(u, key);

	if (v == NULL || json_is_null(v))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "missing required field '%s'", key);
	if (!meta_int(v, out))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "field '%s' must be an integer", key);
	return 0;
}

static int req_typed(const json_t *u, const char *key, json_type type, const char *tname,
                     json_t **out, struct fl_err *err)
{
	json_t *v = json_object_get(u, key);

	if (v == NULL || json_is_null(v))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "missing required field '%s'", key);
	if (json_typeof(v) != type)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "field '%s' must be %s", key, tname);
	*out = v;
	return 0;
}

static int req_str(const json_t *u, const char *key, const char **out, struct fl_err *err)
{
	json_t *v;

	if (req_typed(u, key, JSON_STRING, "a string", &v, err) < 0)
		return -1;
	*out = json_string_value(v);
	return 0;
}

/* An array of integers (spec-ids, schema-ids, snapshot-ids). */
static int req_int_array(const json_t *u, const char *key, json_t **out, struct fl_err *err)
{
	json_t *v;
	size_t i;

	if (req_typed(u, key, JSON_ARRAY, "an array", out, err) < 0)
		return -1;
	json_array_foreach(*out, i, v)
	{
		if (!json_is_integer(v))
			return fl_err_set(err, FL_ERR_BAD_REQUEST, "%s[%zu] must be an integer",
			                  key, i);
	}
	return 0;
}

static bool int_array_has(const json_t *arr, int64_t id)
{
	size_t i;
	json_t *v;

	json_array_foreach(arr, i, v)
	{
		if (json_integer_value(v) == id)
			return true;
	}
	return false;
}

static int nomem(struct fl_err *err)
{
	return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
}

/* Removes the elements of arr whose integer member key is in ids (or equals
 * one id when ids is NULL); returns how many went.  The ids (a request's,
 * any number of them) are sorted once and searched. */
static size_t remove_where(json_t *arr, const char *key, const json_t *ids, int64_t id)
{
	size_t n = 0, k = ids != NULL ? json_array_size(ids) : 0;
	int64_t *sorted = k > 0 ? malloc(k * sizeof(*sorted)) : NULL;

	for (size_t i = 0; sorted != NULL && i < k; i++)
		sorted[i] = json_integer_value(json_array_get(ids, i));
	if (sorted != NULL)
		qsort(sorted, k, sizeof(*sorted), meta_cmp_i64);
	for (size_t i = json_array_size(arr); i-- > 0;) {
		int64_t v = json_integer_value(json_object_get(json_array_get(arr, i), key));
		bool hit = ids == NULL ? v == id
		           : sorted != NULL
		                   ? bsearch(&v, sorted, k, sizeof(*sorted), meta_cmp_i64) != NULL
		                   : int_array_has(ids, v); /* out of memory: slower */

		if (hit) {
			json_array_remove(arr, i);
			n++;
		}
	}
	free(sorted);
	return n;
}

/* ---- actions ---- */

static int up_assign_uuid(struct build *b, const json_t *u, struct fl_err *err)
{
	const char *id;

	if (req_str(u, "uuid", &id, err) < 0)
		return -1;
	if (!fl_uuid_valid(id))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "field 'uuid' is not a UUID: %.40s", id);
	if (b->m.uuid != NULL && strcasecmp(json_string_value(b->m.uuid), id) == 0)
		return 0;
	if (!b->from_empty && b->m.uuid != NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "cannot change the table uuid from %s to %s",
		                  json_string_value(b->m.uuid), id);
	json_decref(b->m.uuid);
	b->m.uuid = json_string(id);
	if (b->m.uuid == NULL)
		return nomem(err);
	b->changed = true;
	return 0;
}

static int upgrade_to(struct build *b, int64_t v, struct fl_err *err)
{
	if (v > CAT_META_MAX_FORMAT_VERSION || v < 1)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "cannot upgrade table to unsupported format version v%" PRId64
		                  " (supported: v1 to v%d)",
		                  v, CAT_META_MAX_FORMAT_VERSION);
	if (v < b->m.format_version)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "cannot downgrade v%d table to v%" PRId64, b->m.format_version,
		                  v);
	if (v == b->m.format_version)
		return 0;
	b->m.format_version = (int)v;
	if (b->m.uuid == NULL && v > 1) {
		/* v2 requires a uuid; v1 tables may have none */
		char id[FL_UUID_STR];

		fl_uuid_v4(id);
		b->m.uuid = json_string(id);
		if (b->m.uuid == NULL)
			return nomem(err);
	}
	b->changed = true;
	return 0;
}

static int up_upgrade(struct build *b, const json_t *u, struct fl_err *err)
{
	int64_t v;

	if (req_int(u, "format-version", &v, err) < 0)
		return -1;
	return upgrade_to(b, v, err);
}

static int up_add_schema(struct build *b, const json_t *u, struct fl_err *err)
{
	struct meta_fields f;
	json_t *schema, *s, *norm;
	int64_t id = -1, next, new_last, ignored;
	const json_t *lc = json_object_get(u, "last-column-id");
	size_t i;

	if (req_typed(u, "schema", JSON_OBJECT, "an object", &schema, err) < 0)
		return -1;
	/* deprecated: checked for type, then computed here as Java does */
	if (lc != NULL && !json_is_null(lc) && !meta_int(lc, &ignored))
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "field 'last-column-id' must be an integer");
	if (meta_schema_index(schema, b->m.format_version, "schema", &f, err) < 0)
		return -1;
	new_last = f.highest > b->m.last_column_id ? f.highest : b->m.last_column_id;
	meta_fields_free(&f);
	next = b->m.current_schema_id == META_UNSET ? 0 : b->m.current_schema_id;
	json_array_foreach(b->m.schemas, i, s)
	{
		int64_t sid = json_integer_value(json_object_get(s, "schema-id"));

		if (meta_schema_same(s, schema)) {
			id = sid;
			break;
		}
		if (sid >= next)
			next = sid + 1;
	}
	b->has_last_schema = true;
	if (id >= 0 && new_last == b->m.last_column_id) {
		b->last_schema = id; /* identical schema: nothing changes */
		return 0;
	}
	b->m.last_column_id = new_last;
	b->changed = true;
	if (id >= 0) {
		b->last_schema = id;
		return 0;
	}
	norm = meta_schema_normalize(schema, next);
	if (norm == NULL || json_array_append_new(b->m.schemas, norm) < 0)
		return nomem(err);
	b->last_schema = next;
	return 0;
}

static int resolve_last(int64_t *id, bool has, int64_t last, const char *what, struct fl_err *err)
{
	if (*id != -1)
		return 0;
	if (!has)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "cannot set the last added %s: no %s has been added", what, what);
	*id = last;
	return 0;
}

static int up_set_current_schema(struct build *b, const json_t *u, struct fl_err *err)
{
	int64_t id;

	if (req_int(u, "schema-id", &id, err) < 0 ||
	    resolve_last(&id, b->has_last_schema, b->last_schema, "schema", err) < 0)
		return -1;
	if (id == b->m.current_schema_id)
		return 0;
	if (meta_schema_by_id(&b->m, id) == NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "cannot set current schema to unknown schema %" PRId64, id);
	b->m.current_schema_id = id;
	b->changed = true;
	return 0;
}

/* The schema new specs and orders bind to: the current one, or while
 * building from empty schema 0 (Java's default current id) or the last
 * added. */
static int bind_schema(struct build *b, const char *what, struct meta_fields *f, struct fl_err *err)
{
	const json_t *s = NULL;

	if (b->m.current_schema_id != META_UNSET)
		s = meta_schema_by_id(&b->m, b->m.current_schema_id);
	else if ((s = meta_schema_by_id(&b->m, 0)) == NULL && b->has_last_schema)
		s = meta_schema_by_id(&b->m, b->last_schema);
	if (s == NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "cannot add a %s before a schema is added", what);
	return meta_schema_index(s, b->m.format_version, "current schema", f, err);
}

static int up_add_spec(struct build *b, const json_t *u, struct fl_err *err)
{
	struct meta_fields f;
	json_t *spec, *bound = NULL, *s;
	int64_t next_field, max_field, id = 0;
	size_t i;
	int rc = -1;

	if (req_typed(u, "spec", JSON_OBJECT, "an object", &spec, err) < 0 ||
	    bind_schema(b, "partition spec", &f, err) < 0)
		return -1;
	/* Fields sent without an id get the next unused one; v1 numbers every
	 * spec's fields from 1000 by position, as Java's spec builder does. */
	next_field =
	        b->m.format_version == 1 ? META_PARTITION_ID_START : b->m.last_partition_id + 1;
	if (meta_spec_bind(spec, &f, 0, &next_field, &max_field, "spec", &bound, err) < 0)
		goto out;
	if (b->m.format_version == 1) {
		json_array_foreach(json_object_get(bound, "fields"), i, s)
		{
			if (json_integer_value(json_object_get(s, "field-id")) !=
			    META_PARTITION_ID_START + (int64_t)i) {
				fl_err_set(
				        err, FL_ERR_BAD_REQUEST,
				        "spec: fields[%zu]: field-id %" PRId64 " must be %" PRId64
				        " (v1 numbers partition fields from %d, in order)",
				        i,
				        (int64_t)json_integer_value(json_object_get(s, "field-id")),
				        (int64_t)META_PARTITION_ID_START + (int64_t)i,
				        META_PARTITION_ID_START);
				goto out;
			}
		}
	}
	b->has_last_spec = true;
	json_array_foreach(b->m.specs, i, s)
	{
		int64_t sid = json_integer_value(json_object_get(s, "spec-id"));

		if (meta_spec_compatible(bound, s)) {
			b->last_spec = sid;
			rc = 0;
			goto out;
		}
		if (sid >= id)
			id = sid + 1;
	}
	if (meta_set_new(bound, "spec-id", json_integer(id)) < 0 ||
	    json_array_append(b->m.specs, bound) < 0) {
		nomem(err);
		goto out;
	}
	if (max_field > b->m.last_partition_id)
		b->m.last_partition_id = max_field;
	b->last_spec = id;
	b->changed = true;
	rc = 0;
out:
	json_decref(bound);
	meta_fields_free(&f);
	return rc;
}

static int up_set_default_spec(struct build *b, const json_t *u, struct fl_err *err)
{
	int64_t id;

	if (req_int(u, "spec-id", &id, err) < 0 ||
	    resolve_last(&id, b->has_last_spec, b->last_spec, "spec", err) < 0)
		return -1;
	if (id == b->m.default_spec_id && meta_spec_by_id(&b->m, id) != NULL)
		return 0;
	if (meta_spec_by_id(&b->m, id) == NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "cannot set default partition spec to unknown spec %" PRId64, id);
	b->m.default_spec_id = id;
	b->changed = true;
	return 0;
}

static int up_add_sort_order(struct build *b, const json_t *u, struct fl_err *err)
{
	struct meta_fields f = {0};
	json_t *order, *bound = NULL, *s, *fields;
	int64_t id = 1;
	size_t i;
	int rc = -1;

	if (req_typed(u, "sort-order", JSON_OBJECT, "an object", &order, err) < 0)
		return -1;
	fields = json_object_get(order, "fields");
	if (!json_is_array(fields))
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "sort-order: field 'fields' must be an array");
	b->has_last_order = true;
	if (json_array_size(fields) == 0) {
		/* unsorted is always order 0 */
		b->last_order = 0;
		if (meta_order_by_id(&b->m, 0) != NULL)
			return 0;
		if (json_array_append_new(b->m.sort_orders,
		                          json_pack("{sis[]}", "order-id", 0, "fields")) < 0)
			return nomem(err);
		b->changed = true;
		return 0;
	}
	if (bind_schema(b, "sort order", &f, err) < 0)
		return -1;
	if (meta_order_bind(order, &f, 0, "sort-order", &bound, err) < 0)
		goto out;
	json_array_foreach(b->m.sort_orders, i, s)
	{
		int64_t oid = json_integer_value(json_object_get(s, "order-id"));

		if (json_array_size(json_object_get(s, "fields")) > 0 &&
		    meta_order_same(bound, s)) {
			b->last_order = oid;
			rc = 0;
			goto out;
		}
		if (oid >= id)
			id = oid + 1;
	}
	if (meta_set_new(bound, "order-id", json_integer(id)) < 0 ||
	    json_array_append(b->m.sort_orders, bound) < 0) {
		nomem(err);
		goto out;
	}
	b->last_order = id;
	b->changed = true;
	rc = 0;
out:
	json_decref(bound);
	meta_fields_free(&f);
	return rc;
}

static int up_set_default_order(struct build *b, const json_t *u, struct fl_err *err)
{
	int64_t id;

	if (req_int(u, "sort-order-id", &id, err) < 0 ||
	    resolve_last(&id, b->has_last_order, b->last_order, "sort order", err) < 0)
		return -1;
	if (meta_order_by_id(&b->m, id) == NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "cannot set default sort order to unknown order %" PRId64, id);
	if (id == b->m.default_sort_order_id)
		return 0;
	b->m.default_sort_order_id = id;
	b->changed = true;
	return 0;
}

static int up_add_snapshot(struct build *b, const json_t *u, struct fl_err *err)
{
	json_t *snap, *copy;
	const json_t *parent;
	const char *op;
	int64_t id, seq = 0;
	char key[24];

	if (req_typed(u, "snapshot", JSON_OBJECT, "an object", &snap, err) < 0 ||
	    meta_snapshot_check(snap, b->m.format_version, "snapshot", err) < 0)
		return -1;
	id = json_integer_value(json_object_get(snap, "snapshot-id"));
	op = json_string_value(json_object_get(json_object_get(snap, "summary"), "operation"));
	if (op != NULL && strcmp(op, "append") != 0 && strcmp(op, "replace") != 0 &&
	    strcmp(op, "overwrite") != 0 && strcmp(op, "delete") != 0)
		return fl_err_set(
		        err, FL_ERR_BAD_REQUEST,
		        "snapshot %" PRId64
		        ": unknown operation '%.32s' (append, replace, overwrite or delete)",
		        id, op);
	if (json_array_size(b->m.schemas) == 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "cannot add snapshot %" PRId64 " before a schema is added", id);
	if (json_array_size(b->m.specs) == 0)
		return fl_err_set(
		        err, FL_ERR_BAD_REQUEST,
		        "cannot add snapshot %" PRId64 " before a partition spec is added", id);
	if (json_array_size(b->m.sort_orders) == 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "cannot add snapshot %" PRId64 " before a sort order is added",
		                  id);
	if (meta_snapshot_by_id(&b->m, id) != NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "snapshot %" PRId64 " already exists",
		                  id);
	if (b->m.format_version > 1) {
		if (!meta_int(json_object_get(snap, "sequence-number"), &seq))
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "snapshot %" PRId64
			                  ": field 'sequence-number' is required in v%d",
			                  id, b->m.format_version);
		parent = json_object_get(snap, "parent-snapshot-id");
		if (seq <= b->m.last_sequence_number && parent != NULL && !json_is_null(parent))
			return fl_err_set(
			        err, FL_ERR_COMMIT_FAILED,
			        "cannot add snapshot %" PRId64 " with sequence number %" PRId64
			        ", not above last sequence number %" PRId64 "; refresh and retry",
			        id, seq, b->m.last_sequence_number);
	}
	if (b->m.format_version >= 3) {
		int64_t first, added;

		if (!meta_int(json_object_get(snap, "first-row-id"), &first))
			return fl_err_set(
			        err, FL_ERR_BAD_REQUEST,
			        "snapshot %" PRId64 ": field 'first-row-id' is required in v3", id);
		if (first < b->m.next_row_id)
			return fl_err_set(err, FL_ERR_COMMIT_FAILED,
			                  "cannot add snapshot %" PRId64 ": first-row-id %" PRId64
			                  " is behind the table's next-row-id %" PRId64
			                  "; refresh and retry",
			                  id, first, b->m.next_row_id);
		if (!meta_int(json_object_get(snap, "added-rows"), &added))
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "snapshot %" PRId64
			                  ": field 'added-rows' is required in v3 (row lineage)",
			                  id);
		if (added > INT64_MAX - b->m.next_row_id)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "snapshot %" PRId64 ": 'added-rows' %" PRId64
			                  " overflows next-row-id",
			                  id, added);
		b->m.next_row_id += added;
	}
	if (b->m.format_version > 1) {
		b->m.last_sequence_number = seq; /* v1 has no sequence numbers: stays 0 */
		if (seq > b->m.seq_bound)
			b->m.seq_bound = seq;
	} else {
		b->m.seq_bound = INT64_MAX; /* whatever a v1 snapshot says is not checked */
	}
	copy = json_deep_copy(snap);
	if (copy != NULL) {
		const char *k;
		json_t *v, *tmp;

		/* optional members sent as null are left out, as Java writes them */
		json_object_foreach_safe(copy, tmp, k, v)
		{
			if (json_is_null(v))
				json_object_del(copy, k);
		}
	}
	snprintf(key, sizeof(key), "%" PRId64, id);
	if (copy == NULL || meta_snapshot_add(&b->m, copy, id) < 0 ||
	    json_object_set_new(b->added, key, json_true()) < 0) {
		json_decref(copy);
		return nomem(err);
	}
	json_decref(copy);
	b->changed = true;
	return 0;
}

static int up_set_snapshot_ref(struct build *b, const json_t *u, struct fl_err *err)
{
	static const char *const opt[] = {"min-snapshots-to-keep", "max-snapshot-age-ms",
	                                  "max-ref-age-ms"};
	const char *name, *type;
	json_t *ref, *snap;
	int64_t id;
	char key[24];

	if (req_str(u, "ref-name", &name, err) < 0 || req_str(u, "type", &type, err) < 0 ||
	    req_int(u, "snapshot-id", &id, err) < 0)
		return -1;
	if (name[0] == '\0')
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "field 'ref-name' must not be empty");
	/* Java reads the type case-insensitively and writes it in lower case */
	if (strcasecmp(type, "branch") == 0)
		type = "branch";
	else if (strcasecmp(type, "tag") == 0)
		type = "tag";
	ref = json_pack("{sIss}", "snapshot-id", (json_int_t)id, "type", type);
	if (ref == NULL)
		return nomem(err);
	for (size_t i = 0; i < 3; i++) {
		json_t *v = json_object_get(u, opt[i]);

		if (v != NULL && !json_is_null(v) && json_object_set(ref, opt[i], v) < 0) {
			json_decref(ref);
			return nomem(err);
		}
	}
	if (meta_ref_check(ref, name, err) < 0)
		goto fail;
	if (json_equal(ref, json_object_get(b->m.refs, name))) {
		json_decref(ref);
		return 0;
	}
	snap = meta_snapshot_by_id(&b->m, id);
	if (snap == NULL) {
		fl_err_set(err, FL_ERR_BAD_REQUEST, "cannot set %s to unknown snapshot %" PRId64,
		           name, id);
		goto fail;
	}
	if (strcmp(name, "main") == 0) {
		json_int_t ts;

		if (strcmp(type, "branch") != 0) {
			fl_err_set(err, FL_ERR_BAD_REQUEST,
			           "cannot set main to a tag; it must be a branch");
			goto fail;
		}
		snprintf(key, sizeof(key), "%" PRId64, id);
		/* rolling back to an older snapshot is logged at the time of the change */
		ts = json_object_get(b->added, key) != NULL
		             ? json_integer_value(json_object_get(snap, "timestamp-ms"))
		             : b->now_ms;
		b->m.current_snapshot_id = id;
		if (json_array_append_new(b->m.snapshot_log,
		                          json_pack("{sIsI}", "timestamp-ms", ts, "snapshot-id",
		                                    (json_int_t)id)) < 0 ||
		    json_array_append_new(b->main_sets, json_integer(id)) < 0) {
			nomem(err);
			goto fail;
		}
	}
	if (json_object_set_new(b->m.refs, name, ref) < 0)
		return nomem(err);
	b->changed = true;
	return 0;
fail:
	json_decref(ref);
	return -1;
}

/* Drops refs whose snapshot is gone (Java rewriteSnapshotsInternal). */
static int drop_dangling_refs(struct build *b)
{
	const char *k;
	json_t *v, *tmp;

	json_object_foreach_safe(b->m.refs, tmp, k, v)
	{
		if (meta_snapshot_by_id(&b->m,
		                        json_integer_value(json_object_get(v, "snapshot-id"))))
			continue;
		if (strcmp(k, "main") == 0)
			b->m.current_snapshot_id = -1;
		json_object_del(b->m.refs, k);
	}
	return 0;
}

static int up_remove_snapshots(struct build *b, const json_t *u, struct fl_err *err)
{
	json_t *ids, *v;
	size_t i;

	if (req_int_array(u, "snapshot-ids", &ids, err) < 0)
		return -1;
	json_array_foreach(ids, i, v)
	{
		if (!meta_snapshot_unindex(&b->m, json_integer_value(v)))
			continue;
		b->removed_snaps = true;
		b->changed = true;
	}
	if (!b->removed_snaps)
		return 0;
	/* one pass over the list, keeping what the index still holds */
	for (size_t n = json_array_size(b->m.snapshots), j = n; j-- > 0;) {
		if (meta_snapshot_by_id(&b->m, b->m.snap_ids[j]) ==
		    json_array_get(b->m.snapshots, j))
			continue;
		json_array_remove(b->m.snapshots, j);
		memmove(&b->m.snap_ids[j], &b->m.snap_ids[j + 1],
		        (--n - j) * sizeof(b->m.snap_ids[0]));
	}
	remove_where(b->m.statistics, "snapshot-id", ids, 0);
	remove_where(b->m.partition_statistics, "snapshot-id", ids, 0);
	return drop_dangling_refs(b);
}

static int up_remove_snapshot_ref(struct build *b, const json_t *u, struct fl_err *err)
{
	const char *name;

	if (req_str(u, "ref-name", &name, err) < 0)
		return -1;
	if (json_object_get(b->m.refs, name) == NULL)
		return 0;
	if (strcmp(name, "main") == 0)
		b->m.current_snapshot_id = -1;
	json_object_del(b->m.refs, name);
	b->changed = true;
	return 0;
}

static int up_set_location(struct build *b, const json_t *u, struct fl_err *err)
{
	const char *loc;
	size_t n;
	json_t *v;

	if (req_str(u, "location", &loc, err) < 0)
		return -1;
	n = strlen(loc);
	while (n > 0 && loc[n - 1] == '/')
		n--;
	if (n == 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "field 'location' must not be empty");
	if (b->m.location != NULL && json_string_length(b->m.location) == n &&
	    memcmp(json_string_value(b->m.location), loc, n) == 0)
		return 0;
	v = json_stringn(loc, n);
	if (v == NULL)
		return nomem(err);
	json_decref(b->m.location);
	b->m.location = v;
	b->changed = true;
	return 0;
}

static int up_set_properties(struct build *b, const json_t *u, struct fl_err *err)
{
	json_t *upd, *v;
	const char *k;

	if (req_typed(u, "updates", JSON_OBJECT, "an object", &upd, err) < 0)
		return -1;
	json_object_foreach(upd, k, v)
	{
		if (!json_is_string(v))
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "updates: value of '%s' must be a string", k);
	}
	json_object_foreach(upd, k, v)
	{
		if (strcmp(k, "format-version") == 0) {
			char *end;
			long long fv = strtoll(json_string_value(v), &end, 10);

			if (end == json_string_value(v) || *end != '\0')
				return fl_err_set(
				        err, FL_ERR_BAD_REQUEST,
				        "property 'format-version' must be a number, got '%.20s'",
				        json_string_value(v));
			if (upgrade_to(b, fv, err) < 0)
				return -1;
			continue;
		}
		if (meta_prop_reserved(k))
			continue;
		if (json_equal(json_object_get(b->m.properties, k), v))
			continue;
		if (json_object_set(b->m.properties, k, v) < 0)
			return nomem(err);
		b->changed = true;
	}
	return 0;
}

static int up_remove_properties(struct build *b, const json_t *u, struct fl_err *err)
{
	json_t *rm, *v;
	size_t i;

	if (req_typed(u, "removals", JSON_ARRAY, "an array", &rm, err) < 0)
		return -1;
	json_array_foreach(rm, i, v)
	{
		if (!json_is_string(v))
			return fl_err_set(err, FL_ERR_BAD_REQUEST, "removals[%zu] must be a string",
			                  i);
	}
	json_array_foreach(rm, i, v)
	{
		if (json_object_del(b->m.properties, json_string_value(v)) == 0)
			b->changed = true;
	}
	return 0;
}

static int set_stats(struct build *b, const json_t *u, bool partition, struct fl_err *err)
{
	const char *key = partition ? "partition-statistics" : "statistics";
	json_t *list = partition ? b->m.partition_statistics : b->m.statistics;
	json_t *st;

	if (req_typed(u, key, JSON_OBJECT, "an object", &st, err) < 0 ||
	    meta_stats_check(st, partition, key, err) < 0)
		return -1;
	/* one statistics file per snapshot: the new one replaces the old */
	remove_where(list, "snapshot-id", NULL,
	             json_integer_value(json_object_get(st, "snapshot-id")));
	if (json_array_append_new(list, json_deep_copy(st)) < 0)
		return nomem(err);
	b->changed = true;
	return 0;
}

static int up_set_statistics(struct build *b, const json_t *u, struct fl_err *err)
{
	return set_stats(b, u, false, err);
}

static int up_set_partition_statistics(struct build *b, const json_t *u, struct fl_err *err)
{
	return set_stats(b, u, true, err);
}

static int remove_stats(struct build *b, const json_t *u, json_t *list, struct fl_err *err)
{
	int64_t id;

	if (req_int(u, "snapshot-id", &id, err) < 0)
		return -1;
	if (remove_where(list, "snapshot-id", NULL, id) > 0)
		b->changed = true;
	return 0;
}

static int up_remove_statistics(struct build *b, const json_t *u, struct fl_err *err)
{
	return remove_stats(b, u, b->m.statistics, err);
}

static int up_remove_partition_statistics(struct build *b, const json_t *u, struct fl_err *err)
{
	return remove_stats(b, u, b->m.partition_statistics, err);
}

static int up_remove_specs(struct build *b, const json_t *u, struct fl_err *err)
{
	json_t *ids;

	if (req_int_array(u, "spec-ids", &ids, err) < 0)
		return -1;
	if (int_array_has(ids, b->m.default_spec_id))
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "cannot remove the default partition spec %" PRId64,
		                  b->m.default_spec_id);
	if (remove_where(b->m.specs, "spec-id", ids, 0) > 0)
		b->changed = true;
	return 0;
}

static int up_remove_schemas(struct build *b, const json_t *u, struct fl_err *err)
{
	json_t *ids;

	if (req_int_array(u, "schema-ids", &ids, err) < 0)
		return -1;
	if (b->m.current_schema_id != META_UNSET && int_array_has(ids, b->m.current_schema_id))
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "cannot remove the current schema %" PRId64,
		                  b->m.current_schema_id);
	if (remove_where(b->m.schemas, "schema-id", ids, 0) > 0)
		b->changed = true;
	return 0;
}

static json_t *key_by_id(const struct meta *m, const char *id, size_t *at)
{
	size_t i;
	json_t *k;

	json_array_foreach(m->encryption_keys, i, k)
	{
		const char *kid = json_string_value(json_object_get(k, "key-id"));

		if (kid != NULL && strcmp(kid, id) == 0) {
			*at = i;
			return k;
		}
	}
	return NULL;
}

static int up_add_key(struct build *b, const json_t *u, struct fl_err *err)
{
	json_t *key;
	size_t at;

	if (req_typed(u, "encryption-key", JSON_OBJECT, "an object", &key, err) < 0 ||
	    meta_key_check(key, "encryption-key", err) < 0)
		return -1;
	if (b->m.format_version < 3)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "encryption keys need format version 3 (table is v%d)",
		                  b->m.format_version);
	if (key_by_id(&b->m, json_string_value(json_object_get(key, "key-id")), &at) != NULL)
		return 0;
	if (json_array_append_new(b->m.encryption_keys, json_deep_copy(key)) < 0)
		return nomem(err);
	b->changed = true;
	return 0;
}

static int up_remove_key(struct build *b, const json_t *u, struct fl_err *err)
{
	const char *id;
	size_t at;

	if (req_str(u, "key-id", &id, err) < 0)
		return -1;
	if (key_by_id(&b->m, id, &at) == NULL)
		return 0;
	json_array_remove(b->m.encryption_keys, at);
	b->changed = true;
	return 0;
}

static const struct {
	const char *action;
	int (*fn)(struct build *, const json_t *, struct fl_err *);
} actions[] = {
        {"assign-uuid", up_assign_uuid},
        {"upgrade-format-version", up_upgrade},
        {"add-schema", up_add_schema},
        {"set-current-schema", up_set_current_schema},
        {"add-spec", up_add_spec},
        {"set-default-spec", up_set_default_spec},
        {"add-sort-order", up_add_sort_order},
        {"set-default-sort-order", up_set_default_order},
        {"add-snapshot", up_add_snapshot},
        {"set-snapshot-ref", up_set_snapshot_ref},
        {"remove-snapshots", up_remove_snapshots},
        {"remove-snapshot-ref", up_remove_snapshot_ref},
        {"set-location", up_set_location},
        {"set-properties", up_set_properties},
        {"remove-properties", up_remove_properties},
        {"set-statistics", up_set_statistics},
        {"remove-statistics", up_remove_statistics},
        {"set-partition-statistics", up_set_partition_statistics},
        {"remove-partition-statistics", up_remove_partition_statistics},
        {"remove-partition-specs", up_remove_specs},
        {"remove-schemas", up_remove_schemas},
        {"add-encryption-key", up_add_key},
        {"remove-encryption-key", up_remove_key},
};

static int apply_one(struct build *b, const json_t *u, size_t i, struct fl_err *err)
{
	const char *action;

	if (!json_is_object(u))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "updates[%zu] must be an object", i);
	action = json_string_value(json_object_get(u, "action"));
	if (action == NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "updates[%zu]: missing required string field 'action'", i);
	for (size_t j = 0; j < sizeof(actions) / sizeof(actions[0]); j++) {
		if (strcmp(action, actions[j].action) != 0)
			continue;
		if (actions[j].fn(b, u, err) < 0)
			return fl_err_prefix(err, "updates[%zu] %s", i, action);
		return 0;
	}
	return fl_err_set(err, FL_ERR_BAD_REQUEST, "updates[%zu]: unknown update action '%.64s'", i,
	                  action);
}

/* Java updateSnapshotLog: snapshots that were main only in the middle of
 * this change leave the log; a removed snapshot cuts the history before it
 * (a gap would misstate which snapshot was current). */
static int fix_snapshot_log(struct build *b, struct fl_err *err)
{
	json_t *log = b->m.snapshot_log, *keep, *e, *v;
	bool intermediate = false;
	size_t i;

	json_array_foreach(b->main_sets, i, v)
	{
		char key[24];

		snprintf(key, sizeof(key), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		if (json_object_get(b->added, key) != NULL &&
		    json_integer_value(v) != b->m.current_snapshot_id)
			intermediate = true;
	}
	if (!intermediate && !b->removed_snaps)
		return 0;
	keep = json_array();
	if (keep == NULL)
		return nomem(err);
	json_array_foreach(log, i, e)
	{
		int64_t id = json_integer_value(json_object_get(e, "snapshot-id"));
		char key[24];

		snprintf(key, sizeof(key), "%" PRId64, id);
		if (meta_snapshot_by_id(&b->m, id) != NULL) {
			if (json_object_get(b->added, key) != NULL &&
			    id != b->m.current_snapshot_id && int_array_has(b->main_sets, id))
				continue;
			if (json_array_append(keep, e) < 0) {
				json_decref(keep);
				return nomem(err);
			}
		} else if (b->removed_snaps) {
			json_array_clear(keep);
		}
	}
	json_decref(b->m.snapshot_log);
	b->m.snapshot_log = keep;
	if (b->m.current_snapshot_id >= 0) {
		e = json_array_get(keep, json_array_size(keep) - 1);
		if (e == NULL || json_integer_value(json_object_get(e, "snapshot-id")) !=
		                         b->m.current_snapshot_id)
			return fl_err_set(
			        err, FL_ERR_BAD_REQUEST,
			        "invalid snapshot log: the latest entry is not the current snapshot");
	}
	return 0;
}

static int64_t previous_versions_max(const struct meta *m)
{
	const char *s = json_string_value(
	        json_object_get(m->properties, "write.metadata.previous-versions-max"));
	char *end;
	long long v;

	if (s == NULL)
		return META_PREVIOUS_VERSIONS_DEFAULT;
	v = strtoll(s, &end, 10);
	if (end == s || *end != '\0')
		return META_PREVIOUS_VERSIONS_DEFAULT;
	return v < 1 ? 1 : v;
}

static int add_previous_file(struct build *b, const char *base_location, int64_t base_updated,
                             struct fl_err *err)
{
	int64_t max = previous_versions_max(&b->m);

	while ((int64_t)json_array_size(b->m.metadata_log) >= max)
		json_array_remove(b->m.metadata_log, 0);
	if (json_array_append_new(b->m.metadata_log,
	                          json_pack("{sIss}", "timestamp-ms", (json_int_t)base_updated,
	                                    "metadata-file", base_location)) < 0)
		return nomem(err);
	return 0;
}

/* The format version a from-empty build starts with: the first
 * upgrade-format-version update (Java CatalogHandlers.create). */
static int initial_version(const json_t *updates)
{
	size_t i;
	json_t *u;

	json_array_foreach(updates, i, u)
	{
		const char *a = json_string_value(json_object_get(u, "action"));
		const json_t *v = json_object_get(u, "format-version");

		if (a != NULL && strcmp(a, "upgrade-format-version") == 0 && json_is_integer(v) &&
		    json_integer_value(v) >= 1 &&
		    json_integer_value(v) <= CAT_META_MAX_FORMAT_VERSION)
			return (int)json_integer_value(v);
	}
	return CAT_META_DEFAULT_FORMAT_VERSION;
}

/* A format upgrade raises the rules the base's snapshots were checked by
 * (v2 needs a summary and a manifest list): they are checked again, so the
 * upgrade is refused here rather than the table's next load failing. */
static int recheck_snapshots(const struct build *b, int from, struct fl_err *err)
{
	const json_t *s;
	size_t i;

	json_array_foreach(b->m.snapshots, i, s)
	{
		char what[96];

		snprintf(what, sizeof(what), "cannot upgrade from v%d to v%d: snapshot %" PRId64,
		         from, b->m.format_version,
		         (int64_t)json_integer_value(json_object_get(s, "snapshot-id")));
		if (meta_snapshot_check(s, b->m.format_version, what, err) < 0)
			return -1;
	}
	return 0;
}

static int apply(const json_t *base, bool built, const struct cat_meta_ids *ids,
                 const char *base_location, const json_t *updates, int64_t now_ms,
                 size_t max_updates, json_t **out, struct cat_meta_ids **out_ids, bool *changed,
                 struct fl_err *err)
{
	struct build b;
	json_t *u, *res = NULL;
	int64_t base_updated = 0;
	int base_version = 0;
	size_t i;
	int rc = -1;

	memset(&b, 0, sizeof(b));
	if (out_ids != NULL)
		*out_ids = NULL;
	if (!json_is_array(updates))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "'updates' must be an array");
	if (json_array_size(updates) > max_updates)
		return fl_err_set(
		        err, FL_ERR_TOO_LARGE,
		        "the commit has %zu updates; the limit is %zu (max-commit-updates)",
		        json_array_size(updates), max_updates);
	if (base != NULL) {
		if (meta_load(base, built, ids, &b.m, err) < 0)
			return fl_err_prefix(err, "base metadata");
		base_updated = b.m.last_updated_ms;
		base_version = b.m.format_version;
	} else {
		if (meta_init_empty(&b.m, initial_version(updates), err) < 0)
			return -1;
		b.from_empty = true;
		b.changed = true;
	}
	b.now_ms = now_ms;
	b.added = json_object();
	b.main_sets = json_array();
	if (b.added == NULL || b.main_sets == NULL) {
		nomem(err);
		goto out;
	}
	json_array_foreach(updates, i, u)
	{
		if (apply_one(&b, u, i, err) < 0)
			goto out;
	}
	if (!b.changed) {
		res = json_deep_copy(base);
		if (res == NULL) {
			nomem(err);
			goto out;
		}
		*out = res;
		*changed = false;
		rc = 0;
		goto out;
	}
	if (b.from_empty) {
		char id[FL_UUID_STR];

		/* Java's empty builder has current schema 0 and a random uuid */
		if (b.m.current_schema_id == META_UNSET && meta_schema_by_id(&b.m, 0) != NULL)
			b.m.current_schema_id = 0;
		if (b.m.uuid == NULL) {
			fl_uuid_v4(id);
			b.m.uuid = json_string(id);
			if (b.m.uuid == NULL) {
				nomem(err);
				goto out;
			}
		}
	}
	if (base != NULL && b.m.format_version != base_version &&
	    recheck_snapshots(&b, base_version, err) < 0)
		goto out;
	if (fix_snapshot_log(&b, err) < 0)
		goto out;
	b.m.last_updated_ms = now_ms;
	if (base != NULL && base_location != NULL &&
	    add_previous_file(&b, base_location, base_updated, err) < 0)
		goto out;
	if (meta_check(&b.m, err) < 0) {
		fl_err_prefix(err, "invalid table metadata after the updates");
		goto out;
	}
	res = meta_emit(&b.m);
	if (res == NULL) {
		nomem(err);
		goto out;
	}
	*out = res;
	*changed = true;
	if (out_ids != NULL)
		*out_ids = meta_ids_of(&b.m); /* NULL: the next build reads them */
	rc = 0;
out:
	json_decref(b.added);
	json_decref(b.main_sets);
	meta_free(&b.m);
	return rc;
}

int cat_meta_apply(const json_t *base, const char *base_location, const json_t *updates,
                   int64_t now_ms, size_t max_updates, json_t **out, bool *changed,
                   struct fl_err *err)
{
	return apply(base, false, NULL, base_location, updates, now_ms, max_updates, out, NULL,
	             changed, err);
}

int cat_meta_apply_built(const json_t *base, const char *base_location, const json_t *updates,
                         int64_t now_ms, size_t max_updates, json_t **out, bool *changed,
                         struct fl_err *err)
{
	return apply(base, true, NULL, base_location, updates, now_ms, max_updates, out, NULL,
	             changed, err);
}

int cat_meta_apply_kept(const json_t *base, const struct cat_meta_ids *ids,
                        const char *base_location, const json_t *updates, int64_t now_ms,
                        size_t max_updates, json_t **out, struct cat_meta_ids **out_ids,
                        bool *changed, struct fl_err *err)
{
	return apply(base, true, ids, base_location, updates, now_ms, max_updates, out, out_ids,
	             changed, err);
}
