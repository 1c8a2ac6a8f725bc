/* schema.c - Iceberg schemas: checking, indexing, comparing and fresh ids.
 *
 * A schema is the JSON of the table spec's "Schemas" section: a struct type
 * {type: "struct", schema-id, identifier-field-ids?, fields: [NestedField]}
 * where a NestedField is {id, name, required, type, doc?, initial-default?,
 * write-default?} and a type is a primitive string or a nested struct, list
 * {element-id, element, element-required} or map {key-id, key, value-id,
 * value, value-required}.  List elements and map keys/values carry field ids
 * too and are indexed like fields (without a name).
 *
 * Invariants: an index (struct meta_fields) borrows from the schema JSON it
 * was built from and is sorted by field id with no duplicates; fresh ids are
 * assigned in the order of Java's TypeUtil.assignFreshIds (a struct's own
 * fields first, then each field's nested type; list element, map key then
 * value before their nested types). */
#include "meta_int.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Case-insensitive whole-string match, as Java's Types.fromPrimitiveString
 * lower-cases its input. */
static bool ieq(const char *a, const char *b)
{
	return strcasecmp(a, b) == 0;
}

/* "fixed[16]" / "decimal(9, 2)": digits with optional blanks. */
static bool parse_params(const char *s, const char *head, char open, char close, int nparams,
                         int64_t p[2])
{
	size_t hl = strlen(head);

	if (strncasecmp(s, head, hl) != 0)
		return false;
	s += hl;
	if (*s++ != open)
		return false;
	for (int i = 0; i < nparams; i++) {
		char *end;

		while (*s == ' ')
			s++;
		if (!isdigit((unsigned char)*s))
			return false;
		p[i] = strtoll(s, &end, 10);
		s = end;
		while (*s == ' ')
			s++;
		if (i + 1 < nparams && *s++ != ',')
			return false;
	}
	return *s == close && s[1] == '\0';
}

static bool parenthesized(const char *s, const char *head)
{
	size_t hl = strlen(head), n = strlen(s);

	return strncasecmp(s, head, hl) == 0 && s[hl] == '(' && n > hl + 1 && s[n - 1] == ')';
}

enum meta_type meta_type_kind(const json_t *type)
{
	static const struct {
		const char *name;
		enum meta_type kind;
	} simple[] = {
	        {"boolean", META_T_BOOLEAN},
	        {"int", META_T_INT},
	        {"long", META_T_LONG},
	        {"float", META_T_FLOAT},
	        {"double", META_T_DOUBLE},
	        {"date", META_T_DATE},
	        {"time", META_T_TIME},
	        {"timestamp", META_T_TIMESTAMP},
	        {"timestamptz", META_T_TIMESTAMPTZ},
	        {"timestamp_ns", META_T_TIMESTAMP_NS},
	        {"timestamptz_ns", META_T_TIMESTAMPTZ_NS},
	        {"string", META_T_STRING},
	        {"uuid", META_T_UUID},
	        {"binary", META_T_BINARY},
	        {"unknown", META_T_UNKNOWN},
	        {"variant", META_T_VARIANT},
	        {"geometry", META_T_GEOMETRY},
	        {"geography", META_T_GEOGRAPHY},
	};
	const char *s;
	int64_t p[2];

	if (json_is_object(type))
		return META_T_NESTED;
	if (!json_is_string(type))
		return META_T_INVALID;
	s = json_string_value(type);
	for (size_t i = 0; i < sizeof(simple) / sizeof(simple[0]); i++) {
		if (ieq(s, simple[i].name))
			return simple[i].kind;
	}
	if (parse_params(s, "decimal", '(', ')', 2, p))
		return p[0] >= 1 && p[0] <= 38 && p[1] >= 0 && p[1] <= p[0] ? META_T_DECIMAL
		                                                            : META_T_INVALID;
	if (parse_params(s, "fixed", '[', ']', 1, p))
		return p[0] >= 0 && p[0] <= INT32_MAX ? META_T_FIXED : META_T_INVALID;
	if (parenthesized(s, "geometry"))
		return META_T_GEOMETRY;
	if (parenthesized(s, "geography"))
		return META_T_GEOGRAPHY;
	return META_T_INVALID;
}

