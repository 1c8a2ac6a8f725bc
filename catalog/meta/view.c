/* view.c - the view-metadata builder (Iceberg view spec, "View Metadata",
 * format version 1), following the Java reference ViewMetadata.Builder:
 *
 *   {"view-uuid", "format-version": 1, "location", "schemas": [...],
 *    "current-version-id", "versions": [...], "version-log": [...],
 *    "properties": {...}}
 *
 * Schema ids start at 0 and version ids at 1; a schema or version equal to
 * one already present reuses its id (Java reuseOrCreateNew*Id), and -1 in an
 * update means the one last added in this change.  Setting the current
 * version appends {timestamp-ms, version-id} to the version log.  After a
 * change, at most version.history.num-entries versions (default 10; at least
 * 1) are kept: the current one and the newest others; the version log keeps
 * its entries after the last one that names a version no longer kept. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "json.h"
#include "meta_int.h"
#include "viewmeta.h"

#define VIEW_MAX_REPRESENTATIONS 64 /* SQL dialects of one view version */

#define NONE INT64_MIN

/* The state of one build: the document and the ids last added. */
struct vb {
	json_t *m;
	int64_t last_schema, last_version;
};

static int nomem(struct fl_err *err)
{
	return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
}

static int64_t max_id(const json_t *arr, const char *key, int64_t start)
{
	const json_t *v;
	size_t i;
	int64_t hi = start;

	json_array_foreach(arr, i, v)
	{
		int64_t id = json_integer_value(json_object_get(v, key));

		if (id > hi)
			hi = id;
	}
	return hi;
}

/* Adds schema (checked) and sets b->last_schema to its id. */
static int add_schema(struct vb *b, const json_t *schema, const char *what, struct fl_err *err)
{
	json_t *schemas = json_object_get(b->m, "schemas"), *v;
	struct meta_fields f = {0};
	size_t i;

	if (!json_is_object(schema))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "%s: schema must be an object", what);
	if (meta_schema_index(schema, 2, what, &f, err) != 0)
		return -1;
	meta_fields_free(&f);
	json_array_foreach(schemas, i, v)
	{
		if (meta_schema_same(v, schema)) {
			b->last_schema = json_integer_value(json_object_get(v, "schema-id"));
			return 0;
		}
	}
	b->last_schema = max_id(schemas, "schema-id", -1) + 1;
	if (json_array_append_new(schemas, meta_schema_normalize(schema, b->last_schema)) != 0)
		return nomem(err);
	return 0;
}

/* Checks a ViewVersion's shape (ids are the builder's to assign). */
static int version_check(const json_t *v, const char *what, struct fl_err *err)
{
	json_t *summary = NULL, *reps = NULL, *dns = NULL, *r;
	const char *s = NULL;
	int64_t n = 0;
	size_t i, j;

	if (!json_is_object(v))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "%s must be an object", what);
	if (fl_json_get_int(v, "version-id", true, what, &n, err) != 0 ||
	    fl_json_get_int(v, "timestamp-ms", true, what, &n, err) != 0 ||
	    fl_json_get_int(v, "schema-id", true, what, &n, err) != 0 ||
	    fl_json_get_obj(v, "summary", true, what, &summary, err) != 0 ||
	    fl_json_check_str_map(summary, what, err) != 0 ||
	    fl_json_get_arr(v, "representations", true, what, &reps, err) != 0 ||
	    fl_json_get_arr(v, "default-namespace", true, what, &dns, err) != 0 ||
	    fl_json_get_str(v, "default-catalog", false, what, &s, err) != 0)
		return -1;
	if (json_array_size(reps) == 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "%s: representations must not be empty",
		                  what);
	/* One per dialect, each checked against the others. */
	if (json_array_size(reps) > VIEW_MAX_REPRESENTATIONS)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "%s: %zu representations, over the limit of %d", what,
		                  json_array_size(reps), VIEW_MAX_REPRESENTATIONS);
	json_array_foreach(dns, i, r)
	{
		if (!json_is_string(r))
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "%s: default-namespace[%zu] must be a string", what, i);
	}
	json_array_foreach(reps, i, r)
	{
		const char *type = NULL, *sql = NULL, *dialect = NULL;
		char rwhat[160];

		snprintf(rwhat, sizeof(rwhat), "%s: representations[%zu]", what, i);
		if (!json_is_object(r))
			return fl_err_set(err, FL_ERR_BAD_REQUEST, "%s must be an object", rwhat);
		if (fl_json_get_str(r, "type", true, rwhat, &type, err) != 0)
			return -1;
		if (strcmp(type, "sql") != 0)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "%s: representations[%zu] has unknown type '%.40s'", what,
			                  i, type);
		if (fl_json_get_str(r, "sql", true, rwhat, &sql, err) != 0 ||
		    fl_json_get_str(r, "dialect", true, rwhat, &dialect, err) != 0)
			return -1;
		for (j = 0; j < i; j++)
			if (strcasecmp(dialect, json_string_value(json_object_get(
			                                json_array_get(reps, j), "dialect"))) == 0)
				return fl_err_set(
				        err, FL_ERR_BAD_REQUEST,
				        "%s: more than one representation for dialect '%.40s'",
				        what, dialect);
	}
	return 0;
}

