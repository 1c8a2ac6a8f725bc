/* test_reader.c - the Avro container reader (storage/avro/reader.c): files
 * written by storage/avro/avro.c and the manifest writers read back and
 * compared value by value, both codecs and many blocks; hand-made
 * malformed files refused with the reason; every truncation and byte flip
 * of a real file survived; every allocation (the reader's and jansson's)
 * failed in turn. */
#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "avro/avro.h"
#include "avro/reader.h"
#include "iceberg/manifest.h"
#include "iceberg/manifest_list.h"
#include "jfail.h"

/* Every type, a named fixed referenced again by name (also from a union),
 * a recursive record, and a logicalType that must be ignored. */
static const char all_schema[] =
        "{\"type\":\"record\",\"name\":\"all\",\"namespace\":\"t\",\"fields\":["
        "{\"name\":\"n\",\"type\":\"null\"},"
        "{\"name\":\"b\",\"type\":\"boolean\"},"
        "{\"name\":\"i\",\"type\":\"int\"},"
        "{\"name\":\"l\",\"type\":\"long\",\"field-id\":7},"
        "{\"name\":\"f\",\"type\":\"float\"},"
        "{\"name\":\"d\",\"type\":{\"type\":\"double\"}},"
        "{\"name\":\"by\",\"type\":\"bytes\"},"
        "{\"name\":\"s\",\"type\":\"string\"},"
        "{\"name\":\"fx\",\"type\":{\"type\":\"fixed\",\"name\":\"f3\",\"size\":3}},"
        "{\"name\":\"e\",\"type\":{\"type\":\"enum\",\"name\":\"color\",\"symbols\":[\"RED\","
        "\"GREEN\"]}},"
        "{\"name\":\"a\",\"type\":{\"type\":\"array\",\"items\":\"long\",\"element-id\":9}},"
        "{\"name\":\"m\",\"type\":{\"type\":\"map\",\"values\":\"string\"}},"
        "{\"name\":\"u\",\"type\":[\"null\",\"string\",\"t.f3\"]},"
        "{\"name\":\"r\",\"type\":{\"type\":\"record\",\"name\":\"inner\",\"fields\":["
        "{\"name\":\"x\",\"type\":\"int\"},{\"name\":\"next\",\"type\":[\"null\",\"inner\"]}]}},"
        "{\"name\":\"fx2\",\"type\":\"f3\"},"
        "{\"name\":\"date\",\"type\":{\"type\":\"int\",\"logicalType\":\"date\"}},"
        "{\"name\":\"col\",\"type\":\"color\"}]}";

static void write_all_record(struct st_avro_writer *w, int k)
{
	char s[32];

	snprintf(s, sizeof(s), "r\xc3\xa9%d", k);
	st_avro_write_bool(w, k % 2);
	st_avro_write_int(w, k == 0 ? INT32_MIN : k);
	st_avro_write_long(w, k == 0 ? INT64_MIN : k == 1 ? INT64_MAX : -(int64_t)k * 1000000007);
	st_avro_write_float(w, k == 2 ? NAN : 1.5f * (float)k);
	st_avro_write_double(w, k == 2 ? -INFINITY : k == 3 ? INFINITY : -0.25 * k);
	st_avro_write_bytes(w, "\x00\xff\x10\x20", (size_t)(k % 5));
	st_avro_write_string(w, s);
	st_avro_write_fixed(w, "abc", 3);
	st_avro_write_int(w, k % 2); /* enum index */
	st_avro_write_array_start(w, (size_t)(k % 3));
	for (int j = 0; j < k % 3; j++)
		st_avro_write_long(w, j - 1);
	st_avro_write_array_end(w);
	st_avro_write_array_start(w, k % 2 ? 2 : 0); /* map */
	if (k % 2) {
		st_avro_write_string(w, "one");
		st_avro_write_string(w, "1");
		st_avro_write_string(w, "two");
		st_avro_write_string(w, "2");
	}
	st_avro_write_array_end(w);
	st_avro_write_union(w, k % 3);
	if (k % 3 == 1)
		st_avro_write_string(w, "u");
	else if (k % 3 == 2)
		st_avro_write_fixed(w, "xyz", 3);
	st_avro_write_int(w, 10); /* inner.x */
	st_avro_write_union(w, 1);
	st_avro_write_int(w, 11); /* inner.next.x */
	st_avro_write_union(w, 0);
	st_avro_write_fixed(w, "\x01\x02\x03", 3);
	st_avro_write_int(w, 19000 + k);
	st_avro_write_int(w, 1);
}

