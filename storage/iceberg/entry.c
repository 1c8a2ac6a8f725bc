/* entry.c - manifest entries read back into the writer's form (entry.h).
 *
 * The Avro reader gives maps of int keys as arrays of {key, value} records
 * and bytes as base64 text (avro/reader.h); bounds are decoded back to the
 * single-value serialization they were written in, unchanged. */
#include "entry.h"

#include <stdlib.h>
#include <string.h>

#include "avro/reader.h"
#include "base/buf.h"

static int nomem(struct fl_err *err)
{
	return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
}

/* The metrics slot of field id, added when new. */
static struct st_column_metrics *slot(struct st_entry_copy *c, int32_t id, size_t cap)
{
	for (size_t i = 0; i < c->n_cols; i++)
		if (c->cols[i].field_id == id)
			return &c->cols[i];
	if (c->n_cols == cap)
		return NULL;
	struct st_column_metrics *m = &c->cols[c->n_cols++];

	memset(m, 0, sizeof(*m));
	m->field_id = id;
	m->column_size = m->value_count = m->null_count = m->nan_count = -1;
	return m;
}

static size_t map_len(const json_t *df, const char *name)
{
	return json_is_array(json_object_get(df, name)) ? json_array_size(json_object_get(df, name))
	                                                : 0;
}

/* One {key: field id, value: long} map into the metrics. */
static int long_map(struct st_entry_copy *c, const json_t *df, const char *name, size_t cap,
                    size_t off, struct fl_err *err)
{
	const json_t *kv;
	size_t i;

	json_array_foreach(json_object_get(df, name), i, kv)
	{
		const json_t *k = json_object_get(kv, "key"), *v = json_object_get(kv, "value");
		struct st_column_metrics *m;

		if (!json_is_integer(k) || !json_is_integer(v))
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "manifest entry: %s[%zu] is malformed", name, i);
		m = slot(c, (int32_t)json_integer_value(k), cap);
		if (m == NULL)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "manifest entry: too many columns");
		*(int64_t *)((char *)m + off) = json_integer_value(v);
	}
	return 0;
}

/* One {key: field id, value: bytes} bounds map into the metrics. */
static int bound_map(struct st_entry_copy *c, const json_t *df, const char *name, size_t cap,
                     bool lower, struct fl_err *err)
{
	const json_t *kv;
	size_t i;

	json_array_foreach(json_object_get(df, name), i, kv)
	{
		const json_t *k = json_object_get(kv, "key");
		const char *v = json_string_value(json_object_get(kv, "value"));
		struct st_column_metrics *m;
		struct st_buf b;

		if (!json_is_integer(k) || v == NULL)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "manifest entry: %s[%zu] is malformed", name, i);
		m = slot(c, (int32_t)json_integer_value(k), cap);
		if (m == NULL)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "manifest entry: too many columns");
		st_buf_init(&b, NULL);
		if (st_avro_base64_decode(v, strlen(v), &b, err) != 0) {
			st_buf_free(&b);
			return fl_err_prefix(err, "manifest entry: %s", name);
		}
		if (lower) {
			free(m->lower);
			m->lower = b.data;
			m->lower_len = b.len;
			m->has_lower = true;
		} else {
			free(m->upper);
			m->upper = b.data;
			m->upper_len = b.len;
			m->has_upper = true;
		}
	}
	return 0;
}

static bool get_long(const json_t *obj, const char *key, int64_t *out)
{
	const json_t *v = json_object_get(obj, key);

	if (!json_is_integer(v))
		return false;
	*out = json_integer_value(v);
	return true;
}

