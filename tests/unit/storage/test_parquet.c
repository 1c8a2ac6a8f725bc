/* test_parquet.c - the Parquet writer (storage/parquet/parquet.c): the
 * metrics it reports for Iceberg, the rows it refuses, row-group rolling,
 * and allocation failures at every step.  Decoding the pages is left to the
 * independent readers in tests/integration/write-path/. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <pthread.h>

#include "base/workq.h"
#include "failalloc.h"
#include "parquet/parquet.h"

enum { C_ID, C_INT, C_DBL, C_STR, C_BIN, NCOL };

static const struct st_parquet_column cols[NCOL] = {
        {"id", 1, {ST_TYPE_LONG, 0, 0, 0}, true, ST_METRICS_DEFAULT, 0},
        {"i", 2, {ST_TYPE_INT, 0, 0, 0}, false, ST_METRICS_DEFAULT, 0},
        {"d", 3, {ST_TYPE_DOUBLE, 0, 0, 0}, false, ST_METRICS_DEFAULT, 0},
        {"s", 4, {ST_TYPE_STRING, 0, 0, 0}, false, ST_METRICS_DEFAULT, 0},
        {"b", 5, {ST_TYPE_BINARY, 0, 0, 0}, false, ST_METRICS_DEFAULT, 0},
};

static void set_bytes(struct st_value *v, const char *p, size_t n)
{
	v->null = false;
	v->v.bin.p = (const uint8_t *)p;
	v->v.bin.len = n;
}

static void open_writer(struct st_parquet_opts *o, struct st_buf *out, struct st_parquet_writer **w)
{
	struct fl_err err = {0};

	o->columns = cols;
	o->n_columns = NCOL;
	o->iceberg_schema_json = "{}";
	st_sink_to_buf(&o->sink, out);
	assert_int_equal(st_parquet_writer_open(o, w, &err), 0);
}

static void check_bound(bool has, const uint8_t *p, size_t n, const void *want, size_t want_n)
{
	assert_true(has);
	assert_int_equal(n, want_n);
	if (n > 0)
		assert_memory_equal(p, want, n);
}

static void test_metrics(void **state)
{
	struct st_parquet_opts o = {0};
	struct st_parquet_writer *w;
	struct st_parquet_metrics m;
	struct fl_err err = {0};
	struct st_value row[NCOL];
	struct st_buf out;
	static const uint8_t lo_i[] = {0xf9, 0xff, 0xff, 0xff}, hi_i[] = {9, 0, 0, 0};
	static const uint8_t lo_d[] = {0, 0, 0, 0, 0, 0, 0, 0x80},
	                     hi_d[] = {0, 0, 0, 0, 0, 0, 4, 0x40};
	static const uint8_t lo_id[] = {1, 0, 0, 0, 0, 0, 0, 0}, hi_id[] = {4, 0, 0, 0, 0, 0, 0, 0};
	uint32_t flen;

	(void)state;
	st_buf_init(&out, NULL);
	open_writer(&o, &out, &w);
	for (int r = 0; r < 4; r++) {
		memset(row, 0, sizeof(row));
		row[C_ID].v.l = r + 1;
		switch (r) {
		case 0:
			row[C_INT].v.i = 5;
			row[C_DBL].v.d = NAN;
			set_bytes(&row[C_STR], "b", 1);
			set_bytes(&row[C_BIN], "\xff\xff", 2);
			break;
		case 1:
			row[C_INT].null = true;
			row[C_DBL].v.d = -0.0;
			row[C_STR].null = true;
			set_bytes(&row[C_BIN], "\x01", 1);
			break;
		case 2:
			row[C_INT].v.i = -7;
			row[C_DBL].v.d = 0.0;
			set_bytes(&row[C_STR], "aaaaaaaaaaaaaaaaaaaa", 20);
			row[C_BIN].null = true;
			break;
		default:
			row[C_INT].v.i = 9;
			row[C_DBL].v.d = 2.5;
			set_bytes(&row[C_STR], "a", 1);
			set_bytes(&row[C_BIN], "", 0);
			break;
		}
		assert_int_equal(st_parquet_writer_write_row(w, row, &err), 0);
	}
	assert_int_equal(st_parquet_writer_close(w, &m, &err), 0);

	assert_memory_equal(out.data, "PAR1", 4);
	assert_memory_equal(out.data + out.len - 4, "PAR1", 4);
	memcpy(&flen, out.data + out.len - 8, 4);
	assert_true(flen > 0 && flen < out.len - 12);
	assert_int_equal(m.file_size, (int64_t)out.len);
	assert_int_equal(m.record_count, 4);
	assert_int_equal(m.n_split_offsets, 1);
	assert_int_equal(m.split_offsets[0], 4);
	assert_int_equal(m.n_columns, NCOL);
	for (int c = 0; c < NCOL; c++) {
		assert_int_equal(m.columns[c].field_id, c + 1);
		assert_int_equal(m.columns[c].value_count, 4);
		assert_true(m.columns[c].column_size > 0);
	}
	assert_int_equal(m.columns[C_ID].null_count, 0);
	check_bound(m.columns[C_ID].has_lower, m.columns[C_ID].lower, m.columns[C_ID].lower_len,
	            lo_id, 8);
	check_bound(m.columns[C_ID].has_upper, m.columns[C_ID].upper, m.columns[C_ID].upper_len,
	            hi_id, 8);
	assert_int_equal(m.columns[C_INT].null_count, 1);
	assert_int_equal(m.columns[C_INT].nan_count, -1);
	check_bound(m.columns[C_INT].has_lower, m.columns[C_INT].lower, m.columns[C_INT].lower_len,
	            lo_i, 4);
	check_bound(m.columns[C_INT].has_upper, m.columns[C_INT].upper, m.columns[C_INT].upper_len,
	            hi_i, 4);
	/* NaN is counted, never a bound; -0.0 is the lower bound */
	assert_int_equal(m.columns[C_DBL].null_count, 0);
	assert_int_equal(m.columns[C_DBL].nan_count, 1);
	check_bound(m.columns[C_DBL].has_lower, m.columns[C_DBL].lower, m.columns[C_DBL].lower_len,
	            lo_d, 8);
	check_bound(m.columns[C_DBL].has_upper, m.columns[C_DBL].upper, m.columns[C_DBL].upper_len,
	            hi_d, 8);
	assert_int_equal(m.columns[C_STR].null_count, 1);
	check_bound(m.columns[C_STR].has_lower, m.columns[C_STR].lower, m.columns[C_STR].lower_len,
	            "a", 1);
	check_bound(m.columns[C_STR].has_upper, m.columns[C_STR].upper, m.columns[C_STR].upper_len,
	            "b", 1);
	/* the empty binary value is the minimum: a present, empty lower bound */
	assert_int_equal(m.columns[C_BIN].null_count, 1);
	check_bound(m.columns[C_BIN].has_lower, m.columns[C_BIN].lower, m.columns[C_BIN].lower_len,
	            "", 0);
	check_bound(m.columns[C_BIN].has_upper, m.columns[C_BIN].upper, m.columns[C_BIN].upper_len,
	            "\xff\xff", 2);
	st_parquet_metrics_free(&m);
	st_buf_free(&out);
}