static json_t *expect_all_record(int k)
{
	static const char *const b64[] = {"", "AA==", "AP8=", "AP8Q", "AP8QIA=="};
	char s[32];
	json_t *a = json_array(), *m = json_object(), *r, *u, *f, *d;

	snprintf(s, sizeof(s), "r\xc3\xa9%d", k);
	for (int j = 0; j < k % 3; j++)
		json_array_append_new(a, json_integer(j - 1));
	if (k % 2) {
		json_object_set_new(m, "one", json_string("1"));
		json_object_set_new(m, "two", json_string("2"));
	}
	u = k % 3 == 0 ? json_null() : k % 3 == 1 ? json_string("u") : json_string("eHl6");
	f = k == 2 ? json_string("NaN") : json_real(1.5 * k);
	d = k == 2   ? json_string("-Infinity")
	    : k == 3 ? json_string("Infinity")
	             : json_real(-0.25 * k);
	r = json_pack("{s:n,s:b,s:i,s:I,s:o,s:o,s:s,s:s,s:s,s:s,s:o,s:o,s:o,s:{s:i,s:{s:i,s:n}},"
	              "s:s,s:i,s:s}",
	              "n", "b", k % 2, "i", k == 0 ? INT32_MIN : k, "l",
	              (json_int_t)(k == 0   ? INT64_MIN
	                           : k == 1 ? INT64_MAX
	                                    : -(int64_t)k * 1000000007),
	              "f", f, "d", d, "by", b64[k % 5], "s", s, "fx", "YWJj", "e",
	              k % 2 ? "GREEN" : "RED", "a", a, "m", m, "u", u, "r", "x", 10, "next", "x",
	              11, "next", "fx2", "AQID", "date", 19000 + k, "col", "GREEN");
	assert_non_null(r);
	return r;
}

