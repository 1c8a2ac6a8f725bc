/* test_deletes.c - deletion vectors and position delete files
 * (storage/iceberg/deletes.c): blobs built here by an independent encoder
 * with array, bitmap and run containers, with and without the offset
 * header, over several 64-bit buckets, read back exactly; wrong magic,
 * lying lengths, bad CRCs, unordered keys and positions past the data file
 * refused with a message; every truncation and every single-byte change
 * refused or read, never crashing; every allocation failing in turn;
 * position delete files written by the Parquet writer, filtered by path;
 * and equality delete sets: values compared as Iceberg Java compares them
 * (null equals null, NaN equals NaN, -0.0 is not 0.0), a tuple deleting
 * only rows of data files with a lower data sequence number, 200,000
 * tuples against a reference, the byte limit, allocation failures, and
 * equality delete files written by the Parquet writer (an int column read
 * as the table's long, nulls, a missing column named). */
#include <setjmp.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

#include <cmocka.h>

#include "failalloc.h"
#include "iceberg/deletes.h"
#include "parquet/parquet.h"

/* Without runs the cardinality chooses array or bitmap containers (the
 * format's rule); with runs every container is a run container. */
enum kind { K_ARRAY, K_RUN };

struct enc {
	uint8_t b[1 << 17];
	size_t n;
};

static void put(struct enc *e, const void *p, size_t n)
{
	assert_true(e->n + n <= sizeof(e->b));
	memcpy(e->b + e->n, p, n);
	e->n += n;
}

static void put16(struct enc *e, uint32_t v)
{
	uint8_t b[2] = {(uint8_t)v, (uint8_t)(v >> 8)};

	put(e, b, 2);
}

static void put32(struct enc *e, uint32_t v)
{
	uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};

	put(e, b, 4);
}

