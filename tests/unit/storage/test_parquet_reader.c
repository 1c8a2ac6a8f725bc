/* test_parquet_reader.c - the Parquet reader (storage/parquet/reader.c) on
 * files the writer produces in memory: every value back exactly across row
 * groups, pages and batch edges; projections with promotions, missing and
 * unreadable columns; every allocation failing in turn; every truncation and
 * every single-byte corruption of a file refused or read, never crashing;
 * and the name mapping (storage/iceberg/name_mapping.c).  Files from other
 * writers are covered by tests/integration/write-path/parquet-reader. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "failalloc.h"
#include "iceberg/name_mapping.h"
#include "parquet/parquet.h"
#include "parquet/reader.h"
#include "parquet/thrift.h"

enum { C_ID, C_INT, C_DBL, C_STR, C_DEC, C_BOOL, C_UUID, NCOL };

static const struct st_parquet_column cols[NCOL] = {
        {"id", 1, {ST_TYPE_LONG, 0, 0, 0}, true, ST_METRICS_DEFAULT, 0},
        {"i", 2, {ST_TYPE_INT, 0, 0, 0}, false, ST_METRICS_DEFAULT, 0},
        {"d", 3, {ST_TYPE_DOUBLE, 0, 0, 0}, false, ST_METRICS_DEFAULT, 0},
        {"s", 4, {ST_TYPE_STRING, 0, 0, 0}, false, ST_METRICS_DEFAULT, 0},
        {"dec", 5, {ST_TYPE_DECIMAL, 20, 2, 0}, false, ST_METRICS_DEFAULT, 0},
        {"b", 6, {ST_TYPE_BOOLEAN, 0, 0, 0}, false, ST_METRICS_DEFAULT, 0},
        {"u", 7, {ST_TYPE_UUID, 0, 0, 0}, true, ST_METRICS_DEFAULT, 0},
};

struct row {
	struct st_value v[NCOL];
	char s[32];
	uint8_t u[16];
};

static void make_row(int r, struct row *x)
{
	memset(x, 0, sizeof(*x));
	x->v[C_ID].v.l = (int64_t)r * 1000003 - 7;
	x->v[C_INT].v.i = r % 100 - 50;
	x->v[C_INT].null = r % 7 == 0;
	x->v[C_DBL].v.d = r * 0.5 - 3;
	x->v[C_DBL].null = r % 5 == 1;
	snprintf(x->s, sizeof(x->s), "v%d", r % 37);
	x->v[C_STR].v.bin.p = (const uint8_t *)x->s;
	x->v[C_STR].v.bin.len = strlen(x->s);
	x->v[C_STR].null = r % 3 == 2;
	st_value_set_decimal(&x->v[C_DEC], (int64_t)r * 12345 - 999999);
	x->v[C_DEC].null = r % 11 == 3;
	x->v[C_BOOL].v.b = r % 4 == 1;
	x->v[C_BOOL].null = r % 13 == 0;
	for (int i = 0; i < 16; i++)
		x->u[i] = (uint8_t)(r * 31 + i);
	x->v[C_UUID].v.bin.p = x->u;
	x->v[C_UUID].v.bin.len = 16;
}

/* Writes rows 0..n) into out with small row groups and pages; the
 * writer's metrics into *m unless m is NULL. */
static void write_file_m(struct st_buf *out, int n, enum st_parquet_codec codec, bool plain,
                         struct st_parquet_metrics *m)
{
	struct st_parquet_opts o = {0};
	struct st_parquet_writer *w;
	struct fl_err err = {0};
	struct row x;

	st_buf_init(out, NULL);
	o.columns = cols;
	o.n_columns = NCOL;
	o.codec = codec;
	o.row_group_bytes = 16 << 10;
	o.page_bytes = 1 << 10;
	o.no_dictionary = plain;
	o.iceberg_schema_json = "{}";
	st_sink_to_buf(&o.sink, out);
	assert_int_equal(st_parquet_writer_open(&o, &w, &err), 0);
	for (int r = 0; r < n; r++) {
		make_row(r, &x);
		assert_int_equal(st_parquet_writer_write_row(w, x.v, &err), 0);
	}
	assert_int_equal(st_parquet_writer_close(w, m, &err), 0);
}

static void write_file(struct st_buf *out, int n, enum st_parquet_codec codec, bool plain)
{
	write_file_m(out, n, codec, plain, NULL);
}