static void test_truncated_and_nan_only(void **state)
{
	static const struct st_parquet_column c2[] = {
	        {"s", 1, {ST_TYPE_STRING, 0, 0, 0}, false, ST_METRICS_DEFAULT, 0},
	        {"f", 2, {ST_TYPE_FLOAT, 0, 0, 0}, false, ST_METRICS_DEFAULT, 0},
	};
	static const char *strs[] = {
	        "zzzzzzzzzzzzzzzzzzzz", /* max: upper bound zzz..{ */
	        "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
	        "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", /* 18 x U+00E9 */
	        "Aaaaaaaaaaaaaaaaaaaa", /* min: lower bound truncated */
	};
	struct st_parquet_opts o = {0};
	struct st_parquet_writer *w;
	struct st_parquet_metrics m;
	struct fl_err err = {0};
	struct st_buf out;

	(void)state;
	st_buf_init(&out, NULL);
	o.columns = c2;
	o.n_columns = 2;
	st_sink_to_buf(&o.sink, &out);
	assert_int_equal(st_parquet_writer_open(&o, &w, &err), 0);
	for (int r = 0; r < 3; r++) {
		struct st_value row[2] = {{0}};

		set_bytes(&row[0], strs[r], strlen(strs[r]));
		row[1].v.f = NAN;
		assert_int_equal(st_parquet_writer_write_row(w, row, &err), 0);
	}
	assert_int_equal(st_parquet_writer_close(w, &m, &err), 0);
	/* U+00E9 sorts above 'z', so the multibyte string is the maximum */
	check_bound(m.columns[0].has_lower, m.columns[0].lower, m.columns[0].lower_len,
	            "Aaaaaaaaaaaaaaaa", 16);
	check_bound(
	        m.columns[0].has_upper, m.columns[0].upper, m.columns[0].upper_len,
	        "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
	        "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xaa",
	        32);
	assert_int_equal(m.columns[1].nan_count, 3);
	assert_false(m.columns[1].has_lower);
	assert_false(m.columns[1].has_upper);
	st_parquet_metrics_free(&m);
	st_buf_free(&out);
}

