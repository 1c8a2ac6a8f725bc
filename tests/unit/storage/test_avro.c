/* test_avro.c - the Avro object container writer (storage/avro/avro.c):
 * the file is parsed back here from the Avro specification's framing, and
 * every allocation is failed in turn. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

#include <cmocka.h>

#include "avro/avro.h"
#include "failalloc.h"

static const char schema[] =
        "{\"type\":\"record\",\"name\":\"r\",\"fields\":[{\"name\":\"n\",\"type\":\"long\",\"field-id\":1},"
        "{\"name\":\"s\",\"type\":[\"null\",\"string\"],\"field-id\":2},"
        "{\"name\":\"a\",\"type\":{\"type\":\"array\",\"items\":\"int\",\"element-id\":4},\"field-id\":3}]}";
static const uint8_t sync_marker[16] = {0xde, 0xad, 0xbe, 0xef, 1, 2,  3,  4,
                                        5,    6,    7,    8,    9, 10, 11, 12};

struct reader {
	const uint8_t *p;
	size_t len, pos;
};

static uint64_t rd_varint(struct reader *r)
{
	uint64_t v = 0;
	int shift = 0;

	do {
		assert_true(r->pos < r->len);
		v |= (uint64_t)(r->p[r->pos] & 0x7f) << shift;
		shift += 7;
	} while (r->p[r->pos++] & 0x80);
	return v;
}

static int64_t rd_long(struct reader *r)
{
	uint64_t z = rd_varint(r);

	return (int64_t)(z >> 1) ^ -(int64_t)(z & 1);
}

static const uint8_t *rd_bytes(struct reader *r, size_t *n)
{
	const uint8_t *p;

	*n = (size_t)rd_long(r);
	assert_true(r->pos + *n <= r->len);
	p = r->p + r->pos;
	r->pos += *n;
	return p;
}

static int write_records(const struct st_alloc *a, enum st_avro_codec codec, size_t n,
                         struct st_buf *out, struct fl_err *err)
{
	const struct st_avro_meta meta[] = {{"format-version", "2", 1}, {"bin", "\0\1", 2}};
	struct st_avro_writer_opts o = {0};
	struct st_avro_writer *w;

	o.schema_json = schema;
	o.codec = codec;
	o.meta = meta;
	o.n_meta = 2;
	o.sync = sync_marker;
	o.block_bytes = 64;
	o.alloc = a;
	st_sink_to_buf(&o.sink, out);
	if (st_avro_writer_open(&o, &w, err) != 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		char s[32];

		snprintf(s, sizeof(s), "row %zu", i);
		st_avro_write_long(w, (int64_t)i * -1000);
		if (i % 2) {
			st_avro_write_union(w, 1);
			st_avro_write_string(w, s);
		} else {
			st_avro_write_union(w, 0);
		}
		st_avro_write_array_start(w, i % 3);
		for (size_t k = 0; k < i % 3; k++)
			st_avro_write_int(w, (int32_t)k);
		st_avro_write_array_end(w);
		if (st_avro_writer_end_record(w, err) != 0) {
			st_avro_writer_free(w);
			return -1;
		}
	}
	return st_avro_writer_close(w, NULL, err);
}

/* Parses the container in buf; returns the concatenated (decompressed)
 * block data and the record count. */