static const uint8_t sync16[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

static void write_all(enum st_avro_codec codec, int n, size_t block_bytes, struct st_buf *out)
{
	const struct st_avro_meta meta[] = {{"format-version", "2", 1}, {"bin", "\0\1\xff", 3}};
	struct st_avro_writer_opts o = {0};
	struct st_avro_writer *w;
	struct fl_err err = {0};

	o.schema_json = all_schema;
	o.codec = codec;
	o.meta = meta;
	o.n_meta = 2;
	o.sync = sync16;
	o.block_bytes = block_bytes;
	st_sink_to_buf(&o.sink, out);
	assert_int_equal(st_avro_writer_open(&o, &w, &err), 0);
	for (int k = 0; k < n; k++) {
		write_all_record(w, k);
		assert_int_equal(st_avro_writer_end_record(w, &err), 0);
	}
	assert_int_equal(st_avro_writer_close(w, NULL, &err), 0);
}

/* Reads every record; returns how many, or -1 on error (err set). */
static int read_count(const struct st_buf *b, const struct st_avro_reader_opts *o,
                      struct fl_err *err)
{
	struct st_avro_reader *r;
	json_t *v;
	int n = 0;

	if (st_avro_reader_open(b->data, b->len, o, &r, err) != 0)
		return -1;
	for (;;) {
		if (st_avro_reader_next(r, &v, err) != 0) {
			st_avro_reader_free(r);
			return -1;
		}
		if (v == NULL)
			break;
		json_decref(v);
		n++;
	}
	st_avro_reader_free(r);
	return n;
}

static void test_round_trip(void **state)
{
	static const enum st_avro_codec codecs[] = {ST_AVRO_CODEC_NULL, ST_AVRO_CODEC_DEFLATE};

	(void)state;
	for (size_t c = 0; c < 2; c++) {
		for (size_t bb = 0; bb < 2; bb++) {
			struct st_buf buf;
			struct st_avro_reader *r;
			struct fl_err err = {0};
			json_t *v;
			int k = 0;

			st_buf_init(&buf, NULL);
			/* 40-byte blocks: a few records each, so many blocks */
			write_all(codecs[c], 100, bb ? 40 : 0, &buf);
			assert_int_equal(st_avro_reader_open(buf.data, buf.len, NULL, &r, &err), 0);
			for (;;) {
				json_t *want;

				assert_int_equal(st_avro_reader_next(r, &v, &err), 0);
				if (v == NULL)
					break;
				want = expect_all_record(k);
				if (!json_equal(v, want)) {
					char *a = json_dumps(v, 0), *b = json_dumps(want, 0);

					fail_msg("record %d:\n got %s\nwant %s", k, a, b);
				}
				json_decref(want);
				json_decref(v);
				k++;
			}
			assert_int_equal(k, 100);
			/* the end is sticky */
			assert_int_equal(st_avro_reader_next(r, &v, &err), 0);
			assert_null(v);
			st_avro_reader_free(r);
			st_buf_free(&buf);
		}
	}
}

static void test_meta(void **state)
{
	struct st_buf buf;
	struct st_avro_reader *r;
	struct fl_err err = {0};
	const uint8_t *v;
	const char *key;
	size_t len, seen = 0;
	const json_t *schema;

	(void)state;
	st_buf_init(&buf, NULL);
	write_all(ST_AVRO_CODEC_DEFLATE, 1, 0, &buf);
	assert_int_equal(st_avro_reader_open(buf.data, buf.len, NULL, &r, &err), 0);
	assert_int_equal(st_avro_reader_meta_count(r), 4);
	for (size_t i = 0; i < 4; i++) {
		st_avro_reader_meta_at(r, i, &key, &v, &len);
		if (strcmp(key, "avro.codec") == 0) {
			assert_int_equal(len, 7);
			assert_memory_equal(v, "deflate", 7);
			seen |= 1;
		} else if (strcmp(key, "avro.schema") == 0) {
			assert_int_equal(len, strlen(all_schema));
			seen |= 2;
		} else if (strcmp(key, "bin") == 0) {
			assert_int_equal(len, 3);
			assert_memory_equal(v, "\0\1\xff", 3);
			seen |= 4;
		} else if (strcmp(key, "format-version") == 0) {
			seen |= 8;
		}
	}
	assert_int_equal(seen, 15);
	v = st_avro_reader_meta_get(r, "format-version", &len);
	assert_non_null(v);
	assert_int_equal(len, 1);
	assert_int_equal(v[0], '2');
	assert_null(st_avro_reader_meta_get(r, "nope", &len));
	assert_int_equal(len, 0);
	schema = st_avro_reader_schema(r);
	assert_string_equal(json_string_value(json_object_get(schema, "name")), "all");
	/* field ids survive in the parsed schema */
	assert_int_equal(json_integer_value(json_object_get(
	                         json_array_get(json_object_get(schema, "fields"), 3), "field-id")),
	                 7);
	st_avro_reader_free(r);
	st_buf_free(&buf);
}

static void test_base64(void **state)
{
	static const struct {
		const char *text;
		const char *bytes;
		size_t n;
	} ok[] = {{"", "", 0},
	          {"AA==", "\0", 1},
	          {"AP8=", "\0\xff", 2},
	          {"YWJj", "abc", 3},
	          {"+/+/", "\xfb\xff\xbf", 3}};
	static const char *const bad[] = {"A",        "AA=",  "A===", "AA=A",
	                                  "AA==AA==", "A*==", "====", "AAA\n"};
	struct fl_err err = {0};

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct st_buf b;

		st_buf_init(&b, NULL);
		assert_int_equal(st_avro_base64_decode(ok[i].text, strlen(ok[i].text), &b, &err),
		                 0);
		assert_int_equal(b.len, ok[i].n);
		if (ok[i].n)
			assert_memory_equal(b.data, ok[i].bytes, ok[i].n);
		st_buf_free(&b);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct st_buf b;

		st_buf_init(&b, NULL);
		assert_int_equal(st_avro_base64_decode(bad[i], strlen(bad[i]), &b, &err), -1);
		assert_int_equal(err.kind, FL_ERR_BAD_REQUEST);
		st_buf_free(&b);
	}
}