/* Two versions are the same view when all but their id and time match. */
static bool version_same(const json_t *a, const json_t *b)
{
	static const char *const keys[] = {"schema-id", "summary", "representations",
	                                   "default-namespace", "default-catalog"};

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const json_t *x = json_object_get(a, keys[i]), *y = json_object_get(b, keys[i]);

		if ((x == NULL) != (y == NULL) || (x != NULL && !json_equal(x, y)))
			return false;
	}
	return true;
}

/* Adds a version (schema-id -1 = the last added schema) and sets
 * b->last_version to its id. */
static int add_version(struct vb *b, const json_t *version, const char *what, struct fl_err *err)
{
	json_t *versions = json_object_get(b->m, "versions"), *copy, *v;
	int64_t sid;
	size_t i;

	if (version_check(version, what, err) != 0)
		return -1;
	sid = json_integer_value(json_object_get(version, "schema-id"));
	if (sid == -1) {
		if (b->last_schema == NONE)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "%s: schema-id -1 but no schema was added in this change",
			                  what);
		sid = b->last_schema;
	}
	if (fl_json_find_int(json_object_get(b->m, "schemas"), "schema-id", sid) == NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "%s: schema %lld does not exist", what,
		                  (long long)sid);
	copy = json_deep_copy(version);
	if (copy == NULL || json_object_set_new(copy, "schema-id", json_integer(sid)) != 0) {
		json_decref(copy);
		return nomem(err);
	}
	json_array_foreach(versions, i, v)
	{
		if (version_same(v, copy)) {
			b->last_version = json_integer_value(json_object_get(v, "version-id"));
			json_decref(copy);
			return 0;
		}
	}
	b->last_version = max_id(versions, "version-id", 0) + 1;
	if (json_object_set_new(copy, "version-id", json_integer(b->last_version)) != 0 ||
	    json_array_append_new(versions, copy) != 0)
		return nomem(err);
	return 0;
}

/* Makes version id (-1 = the last added) current. */
static int set_current(struct vb *b, int64_t id, const char *what, struct fl_err *err)
{
	const json_t *v;

	if (id == -1) {
		if (b->last_version == NONE)
			return fl_err_set(
			        err, FL_ERR_BAD_REQUEST,
			        "%s: view-version-id -1 but no version was added in this change",
			        what);
		id = b->last_version;
	}
	v = fl_json_find_int(json_object_get(b->m, "versions"), "version-id", id);
	if (v == NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "%s: view version %lld does not exist",
		                  what, (long long)id);
	if (json_integer_value(json_object_get(b->m, "current-version-id")) == id &&
	    json_array_size(json_object_get(b->m, "version-log")) > 0)
		return 0;
	if (json_object_set_new(b->m, "current-version-id", json_integer(id)) != 0 ||
	    json_array_append_new(json_object_get(b->m, "version-log"),
	                          json_pack("{s:O, s:I}", "timestamp-ms",
	                                    json_object_get(v, "timestamp-ms"), "version-id",
	                                    (json_int_t)id)) != 0)
		return nomem(err);
	return 0;
}

static int set_properties(struct vb *b, const json_t *props, const char *what, struct fl_err *err)
{
	const char *k;
	json_t *v;

	if (fl_json_check_str_map(props, what, err) != 0)
		return -1;
	json_object_foreach((json_t *)props, k, v)
	{
		if (json_object_set(json_object_get(b->m, "properties"), k, v) != 0)
			return nomem(err);
	}
	return 0;
}