static bool same(const struct st_type *t, const struct st_value *a, const struct st_value *b)
{
	if (a->null || b->null)
		return a->null == b->null;
	return st_value_compare(t, a, b) == 0;
}

/* Reads every row of src and checks it against make_row. */
static int read_all(const struct st_parquet_source *src, const struct st_parquet_reader_opts *o,
                    int n, struct fl_err *err)
{
	struct st_parquet_reader *r;
	const struct st_parquet_batch *b;
	int row = 0;
	struct row x;

	if (st_parquet_reader_open(src, o, &r, err) != 0)
		return -1;
	for (;;) {
		if (st_parquet_reader_next(r, &b, err) != 0) {
			st_parquet_reader_free(r);
			return -1;
		}
		if (b == NULL)
			break;
		assert_int_equal(b->n_columns, NCOL);
		for (size_t i = 0; i < b->n_rows; i++, row++) {
			make_row(row, &x);
			for (int c = 0; c < NCOL; c++) {
				if (!same(&cols[c].type, &b->columns[c][i], &x.v[c]))
					fail_msg("row %d column %s differs", row, cols[c].name);
			}
		}
	}
	assert_int_equal(row, n);
	assert_int_equal(st_parquet_reader_num_rows(r), n);
	st_parquet_reader_free(r);
	return 0;
}

static void test_round_trip(void **state)
{
	static const enum st_parquet_codec codecs[] = {ST_PARQUET_ZSTD, ST_PARQUET_SNAPPY,
	                                               ST_PARQUET_GZIP, ST_PARQUET_UNCOMPRESSED};
	static const size_t batches[] = {0, 1, 100, 999};

	(void)state;
	for (size_t c = 0; c < 4; c++) {
		for (int plain = 0; plain < 2; plain++) {
			struct st_buf f;
			struct st_parquet_source src;
			struct st_parquet_mem m;
			struct st_parquet_reader *r;
			struct st_parquet_metrics wm;
			struct fl_err err = {0};

			write_file_m(&f, 3000, codecs[c], plain, &wm);
			st_parquet_source_mem(&src, &m, f.data, f.len);
			assert_int_equal(st_parquet_reader_open(&src, NULL, &r, &err), 0);
			assert_true(st_parquet_reader_n_row_groups(r) > 2);
			assert_int_equal(st_parquet_reader_n_leaves(r), NCOL);
			/* each leaf's bytes over the row groups: what the writer measured */
			for (size_t k = 0; k < NCOL; k++) {
				assert_int_equal(wm.columns[k].field_id, cols[k].field_id);
				assert_true(wm.columns[k].column_size > 0);
				assert_int_equal(st_parquet_reader_leaf(r, k)->compressed_size,
				                 wm.columns[k].column_size);
			}
			st_parquet_metrics_free(&wm);
			assert_string_equal(st_parquet_reader_leaf(r, C_DEC)->path, "dec");
			assert_int_equal(st_parquet_reader_leaf(r, C_DEC)->type.precision, 20);
			assert_false(st_parquet_reader_leaf(r, C_ID)->optional);
			assert_true(st_parquet_reader_leaf(r, C_INT)->optional);
			assert_string_equal(st_parquet_reader_kv(r, "iceberg.schema"), "{}");
			assert_null(st_parquet_reader_kv(r, "absent"));
			st_parquet_reader_free(r);
			for (size_t k = 0; k < 4; k++) {
				struct st_parquet_reader_opts o = {0};

				o.batch_rows = batches[k];
				if (read_all(&src, &o, 3000, &err) != 0)
					fail_msg("%s", err.msg);
			}
			st_buf_free(&f);
		}
	}
}