/* A manifest and a manifest list from the Iceberg writers, read back. */
static void test_manifest(void **state)
{
	static const struct st_partition_field spec[] = {
	        {1000, 1, "id_bucket", "bucket[4]", {ST_TYPE_INT, 0, 0, 0}},
	        {1001, 2, "s", "identity", {ST_TYPE_STRING, 0, 0, 0}},
	};
	struct st_manifest_opts mo = {0};
	struct st_manifest_writer *mw;
	struct st_manifest_file mf;
	struct st_manifest_list_opts lo = {0};
	struct st_manifest_list_writer *lw;
	struct st_value part[2] = {{0}};
	struct st_column_metrics cols[2] = {{0}};
	struct st_data_file df = {0};
	struct st_manifest_entry e = {0};
	struct st_buf m, l;
	struct st_avro_reader *r;
	struct fl_err err = {0};
	json_t *v, *want;
	size_t len;
	const uint8_t *mv;

	(void)state;
	st_buf_init(&m, NULL);
	st_buf_init(&l, NULL);
	mo.format_version = 3;
	mo.content = ST_MANIFEST_DATA;
	mo.schema_json = "{\"type\":\"struct\",\"schema-id\":0,\"fields\":[]}";
	mo.schema_id = 0;
	mo.spec_id = 4;
	mo.spec = spec;
	mo.n_spec = 2;
	mo.snapshot_id = 77;
	mo.codec = ST_AVRO_CODEC_DEFLATE;
	st_sink_to_buf(&mo.sink, &m);
	assert_int_equal(st_manifest_writer_open(&mo, &mw, &err), 0);
	part[0].v.i = 3;
	part[1].v.bin.p = (const uint8_t *)"hi";
	part[1].v.bin.len = 2;
	cols[0] = (struct st_column_metrics){
	        1, 100, 10, 1, -1, true, true, (uint8_t *)"\x01\0\0\0", 4, (uint8_t *)"\x09\0\0\0",
	        4};
	cols[1] = (struct st_column_metrics){2, 50, 10, 0, -1, false, false, NULL, 0, NULL, 0};
	df.file_path = "file:///t/data/a.parquet";
	df.file_format = "PARQUET";
	df.partition = part;
	df.record_count = 10;
	df.file_size_in_bytes = 1234;
	df.columns = cols;
	df.n_columns = 2;
	e.status = ST_ENTRY_ADDED;
	e.file = &df;
	assert_int_equal(st_manifest_writer_add(mw, &e, &err), 0);
	assert_int_equal(st_manifest_writer_close(mw, &mf, &err), 0);

	assert_int_equal(st_avro_reader_open(m.data, m.len, NULL, &r, &err), 0);
	mv = st_avro_reader_meta_get(r, "partition-spec-id", &len);
	assert_int_equal(len, 1);
	assert_int_equal(mv[0], '4');
	assert_non_null(st_avro_reader_meta_get(r, "partition-spec", &len));
	assert_int_equal(st_avro_reader_next(r, &v, &err), 0);
	want = json_pack(
	        "{s:i,s:I,s:n,s:n,s:{s:i,s:s,s:s,s:{s:i,s:s},s:I,s:I,s:[{s:i,s:I},{s:i,s:I}],"
	        "s:[{s:i,s:I},{s:i,s:I}],s:[{s:i,s:I},{s:i,s:I}],s:n,s:[{s:i,s:s}],s:[{s:i,s:s}],"
	        "s:n,s:n,s:n,s:n,s:n,s:n,s:n,s:n}}",
	        "status", 1, "snapshot_id", (json_int_t)77, "sequence_number",
	        "file_sequence_number", "data_file", "content", 0, "file_path",
	        "file:///t/data/a.parquet", "file_format", "PARQUET", "partition", "id_bucket", 3,
	        "s", "hi", "record_count", (json_int_t)10, "file_size_in_bytes", (json_int_t)1234,
	        "column_sizes", "key", 1, "value", (json_int_t)100, "key", 2, "value",
	        (json_int_t)50, "value_counts", "key", 1, "value", (json_int_t)10, "key", 2,
	        "value", (json_int_t)10, "null_value_counts", "key", 1, "value", (json_int_t)1,
	        "key", 2, "value", (json_int_t)0, "nan_value_counts", "lower_bounds", "key", 1,
	        "value", "AQAAAA==", "upper_bounds", "key", 1, "value", "CQAAAA==", "key_metadata",
	        "split_offsets", "equality_ids", "sort_order_id", "first_row_id",
	        "referenced_data_file", "content_offset", "content_size_in_bytes");
	assert_non_null(want);
	if (!json_equal(v, want))
		fail_msg("manifest entry: %s", json_dumps(v, 0));
	json_decref(v);
	json_decref(want);
	assert_int_equal(st_avro_reader_next(r, &v, &err), 0);
	assert_null(v);
	st_avro_reader_free(r);

	mf.manifest_path = "file:///t/metadata/m.avro";
	lo.format_version = 3;
	lo.snapshot_id = 77;
	lo.sequence_number = 5;
	lo.first_row_id = 1000;
	lo.codec = ST_AVRO_CODEC_NULL;
	st_sink_to_buf(&lo.sink, &l);
	assert_int_equal(st_manifest_list_writer_open(&lo, &lw, &err), 0);
	assert_int_equal(st_manifest_list_writer_add(lw, &mf, &err), 0);
	assert_int_equal(st_manifest_list_writer_close(lw, NULL, NULL, &err), 0);
	assert_int_equal(st_avro_reader_open(l.data, l.len, NULL, &r, &err), 0);
	mv = st_avro_reader_meta_get(r, "parent-snapshot-id", &len);
	assert_int_equal(len, 4);
	assert_memory_equal(mv, "null", 4);
	assert_int_equal(st_avro_reader_next(r, &v, &err), 0);
	want = json_pack("{s:s,s:I,s:i,s:i,s:I,s:I,s:I,s:i,s:i,s:i,s:I,s:I,s:I,"
	                 "s:[{s:b,s:n,s:s,s:s},{s:b,s:n,s:s,s:s}],s:n,s:I}",
	                 "manifest_path", "file:///t/metadata/m.avro", "manifest_length",
	                 (json_int_t)m.len, "partition_spec_id", 4, "content", 0, "sequence_number",
	                 (json_int_t)5, "min_sequence_number", (json_int_t)5, "added_snapshot_id",
	                 (json_int_t)77, "added_files_count", 1, "existing_files_count", 0,
	                 "deleted_files_count", 0, "added_rows_count", (json_int_t)10,
	                 "existing_rows_count", (json_int_t)0, "deleted_rows_count", (json_int_t)0,
	                 "partitions", "contains_null", 0, "contains_nan", "lower_bound",
	                 "AwAAAA==", "upper_bound", "AwAAAA==", "contains_null", 0, "contains_nan",
	                 "lower_bound", "aGk=", "upper_bound", "aGk=", "key_metadata",
	                 "first_row_id", (json_int_t)1000);
	assert_non_null(want);
	if (!json_equal(v, want))
		fail_msg("manifest_file: %s", json_dumps(v, 0));
	json_decref(v);
	json_decref(want);
	st_avro_reader_free(r);
	st_manifest_file_release(&mf, NULL);
	st_buf_free(&m);
	st_buf_free(&l);
}