/* The version.history.num-entries property: default 10, at least 1. */
static int history_size(const json_t *m, int64_t *out, struct fl_err *err)
{
	const char *s = json_string_value(
	        json_object_get(json_object_get(m, "properties"), "version.history.num-entries"));
	char *end = NULL;
	long long n;

	*out = 10;
	if (s == NULL)
		return 0;
	errno = 0;
	n = strtoll(s, &end, 10);
	if (*s == '\0' || *end != '\0' || errno != 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "view property version.history.num-entries must be an integer, "
		                  "not '%.40s'",
		                  s);
	*out = n < 1 ? 1 : n;
	return 0;
}

/* True when version id is in kept (n ids, ascending). */
static bool kept_has(const int64_t *kept, size_t n, int64_t id)
{
	return bsearch(&id, kept, n, sizeof(*kept), meta_cmp_i64) != NULL;
}

/* Trims versions and the version log to version.history.num-entries: the
 * current version and the newest others (version ids only grow).  Sorted,
 * so that a commit of thousands of versions costs n log n, not n * max. */
static int trim_history(struct vb *b, struct fl_err *err)
{
	json_t *versions = json_object_get(b->m, "versions"), *log, *keep = NULL, *vs = NULL, *v;
	int64_t max, cur = json_integer_value(json_object_get(b->m, "current-version-id"));
	int64_t *ids = NULL, *kept = NULL;
	size_t n = json_array_size(versions), nkept = 0, i;
	int rc = -1;

	if (history_size(b->m, &max, err) != 0)
		return -1;
	if (n <= (size_t)max)
		return 0;
	ids = malloc(n * sizeof(*ids));
	kept = malloc(((size_t)max < n ? (size_t)max : n) * sizeof(*kept));
	if (ids == NULL || kept == NULL)
		goto nomem;
	json_array_foreach(versions, i, v)
	{
		ids[i] = json_integer_value(json_object_get(v, "version-id"));
	}
	qsort(ids, n, sizeof(*ids), meta_cmp_i64);
	kept[nkept++] = cur;
	for (i = n; i-- > 0 && nkept < (size_t)max;)
		if (ids[i] != cur && ids[i] != kept[nkept - 1])
			kept[nkept++] = ids[i];
	qsort(kept, nkept, sizeof(*kept), meta_cmp_i64);
	vs = json_array();
	keep = json_array();
	if (vs == NULL || keep == NULL)
		goto nomem;
	json_array_foreach(versions, i, v)
	{
		if (kept_has(kept, nkept, json_integer_value(json_object_get(v, "version-id"))) &&
		    json_array_append(vs, v) != 0)
			goto nomem;
	}
	if (json_object_set(b->m, "versions", vs) != 0)
		goto nomem;
	log = json_object_get(b->m, "version-log");
	json_array_foreach(log, i, v)
	{
		if (!kept_has(kept, nkept, json_integer_value(json_object_get(v, "version-id"))))
			json_array_clear(keep);
		else if (json_array_append(keep, v) != 0)
			goto nomem;
	}
	if (json_object_set(b->m, "version-log", keep) != 0)
		goto nomem;
	rc = 0;
	goto out;
nomem:
	nomem(err);
out:
	json_decref(vs);
	json_decref(keep);
	free(ids);
	free(kept);
	return rc;
}

int cat_viewmeta_create(const json_t *req, const char *location, const char *uuid, json_t **out,
                        struct fl_err *err)
{
	static const char what[] = "CreateViewRequest";
	json_t *schema = NULL, *version = NULL, *props = NULL, *copy = NULL;
	struct vb b = {NULL, NONE, NONE};

