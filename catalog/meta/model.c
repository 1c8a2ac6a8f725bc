/* model.c - decoding, checking and writing table metadata documents.
 *
 * meta_load turns a document (any format version 1-3) into struct meta,
 * checking every field's presence and type per version (table spec, "Table
 * Metadata Fields"); meta_check verifies the cross-references; meta_emit
 * writes the document back in the order and shape of Java's
 * TableMetadataParser.toJson.  The public accessors and cat_meta_validate
 * live here too.
 *
 * Invariants: a loaded model owns deep copies of every list (the snapshot
 * objects in them are shared with the document, never changed); the snapshot
 * index (snap_slots) maps each snapshot id to its object in `snapshots`;
 * current_snapshot_id is -1 when there is none, whatever the document used
 * (-1, null or absence). */
#include "json.h"
#include "meta_int.h"
#include "tablemeta.h"
#include "uuid.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int meta_set_new(json_t *obj, const char *key, json_t *v)
{
	if (v == NULL)
		return -1;
	return json_object_set_new(obj, key, v);
}

void meta_free(struct meta *m)
{
	json_t **all[] = {&m->uuid,
	                  &m->location,
	                  &m->schemas,
	                  &m->specs,
	                  &m->sort_orders,
	                  &m->properties,
	                  &m->encryption_keys,
	                  &m->refs,
	                  &m->snapshots,
	                  &m->statistics,
	                  &m->partition_statistics,
	                  &m->snapshot_log,
	                  &m->metadata_log};

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		json_decref(*all[i]);
		*all[i] = NULL;
	}
	free(m->snap_slots);
	m->snap_slots = NULL;
	m->snap_cap = m->snap_n = 0;
	free(m->snap_ids);
	m->snap_ids = NULL;
	m->snap_ids_cap = 0;
}

int meta_init_empty(struct meta *m, int format_version, struct fl_err *err)
{
	memset(m, 0, sizeof(*m));
	m->format_version = format_version;
	m->current_schema_id = META_UNSET;
	m->last_partition_id = META_PARTITION_ID_START - 1;
	m->current_snapshot_id = -1;
	m->schemas = json_array();
	m->specs = json_array();
	m->sort_orders = json_array();
	m->properties = json_object();
	m->encryption_keys = json_array();
	m->refs = json_object();
	m->snapshots = json_array();
	m->statistics = json_array();
	m->partition_statistics = json_array();
	m->snapshot_log = json_array();
	m->metadata_log = json_array();
	if (!m->schemas || !m->specs || !m->sort_orders || !m->properties || !m->encryption_keys ||
	    !m->refs || !m->snapshots || !m->statistics || !m->partition_statistics ||
	    !m->snapshot_log || !m->metadata_log) {
		meta_free(m);
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	}
	return 0;
}

json_t *meta_schema_by_id(const struct meta *m, int64_t id)
{
	return fl_json_find_int(m->schemas, "schema-id", id);
}

json_t *meta_spec_by_id(const struct meta *m, int64_t id)
{
	return fl_json_find_int(m->specs, "spec-id", id);
}

json_t *meta_order_by_id(const struct meta *m, int64_t id)
{
	return fl_json_find_int(m->sort_orders, "order-id", id);
}

/* ---- the snapshot index ----
 *
 * A table's snapshots grow with every commit and each commit's builder
 * indexes all of them again, so the index is a flat table of integers
 * (one allocation, no keys to print or copy) at most 3/4 full. */

static size_t snap_home(const struct meta *m, int64_t id)
{
	uint64_t h = (uint64_t)id * UINT64_C(0x9E3779B97F4A7C15);

	return (size_t)(h ^ (h >> 29)) & (m->snap_cap - 1);
}

/* The slot holding id, or the empty one where it would go. */
static struct meta_snap_slot *snap_find(const struct meta *m, int64_t id)
{
	size_t i = snap_home(m, id);

	while (m->snap_slots[i].snap != NULL && m->snap_slots[i].id != id)
		i = (i + 1) & (m->snap_cap - 1);
	return &m->snap_slots[i];
}

/* Room for want ids, the table still at most 3/4 full. */
static int snap_reserve(struct meta *m, size_t want)
{
	struct meta_snap_slot *old = m->snap_slots;
	size_t n = m->snap_cap, cap = n > 0 ? n : 64;

	if (want == 0)
		return 0;
	while (4 * want > 3 * cap)
		cap *= 2;
	if (cap == n)
		return 0;
	m->snap_slots = calloc(cap, sizeof(*m->snap_slots));
	if (m->snap_slots == NULL) {
		m->snap_slots = old;
		return -1;
	}
	m->snap_cap = cap;
	for (size_t i = 0; i < n; i++)
		if (old[i].snap != NULL)
			*snap_find(m, old[i].id) = old[i];
	free(old);
	return 0;
}

json_t *meta_snapshot_by_id(const struct meta *m, int64_t id)
{
	return m->snap_n > 0 ? snap_find(m, id)->snap : NULL;
}