static void put32be(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* The 32-bit bitmap of the sorted low halves v[0..n) (runs as maximal
 * runs). */
static void put_bitmap(struct enc *e, const uint32_t *v, size_t n, enum kind k)
{
	uint32_t keys[64], starts[64], cards[64];
	size_t nc = 0;

	for (size_t i = 0; i < n; i++) {
		if (nc == 0 || v[i] >> 16 != keys[nc - 1]) {
			keys[nc] = v[i] >> 16;
			starts[nc] = (uint32_t)i;
			cards[nc] = 0;
			nc++;
		}
		cards[nc - 1]++;
	}
	if (k == K_RUN) {
		uint8_t flags[8] = {0};

		put32(e, 12347u | (uint32_t)(nc - 1) << 16);
		for (size_t c = 0; c < nc; c++)
			flags[c / 8] |= (uint8_t)(1 << (c % 8));
		put(e, flags, (nc + 7) / 8);
	} else {
		put32(e, 12346u);
		put32(e, (uint32_t)nc);
	}
	for (size_t c = 0; c < nc; c++) {
		put16(e, keys[c]);
		put16(e, cards[c] - 1);
	}
	if (k != K_RUN || nc >= 4) {
		for (size_t c = 0; c < nc; c++)
			put32(e, 0); /* offsets are not used by the reader */
	}
	for (size_t c = 0; c < nc; c++) {
		const uint32_t *x = v + starts[c];

		if (k == K_ARRAY && cards[c] <= 4096) {
			for (uint32_t i = 0; i < cards[c]; i++)
				put16(e, x[i] & 0xFFFF);
		} else if (k == K_ARRAY) {
			uint8_t words[8192] = {0};

			for (uint32_t i = 0; i < cards[c]; i++)
				words[(x[i] & 0xFFFF) / 8] |= (uint8_t)(1 << (x[i] % 8));
			put(e, words, sizeof(words));
		} else {
			uint32_t runs = 0, i = 0;
			size_t at = e->n;

			put16(e, 0);
			while (i < cards[c]) {
				uint32_t j = i;

				while (j + 1 < cards[c] && x[j + 1] == x[j] + 1)
					j++;
				put16(e, x[i] & 0xFFFF);
				put16(e, j - i);
				runs++;
				i = j + 1;
			}
			e->b[at] = (uint8_t)runs;
			e->b[at + 1] = (uint8_t)(runs >> 8);
		}
	}
}

/* The whole blob of sorted positions p[0..n). */
static void encode(struct enc *e, const int64_t *p, size_t n, enum kind k)
{
	static uint32_t low[1 << 16];
	uint64_t buckets = 0;
	uLong crc;

	e->n = 0;
	put32(e, 0); /* length, patched below */
	put(e, "\xD1\xD3\x39\x64", 4);
	for (size_t i = 0; i < n; i++) {
		if (i == 0 || p[i] >> 32 != p[i - 1] >> 32)
			buckets++;
	}
	put32(e, (uint32_t)buckets);
	put32(e, (uint32_t)(buckets >> 32));
	for (size_t i = 0; i < n;) {
		size_t j = i, m = 0;

		while (j < n && p[j] >> 32 == p[i] >> 32)
			low[m++] = (uint32_t)p[j++];
		put32(e, (uint32_t)(p[i] >> 32));
		put_bitmap(e, low, m, k);
		i = j;
	}
	put32be(e->b, (uint32_t)(e->n - 4));
	crc = crc32(0L, e->b + 4, (uInt)(e->n - 4));
	put32(e, 0);
	put32be(e->b + e->n - 4, (uint32_t)crc);
}

static int64_t sample[20000];

static size_t make_sample(int64_t limit)
{
	size_t n = 0;

	for (int64_t v = 0; v < 5000; v += 3)
		sample[n++] = v;
	for (int64_t v = 70000; v < 75000; v++) /* a dense container: bitmap or one run */
		sample[n++] = v;
	sample[n++] = 131071;
	if (limit > ((int64_t)1 << 32) + 10) {
		sample[n++] = ((int64_t)1 << 32) + 1;
		sample[n++] = ((int64_t)1 << 32) + 7;
	}
	return n;
}

static void test_dv_round_trip(void **state)
{
	static struct enc e;
	static const int64_t limits[] = {200000, ((int64_t)1 << 33)};

	(void)state;
	for (int k = K_ARRAY; k <= K_RUN; k++) {
		for (size_t l = 0; l < 2; l++) {
			size_t n = make_sample(limits[l]);
			struct st_posset s;
			struct fl_err err = {0};

			encode(&e, sample, n, (enum kind)k);
			st_posset_init(&s, limits[l], NULL);
			if (st_dv_parse(e.b, e.n, &s, &err) != 0)
				fail_msg("kind %d: %s", k, err.msg);
			st_posset_finish(&s);
			assert_int_equal(s.n, n);
			for (size_t i = 0; i < n; i++)
				assert_true(s.v[i] == sample[i]);
			assert_true(st_posset_has(&s, 70001));
			assert_false(st_posset_has(&s, 1));
			st_posset_free(&s);
		}
	}
}

static void expect_fail(const uint8_t *b, size_t n, int64_t limit, const char *needle)
{
	struct st_posset s;
	struct fl_err err = {0};

	st_posset_init(&s, limit, NULL);
	assert_int_equal(st_dv_parse(b, n, &s, &err), -1);
	assert_int_equal(err.kind, FL_ERR_BAD_REQUEST);
	if (strstr(err.msg, needle) == NULL)
		fail_msg("'%s' lacks '%s'", err.msg, needle);
	st_posset_free(&s);
}

static void test_dv_corrupt(void **state)
{
	static struct enc e;
	static uint8_t copy[sizeof(e.b)];
	size_t n = make_sample(200000);

	(void)state;
	encode(&e, sample, n, K_ARRAY);
	memcpy(copy, e.b, e.n);
	copy[5] ^= 1;
	expect_fail(copy, e.n, 200000, "wrong magic");
	memcpy(copy, e.b, e.n);
	put32be(copy, (uint32_t)e.n);
	expect_fail(copy, e.n, 200000, "length field");
	memcpy(copy, e.b, e.n);
	copy[e.n - 1] ^= 0x40;
	expect_fail(copy, e.n, 200000, "CRC-32");
	expect_fail(e.b, e.n, 100000, "outside the data file's 100000 rows");
	expect_fail(e.b, 10, 200000, "too short");

	/* Unordered array values, with a CRC that matches. */
	{
		int64_t bad[] = {5, 9};
		uLong crc;

		encode(&e, bad, 2, K_ARRAY);
		/* the two values are the last 4 bytes before the CRC */
		e.b[e.n - 8] = 9;
		e.b[e.n - 6] = 5;
		crc = crc32(0L, e.b + 4, (uInt)(e.n - 8));
		put32be(e.b + e.n - 4, (uint32_t)crc);
		expect_fail(e.b, e.n, 100, "not strictly increasing");
	}
}

/* Every prefix and every single-byte change: an error or a set, never a
 * crash (ASan), never a position at or past the limit. */
static void test_dv_mutations(void **state)
{
	static struct enc e;
	static uint8_t copy[sizeof(e.b)];
	size_t n = make_sample(200000);

	(void)state;
	for (int k = K_ARRAY; k <= K_RUN; k++) {
		encode(&e, sample, n > 300 ? 300 : n, (enum kind)k);
		for (size_t len = 0; len < e.n; len++) {
			struct st_posset s;
			struct fl_err err = {0};

			st_posset_init(&s, 200000, NULL);
			assert_int_equal(st_dv_parse(e.b, len, &s, &err), -1);
			st_posset_free(&s);
		}
		for (size_t i = 0; i < e.n; i++) {
			struct st_posset s;
			struct fl_err err = {0};
			uLong crc;

			memcpy(copy, e.b, e.n);
			copy[i] ^= 0x5A;
			/* Re-seal the CRC so the parser goes past it. */
			if (i >= 4 && i < e.n - 4) {
				crc = crc32(0L, copy + 4, (uInt)(e.n - 8));
				put32be(copy + e.n - 4, (uint32_t)crc);
			}
			st_posset_init(&s, 200000, NULL);
			if (st_dv_parse(copy, e.n, &s, &err) == 0) {
				st_posset_finish(&s);
				for (size_t j = 0; j < s.n; j++)
					assert_true(s.v[j] >= 0 && s.v[j] < 200000);
			} else {
				assert_int_equal(err.kind, FL_ERR_BAD_REQUEST);
				assert_non_null(strstr(err.msg, "deletion vector"));
			}
			st_posset_free(&s);
		}
	}
}

static void test_posset(void **state)
{
	struct st_posset s;
	struct fl_err err = {0};
	struct failalloc fa = {0};

	(void)state;
	st_posset_init(&s, 10, NULL);
	/* duplicates beyond the limit's count fold instead of growing */
	for (int r = 0; r < 100; r++)
		assert_int_equal(st_posset_add(&s, 9 - r % 10, &err), 0);
	assert_int_equal(st_posset_add(&s, 10, &err), -1);
	assert_int_equal(st_posset_add(&s, -1, &err), -1);
	st_posset_finish(&s);
	assert_int_equal(s.n, 10);
	for (int i = 0; i < 10; i++)
		assert_true(s.v[i] == i);
	st_posset_free(&s);

	failalloc_init(&fa, 1);
	st_posset_init(&s, 10, &fa.alloc);
	assert_int_equal(st_posset_add(&s, 1, &err), -1);
	assert_int_equal(err.kind, FL_ERR_NOMEM);
	st_posset_free(&s);
	assert_int_equal(fa.live, 0);
}

/* A position delete file: rows for two data files. */
static void write_pos_file(struct st_buf *out, int with_null)
{
	const struct st_parquet_column cols[] = {
	        {"file_path",
	         ST_FIELD_DELETE_FILE_PATH,
	         {ST_TYPE_STRING, 0, 0, 0},
	         true,
	         ST_METRICS_DEFAULT,
	         0},
	        {"pos",
	         ST_FIELD_DELETE_POS,
	         {ST_TYPE_LONG, 0, 0, 0},
	         !with_null,
	         ST_METRICS_DEFAULT,
	         0},
	};
	struct st_parquet_opts o = {0};
	struct st_parquet_writer *w;
	struct fl_err err = {0};

	st_buf_init(out, NULL);
	o.columns = cols;
	o.n_columns = 2;
	o.codec = ST_PARQUET_ZSTD;
	o.iceberg_schema_json = "{}";
	st_sink_to_buf(&o.sink, out);
	assert_int_equal(st_parquet_writer_open(&o, &w, &err), 0);
	for (int i = 0; i < 3000; i++) {
		struct st_value row[2] = {0};
		const char *p = i < 1000 ? "s3://b/t/data/a.parquet" : "s3://b/t/data/b.parquet";

		row[0].v.bin.p = (const uint8_t *)p;
		row[0].v.bin.len = strlen(p);
		row[1].v.l = i < 1000 ? i * 7 : (i - 1000) * 2;
		row[1].null = with_null && i == 2500;
		assert_int_equal(st_parquet_writer_write_row(w, row, &err), 0);
	}
	assert_int_equal(st_parquet_writer_close(w, NULL, &err), 0);
}

static void test_pos_file(void **state)
{
	struct st_buf f;
	struct st_parquet_source src;
	struct st_parquet_mem m;
	struct st_posset s;
	struct fl_err err = {0};

	(void)state;
	write_pos_file(&f, 0);
	st_parquet_source_mem(&src, &m, f.data, f.len);
	st_posset_init(&s, 4000, NULL);
	assert_int_equal(st_pos_deletes_for(&src, NULL, "s3://b/t/data/b.parquet", &s, &err), 0);
	st_posset_finish(&s);
	assert_int_equal(s.n, 2000);
	assert_true(s.v[0] == 0 && s.v[1999] == 3998);
	st_posset_free(&s);

	/* a.parquet has positions up to 6993: past a 5000-row file */
	st_posset_init(&s, 5000, NULL);
	assert_int_equal(st_pos_deletes_for(&src, NULL, "s3://b/t/data/a.parquet", &s, &err), -1);
	assert_non_null(strstr(err.msg, "outside the data file's 5000 rows"));
	st_posset_free(&s);

	st_posset_init(&s, 5000, NULL);
	assert_int_equal(st_pos_deletes_for(&src, NULL, "s3://b/t/data/c.parquet", &s, &err), 0);
	assert_int_equal(s.n, 0);
	st_posset_free(&s);
	st_buf_free(&f);

	write_pos_file(&f, 1);
	st_parquet_source_mem(&src, &m, f.data, f.len);
	st_posset_init(&s, 4000, NULL);
	assert_int_equal(st_pos_deletes_for(&src, NULL, "s3://b/t/data/b.parquet", &s, &err), -1);
	assert_non_null(strstr(err.msg, "null"));
	st_posset_free(&s);
	st_buf_free(&f);

	/* Not a delete file: a file without the columns */
	{
		static const char junk[] = "PAR1 not really";

		st_parquet_source_mem(&src, &m, junk, sizeof(junk));
		st_posset_init(&s, 10, NULL);
		assert_int_equal(st_pos_deletes_for(&src, NULL, "x", &s, &err), -1);
		assert_int_equal(err.kind, FL_ERR_BAD_REQUEST);
		st_posset_free(&s);
	}
}

/* ---- equality deletes ---- */

static const struct st_parquet_want EQ_FIELDS[] = {
        {1, {ST_TYPE_LONG, 0, 0, 0}, false},
        {2, {ST_TYPE_STRING, 0, 0, 0}, false},
};

static void tuple(struct st_value v[2], const int64_t *id, const char *name)
{
	memset(v, 0, 2 * sizeof(*v));
	v[0].null = id == NULL;
	if (id != NULL)
		v[0].v.l = *id;
	v[1].null = name == NULL;
	if (name != NULL) {
		v[1].v.bin.p = (const uint8_t *)name;
		v[1].v.bin.len = strlen(name);
	}
}

static void test_eqset_semantics(void **state)
{
	struct st_eqset *s;
	struct st_value v[2];
	struct fl_err err = {0};
	int64_t one = 1, two = 2;

	(void)state;
	assert_int_equal(st_eqset_new(EQ_FIELDS, 0, 0, NULL, &s, &err), -1);
	assert_int_equal(err.kind, FL_ERR_BAD_REQUEST);
	assert_int_equal(st_eqset_new(EQ_FIELDS, 2, 0, NULL, &s, &err), 0);
	tuple(v, &one, "a");
	assert_false(st_eqset_deletes(s, v, 0));
	assert_int_equal(st_eqset_add(s, v, 5, &err), 0);
	/* strictly lower data sequence numbers only */
	assert_true(st_eqset_deletes(s, v, 4));
	assert_true(st_eqset_deletes(s, v, 0));
	assert_false(st_eqset_deletes(s, v, 5));
	assert_false(st_eqset_deletes(s, v, 6));
	/* the highest sequence number holding a tuple counts, in any order */
	assert_int_equal(st_eqset_add(s, v, 9, &err), 0);
	assert_int_equal(st_eqset_add(s, v, 3, &err), 0);
	assert_true(st_eqset_deletes(s, v, 8));
	assert_false(st_eqset_deletes(s, v, 9));
	assert_int_equal(st_eqset_size(s), 1);
	/* every field must match */
	tuple(v, &one, "b");
	assert_false(st_eqset_deletes(s, v, 0));
	tuple(v, &two, "a");
	assert_false(st_eqset_deletes(s, v, 0));
	tuple(v, &one, "a");
	v[1].v.bin.p = (const uint8_t *)"a\0";
	v[1].v.bin.len = 2; /* "a" followed by a NUL byte is another string */
	assert_false(st_eqset_deletes(s, v, 0));
	/* null equals null, and only null */
	tuple(v, &one, NULL);
	assert_false(st_eqset_deletes(s, v, 0));
	assert_int_equal(st_eqset_add(s, v, 2, &err), 0);
	assert_true(st_eqset_deletes(s, v, 1));
	tuple(v, &one, "");
	assert_false(st_eqset_deletes(s, v, 1));
	tuple(v, NULL, NULL);
	assert_false(st_eqset_deletes(s, v, 1));
	assert_int_equal(st_eqset_add(s, v, 2, &err), 0);
	assert_true(st_eqset_deletes(s, v, 1));
	assert_int_equal(st_eqset_size(s), 3);
	st_eqset_free(s);
	st_eqset_free(NULL);
}

static void test_eqset_types(void **state)
{
	static const struct st_parquet_want f[] = {
	        {1, {ST_TYPE_DOUBLE, 0, 0, 0}, false}, {2, {ST_TYPE_FLOAT, 0, 0, 0}, false},
	        {3, {ST_TYPE_INT, 0, 0, 0}, false},    {4, {ST_TYPE_DECIMAL, 10, 2, 0}, false},
	        {5, {ST_TYPE_BINARY, 0, 0, 0}, false}, {6, {ST_TYPE_BOOLEAN, 0, 0, 0}, false},
	};
	static const uint8_t bin[] = {0, 1, 0, 2};
	struct st_eqset *s;
	struct st_value v[6], w[6];
	struct fl_err err = {0};
	uint64_t bits = 0x7ff8000000000123ULL; /* a NaN with a payload */

	(void)state;
	assert_int_equal(st_eqset_new(f, 6, 0, NULL, &s, &err), 0);
	memset(v, 0, sizeof(v));
	v[0].v.d = 0.0 / 0.0;
	v[1].v.f = -0.0f;
	v[2].v.i = -7;
	v[3].v.dec[15] = 42;
	v[4].v.bin.p = bin;
	v[4].v.bin.len = sizeof(bin);
	v[5].v.b = true;
	assert_int_equal(st_eqset_add(s, v, 1, &err), 0);
	memcpy(w, v, sizeof(w));
	memcpy(&w[0].v.d, &bits, 8); /* every NaN is the same NaN */
	assert_true(st_eqset_deletes(s, w, 0));
	w[1].v.f = 0.0f; /* -0.0 is not 0.0 */
	assert_false(st_eqset_deletes(s, w, 0));
	memcpy(w, v, sizeof(w));
	w[3].v.dec[0] = 0xff; /* another unscaled value */
	assert_false(st_eqset_deletes(s, w, 0));
	memcpy(w, v, sizeof(w));
	w[4].v.bin.len = 3; /* a prefix is another value */
	assert_false(st_eqset_deletes(s, w, 0));
	memcpy(w, v, sizeof(w));
	w[5].v.b = false;
	assert_false(st_eqset_deletes(s, w, 0));
	memcpy(w, v, sizeof(w));
	w[2].v.i = 7;
	assert_false(st_eqset_deletes(s, w, 0));
	st_eqset_free(s);
}

/* 200,000 tuples, every third added twice with another sequence number;
 * the set answers as a plain array of them does, for members and for
 * 200,000 others. */
static void test_eqset_many(void **state)
{
	enum { N = 200000 };
	struct st_eqset *s;
	struct st_value v[2];
	struct fl_err err = {0};
	char name[32];
	int64_t *seq = malloc(N * sizeof(*seq));

	(void)state;
	assert_non_null(seq);
	assert_int_equal(st_eqset_new(EQ_FIELDS, 2, 0, NULL, &s, &err), 0);
	for (int64_t i = 0; i < N; i++) {
		int64_t id = i * 7919 % 1000003;

		snprintf(name, sizeof(name), "n%" PRId64, i % 1000);
		tuple(v, &id, name);
		seq[i] = 1 + i % 50;
		assert_int_equal(st_eqset_add(s, v, seq[i], &err), 0);
		if (i % 3 == 0) {
			assert_int_equal(st_eqset_add(s, v, seq[i] + 10, &err), 0);
			seq[i] += 10;
		}
	}
	assert_int_equal(st_eqset_size(s), N);
	for (int64_t i = 0; i < N; i++) {
		int64_t id = i * 7919 % 1000003, other = id + 1000003;

		snprintf(name, sizeof(name), "n%" PRId64, i % 1000);
		tuple(v, &id, name);
		assert_true(st_eqset_deletes(s, v, seq[i] - 1));
		assert_false(st_eqset_deletes(s, v, seq[i]));
		tuple(v, &other, name);
		assert_false(st_eqset_deletes(s, v, 0));
	}
	st_eqset_free(s);
	free(seq);
}

static void test_eqset_limits(void **state)
{
	struct st_eqset *s;
	struct st_value v[2];
	struct fl_err err = {0};
	struct failalloc fa = {0};
	int64_t i;

	(void)state;
	/* 64 KiB: the table's slots and the tuples together */
	assert_int_equal(st_eqset_new(EQ_FIELDS, 2, 64 << 10, NULL, &s, &err), 0);
	for (i = 0;; i++) {
		tuple(v, &i, "some name");
		if (st_eqset_add(s, v, 1, &err) != 0)
			break;
	}
	assert_int_equal(err.kind, FL_ERR_TOO_LARGE);
	assert_non_null(strstr(err.msg, "more than the 65536 bytes"));
	assert_true(i > 500 && i < 3000);
	assert_int_equal(st_eqset_size(s), (size_t)i);
	/* the set is whole after the refusal */
	for (int64_t k = 0; k < i; k++) {
		tuple(v, &k, "some name");
		assert_true(st_eqset_deletes(s, v, 0));
	}
	tuple(v, &i, "some name");
	assert_false(st_eqset_deletes(s, v, 0));
	st_eqset_free(s);

	/* every allocation failing in turn: an error, and nothing kept */
	for (long at = 1;; at++) {
		int rc = 0;

		failalloc_init(&fa, at);
		if (st_eqset_new(EQ_FIELDS, 2, 0, &fa.alloc, &s, &err) != 0) {
			assert_int_equal(err.kind, FL_ERR_NOMEM);
			assert_int_equal(fa.live, 0);
			continue;
		}
		for (i = 0; i < 2000 && rc == 0; i++) {
			tuple(v, &i, "x");
			rc = st_eqset_add(s, v, 1, &err);
		}
		if (rc != 0)
			assert_int_equal(err.kind, FL_ERR_NOMEM);
		st_eqset_free(s);
		assert_int_equal(fa.live, 0);
		if (!fa.failed)
			break;
	}
}

/* An equality delete file: id (an int column, field 1) and name (field
 * 2), or only id. */
static void write_eq_file(struct st_buf *out, bool with_name)
{
	const struct st_parquet_column cols[] = {
	        {"id", 1, {ST_TYPE_INT, 0, 0, 0}, false, ST_METRICS_DEFAULT, 0},
	        {"name", 2, {ST_TYPE_STRING, 0, 0, 0}, false, ST_METRICS_DEFAULT, 0},
	};
	struct st_parquet_opts o = {0};
	struct st_parquet_writer *w;
	struct fl_err err = {0};

	st_buf_init(out, NULL);
	o.columns = cols;
	o.n_columns = with_name ? 2 : 1;
	o.codec = ST_PARQUET_ZSTD;
	o.iceberg_schema_json = "{}";
	st_sink_to_buf(&o.sink, out);
	assert_int_equal(st_parquet_writer_open(&o, &w, &err), 0);
	for (int i = 0; i < 5000; i++) {
		struct st_value row[2] = {0};
		char name[24];

		snprintf(name, sizeof(name), "n%d", i);
		row[0].v.i = i * 2;
		row[0].null = i == 4999;
		row[1].v.bin.p = (const uint8_t *)name;
		row[1].v.bin.len = strlen(name);
		row[1].null = i % 10 == 9;
		assert_int_equal(st_parquet_writer_write_row(w, row, &err), 0);
	}
	assert_int_equal(st_parquet_writer_close(w, NULL, &err), 0);
}

static void test_eq_file(void **state)
{
	struct st_buf f;
	struct st_parquet_source src;
	struct st_parquet_mem m;
	struct st_eqset *s;
	struct st_value v[2];
	struct fl_err err = {0};
	char name[24];

	(void)state;
	write_eq_file(&f, true);
	st_parquet_source_mem(&src, &m, f.data, f.len);
	assert_int_equal(st_eqset_new(EQ_FIELDS, 2, 0, NULL, &s, &err), 0);
	assert_int_equal(st_eqset_add_file(s, &src, NULL, 7, &err), 0);
	assert_int_equal(st_eqset_size(s), 5000);
	for (int64_t i = 0; i < 5000; i++) {
		int64_t id = i * 2, odd = i * 2 + 1;

		snprintf(name, sizeof(name), "n%" PRId64, i);
		tuple(v, i == 4999 ? NULL : &id, i % 10 == 9 ? NULL : name);
		assert_true(st_eqset_deletes(s, v, 6));
		assert_false(st_eqset_deletes(s, v, 7));
		tuple(v, &odd, i % 10 == 9 ? NULL : name);
		assert_false(st_eqset_deletes(s, v, 0));
	}
	st_eqset_free(s);
	st_buf_free(&f);

	/* a file without the name column: named, not read as nulls */
	write_eq_file(&f, false);
	st_parquet_source_mem(&src, &m, f.data, f.len);
	assert_int_equal(st_eqset_new(EQ_FIELDS, 2, 0, NULL, &s, &err), 0);
	assert_int_equal(st_eqset_add_file(s, &src, NULL, 7, &err), -1);
	assert_int_equal(err.kind, FL_ERR_BAD_REQUEST);
	assert_non_null(strstr(err.msg, "field id 2"));
	assert_int_equal(st_eqset_size(s), 0);
	st_eqset_free(s);
	/* the same file for id alone */
	assert_int_equal(st_eqset_new(EQ_FIELDS, 1, 0, NULL, &s, &err), 0);
	assert_int_equal(st_eqset_add_file(s, &src, NULL, 3, &err), 0);
	assert_int_equal(st_eqset_size(s), 5000);
	st_eqset_free(s);
	st_buf_free(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_dv_round_trip), cmocka_unit_test(test_dv_corrupt),
	        cmocka_unit_test(test_dv_mutations),  cmocka_unit_test(test_posset),
	        cmocka_unit_test(test_pos_file),      cmocka_unit_test(test_eqset_semantics),
	        cmocka_unit_test(test_eqset_types),   cmocka_unit_test(test_eqset_many),
	        cmocka_unit_test(test_eqset_limits),  cmocka_unit_test(test_eq_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
