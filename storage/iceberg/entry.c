/* entry.c - decoded manifest entries back into the writer's structs.
 *
 * Invariants: every metric of a field id lives in one st_column_metrics
 * (ids in the order first seen); a count the maps leave out is -1, which
 * the writer leaves out again; bounds are copied byte for byte. */
#include "iceberg/entry.h"

#include <stdlib.h>
#include <string.h>

#include "avro/reader.h"
#include "base/buf.h"

enum { M_SIZE, M_VALUES, M_NULLS, M_NANS, M_LOWER, M_UPPER, N_MAPS };

static const char *const map_names[N_MAPS] = {
        "column_sizes",     "value_counts", "null_value_counts",
        "nan_value_counts", "lower_bounds", "upper_bounds",
};

void st_entry_copy_free(struct st_entry_copy *c)
{
	for (size_t i = 0; c->cols != NULL && i < c->file.n_columns; i++) {
		st_free(c->alloc, c->cols[i].lower);
		st_free(c->alloc, c->cols[i].upper);
	}
	st_free(c->alloc, c->cols);
	st_free(c->alloc, c->splits);
	st_free(c->alloc, c->eq_ids);
	st_free(c->alloc, c->key_metadata);
	memset(c, 0, sizeof(*c));
}

/* The metrics of field id, added when new. */
static struct st_column_metrics *column(struct st_entry_copy *c, int32_t id)
{
	struct st_column_metrics *m, *grown;

	for (size_t i = 0; i < c->file.n_columns; i++) {
		if (c->cols[i].field_id == id)
			return &c->cols[i];
	}
	grown = st_realloc(c->alloc, c->cols, (c->file.n_columns + 1) * sizeof(*grown));
	if (grown == NULL)
		return NULL;
	c->cols = grown;
	m = &c->cols[c->file.n_columns++];
	memset(m, 0, sizeof(*m));
	m->field_id = id;
	m->column_size = m->value_count = m->null_count = m->nan_count = -1;
	return m;
}

/* A base64 bytes value into new memory. */
static int decode_bytes(const struct st_alloc *a, const json_t *v, uint8_t **out, size_t *len,
                        const char *what, struct fl_err *err)
{
	struct st_buf b;

	st_buf_init(&b, a);
	if (!json_is_string(v))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "manifest entry: %s is not bytes", what);
	if (st_buf_reserve(&b, 1) != 0)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	if (st_avro_base64_decode(json_string_value(v), json_string_length(v), &b, err) != 0) {
		st_buf_free(&b);
		return fl_err_prefix(err, "manifest entry: %s", what);
	}
	*out = b.data;
	*len = b.len;
	return 0;
}

static int put_metric(struct st_entry_copy *c, int kind, json_int_t key, const json_t *v,
                      struct fl_err *err)
{
	struct st_column_metrics *m;

	if (key < INT32_MIN || key > INT32_MAX)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "manifest entry: %s key %" JSON_INTEGER_FORMAT " is not an int",
		                  map_names[kind], key);
	m = column(c, (int32_t)key);
	if (m == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	if (kind == M_LOWER || kind == M_UPPER) {
		uint8_t **p = kind == M_LOWER ? &m->lower : &m->upper;
		size_t *len = kind == M_LOWER ? &m->lower_len : &m->upper_len;

		free(*p);
		*p = NULL;
		if (decode_bytes(c->alloc, v, p, len, map_names[kind], err) != 0)
			return -1;
		if (kind == M_LOWER)
			m->has_lower = true;
		else
			m->has_upper = true;
		return 0;
	}
	if (!json_is_integer(v))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "manifest entry: %s holds a non-integer",
		                  map_names[kind]);
	switch (kind) {
	case M_SIZE: m->column_size = json_integer_value(v); break;
	case M_VALUES: m->value_count = json_integer_value(v); break;
	case M_NULLS: m->null_count = json_integer_value(v); break;
	default: m->nan_count = json_integer_value(v); break;
	}
	return 0;
}

static int read_map(struct st_entry_copy *c, int kind, const json_t *map, struct fl_err *err)
{
	size_t i;
	const json_t *kv;
	const char *k;
	json_t *v;

	if (map == NULL || json_is_null(map))
		return 0;
	if (json_is_array(map)) {
		json_array_foreach(map, i, kv)
		{
			const json_t *key = json_object_get(kv, "key");

			if (!json_is_integer(key))
				return fl_err_set(err, FL_ERR_BAD_REQUEST,
				                  "manifest entry: %s has a non-integer key",
				                  map_names[kind]);
			if (put_metric(c, kind, json_integer_value(key),
			               json_object_get(kv, "value"), err) != 0)
				return -1;
		}
		return 0;
	}
	if (!json_is_object(map))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "manifest entry: %s is not a map",
		                  map_names[kind]);
	json_object_foreach((json_t *)map, k, v)
	{
		char *end;
		long long key = strtoll(k, &end, 10);

		if (end == k || *end != '\0')
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "manifest entry: %s has key '%.20s'", map_names[kind], k);
		if (put_metric(c, kind, key, v, err) != 0)
			return -1;
	}
	return 0;
}