/* ---- hand-made files ---- */

static void put_str(struct st_buf *b, const char *s, size_t n)
{
	assert_int_equal(st_buf_put_zigzag(b, (int64_t)n), 0);
	assert_int_equal(st_buf_append(b, s, n), 0);
}

/* A file with the given schema and codec and one block of `count` datums
 * whose bytes are data[0..n). */
static void craft(struct st_buf *b, const char *schema, const char *codec, int64_t count,
                  const void *data, size_t n)
{
	st_buf_init(b, NULL);
	assert_int_equal(st_buf_append(b, "Obj\x01", 4), 0);
	assert_int_equal(st_buf_put_zigzag(b, codec ? 2 : 1), 0);
	put_str(b, "avro.schema", 11);
	put_str(b, schema, strlen(schema));
	if (codec) {
		put_str(b, "avro.codec", 10);
		put_str(b, codec, strlen(codec));
	}
	assert_int_equal(st_buf_put_zigzag(b, 0), 0);
	assert_int_equal(st_buf_append(b, sync16, 16), 0);
	if (count >= 0) {
		assert_int_equal(st_buf_put_zigzag(b, count), 0);
		put_str(b, data, n);
		assert_int_equal(st_buf_append(b, sync16, 16), 0);
	}
}

struct bad_case {
	const char *name;
	const char *schema;
	const char *codec;
	int64_t count;
	const char *data;
	size_t n;
	enum fl_err_kind kind;
	const char *msg; /* a part of the message */
};