bool meta_snapshot_unindex(struct meta *m, int64_t id)
{
	struct meta_snap_slot *s = m->snap_n > 0 ? snap_find(m, id) : NULL;
	size_t mask = m->snap_cap - 1, i, j;

	if (s == NULL || s->snap == NULL)
		return false;
	/* Deletion without tombstones: each later slot of the run whose home
	 * is not cyclically in (i, j], so that it may not sit past the hole,
	 * moves back into it. */
	i = (size_t)(s - m->snap_slots);
	for (j = (i + 1) & mask; m->snap_slots[j].snap != NULL; j = (j + 1) & mask) {
		size_t k = snap_home(m, m->snap_slots[j].id);

		if (i <= j ? (k <= i || k > j) : (k <= i && k > j)) {
			m->snap_slots[i] = m->snap_slots[j];
			i = j;
		}
	}
	m->snap_slots[i].snap = NULL;
	m->snap_n--;
	return true;
}

/* Room for want ids in snap_ids. */
static int ids_reserve(struct meta *m, size_t want)
{
	size_t cap = m->snap_ids_cap > 0 ? m->snap_ids_cap : 16;
	int64_t *ids;

	if (want <= m->snap_ids_cap)
		return 0;
	while (cap < want)
		cap *= 2;
	ids = realloc(m->snap_ids, cap * sizeof(*ids));
	if (ids == NULL)
		return -1;
	m->snap_ids = ids;
	m->snap_ids_cap = cap;
	return 0;
}

int meta_snapshot_add(struct meta *m, json_t *snap, int64_t id)
{
	size_t n = json_array_size(m->snapshots);
	struct meta_snap_slot *s;

	if (ids_reserve(m, n + 1) < 0 || snap_reserve(m, m->snap_n + 1) < 0)
		return -1;
	if (json_array_append(m->snapshots, snap) < 0)
		return -1;
	m->snap_ids[n] = id;
	s = snap_find(m, id);
	if (s->snap == NULL)
		m->snap_n++;
	s->id = id;
	s->snap = snap;
	return 0;
}

/* ---- decoding ---- */

/* Typed required/optional members with messages naming the field. */
static int get_int(const json_t *o, const char *key, bool required, const char *what, int64_t *out,
                   struct fl_err *err)
{
	const json_t *v = json_object_get(o, key);

	if (v == NULL || json_is_null(v)) {
		if (required)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "%s: missing required field '%s'", what, key);
		return 0;
	}
	if (!meta_int(v, out))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "%s: field '%s' must be an integer",
		                  what, key);
	return 1;
}

/* get_int for ids, which are Java ints: 0 to 2^31-1.  Bounding them keeps
 * the builder's id + 1 arithmetic defined. */
static int get_id(const json_t *o, const char *key, bool required, const char *what, int64_t *out,
                  struct fl_err *err)
{
	int r = get_int(o, key, required, what, out, err);

	if (r == 1 && (*out < 0 || *out > INT32_MAX))
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "%s: field '%s' is %" PRId64 ", out of range (0 to %" PRId32 ")",
		                  what, key, *out, INT32_MAX);
	return r;
}

static int get_typed(const json_t *o, const char *key, bool required, json_type type,
                     const char *tname, const char *what, json_t **out, struct fl_err *err)
{
	json_t *v = json_object_get(o, key);

	if (v == NULL || json_is_null(v)) {
		if (required)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "%s: missing required field '%s'", what, key);
		return 0;
	}
	if (json_typeof(v) != type)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "%s: field '%s' must be %s", what, key,
		                  tname);
	*out = v;
	return 1;
}

static int str_map(const json_t *o, const char *what, struct fl_err *err)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)o, k, v)
	{
		if (!json_is_string(v))
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "%s: value of '%s' must be a string", what, k);
	}
	return 0;
}

static int load_schemas(const json_t *doc, struct meta *m, struct fl_err *err)
{
	json_t *arr = NULL, *s;
	size_t i;
	int r;

	r = get_typed(doc, "schemas", m->format_version > 1, JSON_ARRAY, "an array", "metadata",
	              &arr, err);
	if (r < 0)
		return -1;
	if (r == 0) {
		/* v1: only the current schema, as "schema" */
		json_t *one;
		int64_t id = 0;

		if (get_typed(doc, "schema", true, JSON_OBJECT, "an object", "metadata", &one,
		              err) < 0 ||
		    get_id(one, "schema-id", false, "metadata: schema", &id, err) < 0)
			return -1;
		if (json_array_append_new(m->schemas, meta_schema_normalize(one, id)) < 0)
			return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		m->current_schema_id = id;
	} else {
		if (get_id(doc, "current-schema-id", true, "metadata", &m->current_schema_id, err) <
		    0)
			return -1;
		json_array_foreach(arr, i, s)
		{
			char what[48];
			int64_t id;

			snprintf(what, sizeof(what), "metadata: schemas[%zu]", i);
			if (!json_is_object(s))
				return fl_err_set(err, FL_ERR_BAD_REQUEST, "%s must be an object",
				                  what);
			if (get_id(s, "schema-id", true, what, &id, err) < 0)
				return -1;
			if (meta_schema_by_id(m, id) != NULL)
				return fl_err_set(err, FL_ERR_BAD_REQUEST,
				                  "metadata: schema id %" PRId64
				                  " is used more than once",
				                  id);
			if (json_array_append_new(m->schemas, meta_schema_normalize(s, id)) < 0)
				return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		}
	}
	json_array_foreach(m->schemas, i, s)
	{
		struct meta_fields f;
		char what[48];

		snprintf(what, sizeof(what), "metadata: schema %" PRId64,
		         (int64_t)json_integer_value(json_object_get(s, "schema-id")));
		if (meta_schema_index(s, m->format_version, what, &f, err) < 0)
			return -1;
		meta_fields_free(&f);
	}
	return 0;
}