int st_entry_copy_parse(const struct st_snapshot_table *table, const json_t *list_rec,
                        const json_t *entry, struct st_entry_copy *c, struct fl_err *err)
{
	const json_t *df = json_object_get(entry, "data_file"), *v;
	size_t cap, n_part = 0, i;
	int64_t content = 0, l;

	memset(c, 0, sizeof(*c));
	if (!json_is_object(df))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "manifest entry: no data_file");
	c->e.file = &c->df;
	c->df.file_path = json_string_value(json_object_get(df, "file_path"));
	c->df.file_format = json_string_value(json_object_get(df, "file_format"));
	if (c->df.file_path == NULL || !get_long(df, "record_count", &c->df.record_count) ||
	    !get_long(df, "file_size_in_bytes", &c->df.file_size_in_bytes))
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "manifest entry: file_path, record_count or file_size_in_bytes "
		                  "is missing");
	if (c->df.file_format == NULL)
		c->df.file_format = "PARQUET";
	get_long(df, "content", &content);
	c->df.content = (enum st_file_content)content;
	/* Sequence numbers and snapshot ids: the entry's, else inherited. */
	c->e.has_snapshot_id = get_long(entry, "snapshot_id", &c->e.snapshot_id) ||
	                       get_long(list_rec, "added_snapshot_id", &c->e.snapshot_id);
	c->e.has_sequence_number = get_long(entry, "sequence_number", &c->e.sequence_number) ||
	                           get_long(list_rec, "sequence_number", &c->e.sequence_number);
	c->e.has_file_sequence_number =
	        get_long(entry, "file_sequence_number", &c->e.file_sequence_number) ||
	        get_long(list_rec, "sequence_number", &c->e.file_sequence_number);
	if (st_snapshot_partition_parse(table, json_object_get(df, "partition"), &c->partition,
	                                &n_part, err) != 0)
		return fl_err_prefix(err, "manifest entry %.200s", c->df.file_path);
	c->df.partition = c->partition;
	cap = map_len(df, "column_sizes") + map_len(df, "value_counts") +
	      map_len(df, "null_value_counts") + map_len(df, "nan_value_counts") +
	      map_len(df, "lower_bounds") + map_len(df, "upper_bounds");
	c->cols = calloc(cap ? cap : 1, sizeof(*c->cols));
	if (c->cols == NULL)
		return nomem(err);
	if (long_map(c, df, "column_sizes", cap, offsetof(struct st_column_metrics, column_size),
	             err) != 0 ||
	    long_map(c, df, "value_counts", cap, offsetof(struct st_column_metrics, value_count),
	             err) != 0 ||
	    long_map(c, df, "null_value_counts", cap,
	             offsetof(struct st_column_metrics, null_count), err) != 0 ||
	    long_map(c, df, "nan_value_counts", cap, offsetof(struct st_column_metrics, nan_count),
	             err) != 0 ||
	    bound_map(c, df, "lower_bounds", cap, true, err) != 0 ||
	    bound_map(c, df, "upper_bounds", cap, false, err) != 0)
		return fl_err_prefix(err, "%.200s", c->df.file_path);
	c->df.columns = c->cols;
	c->df.n_columns = c->n_cols;
	v = json_object_get(df, "split_offsets");
	if (json_is_array(v) && json_array_size(v) > 0) {
		const json_t *o;

		c->splits = calloc(json_array_size(v), sizeof(*c->splits));
		if (c->splits == NULL)
			return nomem(err);
		json_array_foreach(v, i, o) c->splits[i] = json_integer_value(o);
		c->df.split_offsets = c->splits;
		c->df.n_split_offsets = json_array_size(v);
	}
	if (get_long(df, "sort_order_id", &l)) {
		c->df.has_sort_order_id = true;
		c->df.sort_order_id = (int32_t)l;
	}
	if (get_long(df, "first_row_id", &l)) {
		c->df.has_first_row_id = true;
		c->df.first_row_id = l;
	}
	return 0;
}

void st_entry_copy_free(struct st_entry_copy *c)
{
	for (size_t i = 0; i < c->n_cols; i++) {
		free(c->cols[i].lower);
		free(c->cols[i].upper);
	}
	free(c->cols);
	free(c->partition);
	free(c->splits);
	memset(c, 0, sizeof(*c));
}