	if (fl_json_get_obj(req, "schema", true, what, &schema, err) != 0 ||
	    fl_json_get_obj(req, "view-version", true, what, &version, err) != 0 ||
	    fl_json_get_obj(req, "properties", false, what, &props, err) != 0)
		return -1;
	b.m = json_pack("{s:s, s:i, s:s, s:[], s:i, s:[], s:[], s:{}}", "view-uuid", uuid,
	                "format-version", 1, "location", location, "schemas", "current-version-id",
	                -1, "versions", "version-log", "properties");
	if (b.m == NULL)
		return nomem(err);
	if (add_schema(&b, schema, "CreateViewRequest schema", err) != 0)
		goto fail;
	/* The version's schema is the request's schema, whatever id it names. */
	copy = json_deep_copy(version);
	if (copy == NULL || json_object_set_new(copy, "schema-id", json_integer(-1)) != 0) {
		nomem(err);
		goto fail;
	}
	if (add_version(&b, copy, "CreateViewRequest view-version", err) != 0 ||
	    set_current(&b, -1, what, err) != 0 ||
	    (props != NULL &&
	     set_properties(&b, props, "CreateViewRequest properties", err) != 0) ||
	    trim_history(&b, err) != 0)
		goto fail;
	json_decref(copy);
	*out = b.m;
	return 0;
fail:
	json_decref(copy);
	json_decref(b.m);
	return -1;
}

int cat_viewmeta_check_requirements(const json_t *base, const json_t *requirements,
                                    struct fl_err *err)
{
	const json_t *r;
	size_t i;

	if (!json_is_array(requirements))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "requirements must be an array");
	json_array_foreach(requirements, i, r)
	{
		const char *type = NULL, *uuid = NULL, *have;

		if (!json_is_object(r))
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "requirements[%zu] must be an object", i);
		char rwhat[64];

		snprintf(rwhat, sizeof(rwhat), "requirements[%zu]", i);
		if (fl_json_get_str(r, "type", true, rwhat, &type, err) != 0)
			return -1;
		if (strcmp(type, "assert-view-uuid") != 0)
			return fl_err_set(
			        err, FL_ERR_BAD_REQUEST,
			        "requirements[%zu]: unknown view requirement type '%.60s'", i,
			        type);
		snprintf(rwhat, sizeof(rwhat), "requirements[%zu] (assert-view-uuid)", i);
		if (fl_json_get_str(r, "uuid", true, rwhat, &uuid, err) != 0)
			return -1;
		have = json_string_value(json_object_get(base, "view-uuid"));
		if (have == NULL || strcasecmp(have, uuid) != 0)
			return fl_err_set(
			        err, FL_ERR_COMMIT_FAILED,
			        "requirement assert-view-uuid failed: view uuid is %.40s, "
			        "expected %.40s",
			        have ? have : "(none)", uuid);
	}
	return 0;
}

/* Applies one update at index i. */
static int apply_one(struct vb *b, const json_t *u, size_t i, struct fl_err *err)
{
	const char *action = NULL, *s = NULL;
	json_t *o = NULL, *a = NULL, *v;
	int64_t n = 0;
	char what[64];
	size_t k;

	if (!json_is_object(u))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "updates[%zu] must be an object", i);
	snprintf(what, sizeof(what), "updates[%zu]", i);
	if (fl_json_get_str(u, "action", true, what, &action, err) != 0)
		return -1;
	snprintf(what, sizeof(what), "updates[%zu] (%.30s)", i, action);
	if (strcmp(action, "assign-uuid") == 0) {
		const char *have = json_string_value(json_object_get(b->m, "view-uuid"));

		if (fl_json_get_str(u, "uuid", true, what, &s, err) != 0)
			return -1;
		if (have != NULL && strcasecmp(have, s) != 0)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "%s: cannot reassign the view uuid %.40s to %.40s", what,
			                  have, s);
		return 0;
	}
	if (strcmp(action, "upgrade-format-version") == 0) {
		if (fl_json_get_int(u, "format-version", true, what, &n, err) != 0)
			return -1;
		if (n != 1)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "%s: unsupported view format version %lld (only 1)", what,
			                  (long long)n);
		return 0;
	}
	if (strcmp(action, "add-schema") == 0) {
		if (fl_json_get_obj(u, "schema", true, what, &o, err) != 0)
			return -1;
		return add_schema(b, o, what, err);
	}
	if (strcmp(action, "set-location") == 0) {
		size_t len;

		if (fl_json_get_str(u, "location", true, what, &s, err) != 0)
			return -1;
		len = strlen(s);
		while (len > 0 && s[len - 1] == '/')
			len--;
		if (len == 0)
			return fl_err_set(err, FL_ERR_BAD_REQUEST, "%s: location must not be empty",
			                  what);
		if (json_object_set_new(b->m, "location", json_stringn(s, len)) != 0)
			return nomem(err);
		return 0;
	}
	if (strcmp(action, "set-properties") == 0) {
		if (fl_json_get_obj(u, "updates", true, what, &o, err) != 0)
			return -1;
		return set_properties(b, o, what, err);
	}
	if (strcmp(action, "remove-properties") == 0) {
		if (fl_json_get_arr(u, "removals", true, what, &a, err) != 0)
			return -1;
		json_array_foreach(a, k, v)
		{
			if (!json_is_string(v))
				return fl_err_set(err, FL_ERR_BAD_REQUEST,
				                  "%s: removals must be an array of strings", what);
			json_object_del(json_object_get(b->m, "properties"), json_string_value(v));
		}
		return 0;
	}
	if (strcmp(action, "add-view-version") == 0) {
		if (fl_json_get_obj(u, "view-version", true, what, &o, err) != 0)
			return -1;
		return add_version(b, o, what, err);
	}
	if (strcmp(action, "set-current-view-version") == 0) {
		if (fl_json_get_int(u, "view-version-id", true, what, &n, err) != 0)
			return -1;
		return set_current(b, n, what, err);
	}
	return fl_err_set(err, FL_ERR_BAD_REQUEST,
	                  "updates[%zu]: unknown view update action '%.60s'", i, action);
}

