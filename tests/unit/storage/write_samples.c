/* write_samples.c - writes sample files of every type and codec with the
 * storage/ writers, plus JSON files that say what they must contain, for
 * the independent readers in tests/integration/write-path/.
 *
 * Usage: write_samples OUTDIR [TABLE_URL]
 *
 * For each Parquet sample NAME.parquet it writes NAME.rows.json (the source
 * values, one array per row, in the forms the node tests derive from
 * DuckDB) and NAME.metrics.json (what st_parquet_writer_close reported).
 * Avro samples come with *.expect.json.  The data are deterministic, so
 * reruns produce the same values. */
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "avro/avro.h"
#include "decimal_text.h"
#include "base/sink.h"
#include "iceberg/manifest.h"
#include "iceberg/manifest_list.h"
#include "parquet/parquet.h"

__extension__ typedef __int128 i128;
__extension__ typedef unsigned __int128 u128;

static const char *outdir;

static void die(const char *what, const struct fl_err *err)
{
	fprintf(stderr, "write_samples: %s: %s\n", what, err ? err->msg : "");
	exit(1);
}

static char *path_of(const char *name)
{
	static char p[4096];

	snprintf(p, sizeof(p), "%s/%s", outdir, name);
	return p;
}

static void dump(json_t *j, const char *name)
{
	if (json_dump_file(j, path_of(name), JSON_INDENT(1) | JSON_REAL_PRECISION(17)) != 0)
		die(name, NULL);
	json_decref(j);
}

static char *hex(const uint8_t *p, size_t n, char *out)
{
	static const char digits[] = "0123456789ABCDEF";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 15];
	}
	out[2 * n] = '\0';
	return out;
}

static json_t *json_hex(const uint8_t *p, size_t n)
{
	char *s = malloc(2 * n + 1);
	json_t *j = json_string(hex(p, n, s));

	free(s);
	return j;
}

static json_t *json_i64(int64_t v)
{
	char s[32];

	snprintf(s, sizeof(s), "%" PRId64, v);
	return json_string(s);
}

/* ---- the all-types table ----------------------------------------------- */

enum {
	C_BOOL,
	C_INT,
	C_LONG,
	C_FLOAT,
	C_DOUBLE,
	C_DEC9,
	C_DEC18,
	C_DEC38,
	C_DATE,
	C_TIME,
	C_TS,
	C_TSTZ,
	C_STRING,
	C_UUID,
	C_FIXED,
	C_BINARY,
	C_ID,
	C_TS_NS,
	C_TSTZ_NS,
	NCOLS
};

static struct st_parquet_column cols[NCOLS] = {
        {"c_bool", 1, {ST_TYPE_BOOLEAN, 0, 0, 0}, false, ST_METRICS_DEFAULT, 0},
        {"c_int", 2, {ST_TYPE_INT, 0, 0, 0}, false, ST_METRICS_DEFAULT, 0},
        {"c_long", 3, {ST_TYPE_LONG, 0, 0, 0}, false, ST_METRICS_DEFAULT, 0},
        {"c_float", 4, {ST_TYPE_FLOAT, 0, 0, 0}, false, ST_METRICS_DEFAULT, 0},
        {"c_double", 5, {ST_TYPE_DOUBLE, 0, 0, 0}, false, ST_METRICS_DEFAULT, 0},
        {"c_dec9", 6, {ST_TYPE_DECIMAL, 9, 2, 0}, false, ST_METRICS_DEFAULT, 0},
        {"c_dec18", 7, {ST_TYPE_DECIMAL, 18, 4, 0}, false, ST_METRICS_DEFAULT, 0},
        {"c_dec38", 8, {ST_TYPE_DECIMAL, 38, 10, 0}, false, ST_METRICS_DEFAULT, 0},
        {"c_date", 9, {ST_TYPE_DATE, 0, 0, 0}, false, ST_METRICS_DEFAULT, 0},
        {"c_time", 10, {ST_TYPE_TIME, 0, 0, 0}, false, ST_METRICS_DEFAULT, 0},
        {"c_ts", 11, {ST_TYPE_TIMESTAMP, 0, 0, 0}, false, ST_METRICS_DEFAULT, 0},
        {"c_tstz", 12, {ST_TYPE_TIMESTAMPTZ, 0, 0, 0}, false, ST_METRICS_DEFAULT, 0},
        {"c_string", 13, {ST_TYPE_STRING, 0, 0, 0}, false, ST_METRICS_DEFAULT, 0},
        {"c_uuid", 14, {ST_TYPE_UUID, 0, 0, 0}, false, ST_METRICS_DEFAULT, 0},
        {"c_fixed", 15, {ST_TYPE_FIXED, 0, 0, 5}, false, ST_METRICS_DEFAULT, 0},
        {"c_binary", 16, {ST_TYPE_BINARY, 0, 0, 0}, false, ST_METRICS_DEFAULT, 0},
        {"c_id", 17, {ST_TYPE_LONG, 0, 0, 0}, true, ST_METRICS_DEFAULT, 0},
        {"c_ts_ns", 18, {ST_TYPE_TIMESTAMP_NS, 0, 0, 0}, false, ST_METRICS_DEFAULT, 0},
        {"c_tstz_ns", 19, {ST_TYPE_TIMESTAMPTZ_NS, 0, 0, 0}, false, ST_METRICS_DEFAULT, 0},
};