static void test_malformed(void **state)
{
	static const char rec_self[] =
	        "{\"type\":\"record\",\"name\":\"a\",\"fields\":[{\"name\":\"x\",\"type\":\"a\"}]}";
	static const struct bad_case cases[] = {
	        {"union branch", "[\"null\",\"int\"]", NULL, 1, "\x04", 1, FL_ERR_BAD_REQUEST,
	         "union branch 2"},
	        {"negative union", "[\"null\",\"int\"]", NULL, 1, "\x01", 1, FL_ERR_BAD_REQUEST,
	         "union branch -1"},
	        {"string too long", "\"string\"", NULL, 1,
	         "\x10"
	         "ab",
	         3, FL_ERR_BAD_REQUEST, "exceeds"},
	        {"negative length", "\"bytes\"", NULL, 1, "\x03", 1, FL_ERR_BAD_REQUEST,
	         "length -2"},
	        {"bad utf-8", "\"string\"", NULL, 1, "\x02\xff", 2, FL_ERR_BAD_REQUEST, "UTF-8"},
	        {"boolean 2", "\"boolean\"", NULL, 1, "\x02", 1, FL_ERR_BAD_REQUEST, "boolean"},
	        {"long varint", "\"long\"", NULL, 1, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 10,
	         FL_ERR_BAD_REQUEST, "64 bits"},
	        {"11-byte varint", "\"long\"", NULL, 1,
	         "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x81\x01", 11, FL_ERR_BAD_REQUEST, "varint"},
	        {"int range", "\"int\"", NULL, 1, "\x80\x80\x80\x80\x10", 5, FL_ERR_BAD_REQUEST,
	         "out of range"},
	        {"enum index", "{\"type\":\"enum\",\"name\":\"e\",\"symbols\":[\"A\"]}", NULL, 1,
	         "\x02", 1, FL_ERR_BAD_REQUEST, "no symbol 1"},
	        {"fixed short", "{\"type\":\"fixed\",\"name\":\"f\",\"size\":4}", NULL, 1, "ab", 2,
	         FL_ERR_BAD_REQUEST, "4 bytes needed"},
	        {"truncated double", "\"double\"", NULL, 1, "\0\0\0", 3, FL_ERR_BAD_REQUEST,
	         "8 bytes needed"},
	        {"trailing block bytes", "\"int\"", NULL, 1, "\x02\x02", 2, FL_ERR_BAD_REQUEST,
	         "unread bytes"},
	        {"too many datums", "\"null\"", NULL, 1000000, "", 0, FL_ERR_BAD_REQUEST,
	         "claims 1000000 datums"},
	        /* 2^40 nulls in one array block: the value budget stops it */
	        {"zero-byte items", "{\"type\":\"array\",\"items\":\"null\"}", NULL, 1,
	         "\x80\x80\x80\x80\x80\x40", 6, FL_ERR_BAD_REQUEST, "more than"},
	        {"array block size", "{\"type\":\"array\",\"items\":\"int\"}", NULL, 1, "\x01\x7e",
	         2, FL_ERR_BAD_REQUEST, "block size 63"},
	        {"map key utf-8", "{\"type\":\"map\",\"values\":\"int\"}", NULL, 1,
	         "\x02\x02\xc0\x02\x00", 5, FL_ERR_BAD_REQUEST, "not UTF-8"},
	        {"self recursion", rec_self, NULL, 1, "", 0, FL_ERR_BAD_REQUEST, "deeper than"},
	        {"deflate garbage", "\"int\"", "deflate", 1, "\xff\xff\xff", 3, FL_ERR_BAD_REQUEST,
	         "deflate"},
	        {"deflate truncated", "\"int\"", "deflate", 1, "\x62", 1, FL_ERR_BAD_REQUEST,
	         "truncated"},
	        {"unknown codec", "\"int\"", "snappy", 1, "\x02", 1, FL_ERR_UNSUPPORTED, "snappy"},
	        {"unknown type", "\"nosuch\"", NULL, 1, "", 0, FL_ERR_BAD_REQUEST, "unknown type"},
	        {"bad schema JSON", "{\"type\":", NULL, 1, "", 0, FL_ERR_BAD_REQUEST,
	         "avro.schema"},
	        {"empty union", "[]", NULL, 1, "", 0, FL_ERR_BAD_REQUEST, "not a type"},
	        {"enum without symbols", "{\"type\":\"enum\",\"name\":\"e\",\"symbols\":[]}", NULL,
	         1, "", 0, FL_ERR_BAD_REQUEST, "no symbols"},
	        {"fixed without size", "{\"type\":\"fixed\",\"name\":\"f\"}", NULL, 1, "", 0,
	         FL_ERR_BAD_REQUEST, "size"},
	        {"record twice",
	         "[{\"type\":\"record\",\"name\":\"a\",\"fields\":[]},{\"type\":\"record\",\"name\":"
	         "\"a\",\"fields\":[]}]",
	         NULL, 1, "", 0, FL_ERR_BAD_REQUEST, "twice"},
	        {"field without name",
	         "{\"type\":\"record\",\"name\":\"a\",\"fields\":[{\"type\":\"int\"}]}", NULL, 1,
	         "", 0, FL_ERR_BAD_REQUEST, "no name"},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct bad_case *c = &cases[i];
		struct st_buf b;
		struct fl_err err = {0};

		craft(&b, c->schema, c->codec, c->count, c->data, c->n);
		if (read_count(&b, NULL, &err) != -1)
			fail_msg("%s: accepted", c->name);
		if (err.kind != c->kind || strstr(err.msg, c->msg) == NULL)
			fail_msg("%s: got kind %d \"%s\"", c->name, err.kind, err.msg);
		st_buf_free(&b);
	}
}