int cat_viewmeta_apply(const json_t *base, const json_t *updates, json_t **out, struct fl_err *err)
{
	struct vb b = {NULL, NONE, NONE};
	const json_t *u;
	size_t i;

	if (!json_is_array(updates))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "updates must be an array");
	b.m = json_deep_copy(base);
	if (b.m == NULL)
		return nomem(err);
	json_array_foreach(updates, i, u)
	{
		if (apply_one(&b, u, i, err) != 0) {
			json_decref(b.m);
			return -1;
		}
	}
	if (trim_history(&b, err) != 0) {
		json_decref(b.m);
		return -1;
	}
	*out = b.m;
	return 0;
}

int cat_viewmeta_validate(const json_t *m, struct fl_err *err)
{
	static const char what[] = "ViewMetadata";
	json_t *schemas = NULL, *versions = NULL, *log = NULL, *props = NULL, *v;
	const char *s = NULL;
	int64_t n = 0, cur = 0;
	size_t i;

	if (fl_json_get_str(m, "view-uuid", true, what, &s, err) != 0 ||
	    fl_json_get_int(m, "format-version", true, what, &n, err) != 0 ||
	    fl_json_get_str(m, "location", true, what, &s, err) != 0 ||
	    fl_json_get_int(m, "current-version-id", true, what, &cur, err) != 0 ||
	    fl_json_get_arr(m, "schemas", true, what, &schemas, err) != 0 ||
	    fl_json_get_arr(m, "versions", true, what, &versions, err) != 0 ||
	    fl_json_get_arr(m, "version-log", true, what, &log, err) != 0 ||
	    fl_json_get_obj(m, "properties", false, what, &props, err) != 0 ||
	    (props != NULL && fl_json_check_str_map(props, what, err) != 0))
		return -1;
	if (n != 1)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "%s: unsupported view format version %lld (only 1)", what,
		                  (long long)n);
	json_array_foreach(schemas, i, v)
	{
		struct meta_fields f = {0};

		if (fl_json_get_int(v, "schema-id", true, "ViewMetadata schema", &n, err) != 0 ||
		    meta_schema_index(v, 2, "ViewMetadata schema", &f, err) != 0)
			return -1;
		meta_fields_free(&f);
	}
	json_array_foreach(versions, i, v)
	{
		if (version_check(v, "ViewMetadata version", err) != 0)
			return -1;
		n = json_integer_value(json_object_get(v, "schema-id"));
		if (fl_json_find_int(schemas, "schema-id", n) == NULL)
			return fl_err_set(
			        err, FL_ERR_BAD_REQUEST,
			        "%s: version %lld names the missing schema %lld", what,
			        (long long)json_integer_value(json_object_get(v, "version-id")),
			        (long long)n);
	}
	if (fl_json_find_int(versions, "version-id", cur) == NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "%s: current-version-id %lld is not among the versions", what,
		                  (long long)cur);
	json_array_foreach(log, i, v)
	{
		if (fl_json_get_int(v, "timestamp-ms", true, "ViewMetadata version-log", &n, err) !=
		            0 ||
		    fl_json_get_int(v, "version-id", true, "ViewMetadata version-log", &n, err) !=
		            0)
			return -1;
	}
	return 0;
}