static void test_metrics_modes(void **state)
{
	static const struct st_parquet_column c4[] = {
	        {"dflt", 1, {ST_TYPE_STRING, 0, 0, 0}, false, ST_METRICS_DEFAULT, 0},
	        {"none", 2, {ST_TYPE_STRING, 0, 0, 0}, false, ST_METRICS_NONE, 0},
	        {"counts", 3, {ST_TYPE_STRING, 0, 0, 0}, false, ST_METRICS_COUNTS, 0},
	        {"trunc4", 4, {ST_TYPE_STRING, 0, 0, 0}, false, ST_METRICS_TRUNCATE, 4},
	        {"full", 5, {ST_TYPE_STRING, 0, 0, 0}, false, ST_METRICS_FULL, 0},
	};
	static const char *vals[] = {"abcdefghijklmnopqrstuvwxyz", "zyxwvutsrqponmlkjihgfedcba"};
	struct st_parquet_column bad = c4[3];
	struct st_parquet_opts o = {0};
	struct st_parquet_writer *w;
	struct st_parquet_metrics m;
	struct fl_err err = {0};
	struct st_buf out;

	(void)state;
	st_buf_init(&out, NULL);
	o.columns = c4;
	o.n_columns = 5;
	st_sink_to_buf(&o.sink, &out);
	assert_int_equal(st_parquet_writer_open(&o, &w, &err), 0);
	for (int r = 0; r < 2; r++) {
		struct st_value row[5];

		for (int c = 0; c < 5; c++)
			set_bytes(&row[c], vals[r], 26);
		assert_int_equal(st_parquet_writer_write_row(w, row, &err), 0);
	}
	assert_int_equal(st_parquet_writer_close(w, &m, &err), 0);
	check_bound(m.columns[0].has_lower, m.columns[0].lower, m.columns[0].lower_len,
	            "abcdefghijklmnop", 16);
	check_bound(m.columns[0].has_upper, m.columns[0].upper, m.columns[0].upper_len,
	            "zyxwvutsrqponmll", 16);
	/* none: nothing at all, not even the size */
	assert_int_equal(m.columns[1].column_size, -1);
	assert_int_equal(m.columns[1].value_count, -1);
	assert_int_equal(m.columns[1].null_count, -1);
	assert_false(m.columns[1].has_lower || m.columns[1].has_upper);
	/* counts: sizes and counts only */
	assert_true(m.columns[2].column_size > 0);
	assert_int_equal(m.columns[2].value_count, 2);
	assert_int_equal(m.columns[2].null_count, 0);
	assert_false(m.columns[2].has_lower || m.columns[2].has_upper);
	check_bound(m.columns[3].has_lower, m.columns[3].lower, m.columns[3].lower_len, "abcd", 4);
	check_bound(m.columns[3].has_upper, m.columns[3].upper, m.columns[3].upper_len, "zyxx", 4);
	check_bound(m.columns[4].has_lower, m.columns[4].lower, m.columns[4].lower_len, vals[0],
	            26);
	check_bound(m.columns[4].has_upper, m.columns[4].upper, m.columns[4].upper_len, vals[1],
	            26);
	st_parquet_metrics_free(&m);
	st_buf_free(&out);

	bad.metrics_truncate = 0;
	o.columns = &bad;
	o.n_columns = 1;
	assert_int_equal(st_parquet_writer_open(&o, &w, &err), -1);
	assert_int_equal(err.kind, FL_ERR_BAD_REQUEST);
}

static void test_refusals(void **state)
{
	static const struct st_parquet_column c3[] = {
	        {"req", 1, {ST_TYPE_INT, 0, 0, 0}, true, ST_METRICS_DEFAULT, 0},
	        {"s", 2, {ST_TYPE_STRING, 0, 0, 0}, false, ST_METRICS_DEFAULT, 0},
	        {"u", 3, {ST_TYPE_UUID, 0, 0, 0}, false, ST_METRICS_DEFAULT, 0},
	        {"d", 4, {ST_TYPE_DECIMAL, 9, 2, 0}, false, ST_METRICS_DEFAULT, 0},
	};
	struct st_parquet_column dup[2] = {c3[0], c3[1]};
	struct st_parquet_opts o = {0};
	struct st_parquet_writer *w = NULL;
	struct st_parquet_metrics m;
	struct fl_err err = {0};
	struct st_value row[4];
	struct st_buf out;

	(void)state;
	st_buf_init(&out, NULL);
	st_sink_to_buf(&o.sink, &out);
	o.columns = dup;
	o.n_columns = 2;
	dup[1].field_id = 1;
	assert_int_equal(st_parquet_writer_open(&o, &w, &err), -1);
	assert_int_equal(err.kind, FL_ERR_BAD_REQUEST);
	assert_non_null(strstr(err.msg, "field id 1"));
	assert_null(w);
	assert_int_equal(out.len, 0);

	o.columns = c3;
	o.n_columns = 4;
	assert_int_equal(st_parquet_writer_open(&o, &w, &err), 0);
	memset(row, 0, sizeof(row));
	row[0].null = true;
	row[1].null = row[2].null = row[3].null = true;
	assert_int_equal(st_parquet_writer_write_row(w, row, &err), -1);
	assert_int_equal(err.kind, FL_ERR_BAD_REQUEST);
	assert_non_null(strstr(err.msg, "req"));
	row[0].null = false;
	set_bytes(&row[1], "\xc3\x28", 2);
	assert_int_equal(st_parquet_writer_write_row(w, row, &err), -1);
	assert_non_null(strstr(err.msg, "UTF-8"));
	set_bytes(&row[1], "ok", 2);
	set_bytes(&row[2], "short", 5);
	assert_int_equal(st_parquet_writer_write_row(w, row, &err), -1);
	assert_non_null(strstr(err.msg, "16 bytes"));
	row[2].null = true;
	st_value_set_decimal(&row[3], 5000000000LL); /* needs more than INT32 */
	assert_int_equal(st_parquet_writer_write_row(w, row, &err), -1);
	assert_non_null(strstr(err.msg, "precision 9"));
	/* the refused rows left nothing behind; a good row still goes in */
	st_value_set_decimal(&row[3], -12345);
	assert_int_equal(st_parquet_writer_write_row(w, row, &err), 0);
	assert_int_equal(st_parquet_writer_close(w, &m, &err), 0);
	assert_int_equal(m.record_count, 1);
	assert_int_equal(m.columns[1].null_count, 0);
	assert_int_equal(m.columns[2].null_count, 1);
	st_parquet_metrics_free(&m);
	st_buf_free(&out);
}

