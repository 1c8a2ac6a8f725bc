/* create.c - new table metadata from a CreateTableRequest.
 *
 * Follows Java's TableMetadata.newTableMetadata: every id is assigned fresh
 * (schema fields from 1, partition fields from 1000, spec 0, sort order 1 or
 * 0 when unsorted) and partition / sort source ids are mapped from the
 * request's ids to the fresh ones, so a client's own numbering never leaks
 * into the table.  The result is checked with meta_check before it is
 * returned.  Invariant: the request is only read. */
#include "meta_int.h"
#include "tablemeta.h"
#include "uuid.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Copy of a spec or order with source-ids mapped to fresh ids (and, for
 * specs, partition field ids dropped so that they are numbered from 1000). */
static json_t *remap(const json_t *obj, const json_t *map, bool drop_field_ids, const char *what,
                     struct fl_err *err)
{
	json_t *copy = json_deep_copy(obj), *fields, *f;
	size_t i;

	if (copy == NULL) {
		fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		return NULL;
	}
	fields = json_object_get(copy, "fields");
	if (!json_is_array(fields)) {
		fl_err_set(err, FL_ERR_BAD_REQUEST, "%s: field 'fields' must be an array", what);
		goto fail;
	}
	json_array_foreach(fields, i, f)
	{
		json_t *src, *fresh;
		char key[24];

		if (!json_is_object(f)) {
			fl_err_set(err, FL_ERR_BAD_REQUEST, "%s: fields[%zu] must be an object",
			           what, i);
			goto fail;
		}
		src = json_object_get(f, "source-id");
		if (!json_is_integer(src)) {
			fl_err_set(err, FL_ERR_BAD_REQUEST,
			           "%s: fields[%zu]: field 'source-id' must be an integer", what,
			           i);
			goto fail;
		}
		snprintf(key, sizeof(key), "%" JSON_INTEGER_FORMAT, json_integer_value(src));
		fresh = json_object_get(map, key);
		if (fresh == NULL) {
			fl_err_set(err, FL_ERR_BAD_REQUEST,
			           "%s: fields[%zu]: cannot find source column %s in the schema",
			           what, i, key);
			goto fail;
		}
		if (json_object_set(f, "source-id", fresh) < 0) {
			fl_err_set(err, FL_ERR_NOMEM, "out of memory");
			goto fail;
		}
		if (drop_field_ids)
			json_object_del(f, "field-id");
	}
	return copy;
fail:
	json_decref(copy);
	return NULL;
}

static int parse_version(const json_t *props, int *fv, struct fl_err *err)
{
	const char *s = json_string_value(json_object_get(props, "format-version"));
	char *end;
	long v;

	*fv = CAT_META_DEFAULT_FORMAT_VERSION;
	if (s == NULL)
		return 0;
	v = strtol(s, &end, 10);
	if (end == s || *end != '\0' || v < 1 || v > CAT_META_MAX_FORMAT_VERSION)
		return fl_err_set(
		        err, FL_ERR_BAD_REQUEST,
		        "CreateTableRequest: unsupported format-version '%.20s' (supported: 1 to %d)",
		        s, CAT_META_MAX_FORMAT_VERSION);
	*fv = (int)v;
	return 0;
}