static bool v3_only(enum meta_type k)
{
	return k == META_T_TIMESTAMP_NS || k == META_T_TIMESTAMPTZ_NS || k == META_T_UNKNOWN ||
	       k == META_T_VARIANT || k == META_T_GEOMETRY || k == META_T_GEOGRAPHY;
}

void meta_fields_free(struct meta_fields *f)
{
	if (f == NULL)
		return;
	for (size_t i = 0; i < f->n; i++)
		free(f->v[i].path);
	free(f->v);
	f->v = NULL;
	f->n = f->cap = 0;
}

static int cmp_field(const void *a, const void *b)
{
	const struct meta_field *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

const struct meta_field *meta_fields_find(const struct meta_fields *f, int64_t id)
{
	struct meta_field key = {.id = id};

	if (f->n == 0)
		return NULL;
	return bsearch(&key, f->v, f->n, sizeof(key), cmp_field);
}

/* State of one walk over a schema. */
struct walk {
	struct meta_fields *f;
	int fv;
	const char *what;
	struct fl_err *err;
};

static int walk_type(struct walk *w, const json_t *type, int64_t owner, bool under_lm,
                     bool opt_parent, const char *path, const char *where);

/* A field as a message names it: its dotted path, else its name, else what
 * it is (list elements and map keys and values have neither). */
static const char *field_label(const struct meta_field *mf)
{
	return mf->path ? mf->path : mf->name ? mf->name : "a list element or map key or value";
}

static int push(struct walk *w, const struct meta_field *mf)
{
	if (mf->id < 0 || mf->id > INT32_MAX)
		return fl_err_set(w->err, FL_ERR_BAD_REQUEST,
		                  "%s: field id %" PRId64 " of %s is out of range (0 to %" PRId32
		                  ")",
		                  w->what, mf->id, field_label(mf), INT32_MAX);
	if (w->f->n == w->f->cap) {
		size_t cap = w->f->cap ? w->f->cap * 2 : 16;
		struct meta_field *v = realloc(w->f->v, cap * sizeof(*v));

		if (v == NULL)
			return fl_err_set(w->err, FL_ERR_NOMEM, "out of memory indexing a schema");
		w->f->v = v;
		w->f->cap = cap;
	}
	w->f->v[w->f->n++] = *mf;
	if (mf->id > w->f->highest)
		w->f->highest = mf->id;
	return 0;
}

/* Reads an id member of a nested type ("element-id", "key-id", ...). */
static int nested_id(struct walk *w, const json_t *type, const char *key, const char *where,
                     int64_t *id)
{
	if (!meta_int(json_object_get(type, key), id))
		return fl_err_set(w->err, FL_ERR_BAD_REQUEST,
		                  "%s: %s: field '%s' must be an integer", w->what, where, key);
	return 0;
}

static int nested_required(struct walk *w, const json_t *type, const char *key, const char *where,
                           bool *req)
{
	json_t *v = json_object_get(type, key);

	if (!json_is_boolean(v))
		return fl_err_set(w->err, FL_ERR_BAD_REQUEST,
		                  "%s: %s: field '%s' must be a boolean", w->what, where, key);
	*req = json_is_true(v);
	return 0;
}

/* An element / key / value: indexed like a nameless field. */
static int walk_child(struct walk *w, const json_t *type, const char *idkey, const char *tkey,
                      const char *reqkey, int64_t owner, bool opt_parent, const char *where)
{
	struct meta_field mf = {0};
	const json_t *t = json_object_get(type, tkey);

	if (nested_id(w, type, idkey, where, &mf.id) < 0)
		return -1;
	if (reqkey != NULL) {
		if (nested_required(w, type, reqkey, where, &mf.required) < 0)
			return -1;
	} else {
		mf.required = true; /* map keys are always required */
	}
	if (t == NULL)
		return fl_err_set(w->err, FL_ERR_BAD_REQUEST, "%s: %s: missing field '%s'", w->what,
		                  where, tkey);
	mf.type = t;
	mf.kind = meta_type_kind(t);
	mf.primitive = mf.kind != META_T_NESTED && mf.kind != META_T_VARIANT;
	mf.parent = owner;
	mf.under_list_map = true;
	mf.optional_parent = opt_parent;
	if (push(w, &mf) < 0)
		return -1;
	return walk_type(w, t, mf.id, true, opt_parent || !mf.required, NULL, where);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* FL_ERR_BAD_REQUEST when two of a struct's fields (all named, walk_fields
 * checked) share a name: sorted, so that a wide struct costs n log n. */
static int dup_names(struct walk *w, const json_t *fields, const char *where)
{
	size_t n = json_array_size(fields), i;
	const char **v;
	int rc = 0;

	if (n < 2)
		return 0;
	v = malloc(n * sizeof(*v));
	if (v == NULL)
		return fl_err_set(w->err, FL_ERR_NOMEM, "out of memory indexing a schema");
	for (i = 0; i < n; i++)
		v[i] = json_string_value(json_object_get(json_array_get(fields, i), "name"));
	qsort(v, n, sizeof(*v), cmp_str);
	for (i = 1; i < n && rc == 0; i++)
		if (strcmp(v[i - 1], v[i]) == 0)
			rc = fl_err_set(w->err, FL_ERR_BAD_REQUEST,
			                "%s: %s: duplicate field name '%s'", w->what, where, v[i]);
	free(v);
	return rc;
}

static int walk_fields(struct walk *w, const json_t *fields, int64_t owner, bool under_lm,
                       bool opt_parent, const char *path, const char *where)
{
	size_t i;
	json_t *fld;

	if (!json_is_array(fields))
		return fl_err_set(w->err, FL_ERR_BAD_REQUEST,
		                  "%s: %s: field 'fields' must be an array", w->what, where);
	json_array_foreach(fields, i, fld)
	{
		struct meta_field mf = {0};
		const json_t *t, *v;
		char here[160];

		if (!json_is_object(fld))
			return fl_err_set(w->err, FL_ERR_BAD_REQUEST,
			                  "%s: %s: fields[%zu] must be an object", w->what, where,
			                  i);
		v = json_object_get(fld, "name");
		if (!json_is_string(v) || json_string_length(v) == 0)
			return fl_err_set(
			        w->err, FL_ERR_BAD_REQUEST,
			        "%s: %s: fields[%zu]: field 'name' must be a non-empty string",
			        w->what, where, i);
		mf.name = json_string_value(v);
		snprintf(here, sizeof(here), "field %s", mf.name);
		if (!meta_int(json_object_get(fld, "id"), &mf.id))
			return fl_err_set(w->err, FL_ERR_BAD_REQUEST,
			                  "%s: %s: field 'id' must be an integer", w->what, here);
		v = json_object_get(fld, "required");
		if (!json_is_boolean(v))
			return fl_err_set(w->err, FL_ERR_BAD_REQUEST,
			                  "%s: %s: field 'required' must be a boolean", w->what,
			                  here);
		mf.required = json_is_true(v);
		v = json_object_get(fld, "doc");
		if (v != NULL && !json_is_string(v) && !json_is_null(v))
			return fl_err_set(w->err, FL_ERR_BAD_REQUEST,
			                  "%s: %s: field 'doc' must be a string", w->what, here);
		if (w->fv < 3 && ((json_object_get(fld, "initial-default") != NULL &&
		                   !json_is_null(json_object_get(fld, "initial-default"))) ||
		                  (json_object_get(fld, "write-default") != NULL &&
		                   !json_is_null(json_object_get(fld, "write-default")))))
			return fl_err_set(
			        w->err, FL_ERR_BAD_REQUEST,
			        "%s: %s: default values are not supported until format version 3 (table is v%d)",
			        w->what, here, w->fv);
		t = json_object_get(fld, "type");
		if (t == NULL)
			return fl_err_set(w->err, FL_ERR_BAD_REQUEST,
			                  "%s: %s: missing field 'type'", w->what, here);
		mf.type = t;
		mf.kind = meta_type_kind(t);
		mf.primitive = mf.kind != META_T_NESTED && mf.kind != META_T_VARIANT;
		mf.parent = owner;
		mf.under_list_map = under_lm;
		mf.optional_parent = opt_parent;
		if (!under_lm) {
			size_t n = (path ? strlen(path) + 1 : 0) + strlen(mf.name) + 1;

			mf.path = malloc(n);
			if (mf.path == NULL)
				return fl_err_set(w->err, FL_ERR_NOMEM,
				                  "out of memory indexing a schema");
			snprintf(mf.path, n, "%s%s%s", path ? path : "", path ? "." : "", mf.name);
		}
		if (push(w, &mf) < 0) {
			free(mf.path);
			return -1;
		}
		if (walk_type(w, t, mf.id, under_lm, opt_parent || !mf.required, mf.path, here) < 0)
			return -1;
	}
	return dup_names(w, fields, where);
}

static int walk_type(struct walk *w, const json_t *type, int64_t owner, bool under_lm,
                     bool opt_parent, const char *path, const char *where)
{
	enum meta_type k = meta_type_kind(type);
	const char *tn;

	if (k == META_T_INVALID) {
		const char *s = json_string_value(type);
		int64_t p[2];

		/* Well formed but out of range: say which bound. */
		if (s != NULL && parse_params(s, "decimal", '(', ')', 2, p))
			return fl_err_set(
			        w->err, FL_ERR_BAD_REQUEST,
			        "%s: %s: type '%s': a decimal's precision must be 1 to 38 "
			        "and its scale 0 to its precision",
			        w->what, where, s);
		if (s != NULL && parse_params(s, "fixed", '[', ']', 1, p))
			return fl_err_set(
			        w->err, FL_ERR_BAD_REQUEST,
			        "%s: %s: type '%s': a fixed's length must be 0 to %" PRId32,
			        w->what, where, s, INT32_MAX);
		if (s != NULL)
			return fl_err_set(w->err, FL_ERR_BAD_REQUEST, "%s: %s: unknown type '%s'",
			                  w->what, where, s);
		return fl_err_set(w->err, FL_ERR_BAD_REQUEST,
		                  "%s: %s: 'type' must be a string or an object", w->what, where);
	}
	if (k != META_T_NESTED) {
		if (w->fv < 3 && v3_only(k))
			return fl_err_set(
			        w->err, FL_ERR_BAD_REQUEST,
			        "%s: %s: type '%s' is not supported until format version 3 (table is v%d)",
			        w->what, where, json_string_value(type), w->fv);
		return 0;
	}
	tn = json_string_value(json_object_get(type, "type"));
	if (tn == NULL)
		return fl_err_set(w->err, FL_ERR_BAD_REQUEST,
		                  "%s: %s: nested type needs a string 'type'", w->what, where);
	if (strcmp(tn, "struct") == 0)
		return walk_fields(w, json_object_get(type, "fields"), owner, under_lm, opt_parent,
		                   under_lm ? NULL : path, where);
	if (strcmp(tn, "list") == 0)
		return walk_child(w, type, "element-id", "element", "element-required", owner,
		                  opt_parent, where);
	if (strcmp(tn, "map") == 0) {
		if (walk_child(w, type, "key-id", "key", NULL, owner, opt_parent, where) < 0)
			return -1;
		return walk_child(w, type, "value-id", "value", "value-required", owner, opt_parent,
		                  where);
	}
	return fl_err_set(w->err, FL_ERR_BAD_REQUEST, "%s: %s: unknown nested type '%s'", w->what,
	                  where, tn);
}

/* Java Schema.validateIdentifierField. */
static int check_identifier(struct walk *w, int64_t id)
{
	const struct meta_field *mf = meta_fields_find(w->f, id);

	if (mf == NULL)
		return fl_err_set(w->err, FL_ERR_BAD_REQUEST,
		                  "%s: identifier field %" PRId64 " does not exist", w->what, id);
	if (!mf->primitive)
		return fl_err_set(w->err, FL_ERR_BAD_REQUEST,
		                  "%s: identifier field %" PRId64 " is not a primitive type",
		                  w->what, id);
	if (!mf->required)
		return fl_err_set(w->err, FL_ERR_BAD_REQUEST,
		                  "%s: identifier field %" PRId64 " is not a required field",
		                  w->what, id);
	if (mf->kind == META_T_FLOAT || mf->kind == META_T_DOUBLE)
		return fl_err_set(w->err, FL_ERR_BAD_REQUEST,
		                  "%s: identifier field %" PRId64 " must not be float or double",
		                  w->what, id);
	if (mf->under_list_map)
		return fl_err_set(w->err, FL_ERR_BAD_REQUEST,
		                  "%s: identifier field %" PRId64
		                  " must not be nested in a list or map",
		                  w->what, id);
	if (mf->optional_parent)
		return fl_err_set(w->err, FL_ERR_BAD_REQUEST,
		                  "%s: identifier field %" PRId64
		                  " must not be nested in an optional field",
		                  w->what, id);
	return 0;
}

int meta_schema_index(const json_t *schema, int format_version, const char *what,
                      struct meta_fields *f, struct fl_err *err)
{
	struct walk w = {f, format_version, what, err};
	const json_t *t, *ids;
	size_t i;
	json_t *v;

	memset(f, 0, sizeof(*f));
	if (!json_is_object(schema))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "%s must be an object", what);
	t = json_object_get(schema, "type");
	if (t != NULL && !(json_is_string(t) && strcmp(json_string_value(t), "struct") == 0))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "%s: field 'type' must be \"struct\"",
		                  what);
	if (json_object_get(schema, "fields") == NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "%s: missing required field 'fields'",
		                  what);
	if (walk_fields(&w, json_object_get(schema, "fields"), -1, false, false, NULL, "schema") <
	    0)
		goto fail;
	if (f->n > 1)
		qsort(f->v, f->n, sizeof(f->v[0]), cmp_field);
	for (i = 1; i < f->n; i++) {
		if (f->v[i].id == f->v[i - 1].id) {
			fl_err_set(err, FL_ERR_BAD_REQUEST,
			           "%s: field id %" PRId64
			           " is used more than once, by '%.60s' and by '%.60s'",
			           what, f->v[i].id, field_label(&f->v[i - 1]),
			           field_label(&f->v[i]));
			goto fail;
		}
	}
	ids = json_object_get(schema, "identifier-field-ids");
	if (ids != NULL && !json_is_null(ids)) {
		if (!json_is_array(ids)) {
			fl_err_set(err, FL_ERR_BAD_REQUEST,
			           "%s: field 'identifier-field-ids' must be an array", what);
			goto fail;
		}
		json_array_foreach(ids, i, v)
		{
			int64_t id;

			if (!meta_int(v, &id)) {
				fl_err_set(err, FL_ERR_BAD_REQUEST,
				           "%s: identifier-field-ids[%zu] must be an integer", what,
				           i);
				goto fail;
			}
			if (check_identifier(&w, id) < 0)
				goto fail;
		}
	}
	return 0;