/* Many rows, small row groups and pages, a dictionary that overflows;
 * encoded on q's threads when q is not NULL. */
static int write_many_q(const struct st_alloc *a, struct st_workq *q, enum st_parquet_codec codec,
                        int rows, struct st_buf *out, struct st_parquet_metrics *m,
                        struct fl_err *err)
{
	struct st_parquet_opts o = {0};
	struct st_parquet_writer *w;
	char s[32];

	o.columns = cols;
	o.n_columns = NCOL;
	o.iceberg_schema_json = "{\"type\":\"struct\"}";
	o.codec = codec;
	o.row_group_bytes = 4096;
	o.page_bytes = 512;
	o.dict_bytes = 256;
	o.alloc = a;
	o.workq = q;
	st_sink_to_buf(&o.sink, out);
	if (st_parquet_writer_open(&o, &w, err) != 0)
		return -1;
	for (int r = 0; r < rows; r++) {
		struct st_value row[NCOL];

		memset(row, 0, sizeof(row));
		row[C_ID].v.l = r;
		row[C_INT].v.i = r % 7;
		row[C_INT].null = r % 5 == 0;
		row[C_DBL].v.d = r % 11 == 0 ? NAN : r * 0.5;
		snprintf(s, sizeof(s), "value-%d", r);
		set_bytes(&row[C_STR], s, strlen(s));
		set_bytes(&row[C_BIN], s, (size_t)(r % 4));
		if (st_parquet_writer_write_row(w, row, err) != 0) {
			st_parquet_writer_free(w);
			return -1;
		}
	}
	return st_parquet_writer_close(w, m, err);
}

static int write_many(const struct st_alloc *a, enum st_parquet_codec codec, int rows,
                      struct st_buf *out, struct st_parquet_metrics *m, struct fl_err *err)
{
	return write_many_q(a, NULL, codec, rows, out, m, err);
}

static void test_row_groups(void **state)
{
	struct st_parquet_metrics m;
	struct fl_err err = {0};
	struct st_buf out;

	(void)state;
	st_buf_init(&out, NULL);
	assert_int_equal(write_many(NULL, ST_PARQUET_ZSTD, 2000, &out, &m, &err), 0);
	assert_true(m.n_split_offsets > 3);
	assert_int_equal(m.split_offsets[0], 4);
	for (size_t i = 1; i < m.n_split_offsets; i++)
		assert_true(m.split_offsets[i] > m.split_offsets[i - 1]);
	assert_int_equal(m.record_count, 2000);
	assert_int_equal(m.columns[C_INT].null_count, 400);
	assert_int_equal(m.columns[C_DBL].nan_count, 182);
	st_parquet_metrics_free(&m);
	st_buf_free(&out);
}

static void test_alloc_failures(void **state)
{
	(void)state;
	for (int codec = 0; codec <= ST_PARQUET_UNCOMPRESSED; codec++) {
		long k;

		for (k = 1;; k++) {
			struct failalloc fa;
			struct st_parquet_metrics m = {0};
			struct st_buf out;
			struct fl_err err = {0};
			int rc;

			failalloc_init(&fa, k);
			st_buf_init(&out, &fa.alloc);
			rc = write_many(&fa.alloc, (enum st_parquet_codec)codec, 300, &out, &m,
			                &err);
			if (rc == 0)
				st_parquet_metrics_free(&m);
			st_buf_free(&out);
			assert_int_equal(fa.live, 0);
			if (!fa.failed) {
				assert_int_equal(rc, 0);
				break;
			}
			assert_int_equal(rc, -1);
			assert_int_equal(err.kind, FL_ERR_NOMEM);
		}
		print_message("codec %d: %ld allocations failed in turn\n", codec, k - 1);
		assert_true(k > 20);
	}
}

/* Encoding on worker threads gives the same file, byte for byte, and the
 * same metrics, for every codec and number of threads. */