static const char *schema_json =
        "{\"type\":\"struct\",\"schema-id\":0,\"fields\":["
        "{\"id\":1,\"name\":\"c_bool\",\"required\":false,\"type\":\"boolean\"},"
        "{\"id\":2,\"name\":\"c_int\",\"required\":false,\"type\":\"int\"},"
        "{\"id\":3,\"name\":\"c_long\",\"required\":false,\"type\":\"long\"},"
        "{\"id\":4,\"name\":\"c_float\",\"required\":false,\"type\":\"float\"},"
        "{\"id\":5,\"name\":\"c_double\",\"required\":false,\"type\":\"double\"},"
        "{\"id\":6,\"name\":\"c_dec9\",\"required\":false,\"type\":\"decimal(9, 2)\"},"
        "{\"id\":7,\"name\":\"c_dec18\",\"required\":false,\"type\":\"decimal(18, 4)\"},"
        "{\"id\":8,\"name\":\"c_dec38\",\"required\":false,\"type\":\"decimal(38, 10)\"},"
        "{\"id\":9,\"name\":\"c_date\",\"required\":false,\"type\":\"date\"},"
        "{\"id\":10,\"name\":\"c_time\",\"required\":false,\"type\":\"time\"},"
        "{\"id\":11,\"name\":\"c_ts\",\"required\":false,\"type\":\"timestamp\"},"
        "{\"id\":12,\"name\":\"c_tstz\",\"required\":false,\"type\":\"timestamptz\"},"
        "{\"id\":13,\"name\":\"c_string\",\"required\":false,\"type\":\"string\"},"
        "{\"id\":14,\"name\":\"c_uuid\",\"required\":false,\"type\":\"uuid\"},"
        "{\"id\":15,\"name\":\"c_fixed\",\"required\":false,\"type\":\"fixed[5]\"},"
        "{\"id\":16,\"name\":\"c_binary\",\"required\":false,\"type\":\"binary\"},"
        "{\"id\":17,\"name\":\"c_id\",\"required\":true,\"type\":\"long\"},"
        "{\"id\":18,\"name\":\"c_ts_ns\",\"required\":false,\"type\":\"timestamp_ns\"},"
        "{\"id\":19,\"name\":\"c_tstz_ns\",\"required\":false,\"type\":\"timestamptz_ns\"}]}";

static const char *strings[] = {
        "",
        "a",
        "h\xc3\xa9llo w\xc3\xb6rld",
        /* 22 code points of CJK: truncated to 16 for the bounds */
        "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x81\xae\xe3\x83\x86\xe3\x82\xad\xe3\x82\xb9\xe3\x83"
        "\x88\xe3\x81\xaf\xe3\x81\xa8\xe3\x81\xa6\xe3\x82\x82\xe9\x95\xb7\xe3\x81\x84\xe6\x96\x87\xe5"
        "\xad\x97\xe5\x88\x97\xe3\x81\xa7\xe3\x81\x99\xe3\x81\xad\xe3\x81\x88\xe3\x80\x82",
        "zzzzzzzzzzzzzzzzzzzzzzzz",
        /* 18 emoji (4-byte UTF-8): the maximum; its upper bound increments U+1F600 */
        "\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98"
        "\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f"
        "\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0"
        "\x9f\x98\x80",
        "Aardvark",
};

struct row_store {
	struct st_value v[NCOLS];
	char str[128];
	uint8_t uuid[16], fixed[5], bin[24];
};

static bool is_null(int r, int c, bool all_required)
{
	if (all_required || cols[c].required)
		return false;
	return (r * 7 + c * 3) % 11 == 0;
}

static void dec_from_i128(struct st_value *v, i128 x)
{
	u128 u = (u128)x;

	v->null = false;
	for (int i = 0; i < 16; i++)
		v->v.dec[15 - i] = (uint8_t)(u >> (8 * i));
}

static void make_row(int r, struct row_store *s, bool all_required)
{
	struct st_value *v = s->v;

	memset(v, 0, sizeof(s->v));
	v[C_BOOL].v.b = r % 3 == 0;
	v[C_INT].v.i = r % 50 - 25;
	v[C_LONG].v.l = (int64_t)r * 1000003 - ((int64_t)1 << 40);
	v[C_FLOAT].v.f = r % 97 == 5 ? NAN : r % 89 == 3 ? -0.0f : (float)(r % 1000) / 8.0f - 60.0f;
	v[C_DOUBLE].v.d = r % 101 == 7 ? NAN : r * 0.25 - 100.5;
	st_value_set_decimal(&v[C_DEC9], (int64_t)(r * 37 % 200000) - 100000);
	st_value_set_decimal(&v[C_DEC18], (int64_t)r * 123456789 - 500000000000LL);
	dec_from_i128(&v[C_DEC38],
	              (i128)(r - 2500) * (i128)10000000000000LL * (i128)1000000000000LL + r);
	v[C_DATE].v.i = -1000 + r * 3;
	v[C_TIME].v.l = ((int64_t)r * 1234567) % 86400000000LL;
	v[C_TS].v.l = 1600000000000000LL + (int64_t)r * 1000003;
	v[C_TSTZ].v.l = -1000000000000LL + (int64_t)r * 3600000000LL;
	if (r % 5 == 0) {
		snprintf(s->str, sizeof(s->str), "%s", strings[(r / 5) % 7]);
	} else {
		snprintf(s->str, sizeof(s->str), "name-%d", r % 300);
	}
	v[C_STRING].v.bin.p = (const uint8_t *)s->str;
	v[C_STRING].v.bin.len = strlen(s->str);
	for (int i = 0; i < 16; i++)
		s->uuid[i] = (uint8_t)((r * 131 + i * 17) ^ (i * 29));
	s->uuid[6] = (uint8_t)((s->uuid[6] & 0x0f) | 0x40);
	s->uuid[8] = (uint8_t)((s->uuid[8] & 0x3f) | 0x80);
	v[C_UUID].v.bin.p = s->uuid;
	v[C_UUID].v.bin.len = 16;
	for (int i = 0; i < 5; i++)
		s->fixed[i] = (uint8_t)(r % 4 == 0 ? 0xff : (r + i * 40) & 0xff);
	v[C_FIXED].v.bin.p = s->fixed;
	v[C_FIXED].v.bin.len = 5;
	for (int i = 0; i < 24; i++)
		s->bin[i] = (uint8_t)(r % 13 == 0 ? 0xff : (r * 7 + i) & 0xff);
	v[C_BINARY].v.bin.p = s->bin;
	v[C_BINARY].v.bin.len = (size_t)(r % 13 == 0 ? 20 : r % 24);
	v[C_ID].v.l = r;
	/* nanosecond digits on the zone-less one; DuckDB reads the UTC one as
	 * microseconds, so its values stay whole microseconds */
	v[C_TS_NS].v.l = 1600000000123456789LL + (int64_t)r * 1000001;
	v[C_TSTZ_NS].v.l = -1000000000000000LL + (int64_t)r * 3600000000000LL;
	for (int c = 0; c < NCOLS; c++)
		v[c].null = is_null(r, c, all_required);
}