static size_t parse_file(const struct st_buf *buf, const char *codec, struct st_buf *data)
{
	struct reader r = {buf->data, buf->len, 0};
	size_t records = 0, n, seen = 0;
	int64_t count;

	assert_true(buf->len > 4);
	assert_memory_equal(buf->data, "Obj\x01", 4);
	r.pos = 4;
	count = rd_long(&r);
	assert_int_equal(count, 4);
	for (int64_t i = 0; i < count; i++) {
		const uint8_t *k = rd_bytes(&r, &n), *v;
		size_t vn;

		v = rd_bytes(&r, &vn);
		if (n == 11 && memcmp(k, "avro.schema", 11) == 0) {
			/* the schema string is kept byte for byte, field-id included */
			assert_int_equal(vn, strlen(schema));
			assert_memory_equal(v, schema, vn);
			seen |= 1;
		} else if (n == 10 && memcmp(k, "avro.codec", 10) == 0) {
			assert_int_equal(vn, strlen(codec));
			assert_memory_equal(v, codec, vn);
			seen |= 2;
		} else if (n == 14 && memcmp(k, "format-version", 14) == 0) {
			assert_int_equal(vn, 1);
			assert_int_equal(v[0], '2');
			seen |= 4;
		} else if (n == 3 && memcmp(k, "bin", 3) == 0) {
			assert_int_equal(vn, 2);
			assert_memory_equal(v, "\0\1", 2);
			seen |= 8;
		}
	}
	assert_int_equal(seen, 15);
	assert_int_equal(rd_long(&r), 0);
	assert_memory_equal(r.p + r.pos, sync_marker, 16);
	r.pos += 16;
	while (r.pos < r.len) {
		int64_t objs = rd_long(&r);
		const uint8_t *blk = rd_bytes(&r, &n);

		assert_true(objs > 0);
		records += (size_t)objs;
		if (strcmp(codec, "deflate") == 0) {
			uint8_t out[65536];
			z_stream zs = {0};

			assert_int_equal(inflateInit2(&zs, -15), Z_OK);
			zs.next_in = (Bytef *)(uintptr_t)blk;
			zs.avail_in = (uInt)n;
			zs.next_out = out;
			zs.avail_out = sizeof(out);
			assert_int_equal(inflate(&zs, Z_FINISH), Z_STREAM_END);
			assert_int_equal(st_buf_append(data, out, zs.total_out), 0);
			inflateEnd(&zs);
		} else {
			assert_int_equal(st_buf_append(data, blk, n), 0);
		}
		assert_true(r.pos + 16 <= r.len);
		assert_memory_equal(r.p + r.pos, sync_marker, 16);
		r.pos += 16;
	}
	return records;
}

static void check_records(const struct st_buf *data, size_t n)
{
	struct reader r = {data->data, data->len, 0};

	for (size_t i = 0; i < n; i++) {
		size_t len;
		int64_t items;

		assert_int_equal(rd_long(&r), (int64_t)i * -1000);
		if (i % 2) {
			char s[32];
			const uint8_t *p;

			assert_int_equal(rd_long(&r), 1);
			snprintf(s, sizeof(s), "row %zu", i);
			p = rd_bytes(&r, &len);
			assert_int_equal(len, strlen(s));
			assert_memory_equal(p, s, len);
		} else {
			assert_int_equal(rd_long(&r), 0);
		}
		items = i % 3 ? rd_long(&r) : 0;
		assert_int_equal(items, (int64_t)(i % 3));
		for (int64_t k = 0; k < items; k++)
			assert_int_equal(rd_long(&r), k);
		if (items)
			assert_int_equal(rd_long(&r), 0);
		else
			assert_int_equal(rd_long(&r), 0);
	}
	assert_int_equal(r.pos, r.len);
}

static void test_codecs(void **state)
{
	static const struct {
		enum st_avro_codec codec;
		const char *name;
	} codecs[] = {{ST_AVRO_CODEC_NULL, "null"}, {ST_AVRO_CODEC_DEFLATE, "deflate"}};

	(void)state;
	for (size_t c = 0; c < 2; c++) {
		struct st_buf file, data;
		struct fl_err err = {0};

		st_buf_init(&file, NULL);
		st_buf_init(&data, NULL);
		assert_int_equal(write_records(NULL, codecs[c].codec, 100, &file, &err), 0);
		assert_int_equal(parse_file(&file, codecs[c].name, &data), 100);
		check_records(&data, 100);
		st_buf_free(&file);
		st_buf_free(&data);
	}
}