static void test_threads_same_bytes(void **state)
{
	(void)state;
	for (int codec = 0; codec <= ST_PARQUET_UNCOMPRESSED; codec++) {
		struct st_parquet_metrics m0;
		struct st_buf b0;
		struct fl_err err = {0};

		st_buf_init(&b0, NULL);
		if (write_many(NULL, codec, 3000, &b0, &m0, &err) != 0) {
			assert_int_equal(err.kind, FL_ERR_UNSUPPORTED); /* built without snappy */
			st_buf_free(&b0);
			continue;
		}
		assert_true(m0.n_split_offsets > 3);
		for (int threads = 1; threads <= 3; threads++) {
			struct st_workq *q;
			struct st_parquet_metrics m;
			struct st_buf b;

			assert_int_equal(st_workq_open(threads, &q, &err), 0);
			st_buf_init(&b, NULL);
			assert_int_equal(write_many_q(NULL, q, codec, 3000, &b, &m, &err), 0);
			assert_int_equal(b.len, b0.len);
			assert_memory_equal(b.data, b0.data, b0.len);
			assert_int_equal(m.n_split_offsets, m0.n_split_offsets);
			assert_memory_equal(m.split_offsets, m0.split_offsets,
			                    m0.n_split_offsets * sizeof(int64_t));
			for (size_t i = 0; i < NCOL; i++) {
				assert_int_equal(m.columns[i].column_size,
				                 m0.columns[i].column_size);
				assert_int_equal(m.columns[i].null_count, m0.columns[i].null_count);
				assert_int_equal(m.columns[i].lower_len, m0.columns[i].lower_len);
				assert_int_equal(m.columns[i].upper_len, m0.columns[i].upper_len);
			}
			st_parquet_metrics_free(&m);
			st_buf_free(&b);
			st_workq_free(q);
		}
		st_parquet_metrics_free(&m0);
		st_buf_free(&b0);
	}
}

/* The size while row groups are being encoded is an upper bound of the
 * file's size at that point, and exact once settled. */
static void test_threads_size(void **state)
{
	struct st_parquet_opts o = {0};
	struct st_parquet_writer *w;
	struct st_workq *q;
	struct fl_err err = {0};
	struct st_buf out;
	char s[32];

	(void)state;
	assert_int_equal(st_workq_open(2, &q, &err), 0);
	st_buf_init(&out, NULL);
	o.row_group_bytes = 2048;
	o.workq = q;
	open_writer(&o, &out, &w);
	for (int r = 0; r < 2000; r++) {
		struct st_value row[NCOL];
		uint64_t bound;

		memset(row, 0, sizeof(row));
		row[C_ID].v.l = r * 7919;
		row[C_INT].null = true;
		row[C_DBL].v.d = r;
		snprintf(s, sizeof(s), "s%d", r * 31);
		set_bytes(&row[C_STR], s, strlen(s));
		row[C_BIN].null = true;
		assert_int_equal(st_parquet_writer_write_row(w, row, &err), 0);
		if (r % 97 == 0) {
			bound = st_parquet_writer_size(w);
			assert_int_equal(st_parquet_writer_settle(w, &err), 0);
			assert_true(st_parquet_writer_size(w) <= bound);
			assert_true(st_parquet_writer_size(w) >= out.len);
		}
	}
	assert_int_equal(st_parquet_writer_close(w, NULL, &err), 0);
	st_buf_free(&out);
	st_workq_free(q);
}

/* failalloc behind a lock: the encoders allocate from worker threads. */
struct lockedalloc {
	pthread_mutex_t mu;
	struct failalloc fa;
	struct st_alloc alloc;
};

static void *lockedalloc_fn(void *ctx, void *p, size_t n)
{
	struct lockedalloc *l = ctx;
	void *q;

	pthread_mutex_lock(&l->mu);
	q = failalloc_fn(&l->fa, p, n);
	pthread_mutex_unlock(&l->mu);
	return q;
}

/* Every allocation failing in turn, some of them on worker threads: one
 * error, nothing leaked, whatever thread failed. */
static void test_threads_alloc_failures(void **state)
{
	long k;

	(void)state;
	for (k = 1;; k++) {
		struct lockedalloc l;
		struct st_parquet_metrics m = {0};
		struct st_workq *q;
		struct st_buf out;
		struct fl_err err = {0};
		int rc;

		pthread_mutex_init(&l.mu, NULL);
		failalloc_init(&l.fa, k);
		l.alloc.fn = lockedalloc_fn;
		l.alloc.ctx = &l;
		assert_int_equal(st_workq_open(2, &q, &err), 0);
		st_buf_init(&out, &l.alloc);
		rc = write_many_q(&l.alloc, q, ST_PARQUET_ZSTD, 300, &out, &m, &err);
		if (rc == 0)
			st_parquet_metrics_free(&m);
		st_buf_free(&out);
		st_workq_free(q);
		pthread_mutex_destroy(&l.mu);
		assert_int_equal(l.fa.live, 0);
		if (!l.fa.failed) {
			assert_int_equal(rc, 0);
			break;
		}
		assert_int_equal(rc, -1);
		assert_int_equal(err.kind, FL_ERR_NOMEM);
	}
	print_message("threads: %ld allocations failed in turn\n", k - 1);
	assert_true(k > 20);
}

/* A sink that fails past a byte budget: the error of writing a row group
 * the encoders finished comes back once, and the writer is then refused. */