static int load_specs(const json_t *doc, struct meta *m, struct fl_err *err)
{
	json_t *arr = NULL, *s, *norm;
	int64_t max = META_PARTITION_ID_START - 1, smax;
	size_t i;
	int r;

	r = get_typed(doc, "partition-specs", m->format_version > 1, JSON_ARRAY, "an array",
	              "metadata", &arr, err);
	if (r < 0)
		return -1;
	if (r == 0) {
		json_t *fields, *wrap;
		int64_t next = META_PARTITION_ID_START;

		if (get_typed(doc, "partition-spec", true, JSON_ARRAY, "an array", "metadata",
		              &fields, err) < 0)
			return -1;
		wrap = json_pack("{sO}", "fields", fields);
		if (wrap == NULL)
			return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		r = meta_spec_bind(wrap, NULL, 0, &next, &max, "metadata: partition-spec", &norm,
		                   err);
		json_decref(wrap);
		if (r < 0)
			return -1;
		if (json_array_append_new(m->specs, norm) < 0)
			return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		m->default_spec_id = 0;
	} else {
		if (get_id(doc, "default-spec-id", true, "metadata", &m->default_spec_id, err) < 0)
			return -1;
		json_array_foreach(arr, i, s)
		{
			char what[48];
			int64_t id, next = META_PARTITION_ID_START;

			snprintf(what, sizeof(what), "metadata: partition-specs[%zu]", i);
			if (!json_is_object(s))
				return fl_err_set(err, FL_ERR_BAD_REQUEST, "%s must be an object",
				                  what);
			if (get_id(s, "spec-id", true, what, &id, err) < 0)
				return -1;
			if (meta_spec_by_id(m, id) != NULL)
				return fl_err_set(err, FL_ERR_BAD_REQUEST,
				                  "metadata: partition spec id %" PRId64
				                  " is used more than once",
				                  id);
			/* v1 writers may omit partition field ids: Java numbers them from 1000 */
			if (meta_spec_bind(s, NULL, id, m->format_version == 1 ? &next : NULL,
			                   &smax, what, &norm, err) < 0)
				return -1;
			if (json_array_append_new(m->specs, norm) < 0)
				return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
			if (smax > max)
				max = smax;
		}
	}
	r = get_id(doc, "last-partition-id", m->format_version > 1, "metadata",
	           &m->last_partition_id, err);
	if (r < 0)
		return -1;
	if (r == 0)
		m->last_partition_id = max;
	return 0;
}

static int load_orders(const json_t *doc, struct meta *m, struct fl_err *err)
{
	json_t *arr = NULL, *s, *norm;
	size_t i;
	int r;

	r = get_typed(doc, "sort-orders", m->format_version > 1, JSON_ARRAY, "an array", "metadata",
	              &arr, err);
	if (r < 0)
		return -1;
	if (r == 0) {
		m->default_sort_order_id = 0;
		if (json_array_append_new(m->sort_orders,
		                          json_pack("{sis[]}", "order-id", 0, "fields")) < 0)
			return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		return 0;
	}
	if (get_id(doc, "default-sort-order-id", true, "metadata", &m->default_sort_order_id, err) <
	    0)
		return -1;
	json_array_foreach(arr, i, s)
	{
		char what[48];
		int64_t id;

		snprintf(what, sizeof(what), "metadata: sort-orders[%zu]", i);
		if (!json_is_object(s))
			return fl_err_set(err, FL_ERR_BAD_REQUEST, "%s must be an object", what);
		if (get_id(s, "order-id", true, what, &id, err) < 0)
			return -1;
		if (meta_order_by_id(m, id) != NULL)
			return fl_err_set(
			        err, FL_ERR_BAD_REQUEST,
			        "metadata: sort order id %" PRId64 " is used more than once", id);
		if (meta_order_bind(s, NULL, id, what, &norm, err) < 0)
			return -1;
		if (json_array_append_new(m->sort_orders, norm) < 0)
			return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	}
	return 0;
}