static void test_empty_file(void **state)
{
	struct st_buf file, data;
	struct fl_err err = {0};

	(void)state;
	st_buf_init(&file, NULL);
	st_buf_init(&data, NULL);
	assert_int_equal(write_records(NULL, ST_AVRO_CODEC_DEFLATE, 0, &file, &err), 0);
	assert_int_equal(parse_file(&file, "deflate", &data), 0);
	st_buf_free(&file);
	st_buf_free(&data);
}

static void test_refusals(void **state)
{
	const struct st_avro_meta reserved[] = {{"avro.codec", "x", 1}};
	struct st_avro_writer_opts o = {0};
	struct st_avro_writer *w = NULL;
	struct st_buf b;
	struct fl_err err = {0};

	(void)state;
	st_buf_init(&b, NULL);
	st_sink_to_buf(&o.sink, &b);
	assert_int_equal(st_avro_writer_open(&o, &w, &err), -1);
	assert_int_equal(err.kind, FL_ERR_BAD_REQUEST);
	o.schema_json = schema;
	o.meta = reserved;
	o.n_meta = 1;
	assert_int_equal(st_avro_writer_open(&o, &w, &err), -1);
	assert_int_equal(err.kind, FL_ERR_BAD_REQUEST);
	assert_non_null(strstr(err.msg, "avro.codec"));
	assert_null(w);
	assert_int_equal(b.len, 0);
	st_buf_free(&b);
}

static void test_sink_failure(void **state)
{
	(void)state;
	for (size_t budget = 0; budget < 2000; budget += 97) {
		struct failing_sink fs = {budget};
		struct st_avro_writer_opts o = {0};
		struct st_avro_writer *w;
		struct fl_err err = {0};
		struct failalloc fa;
		int rc = 0;

		failalloc_init(&fa, 0);
		o.schema_json = schema;
		o.codec = ST_AVRO_CODEC_DEFLATE;
		o.block_bytes = 32;
		o.alloc = &fa.alloc;
		o.sink.write = failing_write;
		o.sink.ctx = &fs;
		if (st_avro_writer_open(&o, &w, &err) != 0) {
			rc = -1;
		} else {
			for (int i = 0; i < 200 && rc == 0; i++) {
				st_avro_write_long(w, (int64_t)i * 7919 * 7919);
				st_avro_write_union(w, 0);
				st_avro_write_array_end(w);
				rc = st_avro_writer_end_record(w, &err);
			}
			if (rc != 0)
				st_avro_writer_free(w);
			else
				rc = st_avro_writer_close(w, NULL, &err);
		}
		assert_int_equal(fa.live, 0);
		if (budget < 500) {
			/* the header and 200 records need more than 500 bytes */
			assert_int_equal(rc, -1);
		}
		if (rc != 0) {
			assert_int_equal(err.kind, FL_ERR_IO);
			assert_non_null(strstr(err.msg, "disk full"));
		}
	}
}

static void test_alloc_failures(void **state)
{
	(void)state;
	for (int codec = 0; codec < 2; codec++) {
		long k;

		for (k = 1;; k++) {
			struct failalloc fa;
			struct st_buf file;
			struct fl_err err = {0};
			int rc;

			failalloc_init(&fa, k);
			st_buf_init(&file, &fa.alloc);
			rc = write_records(&fa.alloc, (enum st_avro_codec)codec, 30, &file, &err);
			st_buf_free(&file);
			assert_int_equal(fa.live, 0);
			if (!fa.failed) {
				assert_int_equal(rc, 0);
				break;
			}
			assert_int_equal(rc, -1);
			assert_int_equal(err.kind, FL_ERR_NOMEM);
		}
		assert_true(k > 5);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_codecs),         cmocka_unit_test(test_empty_file),
	        cmocka_unit_test(test_refusals),       cmocka_unit_test(test_sink_failure),
	        cmocka_unit_test(test_alloc_failures),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