static void test_threads_sink_failure(void **state)
{
	struct st_parquet_opts o = {0};
	struct st_parquet_writer *w;
	struct st_workq *q;
	struct failing_sink fs = {.budget = 3000};
	struct fl_err err = {0};
	int r, rc = 0;

	(void)state;
	assert_int_equal(st_workq_open(2, &q, &err), 0);
	o.columns = cols;
	o.n_columns = NCOL;
	o.row_group_bytes = 1024;
	o.codec = ST_PARQUET_UNCOMPRESSED;
	o.workq = q;
	o.sink.write = failing_write;
	o.sink.ctx = &fs;
	assert_int_equal(st_parquet_writer_open(&o, &w, &err), 0);
	for (r = 0; r < 5000 && rc == 0; r++) {
		struct st_value row[NCOL];

		memset(row, 0, sizeof(row));
		row[C_ID].v.l = r;
		row[C_INT].null = row[C_DBL].null = row[C_STR].null = row[C_BIN].null = true;
		rc = st_parquet_writer_write_row(w, row, &err);
	}
	if (rc == 0)
		rc = st_parquet_writer_close(w, NULL, &err);
	else
		st_parquet_writer_free(w);
	assert_int_equal(rc, -1);
	assert_int_equal(err.kind, FL_ERR_IO);
	assert_non_null(strstr(err.msg, "disk full"));
	st_workq_free(q);
}

/* Row-group min and max come from typed passes over the buffered values
 * (an order key for numbers, positions for byte arrays); they must be what
 * st_value_compare picks, value by value, for random columns with ties,
 * signed zeros (every fifth file has only those, NaN and 1.5 as floats),
 * infinities, NaN, nulls, extremes, and dictionary or PLAIN
 * row groups.  One row group per file, so the file's bounds are its. */
enum { S_LONG, S_INT, S_DBL, S_FLT, S_STR, S_DEC9, S_DEC18, S_DATE, S_TS, NSCOL };

static const struct st_parquet_column stat_cols[NSCOL] = {
        {"l", 1, {ST_TYPE_LONG, 0, 0, 0}, false, ST_METRICS_FULL, 0},
        {"i", 2, {ST_TYPE_INT, 0, 0, 0}, false, ST_METRICS_FULL, 0},
        {"d", 3, {ST_TYPE_DOUBLE, 0, 0, 0}, false, ST_METRICS_FULL, 0},
        {"f", 4, {ST_TYPE_FLOAT, 0, 0, 0}, false, ST_METRICS_FULL, 0},
        {"s", 5, {ST_TYPE_STRING, 0, 0, 0}, false, ST_METRICS_FULL, 0},
        {"d9", 6, {ST_TYPE_DECIMAL, 9, 2, 0}, false, ST_METRICS_FULL, 0},
        {"d18", 7, {ST_TYPE_DECIMAL, 18, 2, 0}, false, ST_METRICS_FULL, 0},
        {"dt", 8, {ST_TYPE_DATE, 0, 0, 0}, false, ST_METRICS_FULL, 0},
        {"ts", 9, {ST_TYPE_TIMESTAMP, 0, 0, 0}, false, ST_METRICS_FULL, 0},
};

static uint64_t stat_rand(uint64_t *s)
{
	*s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
	return *s >> 17;
}

/* A random value of column c: from a pool of 5 (the dictionary stays on)
 * or of 2^40 (it is given up). */
static void stat_value(int c, bool small, bool zeros, uint64_t *seed, char str[12],
                       struct st_value *v)
{
	static const double dbls[] = {0.0,       -0.0, 1.5,   -1.5,   INFINITY,
	                              -INFINITY, NAN,  1e300, -1e-300};
	static const int64_t ints[] = {0, -1, 1, INT64_MIN, INT64_MAX, INT32_MIN, INT32_MAX};
	uint64_t r = stat_rand(seed);
	int64_t x = small ? (int64_t)(r % 5) - 2
	                  : (int64_t)(r % ((uint64_t)1 << 40)) - ((int64_t)1 << 39);

	memset(v, 0, sizeof(*v));
	if (stat_rand(seed) % 10 == 0) {
		v->null = true;
		return;
	}
	if (!small && stat_rand(seed) % 8 == 0)
		x = ints[stat_rand(seed) % 7];
	if (zeros && (c == S_DBL || c == S_FLT)) {
		/* Only signed zeros, NaN and a positive: -0.0 must be the minimum. */
		static const double z[] = {0.0, -0.0, 1.5, NAN};
		double d = z[stat_rand(seed) % 4];

		if (c == S_DBL)
			v->v.d = d;
		else
			v->v.f = (float)d;
		return;
	}
	switch (c) {
	case S_LONG:
	case S_TS: v->v.l = x; break;
	case S_INT:
	case S_DATE: v->v.i = (int32_t)x; break;
	case S_DBL:
		v->v.d = stat_rand(seed) % 3 == 0 ? dbls[stat_rand(seed) % 9] : (double)x / 7;
		break;
	case S_FLT:
		v->v.f = stat_rand(seed) % 3 == 0 ? (float)dbls[stat_rand(seed) % 9] : (float)x / 7;
		break;
	case S_STR: {
		size_t n = (size_t)(stat_rand(seed) % 11);

		for (size_t i = 0; i < n; i++)
			str[i] = (char)(small ? 'a' + stat_rand(seed) % 2
			                      : 0x20 + stat_rand(seed) % 95);
		set_bytes(v, str, n);
		break;
	}
	default: { /* decimals: the unscaled value, big-endian two's complement in 16 bytes */
		int64_t u = c == S_DEC9 ? x % 1000000000 : x;

		for (int i = 0; i < 16; i++)
			v->v.dec[15 - i] =
			        (uint8_t)((i < 8 ? (uint64_t)u >> (8 * i) : (u < 0 ? 0xff : 0)));
		break;
	}
	}
}

