/* spec.c - partition specs and sort orders, bound to a schema.
 *
 * A partition spec is {spec-id, fields: [{name, transform, source-id,
 * field-id}]} and a sort order {order-id, fields: [{transform, source-id,
 * direction: asc|desc, null-order: nulls-first|nulls-last}]} (table spec,
 * "Partitioning" and "Sorting").  Transforms: identity, bucket[N],
 * truncate[W], year, month, day, hour, void; which source types each accepts
 * follows the spec's transform table (Java Transform.canTransform).
 *
 * Invariant: what meta_spec_bind / meta_order_bind return is normalized (only
 * the fields above, in Java's order) and binds to the schema it was checked
 * against. */
#include "meta_int.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define META_SPEC_MAX_FIELDS 1000 /* fields of one partition spec or sort order */

enum transform { TR_IDENTITY, TR_BUCKET, TR_TRUNCATE, TR_YEAR, TR_MONTH, TR_DAY, TR_HOUR, TR_VOID };

/* "bucket[16]": a positive int parameter. */
static bool param(const char *s, const char *head, int64_t *p)
{
	size_t hl = strlen(head);
	char *end;

	if (strncasecmp(s, head, hl) != 0 || s[hl] != '[' || !isdigit((unsigned char)s[hl + 1]))
		return false;
	*p = strtoll(s + hl + 1, &end, 10);
	return end[0] == ']' && end[1] == '\0' && *p > 0 && *p <= INT32_MAX;
}

static int transform_parse(const char *s, enum transform *t)
{
	static const struct {
		const char *name;
		enum transform t;
	} plain[] = {
	        {"identity", TR_IDENTITY}, {"year", TR_YEAR}, {"month", TR_MONTH},
	        {"day", TR_DAY},           {"hour", TR_HOUR}, {"void", TR_VOID},
	};
	int64_t p;

	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
		if (strcasecmp(s, plain[i].name) == 0) {
			*t = plain[i].t;
			return 0;
		}
	}
	if (param(s, "bucket", &p)) {
		*t = TR_BUCKET;
		return 0;
	}
	if (param(s, "truncate", &p)) {
		*t = TR_TRUNCATE;
		return 0;
	}
	return -1;
}

static bool can_transform(enum transform t, enum meta_type k)
{
	bool ts = k == META_T_TIMESTAMP || k == META_T_TIMESTAMPTZ || k == META_T_TIMESTAMP_NS ||
	          k == META_T_TIMESTAMPTZ_NS;

	switch (t) {
	case TR_VOID: return true;
	case TR_IDENTITY:
		return k != META_T_NESTED && k != META_T_VARIANT && k != META_T_GEOMETRY &&
		       k != META_T_GEOGRAPHY && k != META_T_UNKNOWN;
	case TR_BUCKET:
		return k == META_T_INT || k == META_T_LONG || k == META_T_DECIMAL ||
		       k == META_T_DATE || k == META_T_TIME || ts || k == META_T_STRING ||
		       k == META_T_UUID || k == META_T_FIXED || k == META_T_BINARY;
	case TR_TRUNCATE:
		return k == META_T_INT || k == META_T_LONG || k == META_T_DECIMAL ||
		       k == META_T_STRING || k == META_T_BINARY;
	case TR_YEAR:
	case TR_MONTH:
	case TR_DAY: return k == META_T_DATE || ts;
	case TR_HOUR: return ts;
	}
	return false;
}

/* The column f, as a client named it: its dotted path, or the path of the
 * struct field a list element or map key/value sits in.  Ids are not named:
 * createTable gives the schema fresh ones, which the client never sent. */
static const char *column_str(const struct meta_fields *schema, const struct meta_field *f,
                              char *buf, size_t cap)
{
	const struct meta_field *p = f;

	while (p != NULL && p->path == NULL)
		p = p->parent < 0 ? NULL : meta_fields_find(schema, p->parent);
	if (p == f)
		snprintf(buf, cap, "column '%.100s'", f->path);
	else if (p != NULL)
		snprintf(buf, cap, "a list element or map key or value in column '%.100s'",
		         p->path);
	else
		snprintf(buf, cap, "column %" PRId64, f->id);
	return buf;
}

/* Java PartitionSpec.checkCompatibility / SortOrder.checkCompatibility for
 * fields[i]: the source exists, is primitive, takes the transform, and (for
 * partitions) sits only inside structs. */