fail:
	meta_fields_free(f);
	return -1;
}

/* Sorted copy of identifier-field-ids (missing = empty). */
static size_t sorted_ids(const json_t *schema, int64_t **out)
{
	const json_t *ids = json_object_get(schema, "identifier-field-ids");
	size_t n = json_is_array(ids) ? json_array_size(ids) : 0;
	int64_t *v = n ? calloc(n, sizeof(*v)) : NULL;

	*out = v;
	if (v == NULL)
		return 0;
	for (size_t i = 0; i < n; i++)
		v[i] = json_integer_value(json_array_get(ids, i));
	qsort(v, n, sizeof(*v), meta_cmp_i64);
	return n;
}

bool meta_schema_same(const json_t *a, const json_t *b)
{
	int64_t *x, *y;
	size_t nx, ny;
	bool same;

	if (!json_equal(json_object_get(a, "fields"), json_object_get(b, "fields")))
		return false;
	nx = sorted_ids(a, &x);
	ny = sorted_ids(b, &y);
	same = nx == ny && (nx == 0 || memcmp(x, y, nx * sizeof(*x)) == 0);
	free(x);
	free(y);
	return same;
}

json_t *meta_schema_normalize(const json_t *schema, int64_t schema_id)
{
	const json_t *ids = json_object_get(schema, "identifier-field-ids");
	const json_t *fields = json_object_get(schema, "fields");
	json_t *out = json_object();

	if (out == NULL)
		return NULL;
	if (meta_set_new(out, "type", json_string("struct")) < 0 ||
	    meta_set_new(out, "schema-id", json_integer(schema_id)) < 0)
		goto fail;
	if (json_is_array(ids) && json_array_size(ids) > 0 &&
	    meta_set_new(out, "identifier-field-ids", json_deep_copy(ids)) < 0)
		goto fail;
	/* Without fields the copy stays without: meta_schema_index says so. */
	if (fields != NULL && meta_set_new(out, "fields", json_deep_copy(fields)) < 0)
		goto fail;
	return out;
fail:
	json_decref(out);
	return NULL;
}