static bool stat_is_nan(int c, const struct st_value *v)
{
	return (c == S_DBL && isnan(v->v.d)) || (c == S_FLT && isnan(v->v.f));
}

static void test_typed_stats_match_compare(void **state)
{
	uint64_t seed = 42;
	static char strs[300][NSCOL][12];
	static struct st_value rows[300][NSCOL];

	(void)state;
	for (int trial = 0; trial < 400; trial++) {
		struct st_parquet_opts o = {0};
		struct st_parquet_writer *w;
		struct st_parquet_metrics m;
		struct fl_err err = {0};
		struct st_buf out;
		size_t n = 1 + (size_t)(stat_rand(&seed) % 300);
		bool small = stat_rand(&seed) % 2, zeros = trial % 5 == 0;

		st_buf_init(&out, NULL);
		o.columns = stat_cols;
		o.n_columns = NSCOL;
		o.iceberg_schema_json = "{}";
		o.no_dictionary = stat_rand(&seed) % 4 == 0;
		st_sink_to_buf(&o.sink, &out);
		assert_int_equal(st_parquet_writer_open(&o, &w, &err), 0);
		for (size_t r = 0; r < n; r++) {
			for (int c = 0; c < NSCOL; c++)
				stat_value(c, small, zeros, &seed, strs[r][c], &rows[r][c]);
			assert_int_equal(st_parquet_writer_write_row(w, rows[r], &err), 0);
		}
		assert_int_equal(st_parquet_writer_close(w, &m, &err), 0);
		for (int c = 0; c < NSCOL; c++) {
			const struct st_type *t = &stat_cols[c].type;
			const struct st_value *lo = NULL, *hi = NULL;
			struct st_buf want;

			for (size_t r = 0; r < n; r++) {
				const struct st_value *v = &rows[r][c];

				if (v->null || stat_is_nan(c, v))
					continue;
				if (lo == NULL || st_value_compare(t, v, lo) < 0)
					lo = v;
				if (hi == NULL || st_value_compare(t, v, hi) > 0)
					hi = v;
			}
			assert_int_equal(m.columns[c].has_lower, lo != NULL);
			assert_int_equal(m.columns[c].has_upper, hi != NULL);
			if (lo == NULL)
				continue;
			st_buf_init(&want, NULL);
			assert_int_equal(st_value_serialize(t, lo, &want), 0);
			if (m.columns[c].lower_len != want.len ||
			    (want.len != 0 && memcmp(m.columns[c].lower, want.data, want.len) != 0))
				fail_msg("trial %d column %s: wrong lower bound", trial,
				         stat_cols[c].name);
			st_buf_reset(&want);
			assert_int_equal(st_value_serialize(t, hi, &want), 0);
			if (m.columns[c].upper_len != want.len ||
			    (want.len != 0 && memcmp(m.columns[c].upper, want.data, want.len) != 0))
				fail_msg("trial %d column %s: wrong upper bound", trial,
				         stat_cols[c].name);
			st_buf_free(&want);
		}
		st_parquet_metrics_free(&m);
		st_buf_free(&out);
	}
}

/* Pages of fixed-width and dictionary columns are cut every 20,000 rows
 * (write.parquet.page-row-limit) without walking the rows when 20,000
 * values cannot fill page_bytes; at exactly 20,000 values' worth the
 * writer walks them (the bytes limit could be reached) and must cut at the
 * same rows.  Both files must be byte for byte the same, with nulls
 * scattered, several pages and row groups, for 4- and 8-byte values and a
 * dictionary column. */
static void write_paged(const struct st_parquet_column *pc, size_t n_cols, size_t page_bytes,
                        struct st_buf *out)
{
	struct st_parquet_opts o = {0};
	struct st_parquet_writer *w;
	struct st_parquet_metrics m;
	struct fl_err err = {0};
	uint64_t seed = 7;
	static const char *const cats[] = {"auto", "books", "garden"};

	o.columns = pc;
	o.n_columns = n_cols;
	o.iceberg_schema_json = "{}";
	o.page_bytes = page_bytes;
	o.row_group_bytes = 400000;
	st_sink_to_buf(&o.sink, out);
	assert_int_equal(st_parquet_writer_open(&o, &w, &err), 0);
	for (int r = 0; r < 90000; r++) {
		struct st_value row[3];

		memset(row, 0, sizeof(row));
		for (size_t c = 0; c < n_cols; c++) {
			uint64_t x = stat_rand(&seed);

			if (pc[c].type.id == ST_TYPE_STRING) {
				const char *v = cats[x % 3];

				set_bytes(&row[c], v, strlen(v));
			} else if (pc[c].type.id == ST_TYPE_INT) {
				row[c].v.i = (int32_t)(x >> 3);
			} else {
				row[c].v.l = (int64_t)(x >> 3);
			}
			row[c].null = !pc[c].required && x % 7 == 0;
		}
		assert_int_equal(st_parquet_writer_write_row(w, row, &err), 0);
	}
	assert_int_equal(st_parquet_writer_close(w, &m, &err), 0);
	assert_true(m.n_split_offsets > 1);
	st_parquet_metrics_free(&m);
}