static json_t *dec_string(const uint8_t dec[16], int scale)
{
	char out[72];

	decimal_text(dec, scale, out);
	return json_string(out);
}

static json_t *float_json(double d)
{
	if (isnan(d))
		return json_string("NaN");
	return json_real(d);
}

static char *uuid_str(const uint8_t *u, char *out)
{
	static const char digits[] = "0123456789abcdef";
	int k = 0;

	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[k++] = '-';
		out[k++] = digits[u[i] >> 4];
		out[k++] = digits[u[i] & 15];
	}
	out[k] = '\0';
	return out;
}

static json_t *row_json(const struct row_store *s)
{
	const struct st_value *v = s->v;
	json_t *a = json_array();
	char u[40];

	for (int c = 0; c < NCOLS; c++) {
		json_t *j;

		if (v[c].null) {
			json_array_append_new(a, json_null());
			continue;
		}
		switch (c) {
		case C_BOOL: j = json_boolean(v[c].v.b); break;
		case C_INT: j = json_integer(v[c].v.i); break;
		case C_LONG: j = json_i64(v[c].v.l); break;
		case C_FLOAT: j = float_json(v[c].v.f); break;
		case C_DOUBLE: j = float_json(v[c].v.d); break;
		case C_DEC9: j = dec_string(v[c].v.dec, 2); break;
		case C_DEC18: j = dec_string(v[c].v.dec, 4); break;
		case C_DEC38: j = dec_string(v[c].v.dec, 10); break;
		case C_DATE: j = json_integer(v[c].v.i); break;
		case C_TIME: j = json_integer(v[c].v.l); break;
		case C_TS:
		case C_TSTZ:
		case C_ID:
		case C_TS_NS:
		case C_TSTZ_NS: j = json_i64(v[c].v.l); break;
		case C_STRING: j = json_stringn((const char *)v[c].v.bin.p, v[c].v.bin.len); break;
		case C_UUID: j = json_string(uuid_str(v[c].v.bin.p, u)); break;
		default: j = json_hex(v[c].v.bin.p, v[c].v.bin.len); break;
		}
		json_array_append_new(a, j);
	}
	return a;
}

static json_t *metrics_json(const struct st_parquet_metrics *m)
{
	json_t *o = json_object(), *cs = json_array(), *so = json_array();

	json_object_set_new(o, "record_count", json_integer(m->record_count));
	json_object_set_new(o, "file_size", json_integer(m->file_size));
	for (size_t i = 0; i < m->n_split_offsets; i++)
		json_array_append_new(so, json_integer(m->split_offsets[i]));
	json_object_set_new(o, "split_offsets", so);
	for (size_t i = 0; i < m->n_columns; i++) {
		const struct st_column_metrics *c = &m->columns[i];
		json_t *j = json_object();

		json_object_set_new(j, "name", json_string(cols[i].name));
		json_object_set_new(j, "field_id", json_integer(c->field_id));
		json_object_set_new(j, "column_size", json_integer(c->column_size));
		json_object_set_new(j, "value_count", json_integer(c->value_count));
		json_object_set_new(j, "null_count", json_integer(c->null_count));
		json_object_set_new(j, "nan_count",
		                    c->nan_count >= 0 ? json_integer(c->nan_count) : json_null());
		json_object_set_new(j, "lower",
		                    c->has_lower ? json_hex(c->lower, c->lower_len) : json_null());
		json_object_set_new(j, "upper",
		                    c->has_upper ? json_hex(c->upper, c->upper_len) : json_null());
		json_array_append_new(cs, j);
	}
	json_object_set_new(o, "columns", cs);
	return o;
}

struct sample {
	const char *name;
	enum st_parquet_codec codec;
	int rows;
	bool no_dictionary;
	bool all_required;
};

/* Metrics of the written samples, kept for the manifests. */
static struct st_parquet_metrics kept[8];
static const char *kept_names[8];
static int n_kept;