int meta_snapshot_check(const json_t *s, int format_version, const char *what, struct fl_err *err)
{
	int64_t v;
	json_t *o;
	int r;

	if (!json_is_object(s))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "%s must be an object", what);
	if (get_int(s, "snapshot-id", true, what, &v, err) < 0 ||
	    get_int(s, "timestamp-ms", true, what, &v, err) < 0 ||
	    get_int(s, "parent-snapshot-id", false, what, &v, err) < 0 ||
	    get_id(s, "schema-id", false, what, &v, err) < 0)
		return -1;
	r = get_int(s, "sequence-number", false, what, &v, err);
	if (r < 0)
		return -1;
	if (r == 1 && v < 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "%s: 'sequence-number' must not be negative", what);
	r = get_int(s, "first-row-id", false, what, &v, err);
	if (r < 0)
		return -1;
	if (r == 1 && v < 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "%s: 'first-row-id' must not be negative", what);
	r = get_int(s, "added-rows", false, what, &v, err);
	if (r < 0)
		return -1;
	if (r == 1 && v < 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "%s: 'added-rows' must not be negative",
		                  what);
	r = get_typed(s, "manifest-list", false, JSON_STRING, "a string", what, &o, err);
	if (r < 0)
		return -1;
	if (r == 0) {
		/* v1 snapshots may list manifests inline instead */
		r = get_typed(s, "manifests", false, JSON_ARRAY, "an array", what, &o, err);
		if (r < 0)
			return -1;
		if (r == 0 || format_version > 1)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "%s: missing required field 'manifest-list'", what);
	}
	r = get_typed(s, "summary", format_version > 1, JSON_OBJECT, "an object", what, &o, err);
	if (r < 0)
		return -1;
	if (r == 1) {
		json_t *op;

		if (str_map(o, what, err) < 0)
			return -1;
		op = json_object_get(o, "operation");
		if (op == NULL)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "%s: summary: missing required field 'operation'", what);
	}
	r = get_typed(s, "key-id", false, JSON_STRING, "a string", what, &o, err);
	return r < 0 ? -1 : 0;
}

int meta_ref_check(const json_t *ref, const char *name, struct fl_err *err)
{
	char what[200];
	const char *type;
	int64_t v;
	int r;

	snprintf(what, sizeof(what), "ref %s", name);
	if (!json_is_object(ref))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "%s must be an object", what);
	if (get_int(ref, "snapshot-id", true, what, &v, err) < 0)
		return -1;
	type = json_string_value(json_object_get(ref, "type"));
	if (type == NULL || (strcmp(type, "branch") != 0 && strcmp(type, "tag") != 0))
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "%s: field 'type' must be \"branch\" or \"tag\"", what);
	for (int i = 0; i < 3; i++) {
		static const char *const keys[] = {"min-snapshots-to-keep", "max-snapshot-age-ms",
		                                   "max-ref-age-ms"};

		r = get_int(ref, keys[i], false, what, &v, err);
		if (r < 0)
			return -1;
		if (r == 1 && v <= 0)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "%s: '%s' must be greater than 0", what, keys[i]);
		if (r == 1 && i < 2 && strcmp(type, "tag") == 0)
			return fl_err_set(err, FL_ERR_BAD_REQUEST, "%s: tags do not support '%s'",
			                  what, keys[i]);
	}
	return 0;
}

int meta_stats_check(const json_t *s, bool partition, const char *what, struct fl_err *err)
{
	int64_t v;
	json_t *o;

	if (!json_is_object(s))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "%s must be an object", what);
	if (get_int(s, "snapshot-id", true, what, &v, err) < 0 ||
	    get_typed(s, "statistics-path", true, JSON_STRING, "a string", what, &o, err) < 0 ||
	    get_int(s, "file-size-in-bytes", true, what, &v, err) < 0)
		return -1;
	if (partition)
		return 0;
	if (get_int(s, "file-footer-size-in-bytes", true, what, &v, err) < 0 ||
	    get_typed(s, "blob-metadata", true, JSON_ARRAY, "an array", what, &o, err) < 0)
		return -1;
	return 0;
}

int meta_key_check(const json_t *k, const char *what, struct fl_err *err)
{
	json_t *o;

	if (!json_is_object(k))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "%s must be an object", what);
	if (get_typed(k, "key-id", true, JSON_STRING, "a string", what, &o, err) < 0 ||
	    get_typed(k, "encrypted-key-metadata", true, JSON_STRING, "a string", what, &o, err) <
	            0 ||
	    get_typed(k, "encrypted-by-id", false, JSON_STRING, "a string", what, &o, err) < 0)
		return -1;
	if (get_typed(k, "properties", false, JSON_OBJECT, "an object", what, &o, err) == 1)
		return str_map(o, what, err);
	return 0;
}

/* Copies an optional array member after checking each element (check ==
 * NULL: a built document's, taken as they are).  The copy is shallow, as
 * the snapshots are shared: the builder adds and removes whole entries of
 * these lists (the snapshot and metadata logs, the statistics, the
 * encryption keys) and never modifies one in place, and doc is not
 * modified either.  A deep copy of a 1,000-entry snapshot log was a third
 * of a commit's build. */
static int load_list(const json_t *doc, const char *key, json_t **dst,
                     int (*check)(const json_t *, const char *, struct fl_err *),
                     struct fl_err *err)
{
	json_t *arr = NULL, *v;
	size_t i;
	int r = get_typed(doc, key, false, JSON_ARRAY, "an array", "metadata", &arr, err);

	if (r <= 0)
		return r;
	json_array_foreach(arr, i, v)
	{
		char what[64];

		/* The message names the element's index, written only when it
		 * fails: a table's logs grow with every commit. */
		if (check == NULL || check(v, "metadata: an element", err) == 0)
			continue;
		snprintf(what, sizeof(what), "metadata: %s[%zu]", key, i);
		fl_err_clear(err);
		if (check(v, what, err) == 0)
			fl_err_set(err, FL_ERR_INTERNAL, "%s: inconsistent check", what);
		return -1;
	}
	json_decref(*dst);
	*dst = json_copy(arr);
	return *dst ? 0 : fl_err_set(err, FL_ERR_NOMEM, "out of memory");
}