static void test_counted_pages_match_walked(void **state)
{
	static const struct st_parquet_column four[] = {
	        {"i", 1, {ST_TYPE_INT, 0, 0, 0}, false, ST_METRICS_DEFAULT, 0},
	        {"c", 2, {ST_TYPE_STRING, 0, 0, 0}, false, ST_METRICS_DEFAULT, 0},
	};
	static const struct st_parquet_column eight[] = {
	        {"l", 1, {ST_TYPE_LONG, 0, 0, 0}, false, ST_METRICS_DEFAULT, 0},
	        {"r", 2, {ST_TYPE_LONG, 0, 0, 0}, true, ST_METRICS_DEFAULT, 0},
	};
	struct st_buf walked, counted;

	(void)state;
	st_buf_init(&walked, NULL);
	st_buf_init(&counted, NULL);
	write_paged(four, 2, 4 * 20000, &walked);
	write_paged(four, 2, 4 * 20000 + 1, &counted);
	assert_int_equal(walked.len, counted.len);
	assert_memory_equal(walked.data, counted.data, walked.len);
	st_buf_reset(&walked);
	st_buf_reset(&counted);
	write_paged(eight, 2, 8 * 20000, &walked);
	write_paged(eight, 2, 8 * 20000 + 1, &counted);
	assert_int_equal(walked.len, counted.len);
	assert_memory_equal(walked.data, counted.data, walked.len);
	st_buf_free(&walked);
	st_buf_free(&counted);
}

/* A decimal is refused exactly when its 16 bytes are more than the sign
 * extension of the bytes its column stores (4 for INT32, 8 for INT64, the
 * minimal length for FIXED): random values of every length and sign
 * against that byte-by-byte definition. */
static void test_decimal_fit_random(void **state)
{
	static const struct st_parquet_column dcols[] = {
	        {"d9", 1, {ST_TYPE_DECIMAL, 9, 0, 0}, false, ST_METRICS_DEFAULT, 0},
	        {"d18", 1, {ST_TYPE_DECIMAL, 18, 0, 0}, false, ST_METRICS_DEFAULT, 0},
	        {"d20", 1, {ST_TYPE_DECIMAL, 20, 0, 0}, false, ST_METRICS_DEFAULT, 0},
	        {"d38", 1, {ST_TYPE_DECIMAL, 38, 0, 0}, false, ST_METRICS_DEFAULT, 0},
	};
	static const int width[] = {4, 8, 9, 16};
	uint64_t seed = 99;

	(void)state;
	for (int k = 0; k < 4; k++) {
		struct st_parquet_opts o = {0};
		struct st_parquet_writer *w;
		struct st_parquet_metrics m;
		struct fl_err err = {0};
		struct st_buf out;

		st_buf_init(&out, NULL);
		o.columns = &dcols[k];
		o.n_columns = 1;
		st_sink_to_buf(&o.sink, &out);
		assert_int_equal(st_parquet_writer_open(&o, &w, &err), 0);
		for (int i = 0; i < 20000; i++) {
			struct st_value v = {.null = false};
			int len = 1 + (int)(stat_rand(&seed) % 16), n = width[k];
			bool neg = stat_rand(&seed) % 2, fits = true;
			uint8_t ext;

			for (int b = 0; b < 16; b++)
				v.v.dec[b] = b >= 16 - len ? (uint8_t)stat_rand(&seed)
				             : neg         ? 0xff
				                           : 0;
			if (stat_rand(&seed) % 4 ==
			    0) /* a byte flipped just past the stored ones */
				v.v.dec[(16 - n + 15) % 16] ^= 0x80;
			ext = (v.v.dec[16 - n] & 0x80) ? 0xff : 0;
			for (int b = 0; b < 16 - n; b++)
				fits = fits && v.v.dec[b] == ext;
			err.kind = FL_ERR_NONE;
			if (st_parquet_writer_write_row(w, &v, &err) != (fits ? 0 : -1))
				fail_msg("decimal(%d) value %d: fits=%d", dcols[k].type.precision,
				         i, fits);
			if (!fits)
				assert_int_equal(err.kind, FL_ERR_BAD_REQUEST);
		}
		assert_int_equal(st_parquet_writer_close(w, &m, &err), 0);
		st_parquet_metrics_free(&m);
		st_buf_free(&out);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_metrics),
	        cmocka_unit_test(test_truncated_and_nan_only),
	        cmocka_unit_test(test_metrics_modes),
	        cmocka_unit_test(test_refusals),
	        cmocka_unit_test(test_row_groups),
	        cmocka_unit_test(test_alloc_failures),
	        cmocka_unit_test(test_threads_same_bytes),
	        cmocka_unit_test(test_threads_size),
	        cmocka_unit_test(test_threads_alloc_failures),
	        cmocka_unit_test(test_threads_sink_failure),
	        cmocka_unit_test(test_typed_stats_match_compare),
	        cmocka_unit_test(test_counted_pages_match_walked),
	        cmocka_unit_test(test_decimal_fit_random),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