static void write_parquet(const struct sample *s)
{
	struct st_parquet_column cs[NCOLS];
	struct st_parquet_opts o = {0};
	struct st_file_sink f;
	struct st_parquet_writer *w;
	struct st_parquet_metrics m;
	struct fl_err err = {0};
	struct row_store rs;
	json_t *rows = json_array();
	char name[256];

	memcpy(cs, cols, sizeof(cs));
	for (int c = 0; c < NCOLS; c++)
		cs[c].required = cs[c].required || s->all_required;
	snprintf(name, sizeof(name), "%s.parquet", s->name);
	if (st_file_sink_open(&f, path_of(name), &err) != 0)
		die(name, &err);
	o.columns = cs;
	o.n_columns = NCOLS;
	o.iceberg_schema_json = schema_json;
	o.codec = s->codec;
	o.row_group_bytes = 48 * 1024;
	o.page_bytes = 4 * 1024;
	o.dict_bytes = 2 * 1024;
	o.no_dictionary = s->no_dictionary;
	o.sink = f.sink;
	if (st_parquet_writer_open(&o, &w, &err) != 0)
		die(name, &err);
	for (int r = 0; r < s->rows; r++) {
		make_row(r, &rs, s->all_required);
		if (st_parquet_writer_write_row(w, rs.v, &err) != 0)
			die(name, &err);
		json_array_append_new(rows, row_json(&rs));
	}
	if (st_parquet_writer_close(w, &m, &err) != 0 || st_file_sink_close(&f, &err) != 0)
		die(name, &err);
	snprintf(name, sizeof(name), "%s.rows.json", s->name);
	dump(rows, name);
	snprintf(name, sizeof(name), "%s.metrics.json", s->name);
	dump(metrics_json(&m), name);
	kept[n_kept] = m;
	kept_names[n_kept++] = s->name;
}

/* Unique ids next to a low-cardinality column, in one row group with the
 * default dictionary limit: the id column must give up its dictionary
 * (mostly unique values), the category column must keep it. */
static void write_dict_fallback(void)
{
	static const struct st_parquet_column c2[] = {
	        {"id", 1, {ST_TYPE_LONG, 0, 0, 0}, true, ST_METRICS_DEFAULT, 0},
	        {"category", 2, {ST_TYPE_STRING, 0, 0, 0}, false, ST_METRICS_DEFAULT, 0},
	};
	static const char *cats[] = {"red", "green", "blue"};
	struct st_parquet_opts o = {0};
	struct st_parquet_writer *w;
	struct st_file_sink f;
	struct fl_err err = {0};

	if (st_file_sink_open(&f, path_of("dict_fallback.parquet"), &err) != 0)
		die("dict_fallback", &err);
	o.columns = c2;
	o.n_columns = 2;
	o.sink = f.sink;
	if (st_parquet_writer_open(&o, &w, &err) != 0)
		die("dict_fallback", &err);
	for (int r = 0; r < 50000; r++) {
		struct st_value row[2] = {{0}};

		row[0].v.l = (int64_t)r * 7919;
		row[1].v.bin.p = (const uint8_t *)cats[r % 3];
		row[1].v.bin.len = strlen(cats[r % 3]);
		if (st_parquet_writer_write_row(w, row, &err) != 0)
			die("dict_fallback", &err);
	}
	if (st_parquet_writer_close(w, NULL, &err) != 0 || st_file_sink_close(&f, &err) != 0)
		die("dict_fallback", &err);
}

/* ---- a generic Avro file with every datum kind --------------------------- */

static const char *datum_schema =
        "{\"type\":\"record\",\"name\":\"datums\",\"fields\":["
        "{\"name\":\"i\",\"type\":\"int\",\"field-id\":1},"
        "{\"name\":\"l\",\"type\":\"long\",\"field-id\":2},"
        "{\"name\":\"s\",\"type\":\"string\",\"field-id\":3},"
        "{\"name\":\"b\",\"type\":\"bytes\",\"field-id\":4},"
        "{\"name\":\"t\",\"type\":\"boolean\",\"field-id\":5},"
        "{\"name\":\"f\",\"type\":\"float\",\"field-id\":6},"
        "{\"name\":\"d\",\"type\":\"double\",\"field-id\":7},"
        "{\"name\":\"o\",\"type\":[\"null\",\"long\"],\"default\":null,\"field-id\":8},"
        "{\"name\":\"a\",\"type\":{\"type\":\"array\",\"items\":\"int\",\"element-id\":10},\"field-id\":9},"
        "{\"name\":\"m\",\"type\":{\"type\":\"array\",\"items\":{\"type\":\"record\",\"name\":\"k12_v13\","
        "\"fields\":[{\"name\":\"key\",\"type\":\"int\",\"field-id\":12},"
        "{\"name\":\"value\",\"type\":\"string\",\"field-id\":13}]},\"logicalType\":\"map\"},\"field-id\":11},"
        "{\"name\":\"r\",\"type\":{\"type\":\"record\",\"name\":\"inner\",\"fields\":["
        "{\"name\":\"x\",\"type\":\"long\",\"field-id\":15}]},\"field-id\":14}]}";