static void test_projection(void **state)
{
	struct st_buf f;
	struct st_parquet_source src;
	struct st_parquet_mem m;
	struct st_parquet_reader *r;
	const struct st_parquet_batch *b;
	struct fl_err err = {0};
	struct st_parquet_want want[4] = {
	        {2, {ST_TYPE_LONG, 0, 0, 0}, false}, /* int read as long */
	        {99, {ST_TYPE_STRING, 0, 0, 0}, false}, /* added later: nulls */
	        {5, {ST_TYPE_DECIMAL, 30, 2, 0}, false}, /* wider decimal */
	        {1, {ST_TYPE_LONG, 0, 0, 0}, true},
	};
	struct row x;
	struct st_value row[4];
	int n = 0;

	(void)state;
	write_file(&f, 500, ST_PARQUET_ZSTD, false);
	st_parquet_source_mem(&src, &m, f.data, f.len);
	assert_int_equal(st_parquet_reader_open(&src, NULL, &r, &err), 0);
	assert_int_equal(st_parquet_reader_project(r, want, 4, &err), 0);
	assert_int_equal(st_parquet_reader_projected_leaf(r, 1), SIZE_MAX);
	while (st_parquet_reader_next(r, &b, &err) == 0 && b != NULL) {
		for (size_t i = 0; i < b->n_rows; i++, n++) {
			make_row(n, &x);
			st_parquet_batch_row(b, i, row);
			assert_int_equal(row[0].null, x.v[C_INT].null);
			if (!row[0].null)
				assert_int_equal(row[0].v.l, x.v[C_INT].v.i);
			assert_true(row[1].null);
			assert_true(same(&want[2].type, &row[2], &x.v[C_DEC]));
			assert_int_equal(row[3].v.l, x.v[C_ID].v.l);
		}
	}
	assert_int_equal(n, 500);

	/* Refusals leave the projection as it was. */
	want[0].field_id = 99;
	want[0].required = true;
	assert_int_equal(st_parquet_reader_project(r, want, 1, &err), -1);
	assert_int_equal(err.kind, FL_ERR_BAD_REQUEST);
	assert_string_equal(err.msg,
	                    "parquet: the file has no column with field id 99, which is required");
	want[0] = (struct st_parquet_want){2, {ST_TYPE_STRING, 0, 0, 0}, false};
	assert_int_equal(st_parquet_reader_project(r, want, 1, &err), -1);
	assert_string_equal(err.msg, "parquet: column i holds int, which cannot be read as string");
	want[0] = (struct st_parquet_want){5, {ST_TYPE_DECIMAL, 30, 3, 0}, false};
	assert_int_equal(st_parquet_reader_project(r, want, 1, &err), -1);
	want[0] = (struct st_parquet_want){3, {ST_TYPE_FLOAT, 0, 0, 0}, false};
	assert_int_equal(st_parquet_reader_project(r, want, 1, &err), -1);
	want[0] = (struct st_parquet_want){7, {ST_TYPE_FIXED, 0, 0, 16}, false};
	assert_int_equal(st_parquet_reader_project(r, want, 1, &err), 0);
	st_parquet_reader_free(r);
	st_buf_free(&f);
}

static void test_alloc_failures(void **state)
{
	struct st_buf f;
	struct st_parquet_source src;
	struct st_parquet_mem m;
	long total;

	(void)state;
	write_file(&f, 1200, ST_PARQUET_ZSTD, false);
	st_parquet_source_mem(&src, &m, f.data, f.len);
	for (long k = 1;; k++) {
		struct failalloc fa;
		struct st_parquet_reader_opts o = {0};
		struct fl_err err = {0};
		int rc;

		failalloc_init(&fa, k);
		o.alloc = &fa.alloc;
		o.batch_rows = 256;
		rc = read_all(&src, &o, 1200, &err);
		assert_int_equal(fa.live, 0);
		if (!fa.failed) {
			assert_int_equal(rc, 0);
			total = k;
			break;
		}
		assert_int_equal(rc, -1);
		assert_int_equal(err.kind, FL_ERR_NOMEM);
	}
	assert_true(total > 20);
	st_buf_free(&f);
}

/* Opens and reads everything; the outcome may be either, but a failure must
 * say something and nothing may leak. */
static void read_any(const uint8_t *p, size_t n)
{
	struct st_parquet_source src;
	struct st_parquet_mem m;
	struct st_parquet_reader *r;
	const struct st_parquet_batch *b;
	struct failalloc fa;
	struct st_parquet_reader_opts o = {0};
	struct fl_err err = {0};

	failalloc_init(&fa, 0);
	o.alloc = &fa.alloc;
	o.batch_rows = 64;
	st_parquet_source_mem(&src, &m, p, n);
	if (st_parquet_reader_open(&src, &o, &r, &err) == 0) {
		while (st_parquet_reader_next(r, &b, &err) == 0 && b != NULL)
			;
		st_parquet_reader_free(r);
	}
	if (err.kind != FL_ERR_NONE) {
		assert_true(err.kind == FL_ERR_BAD_REQUEST || err.kind == FL_ERR_UNSUPPORTED ||
		            err.kind == FL_ERR_TOO_LARGE);
		assert_memory_equal(err.msg, "parquet: ", 9);
	}
	assert_int_equal(fa.live, 0);
}