/* ---- fresh ids ---- */

struct fresh {
	int64_t next;
	json_t *map; /* "old" -> new */
};

static int fresh_record(struct fresh *fr, json_t *obj, const char *key)
{
	char old[24];
	int64_t id = ++fr->next;

	snprintf(old, sizeof(old), "%" PRId64,
	         (int64_t)json_integer_value(json_object_get(obj, key)));
	if (meta_set_new(fr->map, old, json_integer(id)) < 0 ||
	    meta_set_new(obj, key, json_integer(id)) < 0)
		return -1;
	return 0;
}

static int fresh_type(struct fresh *fr, json_t *type);

/* Assigns the struct's own field ids, then recurses: Java's order. */
static int fresh_fields(struct fresh *fr, json_t *fields)
{
	size_t i;
	json_t *fld;

	json_array_foreach(fields, i, fld)
	{
		if (fresh_record(fr, fld, "id") < 0)
			return -1;
	}
	json_array_foreach(fields, i, fld)
	{
		if (fresh_type(fr, json_object_get(fld, "type")) < 0)
			return -1;
	}
	return 0;
}

static int fresh_type(struct fresh *fr, json_t *type)
{
	const char *tn;

	if (!json_is_object(type))
		return 0;
	tn = json_string_value(json_object_get(type, "type"));
	if (strcmp(tn, "struct") == 0)
		return fresh_fields(fr, json_object_get(type, "fields"));
	if (strcmp(tn, "list") == 0) {
		if (fresh_record(fr, type, "element-id") < 0)
			return -1;
		return fresh_type(fr, json_object_get(type, "element"));
	}
	if (fresh_record(fr, type, "key-id") < 0 || fresh_record(fr, type, "value-id") < 0)
		return -1;
	if (fresh_type(fr, json_object_get(type, "key")) < 0)
		return -1;
	return fresh_type(fr, json_object_get(type, "value"));
}