static void write_datums(enum st_avro_codec codec, const char *name, json_t *expect)
{
	static const uint8_t sync[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
	const struct st_avro_meta meta[] = {
	        {"floe.sample", "datums", 6},
	        {"binary-meta", "\x00\x01\xff", 3},
	};
	struct st_avro_writer_opts o = {0};
	struct st_avro_writer *w;
	struct st_file_sink f;
	struct fl_err err = {0};
	static const int64_t longs[] = {0,  1,   -1,        63,        -64,
	                                64, -65, INT64_MAX, INT64_MIN, 1LL << 40};

	if (st_file_sink_open(&f, path_of(name), &err) != 0)
		die(name, &err);
	o.schema_json = datum_schema;
	o.codec = codec;
	o.meta = meta;
	o.n_meta = 2;
	o.sync = sync;
	o.block_bytes = 200; /* several blocks */
	o.sink = f.sink;
	if (st_avro_writer_open(&o, &w, &err) != 0)
		die(name, &err);
	for (int r = 0; r < 40; r++) {
		int64_t l = longs[r % 10];
		int32_t i = (int32_t)(r % 2 ? -r * 1000003 : r * 77);
		char s[32];
		uint8_t b[4] = {(uint8_t)r, 0, 0xff, (uint8_t)(r * 3)};
		json_t *rec = expect ? json_object() : NULL;

		snprintf(s, sizeof(s), r % 4 ? "r\xc3\xa9%d" : "", r);
		st_avro_write_int(w, i);
		st_avro_write_long(w, l);
		st_avro_write_string(w, s);
		st_avro_write_bytes(w, b, (size_t)(r % 5));
		st_avro_write_bool(w, r % 2);
		st_avro_write_float(w, (float)r / 4.0f);
		st_avro_write_double(w, r * -1.5);
		if (r % 3 == 0) {
			st_avro_write_union(w, 0);
		} else {
			st_avro_write_union(w, 1);
			st_avro_write_long(w, l / 3);
		}
		st_avro_write_array_start(w, (size_t)(r % 4));
		for (int k = 0; k < r % 4; k++)
			st_avro_write_int(w, k - r);
		st_avro_write_array_end(w);
		st_avro_write_array_start(w, (size_t)(r % 3));
		for (int k = 0; k < r % 3; k++) {
			char v[16];

			snprintf(v, sizeof(v), "v%d", k);
			st_avro_write_int(w, k + 100);
			st_avro_write_string(w, v);
		}
		st_avro_write_array_end(w);
		st_avro_write_long(w, -r);
		if (st_avro_writer_end_record(w, &err) != 0)
			die(name, &err);
		if (rec) {
			json_t *a = json_array(), *m = json_array();

			json_object_set_new(rec, "i", json_integer(i));
			json_object_set_new(rec, "l", json_i64(l));
			json_object_set_new(rec, "s", json_string(s));
			json_object_set_new(rec, "b", json_hex(b, (size_t)(r % 5)));
			json_object_set_new(rec, "t", json_boolean(r % 2));
			json_object_set_new(rec, "f", json_real((float)r / 4.0f));
			json_object_set_new(rec, "d", json_real(r * -1.5));
			json_object_set_new(rec, "o", r % 3 == 0 ? json_null() : json_i64(l / 3));
			for (int k = 0; k < r % 4; k++)
				json_array_append_new(a, json_integer(k - r));
			json_object_set_new(rec, "a", a);
			for (int k = 0; k < r % 3; k++) {
				char v[16];

				snprintf(v, sizeof(v), "v%d", k);
				json_array_append_new(
				        m, json_pack("{s:i,s:s}", "key", k + 100, "value", v));
			}
			json_object_set_new(rec, "m", m);
			json_object_set_new(rec, "r", json_pack("{s:o}", "x", json_i64(-r)));
			json_array_append_new(expect, rec);
		}
	}
	if (st_avro_writer_close(w, NULL, &err) != 0 || st_file_sink_close(&f, &err) != 0)
		die(name, &err);
}

/* ---- manifests and manifest lists ----------------------------------------- */

static const struct st_partition_field spec[] = {
        {1000, 2, "c_int", "identity", {ST_TYPE_INT, 0, 0, 0}},
        {1001, 13, "c_string", "identity", {ST_TYPE_STRING, 0, 0, 0}},
        {1002, 9, "c_date_day", "day", {ST_TYPE_DATE, 0, 0, 0}},
        {1003, 6, "c_dec9", "identity", {ST_TYPE_DECIMAL, 9, 2, 0}},
        {1004, 14, "c_uuid", "identity", {ST_TYPE_UUID, 0, 0, 0}},
        {1005, 5, "c_double", "identity", {ST_TYPE_DOUBLE, 0, 0, 0}},
        {1006, 11, "c_ts_hour", "hour", {ST_TYPE_INT, 0, 0, 0}},
        {1007, 1, "c_bool", "identity", {ST_TYPE_BOOLEAN, 0, 0, 0}},
        {1008, 16, "c_binary", "identity", {ST_TYPE_BINARY, 0, 0, 0}},
        {1009, 12, "c_tstz", "identity", {ST_TYPE_TIMESTAMPTZ, 0, 0, 0}},
};
#define N_SPEC (sizeof(spec) / sizeof(spec[0]))

/* The partition-spec header value the readers must find, built with
 * jansson rather than by the writer's own JSON code. */
static char *spec_json_expected(const struct st_partition_field *sp, size_t n)
{
	json_t *a = json_array();
	char *s;

	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_pack("{s:s,s:s,s:i,s:i}", "name", sp[i].name,
		                                   "transform", sp[i].transform, "source-id",
		                                   (int)sp[i].source_id, "field-id",
		                                   (int)sp[i].field_id));
	s = json_dumps(a, JSON_COMPACT);
	json_decref(a);
	return s;
}

/* The same spec without the fields Avro stores as `fixed` (decimal, uuid),
 * which icebird's Avro reader does not support. */
static const struct st_partition_field spec_nofixed[] = {
        {1000, 2, "c_int", "identity", {ST_TYPE_INT, 0, 0, 0}},
        {1001, 13, "c_string", "identity", {ST_TYPE_STRING, 0, 0, 0}},
        {1002, 9, "c_date_day", "day", {ST_TYPE_DATE, 0, 0, 0}},
        {1005, 5, "c_double", "identity", {ST_TYPE_DOUBLE, 0, 0, 0}},
        {1006, 11, "c_ts_hour", "hour", {ST_TYPE_INT, 0, 0, 0}},
        {1007, 1, "c_bool", "identity", {ST_TYPE_BOOLEAN, 0, 0, 0}},
        {1008, 16, "c_binary", "identity", {ST_TYPE_BINARY, 0, 0, 0}},
        {1009, 12, "c_tstz", "identity", {ST_TYPE_TIMESTAMPTZ, 0, 0, 0}},
};

