/* fuzz_deletes.c - deletion vectors, position delete files and equality
 * delete files (storage/iceberg/deletes.c) on arbitrary bytes.  The first
 * byte chooses: even, the rest is a deletion-vector-v1 blob (a CRC that
 * does not match is re-sealed when the first byte's bit 1 is set, so the
 * fuzzer reaches the Roaring parser); odd, the rest is a Parquet position
 * delete file, or with bit 2 set an equality delete file of fields 1
 * (long) and 2 (string), read into a set bounded at 1 MiB.
 *
 * Invariants: success or FL_ERR_BAD_REQUEST (the reader may also say
 * FL_ERR_UNSUPPORTED or FL_ERR_TOO_LARGE) with a message; every position
 * in a set is in [0, limit) and a finished set is strictly increasing; an
 * equality set never holds more tuples than its bound allows, and a
 * lookup in it answers; nothing leaks (failalloc's count of live blocks
 * ends at zero). */
#include <string.h>
#include <zlib.h>

#include "../unit/storage/failalloc.h"
#include "fuzz.h"
#include "iceberg/deletes.h"

#define LIMIT 300000

static void check_set(struct st_posset *s)
{
	st_posset_finish(s);
	for (size_t i = 0; i < s->n; i++) {
		FUZZ_CHECK(s->v[i] >= 0 && s->v[i] < LIMIT);
		FUZZ_CHECK(i == 0 || s->v[i] > s->v[i - 1]);
	}
}

/* An equality delete file into a set; lookups of a few tuples. */
static void eq_file(const uint8_t *data, size_t size, struct failalloc *fa)
{
	static const struct st_parquet_want f[] = {
	        {1, {ST_TYPE_LONG, 0, 0, 0}, false},
	        {2, {ST_TYPE_STRING, 0, 0, 0}, false},
	};
	struct st_parquet_source src;
	struct st_parquet_mem m;
	struct st_parquet_reader_opts ro = {
	        .alloc = &fa->alloc, .max_row_group_bytes = 16 << 20, .max_page_bytes = 16 << 20};
	struct st_eqset *s;
	struct st_value v[2] = {0};
	struct fl_err err = {0};

	if (st_eqset_new(f, 2, 1 << 20, &fa->alloc, &s, &err) != 0) {
		FUZZ_CHECK(err.kind == FL_ERR_NOMEM);
		return;
	}
	st_parquet_source_mem(&src, &m, data, size);
	if (st_eqset_add_file(s, &src, &ro, 5, &err) != 0)
		FUZZ_CHECK(err.kind == FL_ERR_BAD_REQUEST || err.kind == FL_ERR_UNSUPPORTED ||
		           err.kind == FL_ERR_TOO_LARGE || err.kind == FL_ERR_NOMEM);
	FUZZ_CHECK(st_eqset_size(s) <= (1 << 20) / 24);
	for (int k = 0; k < 4; k++) {
		v[0].null = k & 1;
		v[0].v.l = k;
		v[1].null = k & 2;
		v[1].v.bin.p = (const uint8_t *)"n1";
		v[1].v.bin.len = 2;
		FUZZ_CHECK(!st_eqset_deletes(s, v, 5));
		(void)st_eqset_deletes(s, v, 4);
	}
	st_eqset_free(s);
}

static int count_row(void *arg, const uint8_t *path, size_t len, int64_t pos, struct fl_err *err)
{
	struct st_posset *s = arg;

	(void)path;
	(void)len;
	return st_posset_add(s, pos, err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct failalloc fa;
	struct st_posset s;
	struct fl_err err = {0};
	int rc;

	if (size < 2)
		return 0;
	failalloc_init(&fa, 0);
	st_posset_init(&s, LIMIT, &fa.alloc);
	if ((data[0] & 1) == 0) {
		uint8_t *copy = malloc(size - 1);
		size_t n = size - 1;

		if (copy == NULL)
			return 0;
		memcpy(copy, data + 1, n);
		if ((data[0] & 2) == 2 && n >= 12) {
			uLong crc = crc32(0L, copy + 4, (uInt)(n - 8));

			copy[n - 4] = (uint8_t)(crc >> 24);
			copy[n - 3] = (uint8_t)(crc >> 16);
			copy[n - 2] = (uint8_t)(crc >> 8);
			copy[n - 1] = (uint8_t)crc;
		}
		rc = st_dv_parse(copy, n, &s, &err);
		free(copy);
		if (rc != 0) {
			FUZZ_CHECK(err.kind == FL_ERR_BAD_REQUEST || err.kind == FL_ERR_NOMEM);
			FUZZ_CHECK(strstr(err.msg, "deletion vector") != NULL ||
			           strstr(err.msg, "position") != NULL);
		}
	} else if ((data[0] & 4) == 4) {
		eq_file(data + 1, size - 1, &fa);
	} else {
		struct st_parquet_source src;
		struct st_parquet_mem m;
		struct st_parquet_reader_opts ro = {.alloc = &fa.alloc,
		                                    .max_row_group_bytes = 16 << 20,
		                                    .max_page_bytes = 16 << 20};

		st_parquet_source_mem(&src, &m, data + 1, size - 1);
		rc = st_pos_deletes_read(&src, &ro, count_row, &s, &err);
		if (rc != 0)
			FUZZ_CHECK(err.kind == FL_ERR_BAD_REQUEST ||
			           err.kind == FL_ERR_UNSUPPORTED || err.kind == FL_ERR_TOO_LARGE ||
			           err.kind == FL_ERR_NOMEM);
	}
	check_set(&s);
	st_posset_free(&s);
	FUZZ_CHECK(fa.live == 0);
	return 0;
}