static int check_stats(const json_t *v, const char *what, struct fl_err *err)
{
	return meta_stats_check(v, false, what, err);
}

static int check_pstats(const json_t *v, const char *what, struct fl_err *err)
{
	return meta_stats_check(v, true, what, err);
}

static int check_snaplog(const json_t *v, const char *what, struct fl_err *err)
{
	int64_t x;

	if (!json_is_object(v))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "%s must be an object", what);
	if (get_int(v, "timestamp-ms", true, what, &x, err) < 0 ||
	    get_int(v, "snapshot-id", true, what, &x, err) < 0)
		return -1;
	return 0;
}

static int check_metalog(const json_t *v, const char *what, struct fl_err *err)
{
	int64_t x;
	json_t *o;

	if (!json_is_object(v))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "%s must be an object", what);
	if (get_int(v, "timestamp-ms", true, what, &x, err) < 0 ||
	    get_typed(v, "metadata-file", true, JSON_STRING, "a string", what, &o, err) < 0)
		return -1;
	return 0;
}

/* The snapshot ids of a built document, in order. */
struct cat_meta_ids {
	size_t n;
	int64_t id[];
};

struct cat_meta_ids *meta_ids_of(const struct meta *m)
{
	size_t n = json_array_size(m->snapshots);
	struct cat_meta_ids *ids = malloc(sizeof(*ids) + n * sizeof(ids->id[0]));

	if (ids != NULL) {
		ids->n = n;
		if (n > 0)
			memcpy(ids->id, m->snap_ids, n * sizeof(ids->id[0]));
	}
	return ids;
}

void cat_meta_ids_free(void *ids)
{
	free(ids);
}

bool cat_meta_ids_match(const struct cat_meta_ids *ids, const json_t *doc)
{
	const json_t *arr = json_object_get(doc, "snapshots");

	if (ids == NULL || ids->n != json_array_size(arr))
		return false;
	for (size_t i = 0; i < ids->n; i++)
		if (ids->id[i] !=
		    json_integer_value(json_object_get(json_array_get(arr, i), "snapshot-id")))
			return false;
	return true;
}

/* Whether ids can stand for the ids of arr's snapshots: as many, and the
 * first and last as those snapshots say (a cheap check that they were
 * returned with this document, not another). */
static bool ids_fit(const struct cat_meta_ids *ids, const json_t *arr)
{
	size_t n = json_array_size(arr);

	return ids != NULL && ids->n == n &&
	       (n == 0 || (ids->id[0] == json_integer_value(json_object_get(json_array_get(arr, 0),
	                                                                    "snapshot-id")) &&
	                   ids->id[n - 1] == json_integer_value(json_object_get(
	                                             json_array_get(arr, n - 1), "snapshot-id"))));
}

static int load_snapshots(const json_t *doc, bool built, const struct cat_meta_ids *ids,
                          struct meta *m, struct fl_err *err)
{
	json_t *arr = NULL, *s, *refs = NULL, *v;
	const char *k;
	size_t i;
	int r;

	r = get_typed(doc, "snapshots", false, JSON_ARRAY, "an array", "metadata", &arr, err);
	if (r < 0)
		return -1;
	if (snap_reserve(m, json_array_size(arr)) < 0 || ids_reserve(m, json_array_size(arr)) < 0)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	if (!built || !ids_fit(ids, arr))
		ids = NULL;
	/* A table's snapshots are most of its metadata and grow with every
	 * commit: they are checked, and shared with doc rather than copied (a
	 * snapshot is never modified once added: the builder only adds and
	 * removes whole snapshots, and doc is not modified either).  A built
	 * document's were each checked when they joined it. */
	json_array_foreach(arr, i, s)
	{
		if (!built &&
		    meta_snapshot_check(s, m->format_version, "metadata: a snapshot", err) < 0) {
			char what[48];

			/* Checked again for the message naming its index. */
			snprintf(what, sizeof(what), "metadata: snapshots[%zu]", i);
			fl_err_clear(err);
			if (meta_snapshot_check(s, m->format_version, what, err) == 0)
				fl_err_set(err, FL_ERR_INTERNAL, "%s: inconsistent check", what);
			return -1;
		}
		int64_t id = ids != NULL ? ids->id[i]
		                         : json_integer_value(json_object_get(s, "snapshot-id"));

		if (meta_snapshot_by_id(m, id))
			return fl_err_set(
			        err, FL_ERR_BAD_REQUEST,
			        "metadata: snapshot id %" PRId64 " is used more than once", id);
		if (meta_snapshot_add(m, s, id) < 0)
			return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	}
	r = get_typed(doc, "current-snapshot-id", false, JSON_INTEGER, "an integer or null",
	              "metadata", &v, err);
	if (r < 0)
		return -1;
	m->current_snapshot_id = r == 1 && json_integer_value(v) >= 0 ? json_integer_value(v) : -1;
	r = get_typed(doc, "refs", false, JSON_OBJECT, "an object", "metadata", &refs, err);
	if (r < 0)
		return -1;
	if (r == 1) {
		json_object_foreach(refs, k, v)
		{
			if (meta_ref_check(v, k, err) < 0)
				return -1;
		}
		json_decref(m->refs);
		m->refs = json_deep_copy(refs);
		if (m->refs == NULL)
			return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	} else if (m->current_snapshot_id >= 0) {
		/* documents older than refs: main is implied (Java TableMetadataParser) */
		if (meta_set_new(m->refs, "main",
		                 json_pack("{sIss}", "snapshot-id",
		                           (json_int_t)m->current_snapshot_id, "type", "branch")) <
		    0)
			return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	}
	return 0;
}