static json_t *metrics_map(const struct st_parquet_metrics *m, int which)
{
	json_t *a = json_array();

	for (size_t i = 0; i < m->n_columns; i++) {
		const struct st_column_metrics *c = &m->columns[i];
		json_t *v = NULL;

		switch (which) {
		case 0: v = json_integer(c->column_size); break;
		case 1: v = json_integer(c->value_count); break;
		case 2: v = json_integer(c->null_count); break;
		case 3: v = c->nan_count >= 0 ? json_integer(c->nan_count) : NULL; break;
		case 4: v = c->has_lower ? json_hex(c->lower, c->lower_len) : NULL; break;
		case 5: v = c->has_upper ? json_hex(c->upper, c->upper_len) : NULL; break;
		}
		if (v != NULL)
			json_array_append_new(
			        a, json_pack("{s:i,s:o}", "key", (int)c->field_id, "value", v));
	}
	return a;
}

static void write_manifest(int version, enum st_avro_codec codec, const char *name,
                           const struct st_partition_field *sp, size_t n_sp,
                           struct st_manifest_file *out)
{
	static const uint8_t uuid[16] = {0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0x4d, 0xef,
	                                 0x80, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07};
	static const uint8_t binv[3] = {0x00, 0xff, 0x10};
	struct st_manifest_opts o = {0};
	struct st_manifest_writer *w;
	struct st_file_sink f;
	struct fl_err err = {0};
	json_t *expect = json_object(), *entries = json_array();
	char ename[256];

	if (st_file_sink_open(&f, path_of(name), &err) != 0)
		die(name, &err);
	o.format_version = version;
	o.content = ST_MANIFEST_DATA;
	o.schema_json = schema_json;
	o.schema_id = 0;
	o.spec_id = 3;
	o.spec = sp;
	o.n_spec = n_sp;
	o.snapshot_id = 8765432109876543210LL;
	o.codec = codec;
	o.sink = f.sink;
	if (st_manifest_writer_open(&o, &w, &err) != 0)
		die(name, &err);
	for (int k = 0; k < n_kept; k++) {
		const struct st_parquet_metrics *m = &kept[k];
		struct st_value full[N_SPEC], part[N_SPEC];
		struct st_data_file df = {0};
		struct st_manifest_entry e = {0};
		char fpath[512], u[40];
		json_t *pj = json_object();

		memset(full, 0, sizeof(full));
		full[0].v.i = k - 2;
		full[1].v.bin.p = (const uint8_t *)kept_names[k];
		full[1].v.bin.len = strlen(kept_names[k]);
		full[2].v.i = 19000 + k;
		st_value_set_decimal(&full[3], -12345 + k * 1000);
		full[4].v.bin.p = uuid;
		full[4].v.bin.len = 16;
		full[5].v.d = k == 1 ? NAN : k * 1.5;
		full[6].null = true;
		full[7].v.b = k % 2;
		full[8].v.bin.p = binv;
		full[8].v.bin.len = (size_t)(k % 3);
		full[9].v.l = 1700000000000000LL + k;
		for (size_t i = 0; i < n_sp; i++)
			part[i] = full[sp[i].field_id - 1000];
		snprintf(fpath, sizeof(fpath), "file:///warehouse/db/t/data/%s.parquet",
		         kept_names[k]);
		st_parquet_metrics_to_data_file(m, &df);
		df.file_path = fpath;
		df.partition = part;
		df.has_sort_order_id = k % 2 == 0;
		df.sort_order_id = 0;
		e.file = &df;
		e.status = k == n_kept - 1 ? ST_ENTRY_EXISTING : ST_ENTRY_ADDED;
		if (e.status == ST_ENTRY_EXISTING) {
			e.has_snapshot_id = true;
			e.snapshot_id = 42;
			e.has_sequence_number = true;
			e.sequence_number = 7;
			e.has_file_sequence_number = true;
			e.file_sequence_number = 7;
		}
		if (st_manifest_writer_add(w, &e, &err) != 0)
			die(name, &err);
		json_object_set_new(pj, "c_int", json_integer(k - 2));
		json_object_set_new(pj, "c_string", json_string(kept_names[k]));
		json_object_set_new(pj, "c_date_day", json_integer(19000 + k));
		json_object_set_new(pj, "c_dec9", json_integer(-12345 + k * 1000)); /* unscaled */
		json_object_set_new(pj, "c_uuid", json_string(uuid_str(uuid, u)));
		json_object_set_new(pj, "c_double",
		                    k == 1 ? json_string("NaN") : json_real(k * 1.5));
		json_object_set_new(pj, "c_ts_hour", json_null());
		json_object_set_new(pj, "c_bool", json_boolean(k % 2));
		json_object_set_new(pj, "c_binary", json_hex(binv, (size_t)(k % 3)));
		json_object_set_new(pj, "c_tstz", json_i64(1700000000000000LL + k));
		for (size_t i = 0; i < N_SPEC; i++) {
			bool in_spec = false;

			for (size_t j = 0; j < n_sp; j++)
				in_spec = in_spec || strcmp(sp[j].name, spec[i].name) == 0;
			if (!in_spec)
				json_object_del(pj, spec[i].name);
		}
		json_array_append_new(
		        entries,
		        json_pack(
		                "{s:i,s:o,s:o,s:o,s:s,s:s,s:o,s:I,s:I,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}",
		                "status", (int)e.status, "snapshot_id",
		                json_i64(e.has_snapshot_id ? e.snapshot_id : o.snapshot_id),
		                "sequence_number",
		                e.has_sequence_number ? json_integer(7) : json_null(),
		                "file_sequence_number",
		                e.has_file_sequence_number ? json_integer(7) : json_null(),
		                "file_path", fpath, "file_format", "PARQUET", "partition", pj,
		                "record_count", (json_int_t)m->record_count, "file_size_in_bytes",
		                (json_int_t)m->file_size, "column_sizes", metrics_map(m, 0),
		                "value_counts", metrics_map(m, 1), "null_value_counts",
		                metrics_map(m, 2), "nan_value_counts", metrics_map(m, 3),
		                "lower_bounds", metrics_map(m, 4), "upper_bounds",
		                metrics_map(m, 5), "split_offsets", json_null(), "sort_order_id",
		                df.has_sort_order_id ? json_integer(0) : json_null()));
		{
			json_t *so = json_array();

			for (size_t i = 0; i < m->n_split_offsets; i++)
				json_array_append_new(so, json_integer(m->split_offsets[i]));
			json_object_set_new(json_array_get(entries, json_array_size(entries) - 1),
			                    "split_offsets", so);
		}
	}
	if (st_manifest_writer_close(w, out, &err) != 0 || st_file_sink_close(&f, &err) != 0)
		die(name, &err);
	json_object_set_new(expect, "format_version", json_integer(version));
	json_object_set_new(expect, "schema", json_string(schema_json));
	{
		char *sj = spec_json_expected(sp, n_sp);

		json_object_set_new(expect, "partition_spec", json_string(sj));
		free(sj);
	}
	json_object_set_new(expect, "partition_spec_id", json_string("3"));
	json_object_set_new(expect, "entries", entries);
	json_object_set_new(expect, "length", json_integer(out->manifest_length));
	snprintf(ename, sizeof(ename), "%s.expect.json", name);
	dump(expect, ename);
}