/* An optional long field: *has and *out. */
static int opt_long(const json_t *rec, const char *name, bool *has, int64_t *out,
                    struct fl_err *err)
{
	const json_t *v = json_object_get(rec, name);

	*has = false;
	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_integer(v))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "manifest entry: %s is not a long",
		                  name);
	*has = true;
	*out = json_integer_value(v);
	return 0;
}

/* The entry's long, else the list record's (inheritance). */
static int inherited(const json_t *rec, const char *name, const json_t *list_rec,
                     const char *list_name, int64_t *out, struct fl_err *err)
{
	bool has;

	if (opt_long(rec, name, &has, out, err) != 0)
		return -1;
	if (!has && opt_long(list_rec, list_name, &has, out, err) != 0)
		return -1;
	if (!has)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "manifest entry: no %s and none to inherit", name);
	return 0;
}

static int arrays(struct st_entry_copy *c, const json_t *df, struct fl_err *err)
{
	const json_t *so = json_object_get(df, "split_offsets");
	const json_t *eq = json_object_get(df, "equality_ids");
	const json_t *v;
	size_t i;

	if (json_is_array(so) && json_array_size(so) > 0) {
		c->splits = st_calloc(c->alloc, json_array_size(so), sizeof(*c->splits));
		if (c->splits == NULL)
			return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		json_array_foreach(so, i, v) c->splits[i] = json_integer_value(v);
		c->file.split_offsets = c->splits;
		c->file.n_split_offsets = json_array_size(so);
	}
	if (json_is_array(eq) && json_array_size(eq) > 0) {
		c->eq_ids = st_calloc(c->alloc, json_array_size(eq), sizeof(*c->eq_ids));
		if (c->eq_ids == NULL)
			return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		json_array_foreach(eq, i, v) c->eq_ids[i] = (int32_t)json_integer_value(v);
		c->file.equality_ids = c->eq_ids;
		c->file.n_equality_ids = json_array_size(eq);
	}
	return 0;
}

int st_entry_copy_from_json(const json_t *rec, const json_t *list_rec, const struct st_alloc *a,
                            struct st_entry_copy *out, struct fl_err *err)
{
	struct st_entry_copy c;
	const json_t *df = json_object_get(rec, "data_file");
	struct st_data_file *f = &c.file;
	bool has;
	int64_t v = 0;

	memset(&c, 0, sizeof(c));
	c.alloc = a;
	if (!json_is_object(df))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "manifest entry: no data_file");
	f->content = (enum st_file_content)json_integer_value(json_object_get(df, "content"));
	f->file_path = json_string_value(json_object_get(df, "file_path"));
	f->file_format = json_string_value(json_object_get(df, "file_format"));
	f->record_count = json_integer_value(json_object_get(df, "record_count"));
	f->file_size_in_bytes = json_integer_value(json_object_get(df, "file_size_in_bytes"));
	if (f->file_path == NULL || f->file_format == NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "manifest entry: file_path or file_format missing");
	c.entry.status = (enum st_entry_status)json_integer_value(json_object_get(rec, "status"));
	c.entry.file = NULL;
	if (inherited(rec, "snapshot_id", list_rec, "added_snapshot_id", &c.entry.snapshot_id,
	              err) != 0 ||
	    inherited(rec, "sequence_number", list_rec, "sequence_number", &c.entry.sequence_number,
	              err) != 0 ||
	    inherited(rec, "file_sequence_number", list_rec, "sequence_number",
	              &c.entry.file_sequence_number, err) != 0)
		return fl_err_prefix(err, "%.200s", f->file_path);
	c.entry.has_snapshot_id = c.entry.has_sequence_number = true;
	c.entry.has_file_sequence_number = true;
	for (int k = 0; k < N_MAPS; k++) {
		if (read_map(&c, k, json_object_get(df, map_names[k]), err) != 0)
			goto fail;
	}
	f->columns = c.cols;
	if (arrays(&c, df, err) != 0)
		goto fail;
	if (json_is_string(json_object_get(df, "key_metadata")) &&
	    decode_bytes(a, json_object_get(df, "key_metadata"), &c.key_metadata,
	                 &f->key_metadata_len, "key_metadata", err) != 0)
		goto fail;
	f->key_metadata = c.key_metadata;
	if (opt_long(df, "sort_order_id", &has, &v, err) != 0)
		goto fail;
	f->has_sort_order_id = has;
	f->sort_order_id = (int32_t)v;
	f->referenced_data_file = json_string_value(json_object_get(df, "referenced_data_file"));
	if (opt_long(df, "content_offset", &f->has_content_offset, &f->content_offset, err) != 0 ||
	    opt_long(df, "content_size_in_bytes", &has, &f->content_size_in_bytes, err) != 0 ||
	    opt_long(df, "first_row_id", &f->has_first_row_id, &f->first_row_id, err) != 0)
		goto fail;
	*out = c;
	out->entry.file = &out->file;
	out->file.columns = out->cols;
	return 0;
fail:
	fl_err_prefix(err, "%.200s", f->file_path);
	st_entry_copy_free(&c);
	return -1;
}