static int check_source(const struct meta_fields *schema, size_t i, int64_t source_id,
                        const char *tr_name, enum transform t, bool partition, const char *what,
                        struct fl_err *err)
{
	const struct meta_field *src;
	char col[160];

	if (schema == NULL || (t == TR_VOID && partition))
		return 0; /* shape check only, or a void (dropped) partition */
	src = meta_fields_find(schema, source_id);
	if (src == NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "%s: fields[%zu]: cannot find source column %" PRId64
		                  " in the schema",
		                  what, i, source_id);
	if (!src->primitive)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "%s: fields[%zu]: cannot %s by %s: it is not of a primitive type",
		                  what, i, partition ? "partition" : "sort",
		                  column_str(schema, src, col, sizeof(col)));
	if (!can_transform(t, src->kind))
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "%s: fields[%zu]: invalid source type %s of %s for transform %s",
		                  what, i,
		                  json_is_string(src->type) ? json_string_value(src->type) : "?",
		                  column_str(schema, src, col, sizeof(col)), tr_name);
	if (partition && src->under_list_map)
		return fl_err_set(
		        err, FL_ERR_BAD_REQUEST,
		        "%s: fields[%zu]: cannot partition by %s: it is inside a list or map", what,
		        i, column_str(schema, src, col, sizeof(col)));
	return 0;
}

/* Reads the common members of a partition or sort field. */
static int read_field(const json_t *fld, size_t i, const char *what, int64_t *source_id,
                      const char **tr_name, enum transform *t, struct fl_err *err)
{
	const json_t *v;

	if (!json_is_object(fld))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "%s: fields[%zu] must be an object",
		                  what, i);
	v = json_object_get(fld, "source-id");
	if (v == NULL) {
		/* v3 multi-argument form with a single argument */
		const json_t *ids = json_object_get(fld, "source-ids");

		if (json_is_array(ids) && json_array_size(ids) == 1)
			v = json_array_get(ids, 0);
	}
	if (!meta_int(v, source_id))
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "%s: fields[%zu]: field 'source-id' must be an integer", what, i);
	v = json_object_get(fld, "transform");
	if (!json_is_string(v))
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "%s: fields[%zu]: field 'transform' must be a string", what, i);
	*tr_name = json_string_value(v);
	if (transform_parse(*tr_name, t) < 0) {
		/* bucket[0], truncate[x]: a known transform, its parameter wrong */
		bool b = strncasecmp(*tr_name, "bucket[", 7) == 0,
		     tr = strncasecmp(*tr_name, "truncate[", 9) == 0;

		if (b || tr)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "%s: fields[%zu]: transform '%.60s': the %s must be an "
			                  "integer from 1 to %" PRId32,
			                  what, i, *tr_name, b ? "bucket count" : "width",
			                  INT32_MAX);
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "%s: fields[%zu]: unknown transform '%s'", what, i, *tr_name);
	}
	return 0;
}

static const json_t *fields_of(const json_t *obj, const char *what, struct fl_err *err)
{
	const json_t *fields;

	if (!json_is_object(obj)) {
		fl_err_set(err, FL_ERR_BAD_REQUEST, "%s must be an object", what);
		return NULL;
	}
	fields = json_object_get(obj, "fields");
	if (!json_is_array(fields)) {
		fl_err_set(err, FL_ERR_BAD_REQUEST, "%s: field 'fields' must be an array", what);
		return NULL;
	}
	/* Each field is checked against the others and against the schema's
	 * names: the count is bounded, far above any real spec or order. */
	if (json_array_size(fields) > META_SPEC_MAX_FIELDS) {
		fl_err_set(err, FL_ERR_BAD_REQUEST, "%s: %zu fields, over the limit of %d", what,
		           json_array_size(fields), META_SPEC_MAX_FIELDS);
		return NULL;
	}
	return fields;
}

/* Java checkAndAddPartitionName: a partition name is not empty, unique, and
 * names no schema column other than its own source. */