static void write_list(int version, enum st_avro_codec codec, const char *name,
                       struct st_manifest_file *mfs, const char *const *paths, size_t n)
{
	struct st_manifest_list_opts o = {0};
	struct st_manifest_list_writer *w;
	struct st_file_sink f;
	struct fl_err err = {0};
	int64_t next = 0;
	uint64_t len = 0;
	json_t *expect = json_object(), *rows = json_array();
	char ename[256];

	if (st_file_sink_open(&f, path_of(name), &err) != 0)
		die(name, &err);
	o.format_version = version;
	o.snapshot_id = 8765432109876543210LL;
	o.has_parent = version == 3;
	o.parent_snapshot_id = 1234;
	o.sequence_number = 9;
	o.first_row_id = 1000;
	o.codec = codec;
	o.sink = f.sink;
	if (st_manifest_list_writer_open(&o, &w, &err) != 0)
		die(name, &err);
	for (size_t i = 0; i < n; i++) {
		mfs[i].manifest_path = paths[i];
		if (st_manifest_list_writer_add(w, &mfs[i], &err) != 0)
			die(name, &err);
		json_array_append_new(
		        rows,
		        json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:I}", "manifest_path", paths[i],
		                  "manifest_length", (json_int_t)mfs[i].manifest_length,
		                  "added_files_count", (json_int_t)mfs[i].added_files_count,
		                  "existing_files_count", (json_int_t)mfs[i].existing_files_count,
		                  "added_rows_count", (json_int_t)mfs[i].added_rows_count,
		                  "existing_rows_count", (json_int_t)mfs[i].existing_rows_count,
		                  "min_sequence_number", (json_int_t)mfs[i].min_sequence_number));
	}
	if (st_manifest_list_writer_close(w, &len, &next, &err) != 0 ||
	    st_file_sink_close(&f, &err) != 0)
		die(name, &err);
	json_object_set_new(expect, "format_version", json_integer(version));
	json_object_set_new(expect, "manifests", rows);
	json_object_set_new(expect, "next_row_id", json_integer(next));
	snprintf(ename, sizeof(ename), "%s.expect.json", name);
	dump(expect, ename);
}

/* A whole v2 table under OUTDIR/table whose files name each other by
 * TABLE_URL (an http:// base the test serves), for icebird to read end to
 * end: two data files, one deflate manifest, one manifest list.  The test
 * writes the table metadata JSON itself from table.expect.json. */