int meta_schema_fresh(const json_t *schema, int64_t schema_id, json_t **out, json_t **map,
                      int64_t *last, struct fl_err *err)
{
	struct fresh fr = {0, json_object()};
	json_t *fields = json_deep_copy(json_object_get(schema, "fields"));
	json_t *ids = json_array(), *res = NULL, *old_ids, *v;
	size_t i;

	if (fr.map == NULL || fields == NULL || ids == NULL)
		goto nomem;
	if (fresh_fields(&fr, fields) < 0)
		goto nomem;
	old_ids = json_object_get(schema, "identifier-field-ids");
	json_array_foreach(old_ids, i, v)
	{
		char old[24];

		snprintf(old, sizeof(old), "%" PRId64, (int64_t)json_integer_value(v));
		if (json_array_append(ids, json_object_get(fr.map, old)) < 0)
			goto nomem;
	}
	res = json_object();
	if (res == NULL || meta_set_new(res, "type", json_string("struct")) < 0 ||
	    meta_set_new(res, "schema-id", json_integer(schema_id)) < 0)
		goto nomem;
	if (json_array_size(ids) > 0 && json_object_set(res, "identifier-field-ids", ids) < 0)
		goto nomem;
	if (json_object_set(res, "fields", fields) < 0)
		goto nomem;
	json_decref(fields);
	json_decref(ids);
	*out = res;
	*map = fr.map;
	*last = fr.next;
	return 0;
nomem:
	json_decref(fr.map);
	json_decref(fields);
	json_decref(ids);
	json_decref(res);
	return fl_err_set(err, FL_ERR_NOMEM, "out of memory assigning fresh field ids");
}