static int check_part_name(const json_t *fields, size_t i, const char *name, int64_t source_id,
                           const struct meta_fields *schema, const char *what, struct fl_err *err)
{
	if (name[0] == '\0')
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "%s: fields[%zu]: empty partition name",
		                  what, i);
	for (size_t j = 0; j < i; j++) {
		const char *o =
		        json_string_value(json_object_get(json_array_get(fields, j), "name"));

		if (o != NULL && strcmp(o, name) == 0)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "%s: partition name '%s' is used more than once", what,
			                  name);
	}
	if (schema == NULL || meta_fields_find(schema, source_id) == NULL)
		return 0; /* shape check only, or a historical spec of a dropped column */
	for (size_t j = 0; j < schema->n; j++) {
		const struct meta_field *f = &schema->v[j];

		if (f->path != NULL && strcmp(f->path, name) == 0 && f->id != source_id)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "%s: partition name '%s' is the name of another column",
			                  what, name);
	}
	return 0;
}

int meta_spec_bind(const json_t *spec, const struct meta_fields *schema, int64_t spec_id,
                   int64_t *next_id, int64_t *max_id, const char *what, json_t **out,
                   struct fl_err *err)
{
	const json_t *fields = fields_of(spec, what, err), *v;
	json_t *res = NULL, *arr = NULL, *fld;
	int64_t max = META_PARTITION_ID_START - 1;
	size_t i;

	if (fields == NULL)
		return -1;
	res = json_object();
	arr = json_array();
	if (res == NULL || arr == NULL)
		goto nomem;
	json_array_foreach(fields, i, fld)
	{
		int64_t source_id, field_id;
		const char *tr_name, *name;
		enum transform t;
		json_t *o;

		if (read_field(fld, i, what, &source_id, &tr_name, &t, err) < 0)
			goto fail;
		v = json_object_get(fld, "name");
		if (!json_is_string(v)) {
			fl_err_set(err, FL_ERR_BAD_REQUEST,
			           "%s: fields[%zu]: field 'name' must be a string", what, i);
			goto fail;
		}
		name = json_string_value(v);
		if (check_part_name(fields, i, name, source_id, schema, what, err) < 0 ||
		    check_source(schema, i, source_id, tr_name, t, true, what, err) < 0)
			goto fail;
		v = json_object_get(fld, "field-id");
		if (v != NULL && !json_is_null(v)) {
			if (!meta_int(v, &field_id) || field_id < 0 || field_id > INT32_MAX) {
				fl_err_set(
				        err, FL_ERR_BAD_REQUEST,
				        "%s: fields[%zu]: field 'field-id' must be a non-negative integer",
				        what, i);
				goto fail;
			}
		} else if (next_id != NULL) {
			field_id = (*next_id)++;
			if (field_id > INT32_MAX) {
				fl_err_set(err, FL_ERR_BAD_REQUEST,
				           "%s: fields[%zu]: no partition field id is left", what,
				           i);
				goto fail;
			}
		} else {
			fl_err_set(err, FL_ERR_BAD_REQUEST,
			           "%s: fields[%zu]: missing field 'field-id'", what, i);
			goto fail;
		}
		for (size_t j = 0; j < json_array_size(arr); j++) {
			if (json_integer_value(json_object_get(json_array_get(arr, j),
			                                       "field-id")) == field_id) {
				fl_err_set(err, FL_ERR_BAD_REQUEST,
				           "%s: partition field id %" PRId64
				           " is used more than once",
				           what, field_id);
				goto fail;
			}
		}
		if (field_id > max)
			max = field_id;
		o = json_object();
		if (o == NULL || json_array_append_new(arr, o) < 0 ||
		    meta_set_new(o, "name", json_string(name)) < 0 ||
		    meta_set_new(o, "transform", json_string(tr_name)) < 0 ||
		    meta_set_new(o, "source-id", json_integer(source_id)) < 0 ||
		    meta_set_new(o, "field-id", json_integer(field_id)) < 0)
			goto nomem;
	}
	if (meta_set_new(res, "spec-id", json_integer(spec_id)) < 0 ||
	    json_object_set(res, "fields", arr) < 0)
		goto nomem;
	json_decref(arr);
	*max_id = max;
	*out = res;
	return 0;
nomem:
	fl_err_set(err, FL_ERR_NOMEM, "out of memory binding a partition spec");
fail:
	json_decref(arr);
	json_decref(res);
	return -1;
}

bool meta_spec_compatible(const json_t *a, const json_t *b)
{
	const json_t *fa = json_object_get(a, "fields"), *fb = json_object_get(b, "fields");

	if (json_array_size(fa) != json_array_size(fb))
		return false;
	for (size_t i = 0; i < json_array_size(fa); i++) {
		const json_t *x = json_array_get(fa, i), *y = json_array_get(fb, i);

		if (!json_equal(json_object_get(x, "source-id"), json_object_get(y, "source-id")) ||
		    !json_equal(json_object_get(x, "transform"), json_object_get(y, "transform")) ||
		    !json_equal(json_object_get(x, "name"), json_object_get(y, "name")))
			return false;
	}
	return true;
}