static void write_table(const char *url)
{
	static const uint8_t sync[16] = {9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9};
	struct st_parquet_metrics m[2];
	struct st_manifest_opts mo = {0};
	struct st_manifest_writer *mw;
	struct st_manifest_file mf;
	struct st_manifest_list_opts lo = {0};
	struct st_manifest_list_writer *lw;
	struct st_file_sink f;
	struct fl_err err = {0};
	char path[512], fpath[2][512], mpath[512], lpath[512];
	json_t *expect = json_object(), *rows = json_array();
	int row = 0;

	snprintf(path, sizeof(path), "%s/table", outdir);
	if (mkdir(path, 0755) != 0 || snprintf(path, sizeof(path), "%s/table/data", outdir) < 0 ||
	    mkdir(path, 0755) != 0 ||
	    snprintf(path, sizeof(path), "%s/table/metadata", outdir) < 0 || mkdir(path, 0755) != 0)
		die("table directories", NULL);
	for (int k = 0; k < 2; k++) {
		struct st_parquet_opts o = {0};
		struct st_parquet_writer *w;
		struct row_store rs;

		snprintf(path, sizeof(path), "table/data/%05d.parquet", k);
		snprintf(fpath[k], sizeof(fpath[k]), "%s/data/%05d.parquet", url, k);
		if (st_file_sink_open(&f, path_of(path), &err) != 0)
			die(path, &err);
		o.columns = cols;
		o.n_columns = NCOLS;
		o.iceberg_schema_json = schema_json;
		o.codec = k ? ST_PARQUET_GZIP : ST_PARQUET_ZSTD;
		o.sink = f.sink;
		if (st_parquet_writer_open(&o, &w, &err) != 0)
			die(path, &err);
		for (int r = 0; r < 400 + 100 * k; r++, row++) {
			make_row(row, &rs, false);
			if (st_parquet_writer_write_row(w, rs.v, &err) != 0)
				die(path, &err);
			json_array_append_new(rows, row_json(&rs));
		}
		if (st_parquet_writer_close(w, &m[k], &err) != 0 ||
		    st_file_sink_close(&f, &err) != 0)
			die(path, &err);
	}

	snprintf(mpath, sizeof(mpath), "%s/metadata/m0.avro", url);
	if (st_file_sink_open(&f, path_of("table/metadata/m0.avro"), &err) != 0)
		die("m0.avro", &err);
	mo.format_version = 2;
	mo.content = ST_MANIFEST_DATA;
	mo.schema_json = schema_json;
	mo.schema_id = 0;
	mo.snapshot_id = 1;
	mo.codec = ST_AVRO_CODEC_DEFLATE;
	mo.sync = sync;
	mo.sink = f.sink;
	if (st_manifest_writer_open(&mo, &mw, &err) != 0)
		die("m0.avro", &err);
	for (int k = 0; k < 2; k++) {
		struct st_data_file df = {0};
		struct st_manifest_entry e = {0};

		st_parquet_metrics_to_data_file(&m[k], &df);
		df.file_path = fpath[k];
		e.status = ST_ENTRY_ADDED;
		e.file = &df;
		if (st_manifest_writer_add(mw, &e, &err) != 0)
			die("m0.avro", &err);
	}
	if (st_manifest_writer_close(mw, &mf, &err) != 0 || st_file_sink_close(&f, &err) != 0)
		die("m0.avro", &err);
	mf.manifest_path = mpath;

	snprintf(lpath, sizeof(lpath), "%s/metadata/snap-1.avro", url);
	if (st_file_sink_open(&f, path_of("table/metadata/snap-1.avro"), &err) != 0)
		die("snap-1.avro", &err);
	lo.format_version = 2;
	lo.snapshot_id = 1;
	lo.sequence_number = 1;
	/* Not deflate: icebird's inflater (hyparquet-compressors gunzip 1.1.x)
	 * treats raw deflate as gzip members and recurses until the stack
	 * overflows when a block inflates to a few hundred bytes, whoever
	 * wrote it.  The larger manifest block above is deflate and reads. */
	lo.codec = ST_AVRO_CODEC_NULL;
	lo.sink = f.sink;
	if (st_manifest_list_writer_open(&lo, &lw, &err) != 0 ||
	    st_manifest_list_writer_add(lw, &mf, &err) != 0 ||
	    st_manifest_list_writer_close(lw, NULL, NULL, &err) != 0 ||
	    st_file_sink_close(&f, &err) != 0)
		die("snap-1.avro", &err);
	st_manifest_file_release(&mf, NULL);
	st_parquet_metrics_free(&m[0]);
	st_parquet_metrics_free(&m[1]);

	json_object_set_new(expect, "manifest_list", json_string(lpath));
	json_object_set_new(expect, "schema", json_loads(schema_json, 0, NULL));
	json_object_set_new(expect, "rows", rows);
	dump(expect, "table.expect.json");
}

int main(int argc, char **argv)
{
	static const struct sample samples[] = {
	        {"types_zstd", ST_PARQUET_ZSTD, 3000, false, false},
	        {"types_snappy", ST_PARQUET_SNAPPY, 3000, false, false},
	        {"types_gzip", ST_PARQUET_GZIP, 3000, false, false},
	        {"types_none", ST_PARQUET_UNCOMPRESSED, 3000, false, false},
	        {"types_plain", ST_PARQUET_ZSTD, 3000, true, false},
	        {"types_required", ST_PARQUET_SNAPPY, 700, false, true},
	        {"types_empty", ST_PARQUET_ZSTD, 0, false, false},
	};
	struct st_manifest_file mfs[5];
	const char *paths[3] = {"file:///warehouse/db/t/metadata/manifest_v2_null.avro",
	                        "file:///warehouse/db/t/metadata/manifest_v2_deflate.avro",
	                        "file:///warehouse/db/t/metadata/manifest_v3_deflate.avro"};
	json_t *expect;

	if (argc != 2 && argc != 3) {
		fprintf(stderr, "usage: write_samples OUTDIR [TABLE_URL]\n");
		return 2;
	}
	outdir = argv[1];
	if (argc == 3)
		write_table(argv[2]);
	for (size_t i = 0; i < sizeof(samples) / sizeof(samples[0]); i++)
		write_parquet(&samples[i]);
	write_dict_fallback();
	expect = json_array();
	write_datums(ST_AVRO_CODEC_NULL, "datums_null.avro", expect);
	write_datums(ST_AVRO_CODEC_DEFLATE, "datums_deflate.avro", NULL);
	dump(expect, "datums.expect.json");
	write_manifest(2, ST_AVRO_CODEC_NULL, "manifest_v2_null.avro", spec, N_SPEC, &mfs[0]);
	write_manifest(2, ST_AVRO_CODEC_DEFLATE, "manifest_v2_deflate.avro", spec, N_SPEC, &mfs[1]);
	write_manifest(3, ST_AVRO_CODEC_DEFLATE, "manifest_v3_deflate.avro", spec, N_SPEC, &mfs[2]);
	write_manifest(2, ST_AVRO_CODEC_DEFLATE, "manifest_v2_nofixed.avro", spec_nofixed,
	               sizeof(spec_nofixed) / sizeof(spec_nofixed[0]), &mfs[3]);
	write_manifest(2, ST_AVRO_CODEC_NULL, "manifest_v2_unpartitioned.avro", spec, 0, &mfs[4]);
	write_list(2, ST_AVRO_CODEC_NULL, "manifest_list_v2.avro", mfs, paths, 2);
	write_list(3, ST_AVRO_CODEC_DEFLATE, "manifest_list_v3.avro", mfs, paths, 3);
	for (int i = 0; i < 5; i++)
		st_manifest_file_release(&mfs[i], NULL);
	for (int k = 0; k < n_kept; k++)
		st_parquet_metrics_free(&kept[k]);
	return 0;
}