static void test_framing(void **state)
{
	struct st_buf b, ok;
	struct fl_err err = {0};
	struct st_avro_reader *r = NULL;
	struct st_avro_reader_opts o = {0};
	json_t *v;
	char deep[1024];
	size_t n = 0;

	(void)state;
	/* not Avro; no schema; duplicate key; NULL data */
	assert_int_equal(st_avro_reader_open("Obj", 3, NULL, &r, &err), -1);
	assert_non_null(strstr(err.msg, "magic"));
	assert_int_equal(st_avro_reader_open(NULL, 0, NULL, &r, &err), -1);
	st_buf_init(&b, NULL);
	assert_int_equal(st_buf_append(&b, "Obj\x01\x00", 5), 0);
	assert_int_equal(st_buf_append(&b, sync16, 16), 0);
	assert_int_equal(st_avro_reader_open(b.data, b.len, NULL, &r, &err), -1);
	assert_non_null(strstr(err.msg, "no avro.schema"));
	st_buf_reset(&b);
	assert_int_equal(st_buf_append(&b, "Obj\x01\x04", 5), 0);
	put_str(&b, "avro.schema", 11);
	put_str(&b, "\"int\"", 5);
	put_str(&b, "avro.schema", 11);
	put_str(&b, "\"int\"", 5);
	assert_int_equal(st_buf_put_u8(&b, 0), 0);
	assert_int_equal(st_buf_append(&b, sync16, 16), 0);
	assert_int_equal(st_avro_reader_open(b.data, b.len, NULL, &r, &err), -1);
	assert_non_null(strstr(err.msg, "twice"));
	assert_null(r);
	st_buf_free(&b);

	/* a block whose sync marker differs */
	craft(&b, "\"int\"", NULL, 1, "\x02", 1);
	b.data[b.len - 1] ^= 1;
	assert_int_equal(read_count(&b, NULL, &err), -1);
	assert_non_null(strstr(err.msg, "sync marker"));
	/* and the error is sticky */
	assert_int_equal(st_avro_reader_open(b.data, b.len, NULL, &r, &err), 0);
	assert_int_equal(st_avro_reader_next(r, &v, &err), 0);
	assert_int_equal(json_integer_value(v), 1);
	json_decref(v);
	assert_int_equal(st_avro_reader_next(r, &v, &err), -1);
	assert_int_equal(st_avro_reader_next(r, &v, &err), -1);
	assert_non_null(strstr(err.msg, "sync marker"));
	st_avro_reader_free(r);
	st_buf_free(&b);

	/* an empty block, a negative-count (sized) array block, nulls */
	craft(&b, "{\"type\":\"array\",\"items\":\"int\"}", NULL, 1, "\x03\x04\x02\x04\x00", 5);
	assert_int_equal(read_count(&b, NULL, &err), 1);
	st_buf_free(&b);
	craft(&b, "\"null\"", NULL, 3, "", 0);
	assert_int_equal(read_count(&b, NULL, &err), 3);
	st_buf_free(&b);
	craft(&b, "\"int\"", NULL, 0, "", 0);
	assert_int_equal(read_count(&b, NULL, &err), 0);
	st_buf_free(&b);

	/* nesting: arrays of arrays beyond the depth limit */
	for (int i = 0; i < 40; i++)
		n += (size_t)snprintf(deep + n, sizeof(deep) - n, "{\"type\":\"array\",\"items\":");
	n += (size_t)snprintf(deep + n, sizeof(deep) - n, "\"int\"");
	for (int i = 0; i < 40; i++)
		deep[n++] = '}';
	deep[n] = '\0';
	craft(&b, deep, NULL, 0, "", 0);
	assert_int_equal(read_count(&b, NULL, &err), 0);
	o.max_depth = 20;
	assert_int_equal(read_count(&b, &o, &err), -1);
	assert_non_null(strstr(err.msg, "deeper than"));
	st_buf_free(&b);

	/* the value budget and the inflated-size bound */
	st_buf_init(&ok, NULL);
	write_all(ST_AVRO_CODEC_DEFLATE, 300, 0, &ok);
	o.max_depth = 0;
	o.max_values = 10;
	assert_int_equal(read_count(&ok, &o, &err), -1);
	assert_non_null(strstr(err.msg, "more than 10 values"));
	o.max_values = 0;
	o.max_block_bytes = 1000;
	assert_int_equal(read_count(&ok, &o, &err), -1);
	assert_non_null(strstr(err.msg, "inflates to more than"));
	st_buf_free(&ok);
}