static void test_corruption(void **state)
{
	struct st_buf f;
	uint8_t *copy;

	(void)state;
	write_file(&f, 300, ST_PARQUET_SNAPPY, false);
	copy = malloc(f.len);
	/* Every truncation, keeping the head or keeping the tail. */
	for (size_t n = 0; n < f.len; n++) {
		struct fl_err err = {0};
		struct st_parquet_source src;
		struct st_parquet_mem m;
		struct st_parquet_reader *r;

		read_any(f.data, n);
		read_any(f.data + f.len - n, n);
		st_parquet_source_mem(&src, &m, f.data, n);
		assert_int_equal(st_parquet_reader_open(&src, NULL, &r, &err), -1);
	}
	/* Every byte set to three other values. */
	for (size_t i = 0; i < f.len; i++) {
		static const uint8_t xors[] = {0x01, 0x80, 0xff};

		for (size_t k = 0; k < 3; k++) {
			memcpy(copy, f.data, f.len);
			copy[i] ^= xors[k];
			read_any(copy, f.len);
		}
	}
	free(copy);
	st_buf_free(&f);
}

static void test_lying_footer(void **state)
{
	struct st_buf f;
	struct st_parquet_source src;
	struct st_parquet_mem m;
	struct st_parquet_reader *r;
	struct fl_err err = {0};
	uint8_t *p;
	uint32_t flen;

	(void)state;
	write_file(&f, 10, ST_PARQUET_ZSTD, false);
	p = f.data + f.len - 8;
	flen = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
	p[0] = 0xff;
	p[1] = 0xff;
	p[2] = 0xff;
	p[3] = 0x7f;
	st_parquet_source_mem(&src, &m, f.data, f.len);
	assert_int_equal(st_parquet_reader_open(&src, NULL, &r, &err), -1);
	assert_int_equal(err.kind, FL_ERR_BAD_REQUEST);
	assert_non_null(strstr(err.msg, "the footer claims 2147483647 bytes"));
	p[0] = (uint8_t)flen;
	p[1] = (uint8_t)(flen >> 8);
	p[2] = (uint8_t)(flen >> 16);
	p[3] = (uint8_t)(flen >> 24);
	{
		struct st_parquet_reader_opts o = {0};

		o.max_footer_bytes = 16;
		assert_int_equal(st_parquet_reader_open(&src, &o, &r, &err), -1);
		assert_int_equal(err.kind, FL_ERR_TOO_LARGE);
		o.max_footer_bytes = 0;
		o.max_row_group_bytes = 8;
		assert_int_equal(st_parquet_reader_open(&src, &o, &r, &err), 0);
		{
			const struct st_parquet_batch *b;

			assert_int_equal(st_parquet_reader_next(r, &b, &err), -1);
			assert_int_equal(err.kind, FL_ERR_TOO_LARGE);
		}
		st_parquet_reader_free(r);
	}
	memcpy(f.data, "PAR2", 4);
	assert_int_equal(st_parquet_reader_open(&src, NULL, &r, &err), -1);
	assert_string_equal(err.msg, "parquet: not a Parquet file (no PAR1 magic at both ends)");
	st_buf_free(&f);
}

/* Appends one data page v2 (uncompressed, no levels) holding body. */
static void put_page(struct st_buf *f, int encoding, int n, const uint8_t *body, size_t len)
{
	struct st_thrift t;

	st_thrift_init(&t, f);
	st_thrift_i32(&t, 1, 3);
	st_thrift_i32(&t, 2, (int32_t)len);
	st_thrift_i32(&t, 3, (int32_t)len);
	st_thrift_struct_begin(&t, 8);
	st_thrift_i32(&t, 1, n);
	st_thrift_i32(&t, 2, 0);
	st_thrift_i32(&t, 3, n);
	st_thrift_i32(&t, 4, encoding);
	st_thrift_i32(&t, 5, 0);
	st_thrift_i32(&t, 6, 0);
	st_thrift_bool(&t, 7, false);
	st_thrift_end(&t);
	st_thrift_end(&t);
	assert_false(t.failed);
	assert_int_equal(st_buf_append(f, body, len), 0);
}