int cat_meta_create(const json_t *create_req, const char *location, const char *uuid,
                    int64_t now_ms, json_t **out, struct fl_err *err)
{
	const char *what = "CreateTableRequest";
	struct meta_fields req_fields = {0}, fresh_fields = {0};
	json_t *schema, *spec_in, *order_in, *props, *v;
	json_t *fresh = NULL, *map = NULL, *spec = NULL, *order = NULL, *bound = NULL, *res;
	struct meta m;
	bool have_meta = false;
	int64_t last_col, next_pid = META_PARTITION_ID_START, max_pid;
	const char *k;
	size_t loc_len;
	int fv, rc = -1;

	if (!json_is_object(create_req))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "%s must be a JSON object", what);
	v = json_object_get(create_req, "name");
	if (!json_is_string(v) || json_string_length(v) == 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "%s: field 'name' must be a non-empty string", what);
	schema = json_object_get(create_req, "schema");
	if (!json_is_object(schema))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "%s: field 'schema' must be an object",
		                  what);
	spec_in = json_object_get(create_req, "partition-spec");
	if (spec_in != NULL && !json_is_null(spec_in) && !json_is_object(spec_in))
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "%s: field 'partition-spec' must be an object", what);
	order_in = json_object_get(create_req, "write-order");
	if (order_in != NULL && !json_is_null(order_in) && !json_is_object(order_in))
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "%s: field 'write-order' must be an object", what);
	props = json_object_get(create_req, "properties");
	if (props != NULL && !json_is_null(props)) {
		if (!json_is_object(props))
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "%s: field 'properties' must be an object", what);
		json_object_foreach(props, k, v)
		{
			if (!json_is_string(v))
				return fl_err_set(err, FL_ERR_BAD_REQUEST,
				                  "%s: properties: value of '%s' must be a string",
				                  what, k);
		}
	}
	v = json_object_get(create_req, "stage-create");
	if (v != NULL && !json_is_null(v) && !json_is_boolean(v))
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "%s: field 'stage-create' must be a boolean", what);
	if (parse_version(props, &fv, err) < 0)
		return -1;
	loc_len = location ? strlen(location) : 0;
	while (loc_len > 0 && location[loc_len - 1] == '/')
		loc_len--;
	if (loc_len == 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "%s: the table location is empty", what);
	if (uuid == NULL || !fl_uuid_valid(uuid))
		return fl_err_set(err, FL_ERR_INTERNAL, "cat_meta_create: uuid is not a UUID");

	if (meta_schema_index(schema, fv, "CreateTableRequest schema", &req_fields, err) < 0)
		return -1;
	if (meta_schema_fresh(schema, 0, &fresh, &map, &last_col, err) < 0 ||
	    meta_schema_index(fresh, fv, "schema", &fresh_fields, err) < 0)
		goto out;
	if (meta_init_empty(&m, fv, err) < 0)
		goto out;
	have_meta = true;
	m.uuid = json_string(uuid);
	m.location = json_stringn(location, loc_len);
	m.last_updated_ms = now_ms;
	m.last_column_id = last_col;
	m.current_schema_id = 0;
	if (m.uuid == NULL || m.location == NULL || json_array_append(m.schemas, fresh) < 0)
		goto nomem;

	/* partition spec 0 with field ids from 1000 */
	if (spec_in != NULL && !json_is_null(spec_in)) {
		spec = remap(spec_in, map, true, "partition-spec", err);
		if (spec == NULL)
			goto out;
	} else {
		spec = json_pack("{s[]}", "fields");
		if (spec == NULL)
			goto nomem;
	}
	if (meta_spec_bind(spec, &fresh_fields, 0, &next_pid, &max_pid, "partition-spec", &bound,
	                   err) < 0)
		goto out;
	m.last_partition_id = max_pid;
	v = bound;
	bound = NULL;
	if (json_array_append_new(m.specs, v) < 0) /* steals v even on failure */
		goto nomem;

	/* sort order 1, or 0 when unsorted */
	if (order_in != NULL && !json_is_null(order_in) &&
	    json_array_size(json_object_get(order_in, "fields")) > 0) {
		order = remap(order_in, map, false, "write-order", err);
		if (order == NULL ||
		    meta_order_bind(order, &fresh_fields, 1, "write-order", &bound, err) < 0)
			goto out;
		m.default_sort_order_id = 1;
	} else {
		bound = json_pack("{sis[]}", "order-id", 0, "fields");
		if (bound == NULL)
			goto nomem;
		m.default_sort_order_id = 0;
	}
	v = bound;
	bound = NULL;
	if (json_array_append_new(m.sort_orders, v) < 0)
		goto nomem;

	/* Java's default for new tables, then the request's unreserved properties */
	if (meta_set_new(m.properties, "write.parquet.compression-codec", json_string("zstd")) < 0)
		goto nomem;
	if (props != NULL && !json_is_null(props)) {
		json_object_foreach(props, k, v)
		{
			if (!meta_prop_reserved(k) && json_object_set(m.properties, k, v) < 0)
				goto nomem;
		}
	}
	if (meta_check(&m, err) < 0)
		goto out;
	res = meta_emit(&m);
	if (res == NULL)
		goto nomem;
	*out = res;
	rc = 0;
	goto out;
nomem:
	fl_err_set(err, FL_ERR_NOMEM, "out of memory");
out:
	if (have_meta)
		meta_free(&m);
	meta_fields_free(&req_fields);
	meta_fields_free(&fresh_fields);
	json_decref(fresh);
	json_decref(map);
	json_decref(spec);
	json_decref(order);
	json_decref(bound);
	return rc;
}