int meta_load(const json_t *doc, bool built, const struct cat_meta_ids *ids, struct meta *m,
              struct fl_err *err)
{
	int64_t fv = 0;
	json_t *v = NULL;
	int r;

	if (!json_is_object(doc))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "table metadata must be a JSON object");
	if (get_int(doc, "format-version", true, "metadata", &fv, err) < 0)
		return -1;
	if (fv < 1 || fv > CAT_META_MAX_FORMAT_VERSION)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "metadata: unsupported format-version %" PRId64
		                  " (supported: 1 to %d)",
		                  fv, CAT_META_MAX_FORMAT_VERSION);
	if (meta_init_empty(m, (int)fv, err) < 0)
		return -1;
	r = get_typed(doc, "table-uuid", fv > 1, JSON_STRING, "a string", "metadata", &v, err);
	if (r < 0)
		goto fail;
	if (r == 1) {
		if (!fl_uuid_valid(json_string_value(v))) {
			fl_err_set(err, FL_ERR_BAD_REQUEST, "metadata: 'table-uuid' is not a UUID");
			goto fail;
		}
		m->uuid = json_incref(v);
	}
	if (get_typed(doc, "location", true, JSON_STRING, "a string", "metadata", &v, err) < 0)
		goto fail;
	m->location = json_incref(v);
	if (get_int(doc, "last-sequence-number", fv > 1, "metadata", &m->last_sequence_number,
	            err) < 0 ||
	    get_int(doc, "last-updated-ms", true, "metadata", &m->last_updated_ms, err) < 0 ||
	    get_id(doc, "last-column-id", true, "metadata", &m->last_column_id, err) < 0 ||
	    get_int(doc, "next-row-id", fv > 2, "metadata", &m->next_row_id, err) < 0)
		goto fail;
	if (fv == 1)
		m->last_sequence_number = 0;
	if (m->last_sequence_number < 0 || m->next_row_id < 0) {
		fl_err_set(err, FL_ERR_BAD_REQUEST,
		           "metadata: last-sequence-number and next-row-id must not be negative");
		goto fail;
	}
	if (load_schemas(doc, m, err) < 0 || load_specs(doc, m, err) < 0 ||
	    load_orders(doc, m, err) < 0)
		goto fail;
	r = get_typed(doc, "properties", false, JSON_OBJECT, "an object", "metadata", &v, err);
	if (r < 0)
		goto fail;
	if (r == 1) {
		if (str_map(v, "metadata: properties", err) < 0)
			goto fail;
		json_decref(m->properties);
		m->properties = json_deep_copy(v);
	}
	if (load_snapshots(doc, built, ids, m, err) < 0 ||
	    load_list(doc, "statistics", &m->statistics, check_stats, err) < 0 ||
	    load_list(doc, "partition-statistics", &m->partition_statistics, check_pstats, err) <
	            0 ||
	    load_list(doc, "snapshot-log", &m->snapshot_log, built ? NULL : check_snaplog, err) <
	            0 ||
	    load_list(doc, "metadata-log", &m->metadata_log, built ? NULL : check_metalog, err) <
	            0 ||
	    load_list(doc, "encryption-keys", &m->encryption_keys, meta_key_check, err) < 0)
		goto fail;
	if (m->properties == NULL)
		goto nomem;
	/* v1 has no sequence numbers to bound: a v1 snapshot's stray one is
	 * checked when the table moves to v2. */
	m->seq_bound = built && fv > 1 ? m->last_sequence_number : INT64_MAX;
	return 0;
nomem:
	fl_err_set(err, FL_ERR_NOMEM, "out of memory");
fail:
	meta_free(m);
	return -1;
}

/* ---- integrity ---- */

static int64_t spec_max_field_id(const json_t *spec)
{
	int64_t max = META_PARTITION_ID_START - 1;
	size_t i;
	json_t *f;

	json_array_foreach(json_object_get(spec, "fields"), i, f)
	{
		int64_t id = json_integer_value(json_object_get(f, "field-id"));

		if (id > max)
			max = id;
	}
	return max;
}