static void put_chunk(struct st_thrift *t, int ptype, const char *name, int encoding, int64_t off,
                      int64_t len)
{
	st_thrift_elem_struct_begin(t);
	st_thrift_i64(t, 2, off);
	st_thrift_struct_begin(t, 3);
	st_thrift_i32(t, 1, ptype);
	st_thrift_list_begin(t, 2, ST_THRIFT_I32, 1);
	st_thrift_elem_i32(t, encoding);
	st_thrift_list_begin(t, 3, ST_THRIFT_BINARY, 1);
	st_thrift_elem_binary(t, name, strlen(name));
	st_thrift_i32(t, 4, 0);
	st_thrift_i64(t, 5, 4);
	st_thrift_i64(t, 6, len);
	st_thrift_i64(t, 7, len);
	st_thrift_i64(t, 9, off);
	st_thrift_end(t);
	st_thrift_end(t);
}

/* Encodings no writer under test produces by default, from the examples of
 * parquet-format Encodings.md: DELTA_BYTE_ARRAY strings ("axis", "axle",
 * "babble", "babyhood") and RLE booleans in data pages v2. */
static void test_hand_built_encodings(void **state)
{
	/* prefix lengths 0 2 0 3: DBP block 128 of 4 miniblocks, 4 values,
	 * first 0, min delta -2, deltas + 2 = 4 0 5 at width 3 */
	static const uint8_t dba[] = {
	        0x80, 0x01, 0x04, 0x04, 0x00, 0x03, 0x03, 0x00, 0x00, 0x00, 0x44, 0x01, 0x00, 0x00,
	        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	        /* suffix lengths 4 2 6 5: first 4, min delta -2, 0 6 1 */
	        0x80, 0x01, 0x04, 0x04, 0x08, 0x03, 0x03, 0x00, 0x00, 0x00, 0x70, 0x00, 0x00, 0x00,
	        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 'a', 'x', 'i', 's', 'l', 'e', 'b',
	        'a', 'b', 'b', 'l', 'e', 'y', 'h', 'o', 'o', 'd'};
	/* true false true true: length 2, one bit-packed group 0b1101 */
	static const uint8_t bools[] = {0x02, 0x00, 0x00, 0x00, 0x03, 0x0d};
	static const char *words[] = {"axis", "axle", "babble", "babyhood"};
	struct st_buf f;
	struct st_thrift t;
	struct st_parquet_source src;
	struct st_parquet_mem m;
	struct st_parquet_reader *r;
	const struct st_parquet_batch *b;
	struct fl_err err = {0};
	size_t c1, c2, footer;
	uint8_t len[4];

	(void)state;
	st_buf_init(&f, NULL);
	assert_int_equal(st_buf_append(&f, "PAR1", 4), 0);
	put_page(&f, 7, 4, dba, sizeof(dba));
	c1 = f.len;
	put_page(&f, 3, 4, bools, sizeof(bools));
	c2 = f.len;
	st_thrift_init(&t, &f);
	st_thrift_i32(&t, 1, 1);
	st_thrift_list_begin(&t, 2, ST_THRIFT_STRUCT, 3);
	st_thrift_elem_struct_begin(&t);
	st_thrift_string(&t, 4, "schema");
	st_thrift_i32(&t, 5, 2);
	st_thrift_end(&t);
	st_thrift_elem_struct_begin(&t);
	st_thrift_i32(&t, 1, 6);
	st_thrift_i32(&t, 3, 0);
	st_thrift_string(&t, 4, "s");
	st_thrift_i32(&t, 6, 0);
	st_thrift_i32(&t, 9, 1);
	st_thrift_end(&t);
	st_thrift_elem_struct_begin(&t);
	st_thrift_i32(&t, 1, 0);
	st_thrift_i32(&t, 3, 0);
	st_thrift_string(&t, 4, "b");
	st_thrift_i32(&t, 9, 2);
	st_thrift_end(&t);
	st_thrift_i64(&t, 3, 4);
	st_thrift_list_begin(&t, 4, ST_THRIFT_STRUCT, 1);
	st_thrift_elem_struct_begin(&t);
	st_thrift_list_begin(&t, 1, ST_THRIFT_STRUCT, 2);
	put_chunk(&t, 6, "s", 7, 4, (int64_t)(c1 - 4));
	put_chunk(&t, 0, "b", 3, (int64_t)c1, (int64_t)(c2 - c1));
	st_thrift_i64(&t, 2, (int64_t)(c2 - 4));
	st_thrift_i64(&t, 3, 4);
	st_thrift_end(&t);
	st_thrift_end(&t);
	assert_false(t.failed);
	footer = f.len - c2;
	for (int i = 0; i < 4; i++)
		len[i] = (uint8_t)(footer >> (8 * i));
	assert_int_equal(st_buf_append(&f, len, 4), 0);
	assert_int_equal(st_buf_append(&f, "PAR1", 4), 0);

	st_parquet_source_mem(&src, &m, f.data, f.len);
	assert_int_equal(st_parquet_reader_open(&src, NULL, &r, &err), 0);
	if (st_parquet_reader_next(r, &b, &err) != 0)
		fail_msg("%s", err.msg);
	assert_non_null(b);
	assert_int_equal(b->n_rows, 4);
	for (size_t i = 0; i < 4; i++) {
		assert_int_equal(b->columns[0][i].v.bin.len, strlen(words[i]));
		assert_memory_equal(b->columns[0][i].v.bin.p, words[i], strlen(words[i]));
		assert_int_equal(b->columns[1][i].v.b, i != 1);
	}
	assert_int_equal(st_parquet_reader_next(r, &b, &err), 0);
	assert_null(b);
	st_parquet_reader_free(r);
	/* Every truncation of the pages' bytes is refused, never misread. */
	for (size_t n = 4; n < c2; n++) {
		struct st_buf g;

		st_buf_init(&g, NULL);
		assert_int_equal(st_buf_append(&g, f.data, n), 0);
		assert_int_equal(st_buf_append(&g, f.data + c2, f.len - c2), 0);
		read_any(g.data, g.len);
		st_buf_free(&g);
	}
	st_buf_free(&f);
}

