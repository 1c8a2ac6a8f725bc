/* fuzz_parquet.c - the Parquet reader (storage/parquet/reader.c, with the
 * Thrift and RLE decoders under it) on arbitrary bytes taken as a whole
 * file.
 *
 * Invariants: open and every batch either succeed or fail with a message
 * starting "parquet: " and one of the input error kinds; batches never
 * exceed batch_rows and add up to the footer's row count when the whole
 * file reads; strings are valid UTF-8, uuid and fixed values have their
 * type's length, booleans are 0 or 1; a second projection that asks for
 * every readable column as its widest promotion reads the same number of
 * rows; nothing leaks (failalloc's count of live blocks ends at zero). */
#include <string.h>

#include "../unit/storage/failalloc.h"
#include "fuzz.h"
#include "iceberg/bounds.h"
#include "parquet/reader.h"

static void check_err(const struct fl_err *err)
{
	FUZZ_CHECK(err->kind == FL_ERR_BAD_REQUEST || err->kind == FL_ERR_UNSUPPORTED ||
	           err->kind == FL_ERR_TOO_LARGE);
	FUZZ_CHECK(strncmp(err->msg, "parquet: ", 9) == 0);
}

static void check_value(const struct st_type *t, const struct st_value *v)
{
	if (v->null)
		return;
	switch (t->id) {
	case ST_TYPE_BOOLEAN: FUZZ_CHECK(v->v.b == 0 || v->v.b == 1); break;
	case ST_TYPE_STRING: FUZZ_CHECK(st_utf8_valid(v->v.bin.p, v->v.bin.len)); break;
	case ST_TYPE_UUID: FUZZ_CHECK(v->v.bin.len == 16); break;
	case ST_TYPE_FIXED: FUZZ_CHECK(v->v.bin.len == t->length); break;
	case ST_TYPE_BINARY: {
		/* Touch every byte so ASan sees a value pointing outside. */
		volatile uint8_t sum = 0;

		for (size_t i = 0; i < v->v.bin.len; i++)
			sum ^= v->v.bin.p[i];
		(void)sum;
		break;
	}
	default: break;
	}
}

/* Reads the whole projection; returns the rows, or -1 after an error. */
static int64_t read_rows(struct st_parquet_reader *r, const struct st_type *types, size_t batch)
{
	const struct st_parquet_batch *b;
	struct fl_err err = {0};
	int64_t rows = 0;

	for (;;) {
		if (st_parquet_reader_next(r, &b, &err) != 0) {
			check_err(&err);
			return -1;
		}
		if (b == NULL)
			return rows;
		FUZZ_CHECK(b->n_rows > 0 && b->n_rows <= batch);
		for (size_t j = 0; j < b->n_columns; j++) {
			for (size_t i = 0; i < b->n_rows; i++)
				check_value(&types[j], &b->columns[j][i]);
		}
		rows += (int64_t)b->n_rows;
	}
}

static struct st_type widen(struct st_type t)
{
	if (t.id == ST_TYPE_INT)
		t.id = ST_TYPE_LONG;
	else if (t.id == ST_TYPE_FLOAT)
		t.id = ST_TYPE_DOUBLE;
	else if (t.id == ST_TYPE_DECIMAL)
		t.precision = 38;
	return t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct failalloc c;
	struct st_parquet_reader_opts o = {0};
	struct st_parquet_source src;
	struct st_parquet_mem m;
	struct st_parquet_reader *r;
	struct fl_err err = {0};
	struct st_parquet_want want[64];
	struct st_type types[64];
	size_t n = 0;
	int64_t rows;

	failalloc_init(&c, 0); /* counts live blocks, never fails */
	o.alloc = &c.alloc;
	o.max_footer_bytes = 1 << 20;
	o.max_row_group_bytes = 4 << 20;
	o.max_page_bytes = 4 << 20;
	o.batch_rows = 1 + (size % 97);
	st_parquet_source_mem(&src, &m, data, size);
	if (st_parquet_reader_open(&src, &o, &r, &err) != 0) {
		check_err(&err);
		FUZZ_CHECK(c.live == 0);
		return 0;
	}
	for (size_t j = 0; n < 64; j++) {
		size_t li = st_parquet_reader_projected_leaf(r, j);
		const struct st_parquet_leaf *l;

		if (li == SIZE_MAX)
			break;
		l = st_parquet_reader_leaf(r, li);
		FUZZ_CHECK(l != NULL && l->readable);
		types[n] = l->type;
		want[n].field_id = l->field_id;
		want[n].type = widen(l->type);
		want[n].required = false;
		n++;
	}
	rows = read_rows(r, types, o.batch_rows);
	if (rows >= 0)
		FUZZ_CHECK(rows == st_parquet_reader_num_rows(r));
	if (st_parquet_reader_project(r, want, n, &err) == 0) {
		int64_t again;

		for (size_t j = 0; j < n; j++)
			types[j] = want[j].type;
		again = read_rows(r, types, o.batch_rows);
		if (rows >= 0)
			FUZZ_CHECK(again == rows);
	} else {
		check_err(&err);
	}
	st_parquet_reader_free(r);
	FUZZ_CHECK(c.live == 0);
	return 0;
}