int meta_check(const struct meta *m, struct fl_err *err)
{
	struct meta_fields cur = {0};
	const json_t *schema, *spec, *order, *main_ref;
	const char *k;
	json_t *v;
	size_t i;
	int rc = -1;

	if (m->format_version > 1 && m->uuid == NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "metadata: table-uuid is required in v%d", m->format_version);
	if (m->location == NULL || json_string_length(m->location) == 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "metadata: location is required");
	if (m->current_schema_id == META_UNSET)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "metadata: no current schema was set");
	schema = meta_schema_by_id(m, m->current_schema_id);
	if (schema == NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "metadata: current-schema-id %" PRId64 " is not in schemas",
		                  m->current_schema_id);
	json_array_foreach(m->schemas, i, v)
	{
		struct meta_fields f;
		char what[48];

		snprintf(what, sizeof(what), "schema %" JSON_INTEGER_FORMAT,
		         json_integer_value(json_object_get(v, "schema-id")));
		if (meta_schema_index(v, m->format_version, what, &f, err) < 0)
			return -1;
		if (f.highest > m->last_column_id) {
			fl_err_set(err, FL_ERR_BAD_REQUEST,
			           "metadata: last-column-id %" PRId64 " is below field id %" PRId64
			           " of %s",
			           m->last_column_id, f.highest, what);
			meta_fields_free(&f);
			return -1;
		}
		meta_fields_free(&f);
	}
	spec = meta_spec_by_id(m, m->default_spec_id);
	if (spec == NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "metadata: default-spec-id %" PRId64 " is not in partition-specs",
		                  m->default_spec_id);
	json_array_foreach(m->specs, i, v)
	{
		if (spec_max_field_id(v) > m->last_partition_id)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "metadata: last-partition-id %" PRId64
			                  " is below a field id of spec %" JSON_INTEGER_FORMAT,
			                  m->last_partition_id,
			                  json_integer_value(json_object_get(v, "spec-id")));
	}
	order = meta_order_by_id(m, m->default_sort_order_id);
	if (order == NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "metadata: default-sort-order-id %" PRId64
		                  " is not in sort-orders",
		                  m->default_sort_order_id);
	if (meta_schema_index(schema, m->format_version, "current schema", &cur, err) < 0)
		return -1;
	if (meta_spec_check(spec, &cur, "default partition spec", err) < 0 ||
	    meta_order_check(order, &cur, "default sort order", err) < 0)
		goto out;
	if (m->format_version < 3 && json_array_size(m->encryption_keys) > 0) {
		fl_err_set(err, FL_ERR_BAD_REQUEST,
		           "metadata: encryption-keys need format version 3 (table is v%d)",
		           m->format_version);
		goto out;
	}
	/* Each snapshot, unless none can be above the last number. */
	if (m->format_version > 1 && m->seq_bound > m->last_sequence_number) {
		json_array_foreach(m->snapshots, i, v)
		{
			int64_t seq = json_integer_value(json_object_get(v, "sequence-number"));

			if (seq > m->last_sequence_number) {
				fl_err_set(err, FL_ERR_BAD_REQUEST,
				           "metadata: snapshot %" JSON_INTEGER_FORMAT
				           " has sequence number %" PRId64
				           " above last-sequence-number %" PRId64,
				           json_integer_value(json_object_get(v, "snapshot-id")),
				           seq, m->last_sequence_number);
				goto out;
			}
		}
	}
	if (m->current_snapshot_id >= 0 && meta_snapshot_by_id(m, m->current_snapshot_id) == NULL) {
		fl_err_set(err, FL_ERR_BAD_REQUEST,
		           "metadata: current-snapshot-id %" PRId64 " is not in snapshots",
		           m->current_snapshot_id);
		goto out;
	}
	json_object_foreach(m->refs, k, v)
	{
		int64_t id = json_integer_value(json_object_get(v, "snapshot-id"));

		if (meta_snapshot_by_id(m, id) == NULL) {
			fl_err_set(err, FL_ERR_BAD_REQUEST,
			           "metadata: ref %s points at snapshot %" PRId64
			           ", which does not exist",
			           k, id);
			goto out;
		}
	}
	main_ref = json_object_get(m->refs, "main");
	if (main_ref != NULL) {
		int64_t id = json_integer_value(json_object_get(main_ref, "snapshot-id"));

		if (strcmp(json_string_value(json_object_get(main_ref, "type")), "branch") != 0) {
			fl_err_set(err, FL_ERR_BAD_REQUEST, "metadata: ref main must be a branch");
			goto out;
		}
		if (id != m->current_snapshot_id) {
			fl_err_set(err, FL_ERR_BAD_REQUEST,
			           "metadata: branch main is at snapshot %" PRId64
			           " but current-snapshot-id is %" PRId64,
			           id, m->current_snapshot_id);
			goto out;
		}
	} else if (m->current_snapshot_id >= 0) {
		fl_err_set(err, FL_ERR_BAD_REQUEST,
		           "metadata: current-snapshot-id is %" PRId64
		           " but there is no main branch",
		           m->current_snapshot_id);
		goto out;
	}
	rc = 0;
out:
	meta_fields_free(&cur);
	return rc;
}

/* ---- writing ---- */

/* meta_load copies these arrays, not their elements; the builder appends
 * to them and drops from them (apply.c) but never changes an element. */
const char *const cat_meta_shared_arrays[] = {"snapshots", "snapshot-log", "metadata-log", NULL};