static void test_name_mapping(void **state)
{
	static const char *good = "[{\"field-id\": 1, \"names\": [\"id\", \"record_id\"]},"
	                          " {\"names\": [\"unmapped\"]},"
	                          " {\"field-id\": 3, \"names\": [\"loc\"], \"fields\": ["
	                          "   {\"field-id\": 4, \"names\": [\"lat\"]}]}]";
	static const char *bad[] = {
	        "{}",
	        "[{\"field-id\": 1}]",
	        "[{\"field-id\": \"1\", \"names\": [\"a\"]}]",
	        "[{\"field-id\": 1, \"names\": [2]}]",
	        "[{\"field-id\": 1, \"names\": [\"a\"]}, {\"field-id\": 2, \"names\": [\"a\"]}]",
	        "[{\"field-id\": 1, \"names\": [\"a\"], \"fields\": {}}]",
	        "[",
	};
	struct st_name_mapping *m;
	struct fl_err err = {0};
	const char *p1[] = {"record_id"}, *p2[] = {"loc", "lat"}, *p3[] = {"loc", "lon"},
	           *p4[] = {"unmapped"}, *p5[] = {"id", "x"};

	(void)state;
	assert_int_equal(st_name_mapping_parse(good, strlen(good), &m, &err), 0);
	assert_int_equal(st_name_mapping_find(m, p1, 1), 1);
	assert_int_equal(st_name_mapping_find(m, p2, 2), 4);
	assert_int_equal(st_name_mapping_find(m, p2, 1), 3);
	assert_int_equal(st_name_mapping_find(m, p3, 2), -1);
	assert_int_equal(st_name_mapping_find(m, p4, 1), -1);
	assert_int_equal(st_name_mapping_find(m, p5, 2), -1);
	assert_int_equal(st_name_mapping_find(NULL, p1, 1), -1);
	st_name_mapping_free(m);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err.kind = FL_ERR_NONE;
		assert_int_equal(st_name_mapping_parse(bad[i], strlen(bad[i]), &m, &err), -1);
		assert_int_equal(err.kind, FL_ERR_BAD_REQUEST);
		assert_memory_equal(err.msg, "name mapping", 12);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_round_trip),           cmocka_unit_test(test_projection),
	        cmocka_unit_test(test_alloc_failures),       cmocka_unit_test(test_corruption),
	        cmocka_unit_test(test_lying_footer),         cmocka_unit_test(test_name_mapping),
	        cmocka_unit_test(test_hand_built_encodings),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