/* Every prefix and every single-byte change of a real file: no crash, no
 * leak, and a prefix never yields more records than the file has. */
static void test_truncate_and_flip(void **state)
{
	struct st_buf ok, b;
	struct fl_err err = {0};
	int full, accepted = 0;

	(void)state;
	st_buf_init(&ok, NULL);
	write_all(ST_AVRO_CODEC_DEFLATE, 12, 100, &ok);
	full = read_count(&ok, NULL, &err);
	assert_int_equal(full, 12);
	for (size_t len = 0; len < ok.len; len++) {
		struct st_buf p = {ok.data, len, len, NULL};
		int n = read_count(&p, NULL, &err);

		assert_true(n < full);
		accepted += n >= 0;
	}
	/* only the prefixes that end on a block boundary are whole files */
	assert_true(accepted > 0 && accepted < 12);
	st_buf_init(&b, NULL);
	assert_int_equal(st_buf_append(&b, ok.data, ok.len), 0);
	for (size_t i = 0; i < ok.len; i++) {
		for (int bit = 0; bit < 8; bit += 3) {
			b.data[i] ^= (uint8_t)(1u << bit);
			(void)read_count(&b, NULL, &err);
			b.data[i] = ok.data[i];
		}
	}
	st_buf_free(&b);
	st_buf_free(&ok);
}

static void test_alloc_failures(void **state)
{
	struct st_buf ok;
	struct failalloc fa;
	long n;
	bool done = false;

	(void)state;
	st_buf_init(&ok, NULL);
	write_all(ST_AVRO_CODEC_DEFLATE, 30, 200, &ok);
	for (n = 1; !done && n < 100000; n++) {
		struct st_avro_reader_opts o = {0};
		struct fl_err err = {0};
		int rc;

		failalloc_init(&fa, n);
		jfail_install(&fa);
		o.alloc = &fa.alloc;
		rc = read_count(&ok, &o, &err);
		jfail_remove();
		if (!fa.failed) {
			assert_int_equal(rc, 30);
			done = true;
		} else {
			assert_int_equal(rc, -1);
			assert_true(err.kind == FL_ERR_NOMEM || err.kind == FL_ERR_BAD_REQUEST);
		}
		if (fa.live != 0 || jfail_live != 0)
			fail_msg("failing allocation %ld leaks %ld + %ld blocks", n, fa.live,
			         jfail_live);
	}
	assert_true(done);
	assert_true(n > 100); /* the loop did reach the datums */
	st_buf_free(&ok);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_round_trip),
	        cmocka_unit_test(test_meta),
	        cmocka_unit_test(test_base64),
	        cmocka_unit_test(test_manifest),
	        cmocka_unit_test(test_malformed),
	        cmocka_unit_test(test_framing),
	        cmocka_unit_test(test_truncate_and_flip),
	        cmocka_unit_test(test_alloc_failures),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