int meta_spec_check(const json_t *spec, const struct meta_fields *schema, const char *what,
                    struct fl_err *err)
{
	const json_t *fields = fields_of(spec, what, err);
	json_t *fld;
	size_t i;

	if (fields == NULL)
		return -1;
	json_array_foreach(fields, i, fld)
	{
		int64_t source_id;
		const char *tr_name;
		enum transform t;

		if (read_field(fld, i, what, &source_id, &tr_name, &t, err) < 0 ||
		    check_source(schema, i, source_id, tr_name, t, true, what, err) < 0)
			return -1;
	}
	return 0;
}

static const char *sort_direction(const json_t *v)
{
	const char *s = json_string_value(v);

	if (s == NULL)
		return NULL;
	if (strcasecmp(s, "asc") == 0)
		return "asc";
	if (strcasecmp(s, "desc") == 0)
		return "desc";
	return NULL;
}

static const char *null_order(const json_t *v)
{
	const char *s = json_string_value(v);

	if (s == NULL)
		return NULL;
	if (strcasecmp(s, "nulls-first") == 0)
		return "nulls-first";
	if (strcasecmp(s, "nulls-last") == 0)
		return "nulls-last";
	return NULL;
}

static int order_fields(const json_t *order, const struct meta_fields *schema, const char *what,
                        json_t *arr, struct fl_err *err)
{
	const json_t *fields = fields_of(order, what, err);
	json_t *fld;
	size_t i;

	if (fields == NULL)
		return -1;
	json_array_foreach(fields, i, fld)
	{
		int64_t source_id;
		const char *tr_name, *dir, *nulls;
		enum transform t;
		json_t *o;

		if (read_field(fld, i, what, &source_id, &tr_name, &t, err) < 0 ||
		    check_source(schema, i, source_id, tr_name, t, false, what, err) < 0)
			return -1;
		dir = sort_direction(json_object_get(fld, "direction"));
		if (dir == NULL)
			return fl_err_set(
			        err, FL_ERR_BAD_REQUEST,
			        "%s: fields[%zu]: field 'direction' must be \"asc\" or \"desc\"",
			        what, i);
		nulls = null_order(json_object_get(fld, "null-order"));
		if (nulls == NULL)
			return fl_err_set(
			        err, FL_ERR_BAD_REQUEST,
			        "%s: fields[%zu]: field 'null-order' must be \"nulls-first\" or \"nulls-last\"",
			        what, i);
		if (arr == NULL)
			continue;
		o = json_object();
		if (o == NULL || json_array_append_new(arr, o) < 0 ||
		    meta_set_new(o, "transform", json_string(tr_name)) < 0 ||
		    meta_set_new(o, "source-id", json_integer(source_id)) < 0 ||
		    meta_set_new(o, "direction", json_string(dir)) < 0 ||
		    meta_set_new(o, "null-order", json_string(nulls)) < 0)
			return fl_err_set(err, FL_ERR_NOMEM, "out of memory binding a sort order");
	}
	return 0;
}

int meta_order_bind(const json_t *order, const struct meta_fields *schema, int64_t order_id,
                    const char *what, json_t **out, struct fl_err *err)
{
	json_t *res = json_object(), *arr = json_array();

	if (res == NULL || arr == NULL) {
		fl_err_set(err, FL_ERR_NOMEM, "out of memory binding a sort order");
		goto fail;
	}
	if (order_fields(order, schema, what, arr, err) < 0)
		goto fail;
	if (meta_set_new(res, "order-id", json_integer(order_id)) < 0 ||
	    json_object_set(res, "fields", arr) < 0) {
		fl_err_set(err, FL_ERR_NOMEM, "out of memory binding a sort order");
		goto fail;
	}
	json_decref(arr);
	*out = res;
	return 0;
fail:
	json_decref(arr);
	json_decref(res);
	return -1;
}

int meta_order_check(const json_t *order, const struct meta_fields *schema, const char *what,
                     struct fl_err *err)
{
	return order_fields(order, schema, what, NULL, err);
}

bool meta_order_same(const json_t *a, const json_t *b)
{
	return json_equal(json_object_get(a, "fields"), json_object_get(b, "fields"));
}