json_t *meta_emit(const struct meta *m)
{
	const json_t *schema = meta_schema_by_id(m, m->current_schema_id);
	const json_t *spec = meta_spec_by_id(m, m->default_spec_id);
	json_t *o = json_object();
	bool ok;

	if (o == NULL)
		return NULL;
	ok = meta_set_new(o, "format-version", json_integer(m->format_version)) == 0;
	if (m->uuid != NULL)
		ok = ok && json_object_set(o, "table-uuid", m->uuid) == 0;
	ok = ok && json_object_set(o, "location", m->location) == 0;
	if (m->format_version > 1)
		ok = ok && meta_set_new(o, "last-sequence-number",
		                        json_integer(m->last_sequence_number)) == 0;
	ok = ok && meta_set_new(o, "last-updated-ms", json_integer(m->last_updated_ms)) == 0;
	ok = ok && meta_set_new(o, "last-column-id", json_integer(m->last_column_id)) == 0;
	if (m->format_version == 1 && schema != NULL)
		ok = ok && json_object_set(o, "schema", (json_t *)schema) == 0;
	ok = ok && meta_set_new(o, "current-schema-id", json_integer(m->current_schema_id)) == 0;
	ok = ok && json_object_set(o, "schemas", m->schemas) == 0;
	if (m->format_version == 1 && spec != NULL)
		ok = ok &&
		     json_object_set(o, "partition-spec", json_object_get(spec, "fields")) == 0;
	ok = ok && meta_set_new(o, "default-spec-id", json_integer(m->default_spec_id)) == 0;
	ok = ok && json_object_set(o, "partition-specs", m->specs) == 0;
	ok = ok && meta_set_new(o, "last-partition-id", json_integer(m->last_partition_id)) == 0;
	ok = ok &&
	     meta_set_new(o, "default-sort-order-id", json_integer(m->default_sort_order_id)) == 0;
	ok = ok && json_object_set(o, "sort-orders", m->sort_orders) == 0;
	ok = ok && json_object_set(o, "properties", m->properties) == 0;
	if (m->current_snapshot_id >= 0)
		ok = ok && meta_set_new(o, "current-snapshot-id",
		                        json_integer(m->current_snapshot_id)) == 0;
	else if (m->format_version >= 3)
		ok = ok && json_object_set_new(o, "current-snapshot-id", json_null()) == 0;
	else
		ok = ok && meta_set_new(o, "current-snapshot-id", json_integer(-1)) == 0;
	if (m->format_version >= 3)
		ok = ok && meta_set_new(o, "next-row-id", json_integer(m->next_row_id)) == 0;
	if (json_array_size(m->encryption_keys) > 0)
		ok = ok && json_object_set(o, "encryption-keys", m->encryption_keys) == 0;
	ok = ok && json_object_set(o, "refs", m->refs) == 0;
	ok = ok && json_object_set(o, "snapshots", m->snapshots) == 0;
	ok = ok && json_object_set(o, "statistics", m->statistics) == 0;
	ok = ok && json_object_set(o, "partition-statistics", m->partition_statistics) == 0;
	ok = ok && json_object_set(o, "snapshot-log", m->snapshot_log) == 0;
	ok = ok && json_object_set(o, "metadata-log", m->metadata_log) == 0;
	if (!ok) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* ---- public ---- */

int cat_meta_validate(const json_t *metadata, struct fl_err *err)
{
	struct meta m;
	int rc;

	if (meta_load(metadata, false, NULL, &m, err) < 0)
		return -1;
	rc = meta_check(&m, err);
	meta_free(&m);
	return rc;
}

int cat_meta_format_version(const json_t *metadata)
{
	return (int)json_integer_value(json_object_get(metadata, "format-version"));
}

const char *cat_meta_location(const json_t *metadata)
{
	return json_string_value(json_object_get(metadata, "location"));
}

const char *cat_meta_uuid(const json_t *metadata)
{
	return json_string_value(json_object_get(metadata, "table-uuid"));
}

int64_t cat_meta_current_snapshot_id(const json_t *metadata)
{
	const json_t *v = json_object_get(metadata, "current-snapshot-id");

	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return -1;
	return json_integer_value(v);
}

const json_t *cat_meta_current_summary(const json_t *metadata)
{
	int64_t id = cat_meta_current_snapshot_id(metadata);
	const json_t *snaps = json_object_get(metadata, "snapshots");

	if (id < 0)
		return NULL;
	/* From the newest: the current snapshot is almost always the one the
	 * last commit added, and a table's snapshots number in the thousands.
	 * (Ids are unique in a validated document.) */
	for (size_t i = json_array_size(snaps); i-- > 0;) {
		const json_t *s = json_array_get(snaps, i);

		if (json_integer_value(json_object_get(s, "snapshot-id")) == id) {
			const json_t *sum = json_object_get(s, "summary");

			return json_is_object(sum) ? sum : NULL;
		}
	}
	return NULL;
}

void cat_meta_metadata_file_name(int64_t version, char out[CAT_META_FILE_NAME_MAX])
{
	char u[FL_UUID_STR];

	fl_uuid_v4(u);
	snprintf(out, CAT_META_FILE_NAME_MAX, "%05" PRId64 "-%s.metadata.json", version, u);
}
