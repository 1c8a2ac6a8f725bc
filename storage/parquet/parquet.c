/* parquet.c - streaming Parquet writer for flat Iceberg schemas.
 *
 * Bytes produced (apache/parquet-format README.md "File Format", thrift
 * types from src/main/thrift/parquet.thrift, Thrift compact protocol):
 *
 *   "PAR1"
 *   per row group, per column chunk:
 *     [dictionary page]  PageHeader{type DICTIONARY_PAGE, sizes,
 *                        dictionary_page_header{num_values, PLAIN}}
 *                        + compressed PLAIN-encoded entries
 *     data pages (v1)    PageHeader{type DATA_PAGE, sizes,
 *                        data_page_header{num_values incl. nulls, PLAIN |
 *                        RLE_DICTIONARY, RLE, RLE}} + compressed body:
 *                        [u32 LE length + RLE-hybrid definition levels,
 *                        bit width 1, OPTIONAL columns only] then values:
 *                        PLAIN (LE fixed width; BYTE_ARRAY u32 LE length +
 *                        bytes; BOOLEAN bit-packed LSB first) or u8 bit
 *                        width + RLE-hybrid dictionary indices
 *   FileMetaData         version 1, schema (root "table" + one leaf per
 *                        column with field_id, converted and logical
 *                        type), num_rows, row_groups (ColumnChunk with
 *                        ColumnMetaData and Statistics{null_count,
 *                        max_value, min_value, nan_count}), key/value
 *                        metadata ("iceberg.schema", ...), created_by,
 *                        column_orders (TYPE_ORDER for each column)
 *   u32 LE footer length, "PAR1"
 *
 * Type mapping: Iceberg spec Appendix A (decimal by precision: INT32 <= 9,
 * INT64 <= 18, else FIXED_LEN_BYTE_ARRAY of the minimal length; time and
 * timestamps INT64 micros, v3 timestamp_ns INT64 nanos; uuid FIXED[16] +
 * UUID).  Compression per page: ZSTD frame, Snappy raw block, GZIP member
 * (parquet-format Compression.md).
 *
 * Invariants: `offset` is the number of bytes the sink has accepted.  Per
 * column, while `dict_on` the row group's values live only as dictionary
 * entries + indices; otherwise only as PLAIN bytes in `values`.  Booleans
 * are buffered one byte per value and bit-packed when a page is written.
 * Once `broken` is set nothing more reaches the sink. */
#include "parquet.h"

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_createCCtx_advanced, for the allocator hook */
#include <zstd.h>
#include <zstd_errors.h>
#ifdef ST_HAVE_SNAPPY
#include "parquet/libsnappy.h"
#endif

#include "iceberg/bounds.h"
#include "parquet/format.h"
#include "parquet/rle.h"
#include "parquet/thrift.h"
#include "base/workq.h"

#define DEFAULT_ROW_GROUP_BYTES ((size_t)128 << 20)
#define DEFAULT_PAGE_BYTES ((size_t)1 << 20)
#define DEFAULT_DICT_BYTES ((size_t)2 << 20)
#define PAGE_ROW_LIMIT 20000 /* write.parquet.page-row-limit */
#define MAX_STAT_BYTES 1024 /* longer chunk min/max are left out of the footer */
#define DICT_PROBE_VALUES 16384 /* when to give up on a mostly unique column */
#define DICT_EARLY_VALUES 1024 /* ... and on one of unique values */
#define DEFAULT_TRUNCATE 16

/* The PLAIN encoding of one value as (head, tail) so that BYTE_ARRAY
 * values need no copy: head holds fixed-width bytes or the u32 length. */
struct plain {
	uint8_t head[8];
	size_t head_len;
	const uint8_t *tail;
	size_t tail_len;
};

/* Running min/max of non-null, non-NaN values; byte values are copied. */
struct vstat {
	bool has;
	struct st_value min, max;
	struct st_buf min_store, max_store;
};

struct dict {
	uint32_t *slots; /* 0 empty, else entry index + 1 */
	size_t n_slots;
	uint64_t *hashes; /* per entry */
	size_t *ends; /* end offset of each entry in plain */
	size_t n_entries, cap_entries;
	struct st_buf plain; /* the entries, PLAIN encoded back to back */
};

struct pq_chunk {
	int64_t num_values;
	int64_t total_uncompressed, total_compressed;
	int64_t data_page_offset, dict_page_offset; /* dict: -1 when none */
	int64_t null_count, nan_count;
	bool dict;
	bool has_minmax;
	uint8_t *min, *max;
	size_t min_len, max_len;
};

struct pq_rg {
	int64_t num_rows, file_offset, total_byte_size, total_compressed;
	struct pq_chunk *chunks;
};

/* One column's share of a row group: the one being filled, or one handed
 * to an encoder (the buffers move between them, keeping their capacity). */
struct pq_rgcol {
	struct st_buf defs; /* one byte per row: 1 defined, 0 null (OPTIONAL only) */
	struct st_buf values; /* PLAIN values (when !dict_on) */
	struct st_buf indices; /* u32 dictionary index per value (when dict_on) */
	struct dict dict;
	bool dict_on;
	size_t rg_nonnull;
	int64_t rg_nulls, rg_nans;
	struct vstat rg_stat;
};

struct pq_col {
	struct st_parquet_column def; /* name owned */
	int ptype;
	int type_length; /* FIXED_LEN_BYTE_ARRAY only */
	size_t fixed_width; /* bytes per PLAIN value; 0 for BYTE_ARRAY */
	struct pq_rgcol rs; /* the row group being filled */
	/* whole file (updated as row groups reach the sink, in order) */
	int64_t nulls, nans, size;
	struct vstat file_stat;
};

/* One encoder's scratch: a page body, its compressed form, a page header
 * and the codec's context.  One per column chunk being encoded at a time. */
struct pq_enc {
	ZSTD_CCtx *zstd;
	z_stream zs;
	bool zinit;
	struct st_buf page, cbuf, hdr;
	struct pq_enc *next; /* the writer's free list */
};

struct st_parquet_writer;

/* One column chunk of a flushed row group, encoded and compressed into out
 * (pages back to back; offsets in ch relative to out until written). */
struct pq_job {
	struct st_workq_task task; /* first: the task is the job */
	struct st_parquet_writer *w;
	struct pq_col *c; /* read only: def, ptype, type_length, fixed_width */
	struct pq_rgcol rs;
	size_t rows;
	struct pq_chunk ch;
	struct st_buf out;
	int rc;
	struct fl_err err;
};

/* A flushed row group: its column chunks being encoded (or done). */
struct pq_pending {
	struct st_workq_group group;
	size_t rows;
	uint64_t bound; /* at least the bytes it will add to the file */
	struct pq_job *jobs; /* n_cols; allocated once, reused */
};

struct st_parquet_writer {
	const struct st_alloc *alloc;
	struct st_sink sink;
	struct pq_col *cols;
	size_t n_cols;
	int codec; /* thrift CompressionCodec */
	int level;
	size_t row_group_bytes, page_bytes, dict_bytes, truncate;
	bool no_dictionary;
	bool utf8_checked;
	char *created_by, *iceberg_schema;
	struct st_parquet_kv *kv; /* owned copies */
	size_t n_kv;
	/* Encoding: on workq's threads (NULL: the caller's).  Row groups are
	 * flushed into the ring pend[] (max_pend slots: the workers, or 1) and
	 * reach the sink in order from pend_head. */
	struct st_workq *workq;
	pthread_mutex_t enc_mu; /* guards encs */
	struct pq_enc *encs; /* idle encoders */
	struct pq_pending *pend;
	size_t max_pend, pend_head, n_pend;
	uint64_t pend_bound; /* sum of the pending row groups' bounds */
	struct pq_rg *rgs;
	size_t n_rgs, cap_rgs;
	uint64_t offset;
	size_t rg_rows;
	size_t rg_bytes; /* buffered bytes of the open row group */
	int64_t rows;
	bool broken;
};

/* ---- small helpers ----------------------------------------------------- */

static void vstat_init(struct vstat *s, const struct st_alloc *a)
{
	s->has = false;
	st_buf_init(&s->min_store, a);
	st_buf_init(&s->max_store, a);
}

static void vstat_free(struct vstat *s)
{
	st_buf_free(&s->min_store);
	st_buf_free(&s->max_store);
	s->has = false;
}

static bool is_bytes(const struct st_type *t)
{
	return t->id == ST_TYPE_STRING || t->id == ST_TYPE_BINARY || t->id == ST_TYPE_FIXED ||
	       t->id == ST_TYPE_UUID;
}

static int keep(struct st_value *dst, struct st_buf *store, const struct st_type *t,
                const struct st_value *src)
{
	*dst = *src;
	if (!is_bytes(t))
		return 0;
	st_buf_reset(store);
	if (st_buf_reserve(store, src->v.bin.len + 1) != 0)
		return -1;
	if (src->v.bin.len > 0)
		memcpy(store->data, src->v.bin.p, src->v.bin.len);
	store->len = src->v.bin.len;
	dst->v.bin.p = store->data;
	return 0;
}

static int vstat_update(struct vstat *s, const struct st_type *t, const struct st_value *v)
{
	if (!s->has || st_value_compare(t, v, &s->min) < 0) {
		if (keep(&s->min, &s->min_store, t, v) != 0)
			return -1;
	}
	if (!s->has || st_value_compare(t, v, &s->max) > 0) {
		if (keep(&s->max, &s->max_store, t, v) != 0)
			return -1;
	}
	s->has = true;
	return 0;
}

static bool value_is_nan(const struct st_type *t, const struct st_value *v)
{
	return (t->id == ST_TYPE_FLOAT && isnan(v->v.f)) ||
	       (t->id == ST_TYPE_DOUBLE && isnan(v->v.d));
}

static void le_bytes(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* The 16 big-endian bytes of a decimal as one unsigned 128-bit number. */
__extension__ typedef unsigned __int128 pq_u128;

static pq_u128 dec_get(const uint8_t dec[16])
{
	uint64_t hi = 0, lo = 0;

	for (int i = 0; i < 8; i++) {
		hi = hi << 8 | dec[i];
		lo = lo << 8 | dec[8 + i];
	}
	return (pq_u128)hi << 64 | lo;
}

/* True when dec[0, 16 - n) only sign-extends the low n bytes (1 <= n <= 16):
 * the number survives sign extension from its low 8n bits. */
static bool dec_fits(const uint8_t dec[16], int n)
{
	pq_u128 u = dec_get(dec);
	unsigned shift = 128 - 8 * (unsigned)n;
	pq_u128 sign = (pq_u128)1 << (8 * n - 1);
	pq_u128 low = shift ? u & (((pq_u128)1 << (8 * n)) - 1) : u;

	/* sign-extend the low 8n bits: (low ^ sign) - sign */
	return ((low ^ sign) - sign) == u;
}

static uint64_t dec_low(const uint8_t dec[16], int n)
{
	uint64_t lo = (uint64_t)dec_get(dec);

	return n >= 8 ? lo : lo & ((UINT64_C(1) << (8 * n)) - 1);
}

/* The PLAIN encoding of a non-null, validated value of column c. */
static void to_plain(const struct pq_col *c, const struct st_value *v, struct plain *p)
{
	const struct st_type *t = &c->def.type;

	p->head_len = 0;
	p->tail = NULL;
	p->tail_len = 0;
	switch (t->id) {
	case ST_TYPE_BOOLEAN:
		p->head[0] = v->v.b ? 1 : 0;
		p->head_len = 1;
		break;
	case ST_TYPE_INT:
	case ST_TYPE_DATE:
		le_bytes(p->head, (uint32_t)v->v.i, 4);
		p->head_len = 4;
		break;
	case ST_TYPE_LONG:
	case ST_TYPE_TIME:
	case ST_TYPE_TIMESTAMP:
	case ST_TYPE_TIMESTAMPTZ:
	case ST_TYPE_TIMESTAMP_NS:
	case ST_TYPE_TIMESTAMPTZ_NS:
		le_bytes(p->head, (uint64_t)v->v.l, 8);
		p->head_len = 8;
		break;
	case ST_TYPE_FLOAT: {
		uint32_t u;

		memcpy(&u, &v->v.f, 4);
		le_bytes(p->head, u, 4);
		p->head_len = 4;
		break;
	}
	case ST_TYPE_DOUBLE: {
		uint64_t u;

		memcpy(&u, &v->v.d, 8);
		le_bytes(p->head, u, 8);
		p->head_len = 8;
		break;
	}
	case ST_TYPE_DECIMAL:
		if (c->ptype == PT_INT32) {
			le_bytes(p->head, dec_low(v->v.dec, 4), 4);
			p->head_len = 4;
		} else if (c->ptype == PT_INT64) {
			le_bytes(p->head, dec_low(v->v.dec, 8), 8);
			p->head_len = 8;
		} else {
			p->tail = v->v.dec + 16 - c->type_length;
			p->tail_len = (size_t)c->type_length;
		}
		break;
	case ST_TYPE_STRING:
	case ST_TYPE_BINARY:
		le_bytes(p->head, v->v.bin.len, 4);
		p->head_len = 4;
		p->tail = v->v.bin.p;
		p->tail_len = v->v.bin.len;
		break;
	case ST_TYPE_UUID:
	case ST_TYPE_FIXED:
		p->tail = v->v.bin.p;
		p->tail_len = v->v.bin.len;
		break;
	}
}

static uint64_t le_get(const uint8_t *p, int n)
{
	uint64_t u = 0;

	for (int i = n - 1; i >= 0; i--)
		u = (u << 8) | p[i];
	return u;
}

/* The value whose PLAIN encoding starts at p (the inverse of to_plain;
 * byte values point into p); returns the encoding's length. */
static size_t from_plain(const struct pq_col *c, const uint8_t *p, struct st_value *v)
{
	const struct st_type *t = &c->def.type;
	uint32_t u32;
	uint64_t u64;

	v->null = false;
	switch (t->id) {
	case ST_TYPE_BOOLEAN: v->v.b = p[0] != 0; return 1;
	case ST_TYPE_INT:
	case ST_TYPE_DATE: v->v.i = (int32_t)(uint32_t)le_get(p, 4); return 4;
	case ST_TYPE_FLOAT:
		u32 = (uint32_t)le_get(p, 4);
		memcpy(&v->v.f, &u32, 4);
		return 4;
	case ST_TYPE_DOUBLE:
		u64 = le_get(p, 8);
		memcpy(&v->v.d, &u64, 8);
		return 8;
	case ST_TYPE_DECIMAL: {
		/* Big-endian two's complement in 16 bytes, sign-extended from
		 * the stored width (INT32, INT64 little-endian; FIXED big-endian). */
		int n = c->ptype == PT_INT32 ? 4 : c->ptype == PT_INT64 ? 8 : c->type_length;
		bool neg;

		if (c->ptype == PT_FLBA) {
			neg = (p[0] & 0x80) != 0;
			memcpy(v->v.dec + 16 - n, p, (size_t)n);
		} else {
			u64 = le_get(p, n);
			neg = (u64 >> (8 * n - 1)) & 1;
			for (int i = 0; i < n; i++)
				v->v.dec[15 - i] = (uint8_t)(u64 >> (8 * i));
		}
		memset(v->v.dec, neg ? 0xff : 0x00, (size_t)(16 - n));
		return (size_t)n;
	}
	case ST_TYPE_STRING:
	case ST_TYPE_BINARY:
		v->v.bin.len = (size_t)le_get(p, 4);
		v->v.bin.p = p + 4;
		return 4 + v->v.bin.len;
	case ST_TYPE_UUID:
	case ST_TYPE_FIXED:
		v->v.bin.p = p;
		v->v.bin.len = c->fixed_width;
		return c->fixed_width;
	default: /* long, time, timestamps */ v->v.l = (int64_t)le_get(p, 8); return 8;
	}
}

static int plain_append(struct st_buf *b, const struct plain *p)
{
	if (st_buf_append(b, p->head, p->head_len) != 0)
		return -1;
	return st_buf_append(b, p->tail, p->tail_len);
}

/* ---- dictionary --------------------------------------------------------- */

/* Up to 8 bytes at p as a little-endian number (the rest zero). */
static uint64_t load_tail(const uint8_t *p, size_t n)
{
	uint64_t u = 0;

	for (size_t i = 0; i < n; i++)
		u |= (uint64_t)p[i] << (8 * i);
	return u;
}

/* The hash of a PLAIN value, eight bytes a step (the value's own layout
 * decides only where an entry sits in the table, never the output). */
static uint64_t hash_plain(const struct plain *p)
{
	const uint64_t k = 0x9e3779b97f4a7c15ULL;
	uint64_t h = load_tail(p->head, p->head_len) ^ ((uint64_t)p->head_len << 59);
	size_t i = 0;

	for (; i + 8 <= p->tail_len; i += 8) {
		uint64_t u;

		memcpy(&u, p->tail + i, 8);
		h = (h ^ u) * k;
		h ^= h >> 29;
	}
	h = (h ^ load_tail(p->tail + i, p->tail_len - i)) * k;
	/* Mix the high bits down, as the table indexes by the low ones (the
	 * MurmurHash3 finalizer). */
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return h;
}

static void dict_free(struct dict *d, const struct st_alloc *a)
{
	st_free(a, d->slots);
	st_free(a, d->hashes);
	st_free(a, d->ends);
	st_buf_free(&d->plain);
	d->slots = NULL;
	d->hashes = NULL;
	d->ends = NULL;
	d->n_slots = d->n_entries = d->cap_entries = 0;
}

static bool dict_equal(const struct dict *d, size_t e, const struct plain *p)
{
	size_t start = e ? d->ends[e - 1] : 0;
	const uint8_t *q = d->plain.data + start;

	if (d->ends[e] - start != p->head_len + p->tail_len)
		return false;
	if (p->head_len == 8) { /* 8-byte values: two loads, not a call */
		uint64_t a, b;

		memcpy(&a, q, 8);
		memcpy(&b, p->head, 8);
		if (a != b)
			return false;
	} else if (p->head_len == 4) { /* 4-byte values and byte arrays' lengths */
		uint32_t a, b;

		memcpy(&a, q, 4);
		memcpy(&b, p->head, 4);
		if (a != b)
			return false;
	} else if (p->head_len && memcmp(q, p->head, p->head_len) != 0) {
		return false;
	}
	return p->tail_len == 0 || memcmp(q + p->head_len, p->tail, p->tail_len) == 0;
}

static int dict_grow(struct dict *d, const struct st_alloc *a)
{
	size_t n = d->n_slots ? d->n_slots * 2 : 1024;
	uint32_t *slots = st_calloc(a, n, sizeof(*slots));

	if (slots == NULL)
		return -1;
	for (size_t e = 0; e < d->n_entries; e++) {
		size_t s = d->hashes[e] & (n - 1);

		while (slots[s] != 0)
			s = (s + 1) & (n - 1);
		slots[s] = (uint32_t)(e + 1);
	}
	st_free(a, d->slots);
	d->slots = slots;
	d->n_slots = n;
	return 0;
}

/* Finds or adds p; *index receives its entry number. */
static int dict_insert(struct dict *d, const struct st_alloc *a, const struct plain *p,
                       uint32_t *index, bool *added)
{
	uint64_t h = hash_plain(p);
	size_t s;

	*added = false;
	if (d->n_entries * 2 >= d->n_slots && dict_grow(d, a) != 0)
		return -1;
	for (s = h & (d->n_slots - 1); d->slots[s] != 0; s = (s + 1) & (d->n_slots - 1)) {
		size_t e = d->slots[s] - 1;

		if (d->hashes[e] == h && dict_equal(d, e, p)) {
			*index = (uint32_t)e;
			return 0;
		}
	}
	if (d->n_entries == d->cap_entries) {
		size_t cap = d->cap_entries ? d->cap_entries * 2 : 256;
		uint64_t *hs = st_realloc(a, d->hashes, cap * sizeof(*hs));
		size_t *es;

		if (hs == NULL)
			return -1;
		d->hashes = hs;
		es = st_realloc(a, d->ends, cap * sizeof(*es));
		if (es == NULL)
			return -1;
		d->ends = es;
		d->cap_entries = cap;
	}
	if (plain_append(&d->plain, p) != 0)
		return -1;
	d->hashes[d->n_entries] = h;
	d->ends[d->n_entries] = d->plain.len;
	d->slots[s] = (uint32_t)(d->n_entries + 1);
	*index = (uint32_t)d->n_entries++;
	*added = true;
	return 0;
}

/* A dictionary stops paying once it passes dict_bytes, or when nearly every
 * value is new: checked after DICT_EARLY_VALUES values (all but a handful
 * new) and after DICT_PROBE_VALUES (more than 3/4 new), so a column of
 * unique ids or timestamps does not build a dictionary in every row group
 * only to throw it away (the early check halves the cost of such columns
 * at 150,000 rows a row group). */
static bool dict_too_big(const struct st_parquet_writer *w, const struct pq_col *c)
{
	size_t values = c->rs.indices.len / sizeof(uint32_t);

	if (c->rs.dict.plain.len > w->dict_bytes)
		return true;
	if (values == DICT_EARLY_VALUES)
		return c->rs.dict.n_entries > DICT_EARLY_VALUES - DICT_EARLY_VALUES / 128;
	return values == DICT_PROBE_VALUES && c->rs.dict.n_entries > DICT_PROBE_VALUES / 4 * 3;
}

/* Leaves dictionary encoding for the rest of this row group: rebuilds the
 * PLAIN values from the indices and releases the dictionary. */
static int dict_fallback(struct st_parquet_writer *w, struct pq_col *c)
{
	const uint32_t *idx = (const uint32_t *)c->rs.indices.data;
	size_t n = c->rs.indices.len / sizeof(uint32_t);

	st_buf_reset(&c->rs.values);
	for (size_t i = 0; i < n; i++) {
		size_t e = idx[i];
		size_t start = e ? c->rs.dict.ends[e - 1] : 0;

		if (st_buf_append(&c->rs.values, c->rs.dict.plain.data + start,
		                  c->rs.dict.ends[e] - start) != 0)
			return -1;
	}
	w->rg_bytes -= c->rs.indices.len + c->rs.dict.plain.len;
	w->rg_bytes += c->rs.values.len;
	st_buf_free(&c->rs.indices);
	dict_free(&c->rs.dict, w->alloc);
	c->rs.dict_on = false;
	return 0;
}

/* ---- open ----------------------------------------------------------------- */

static void map_type(struct pq_col *c)
{
	const struct st_type *t = &c->def.type;

	c->type_length = 0;
	switch (t->id) {
	case ST_TYPE_BOOLEAN:
		c->ptype = PT_BOOLEAN;
		c->fixed_width = 1;
		break;
	case ST_TYPE_INT:
	case ST_TYPE_DATE:
		c->ptype = PT_INT32;
		c->fixed_width = 4;
		break;
	case ST_TYPE_LONG:
	case ST_TYPE_TIME:
	case ST_TYPE_TIMESTAMP:
	case ST_TYPE_TIMESTAMPTZ:
	case ST_TYPE_TIMESTAMP_NS:
	case ST_TYPE_TIMESTAMPTZ_NS:
		c->ptype = PT_INT64;
		c->fixed_width = 8;
		break;
	case ST_TYPE_FLOAT:
		c->ptype = PT_FLOAT;
		c->fixed_width = 4;
		break;
	case ST_TYPE_DOUBLE:
		c->ptype = PT_DOUBLE;
		c->fixed_width = 8;
		break;
	case ST_TYPE_DECIMAL:
		if (t->precision <= 9) {
			c->ptype = PT_INT32;
			c->fixed_width = 4;
		} else if (t->precision <= 18) {
			c->ptype = PT_INT64;
			c->fixed_width = 8;
		} else {
			c->ptype = PT_FLBA;
			c->type_length = st_decimal_bytes(t->precision);
			c->fixed_width = (size_t)c->type_length;
		}
		break;
	case ST_TYPE_STRING:
	case ST_TYPE_BINARY:
		c->ptype = PT_BYTE_ARRAY;
		c->fixed_width = 0;
		break;
	case ST_TYPE_UUID:
		c->ptype = PT_FLBA;
		c->type_length = 16;
		c->fixed_width = 16;
		break;
	case ST_TYPE_FIXED:
		c->ptype = PT_FLBA;
		c->type_length = (int)t->length;
		c->fixed_width = t->length;
		break;
	}
}

static int check_columns(const struct st_parquet_opts *o, struct fl_err *err)
{
	if (o->n_columns == 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "parquet: at least one column is required");
	for (size_t i = 0; i < o->n_columns; i++) {
		const struct st_parquet_column *c = &o->columns[i];

		if (c->name == NULL || c->name[0] == '\0')
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "parquet: column %zu has no name", i);
		if ((unsigned)c->type.id > ST_TYPE_TIMESTAMPTZ_NS ||
		    (c->type.id == ST_TYPE_DECIMAL &&
		     (c->type.precision < 1 || c->type.precision > 38 || c->type.scale < 0 ||
		      c->type.scale > c->type.precision)) ||
		    (c->type.id == ST_TYPE_FIXED &&
		     (c->type.length == 0 || c->type.length > INT32_MAX)))
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "parquet: column %s has an invalid type", c->name);
		if ((unsigned)c->metrics > ST_METRICS_FULL ||
		    (c->metrics == ST_METRICS_TRUNCATE && c->metrics_truncate == 0))
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "parquet: column %s has an invalid metrics mode",
			                  c->name);
		for (size_t j = 0; j < i; j++) {
			if (o->columns[j].field_id == c->field_id)
				return fl_err_set(err, FL_ERR_BAD_REQUEST,
				                  "parquet: columns %s and %s share field id %d",
				                  o->columns[j].name, c->name, (int)c->field_id);
			if (strcmp(o->columns[j].name, c->name) == 0)
				return fl_err_set(err, FL_ERR_BAD_REQUEST,
				                  "parquet: column name %s appears twice", c->name);
		}
	}
	if (o->codec > ST_PARQUET_UNCOMPRESSED)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "parquet: unknown codec %d",
		                  (int)o->codec);
#ifdef ST_HAVE_SNAPPY
	/* A missing libsnappy fails the writer's open, not its first page. */
	if (o->codec == ST_PARQUET_SNAPPY && st_libsnappy_load(err) == NULL)
		return -1;
#else
	if (o->codec == ST_PARQUET_SNAPPY)
		return fl_err_set(err, FL_ERR_UNSUPPORTED, "parquet: built without snappy");
#endif
	return 0;
}

static void rgcol_init(struct pq_rgcol *rs, const struct st_alloc *a)
{
	memset(rs, 0, sizeof(*rs));
	st_buf_init(&rs->defs, a);
	st_buf_init(&rs->values, a);
	st_buf_init(&rs->indices, a);
	st_buf_init(&rs->dict.plain, a);
	vstat_init(&rs->rg_stat, a);
}

static void rgcol_free(struct pq_rgcol *rs, const struct st_alloc *a)
{
	st_buf_free(&rs->defs);
	st_buf_free(&rs->values);
	st_buf_free(&rs->indices);
	dict_free(&rs->dict, a);
	vstat_free(&rs->rg_stat);
}

/* Empties rs for a new row group of column c (buffers keep their capacity). */
static void rgcol_reset(struct st_parquet_writer *w, const struct pq_col *c, struct pq_rgcol *rs)
{
	st_buf_reset(&rs->defs);
	st_buf_reset(&rs->values);
	st_buf_reset(&rs->indices);
	dict_free(&rs->dict, w->alloc);
	st_buf_init(&rs->dict.plain, w->alloc);
	rs->dict_on = !w->no_dictionary && c->ptype != PT_BOOLEAN;
	rs->rg_nonnull = 0;
	rs->rg_nulls = 0;
	rs->rg_nans = 0;
	rs->rg_stat.has = false;
}

static void enc_free(struct pq_enc *e)
{
	if (e == NULL)
		return;
	if (e->zstd != NULL)
		ZSTD_freeCCtx(e->zstd);
	if (e->zinit)
		deflateEnd(&e->zs);
	st_buf_free(&e->page);
	st_buf_free(&e->cbuf);
	st_buf_free(&e->hdr);
}

/* A new encoder with its codec context; NULL when out of memory. */
static struct pq_enc *enc_new(const struct st_parquet_writer *w)
{
	struct pq_enc *e = st_calloc(w->alloc, 1, sizeof(*e));

	if (e == NULL)
		return NULL;
	st_buf_init(&e->page, w->alloc);
	st_buf_init(&e->cbuf, w->alloc);
	st_buf_init(&e->hdr, w->alloc);
	if (w->codec == CODEC_ZSTD) {
		ZSTD_customMem cm = {st_alloc_hook_zstd, st_alloc_hook_free, (void *)w->alloc};

		e->zstd = w->alloc ? ZSTD_createCCtx_advanced(cm) : ZSTD_createCCtx();
		if (e->zstd == NULL)
			goto fail;
	} else if (w->codec == CODEC_GZIP) {
		e->zs.zalloc = st_alloc_hook_zlib;
		e->zs.zfree = st_alloc_hook_free;
		e->zs.opaque = (void *)w->alloc;
		/* windowBits 15 + 16: a gzip member, as Compression.md asks. */
		if (deflateInit2(&e->zs, w->level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
		    Z_OK)
			goto fail;
		e->zinit = true;
	}
	return e;
fail:
	enc_free(e);
	st_free(w->alloc, e);
	return NULL;
}

/* An idle encoder, or a new one; NULL when out of memory.  Any thread. */
static struct pq_enc *enc_take(struct st_parquet_writer *w)
{
	struct pq_enc *e;

	pthread_mutex_lock(&w->enc_mu);
	e = w->encs;
	if (e != NULL)
		w->encs = e->next;
	pthread_mutex_unlock(&w->enc_mu);
	return e != NULL ? e : enc_new(w);
}

static void enc_give(struct st_parquet_writer *w, struct pq_enc *e)
{
	pthread_mutex_lock(&w->enc_mu);
	e->next = w->encs;
	w->encs = e;
	pthread_mutex_unlock(&w->enc_mu);
}

void st_parquet_writer_free(struct st_parquet_writer *w)
{
	if (w == NULL)
		return;
	/* Encoders may still be at work on flushed row groups. */
	for (size_t k = 0; w->workq != NULL && k < w->max_pend && w->pend != NULL; k++)
		st_workq_wait(w->workq, &w->pend[k].group);
	for (size_t k = 0; w->pend != NULL && k < w->max_pend; k++) {
		for (size_t i = 0; w->pend[k].jobs != NULL && i < w->n_cols; i++) {
			struct pq_job *j = &w->pend[k].jobs[i];

			rgcol_free(&j->rs, w->alloc);
			st_buf_free(&j->out);
			st_free(w->alloc, j->ch.min);
			st_free(w->alloc, j->ch.max);
		}
		st_free(w->alloc, w->pend[k].jobs);
	}
	st_free(w->alloc, w->pend);
	for (size_t i = 0; i < w->n_cols; i++) {
		struct pq_col *c = &w->cols[i];

		st_free(w->alloc, (char *)c->def.name);
		rgcol_free(&c->rs, w->alloc);
		vstat_free(&c->file_stat);
	}
	st_free(w->alloc, w->cols);
	for (size_t i = 0; i < w->n_rgs; i++) {
		for (size_t j = 0; j < w->n_cols; j++) {
			st_free(w->alloc, w->rgs[i].chunks[j].min);
			st_free(w->alloc, w->rgs[i].chunks[j].max);
		}
		st_free(w->alloc, w->rgs[i].chunks);
	}
	st_free(w->alloc, w->rgs);
	for (size_t i = 0; i < w->n_kv; i++) {
		st_free(w->alloc, (char *)w->kv[i].key);
		st_free(w->alloc, (char *)w->kv[i].value);
	}
	st_free(w->alloc, w->kv);
	st_free(w->alloc, w->created_by);
	st_free(w->alloc, w->iceberg_schema);
	while (w->encs != NULL) {
		struct pq_enc *e = w->encs;

		w->encs = e->next;
		enc_free(e);
		st_free(w->alloc, e);
	}
	pthread_mutex_destroy(&w->enc_mu);
	st_free(w->alloc, w);
}

static int sink_write(struct st_parquet_writer *w, const void *p, size_t n, struct fl_err *err)
{
	if (n == 0)
		return 0;
	if (w->sink.write(w->sink.ctx, p, n, err) != 0) {
		w->broken = true;
		return fl_err_prefix(err, "parquet: writing %zu bytes", n);
	}
	w->offset += n;
	return 0;
}

/* The codec's default level, the ring of row groups in flight and a first
 * encoder (so that a writer that opened can encode). */
static int open_encoding(struct st_parquet_writer *w, struct fl_err *err)
{
	struct pq_enc *e;

	if (w->level == 0)
		w->level = w->codec == CODEC_GZIP ? 6 : 3;
	w->max_pend = w->workq != NULL ? (size_t)st_workq_threads(w->workq) : 1;
	w->pend = st_calloc(w->alloc, w->max_pend, sizeof(*w->pend));
	if (w->pend == NULL)
		goto nomem;
	for (size_t k = 0; k < w->max_pend; k++) {
		w->pend[k].jobs = st_calloc(w->alloc, w->n_cols, sizeof(*w->pend[k].jobs));
		if (w->pend[k].jobs == NULL)
			goto nomem;
		for (size_t i = 0; i < w->n_cols; i++) {
			struct pq_job *j = &w->pend[k].jobs[i];

			rgcol_init(&j->rs, w->alloc);
			st_buf_init(&j->out, w->alloc);
			j->w = w;
			j->c = &w->cols[i];
			rgcol_reset(w, j->c, &j->rs);
		}
	}
	e = enc_new(w);
	if (e == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "parquet: cannot start the %s codec",
		                  w->codec == CODEC_GZIP ? "gzip" : "zstd");
	enc_give(w, e);
	return 0;
nomem:
	return fl_err_set(err, FL_ERR_NOMEM, "parquet: out of memory");
}

int st_parquet_writer_open(const struct st_parquet_opts *o, struct st_parquet_writer **out,
                           struct fl_err *err)
{
	static const int codecs[] = {
	        [ST_PARQUET_ZSTD] = CODEC_ZSTD,
	        [ST_PARQUET_SNAPPY] = CODEC_SNAPPY,
	        [ST_PARQUET_GZIP] = CODEC_GZIP,
	        [ST_PARQUET_UNCOMPRESSED] = CODEC_UNCOMPRESSED,
	};
	struct st_parquet_writer *w;

	if (check_columns(o, err) != 0)
		return -1;
	if (o->sink.write == NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "parquet: a sink is required");
	w = st_calloc(o->alloc, 1, sizeof(*w));
	if (w == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "parquet: out of memory");
	pthread_mutex_init(&w->enc_mu, NULL);
	w->alloc = o->alloc;
	w->sink = o->sink;
	w->workq = o->workq;
	w->codec = codecs[o->codec];
	w->level = o->compression_level;
	w->row_group_bytes = o->row_group_bytes ? o->row_group_bytes : DEFAULT_ROW_GROUP_BYTES;
	w->page_bytes = o->page_bytes ? o->page_bytes : DEFAULT_PAGE_BYTES;
	w->dict_bytes = o->dict_bytes ? o->dict_bytes : DEFAULT_DICT_BYTES;
	w->truncate = o->truncate_length ? o->truncate_length : DEFAULT_TRUNCATE;
	w->no_dictionary = o->no_dictionary;
	w->utf8_checked = o->utf8_checked;
	if (w->page_bytes > INT32_MAX / 4)
		w->page_bytes = INT32_MAX / 4;
	if (w->dict_bytes > INT32_MAX / 4)
		w->dict_bytes = INT32_MAX / 4;
	w->cols = st_calloc(w->alloc, o->n_columns, sizeof(*w->cols));
	if (w->cols == NULL)
		goto nomem;
	for (size_t i = 0; i < o->n_columns; i++) {
		struct pq_col *c = &w->cols[i];

		c->def = o->columns[i];
		c->def.name = NULL;
		rgcol_init(&c->rs, w->alloc);
		vstat_init(&c->file_stat, w->alloc);
		w->n_cols++;
		c->def.name = st_strdup(w->alloc, o->columns[i].name);
		if (c->def.name == NULL)
			goto nomem;
		map_type(c);
		rgcol_reset(w, c, &c->rs);
	}
	w->created_by = st_strdup(w->alloc, o->created_by ? o->created_by : "floe version 0.1.0");
	if (w->created_by == NULL)
		goto nomem;
	if (o->iceberg_schema_json != NULL) {
		w->iceberg_schema = st_strdup(w->alloc, o->iceberg_schema_json);
		if (w->iceberg_schema == NULL)
			goto nomem;
	}
	if (o->n_kv > 0) {
		w->kv = st_calloc(w->alloc, o->n_kv, sizeof(*w->kv));
		if (w->kv == NULL)
			goto nomem;
		for (size_t i = 0; i < o->n_kv; i++) {
			w->n_kv++;
			w->kv[i].key = st_strdup(w->alloc, o->kv[i].key);
			w->kv[i].value =
			        o->kv[i].value ? st_strdup(w->alloc, o->kv[i].value) : NULL;
			if (w->kv[i].key == NULL || (o->kv[i].value && w->kv[i].value == NULL))
				goto nomem;
		}
	}
	if (open_encoding(w, err) != 0)
		goto fail;
	if (sink_write(w, "PAR1", 4, err) != 0)
		goto fail;
	*out = w;
	return 0;
nomem:
	fl_err_set(err, FL_ERR_NOMEM, "parquet: out of memory");
fail:
	st_parquet_writer_free(w);
	return -1;
}

/* ---- rows ------------------------------------------------------------------ */

static int check_value(const struct pq_col *c, const struct st_value *v, bool utf8_checked,
                       struct fl_err *err)
{
	const struct st_type *t = &c->def.type;

	if (v->null) {
		if (c->def.required)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "parquet: column %s is required but the value is null",
			                  c->def.name);
		return 0;
	}
	switch (t->id) {
	case ST_TYPE_STRING:
		if (v->v.bin.len > 0 && v->v.bin.p == NULL)
			goto nobytes;
		if (!utf8_checked && !st_utf8_valid(v->v.bin.p, v->v.bin.len))
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "parquet: column %s: the string is not valid UTF-8",
			                  c->def.name);
		/* Strings share binary's length limit. */
		/* fall through */
	case ST_TYPE_BINARY:
		if (v->v.bin.len > 0 && v->v.bin.p == NULL)
			goto nobytes;
		if (v->v.bin.len > INT32_MAX / 2)
			return fl_err_set(err, FL_ERR_TOO_LARGE,
			                  "parquet: column %s: a value of %zu bytes", c->def.name,
			                  v->v.bin.len);
		return 0;
	case ST_TYPE_UUID:
	case ST_TYPE_FIXED:
		if (v->v.bin.len != c->fixed_width || v->v.bin.p == NULL)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "parquet: column %s needs %zu bytes, got %zu",
			                  c->def.name, c->fixed_width, v->v.bin.len);
		return 0;
	case ST_TYPE_DECIMAL:
		if (!dec_fits(v->v.dec, (int)c->fixed_width))
			return fl_err_set(
			        err, FL_ERR_BAD_REQUEST,
			        "parquet: column %s: the decimal does not fit precision %d",
			        c->def.name, t->precision);
		return 0;
	default: return 0;
	}
nobytes:
	return fl_err_set(err, FL_ERR_BAD_REQUEST, "parquet: column %s: value without bytes",
	                  c->def.name);
}

/* Buffers v in column c; returns the bytes that buffered, or -1 when out of
 * memory.  The caller adds a row's total to rg_bytes once: a running total
 * in memory, updated per value, is a chain of dependent loads and stores
 * (so is one behind a pointer), which showed in the ingest profile. */
static long append_value(struct st_parquet_writer *w, struct pq_col *c, const struct st_value *v)
{
	const struct st_type *t = &c->def.type;
	struct plain p;
	long bytes = 0;

	if (!c->def.required) {
		if (st_buf_put_u8(&c->rs.defs, v->null ? 0 : 1) != 0)
			return -1;
		bytes++;
	}
	if (v->null) {
		c->rs.rg_nulls++;
		return bytes;
	}
	to_plain(c, v, &p);
	if (c->rs.dict_on) {
		uint32_t idx;
		bool added;

		if (dict_insert(&c->rs.dict, w->alloc, &p, &idx, &added) != 0 ||
		    st_buf_append(&c->rs.indices, &idx, sizeof(idx)) != 0)
			return -1;
		bytes += (long)(sizeof(idx) + (added ? p.head_len + p.tail_len : 0));
		if (dict_too_big(w, c) && dict_fallback(w, c) != 0)
			return -1;
	} else {
		if (plain_append(&c->rs.values, &p) != 0)
			return -1;
		bytes += (long)(p.head_len + p.tail_len);
	}
	c->rs.rg_nonnull++;
	if (value_is_nan(t, v))
		c->rs.rg_nans++;
	return bytes; /* min and max: by the encoder (rg_stats) */
}

/* ---- pages ------------------------------------------------------------------ */

static int compress_page(const struct st_parquet_writer *w, struct pq_enc *e, const uint8_t *in,
                         size_t n, const uint8_t **out, size_t *out_n, struct fl_err *err)
{
	st_buf_reset(&e->cbuf);
	switch (w->codec) {
	case CODEC_UNCOMPRESSED:
		*out = in;
		*out_n = n;
		return 0;
	case CODEC_ZSTD: {
		size_t bound = ZSTD_compressBound(n), r;

		if (st_buf_reserve(&e->cbuf, bound) != 0)
			goto nomem;
		r = ZSTD_compressCCtx(e->zstd, e->cbuf.data, bound, in, n, w->level);
		if (ZSTD_isError(r))
			return fl_err_set(err,
			                  ZSTD_getErrorCode(r) == ZSTD_error_memory_allocation
			                          ? FL_ERR_NOMEM
			                          : FL_ERR_INTERNAL,
			                  "parquet: zstd: %s", ZSTD_getErrorName(r));
		*out_n = r;
		break;
	}
	case CODEC_GZIP: {
		uLong bound;

		if (n > UINT_MAX)
			return fl_err_set(err, FL_ERR_TOO_LARGE, "parquet: page of %zu bytes", n);
		if (deflateReset(&e->zs) != Z_OK)
			return fl_err_set(err, FL_ERR_INTERNAL, "parquet: gzip reset failed");
		bound = deflateBound(&e->zs, (uLong)n);
		if (st_buf_reserve(&e->cbuf, bound) != 0)
			goto nomem;
		e->zs.next_in = (Bytef *)(uintptr_t)in;
		e->zs.avail_in = (uInt)n;
		e->zs.next_out = e->cbuf.data;
		e->zs.avail_out = (uInt)bound;
		if (deflate(&e->zs, Z_FINISH) != Z_STREAM_END)
			return fl_err_set(err, FL_ERR_INTERNAL, "parquet: gzip failed");
		*out_n = e->zs.total_out;
		break;
	}
#ifdef ST_HAVE_SNAPPY
	case CODEC_SNAPPY: {
		const struct st_libsnappy *sn = st_libsnappy_load(err);
		size_t len;

		if (sn == NULL)
			return -1;
		len = sn->max_compressed_length(n);
		if (st_buf_reserve(&e->cbuf, len) != 0)
			goto nomem;
		if (sn->compress((const char *)in, n, (char *)e->cbuf.data, &len) != SNAPPY_OK)
			return fl_err_set(err, FL_ERR_INTERNAL, "parquet: snappy failed");
		*out_n = len;
		break;
	}
#endif
	default: return fl_err_set(err, FL_ERR_INTERNAL, "parquet: codec %d", w->codec);
	}
	*out = e->cbuf.data;
	return 0;
nomem:
	return fl_err_set(err, FL_ERR_NOMEM, "parquet: out of memory compressing");
}

/* Compresses e->page and appends header + body to j->out; adds the sizes
 * to j->ch. */
static int emit_page(struct pq_job *j, struct pq_enc *e, int page_type, size_t num_values,
                     int encoding, struct fl_err *err)
{
	const uint8_t *body = NULL;
	size_t body_len = 0;
	struct st_thrift t;

	if (compress_page(j->w, e, e->page.data, e->page.len, &body, &body_len, err) != 0)
		return -1;
	if (e->page.len > INT32_MAX || body_len > INT32_MAX || num_values > INT32_MAX)
		return fl_err_set(err, FL_ERR_TOO_LARGE, "parquet: page of %zu bytes", e->page.len);
	st_buf_reset(&e->hdr);
	st_thrift_init(&t, &e->hdr);
	st_thrift_i32(&t, 1, page_type);
	st_thrift_i32(&t, 2, (int32_t)e->page.len);
	st_thrift_i32(&t, 3, (int32_t)body_len);
	if (page_type == PAGE_DATA) {
		st_thrift_struct_begin(&t, 5);
		st_thrift_i32(&t, 1, (int32_t)num_values);
		st_thrift_i32(&t, 2, encoding);
		st_thrift_i32(&t, 3, ENC_RLE);
		st_thrift_i32(&t, 4, ENC_RLE);
		st_thrift_end(&t);
	} else {
		st_thrift_struct_begin(&t, 7);
		st_thrift_i32(&t, 1, (int32_t)num_values);
		st_thrift_i32(&t, 2, ENC_PLAIN);
		st_thrift_end(&t);
	}
	st_thrift_end(&t);
	if (t.failed || st_buf_append(&j->out, e->hdr.data, e->hdr.len) != 0 ||
	    st_buf_append(&j->out, body, body_len) != 0)
		return fl_err_set(err, FL_ERR_NOMEM, "parquet: out of memory");
	j->ch.total_uncompressed += (int64_t)(e->hdr.len + e->page.len);
	j->ch.total_compressed += (int64_t)(e->hdr.len + body_len);
	return 0;
}

static int bitpack_bools(struct st_buf *out, const uint8_t *v, size_t n)
{
	size_t nbytes = (n + 7) / 8;
	uint8_t *p;

	if (st_buf_reserve(out, nbytes) != 0)
		return -1;
	p = out->data + out->len;
	memset(p, 0, nbytes);
	for (size_t i = 0; i < n; i++)
		p[i / 8] |= (uint8_t)((v[i] & 1) << (i % 8));
	out->len += nbytes;
	return 0;
}

/* Bits per dictionary index: at least 1, as some readers reject width 0. */
static int dict_bit_width(const struct pq_rgcol *rs)
{
	int bw = st_bit_width((uint32_t)(rs->dict.n_entries - 1));

	return bw ? bw : 1;
}

/* Builds and appends one data page for rows [r0, r1) holding the non-null
 * values [v0, v0 + vn), whose PLAIN bytes are values[b0, b1). */
static int data_page(struct pq_job *j, struct pq_enc *e, size_t r0, size_t r1, size_t v0, size_t vn,
                     size_t b0, size_t b1, struct fl_err *err)
{
	const struct pq_col *c = j->c;
	const struct pq_rgcol *rs = &j->rs;
	struct st_buf *pg = &e->page;

	st_buf_reset(pg);
	if (!c->def.required) {
		size_t at = pg->len;
		uint32_t len;

		if (st_buf_put_le32(pg, 0) != 0 ||
		    st_rle_encode_u8(pg, rs->defs.data + r0, r1 - r0, 1) != 0)
			goto nomem;
		len = (uint32_t)(pg->len - at - 4);
		le_bytes(pg->data + at, len, 4);
	}
	if (rs->dict_on) {
		int bw = dict_bit_width(rs);

		if (st_buf_put_u8(pg, (uint8_t)bw) != 0 ||
		    st_rle_encode_u32(pg, (const uint32_t *)rs->indices.data + v0, vn, bw) != 0)
			goto nomem;
	} else if (c->ptype == PT_BOOLEAN) {
		if (bitpack_bools(pg, rs->values.data + b0, b1 - b0) != 0)
			goto nomem;
	} else if (st_buf_append(pg, rs->values.data + b0, b1 - b0) != 0) {
		goto nomem;
	}
	if (j->ch.data_page_offset < 0)
		j->ch.data_page_offset = (int64_t)j->out.len;
	return emit_page(j, e, PAGE_DATA, r1 - r0, rs->dict_on ? ENC_RLE_DICTIONARY : ENC_PLAIN,
	                 err);
nomem:
	return fl_err_set(err, FL_ERR_NOMEM, "parquet: out of memory");
}

/* PLAIN statistics bytes of v: no length prefix for byte arrays; zero
 * floats normalised (-0.0 as a minimum, +0.0 as a maximum) per the
 * ColumnOrder rules. */
static int stat_bytes(const struct pq_col *c, const struct st_value *v, bool is_max, uint8_t **out,
                      size_t *len, const struct st_alloc *a)
{
	struct st_value z = *v;
	struct plain p;
	uint8_t *q;

	if (c->def.type.id == ST_TYPE_FLOAT && z.v.f == 0.0f)
		z.v.f = is_max ? 0.0f : -0.0f;
	if (c->def.type.id == ST_TYPE_DOUBLE && z.v.d == 0.0)
		z.v.d = is_max ? 0.0 : -0.0;
	to_plain(c, &z, &p);
	if (c->ptype == PT_BYTE_ARRAY)
		p.head_len = 0;
	q = st_malloc(a, p.head_len + p.tail_len);
	if (q == NULL)
		return -1;
	memcpy(q, p.head, p.head_len);
	if (p.tail_len)
		memcpy(q + p.head_len, p.tail, p.tail_len);
	*out = q;
	*len = p.head_len + p.tail_len;
	return 0;
}

/* The order key of a PLAIN value of a column whose values are 4 or 8
 * bytes and compare as numbers (rg_stats_fixed): a signed integer as is, a
 * float's or double's bits mapped so that integer order is the order of
 * st_value_compare (-0.0 before +0.0; NaN is never asked). */
static int64_t order_key(int ptype, bool is_float, const uint8_t *p)
{
	if (ptype == PT_INT32 || ptype == PT_FLOAT) {
		uint32_t u = (uint32_t)le_get(p, 4);

		if (!is_float)
			return (int32_t)u;
		return (u & 0x80000000u) ? -(int64_t)(u & 0x7fffffffu) - 1 : (int64_t)u;
	}
	uint64_t u = le_get(p, 8);

	if (!is_float)
		return (int64_t)u;
	return (u >> 63) ? -(int64_t)(u & INT64_MAX) - 1 : (int64_t)u;
}

/* True when rg_stats_fixed can take column c: a 4- or 8-byte PLAIN value
 * ordered as a signed integer or as an IEEE float. */
static bool stats_fixed(const struct pq_col *c)
{
	return c->ptype == PT_INT32 || c->ptype == PT_INT64 || c->ptype == PT_FLOAT ||
	       c->ptype == PT_DOUBLE;
}

/* rg_stats for stats_fixed columns: one pass over the PLAIN bytes keeping
 * the positions of the least and greatest order keys (the first of equal
 * keys, as vstat_update keeps; equal keys are equal bytes), then the two
 * values decoded once.  The generic path decodes and compares st_values
 * per value; this is the same result at a fraction of the work. */
static int rg_stats_fixed(const struct pq_col *c, const uint8_t *p, const uint8_t *end,
                          struct vstat *s)
{
	const size_t w = c->fixed_width;
	const bool is_float = c->ptype == PT_FLOAT || c->ptype == PT_DOUBLE;
	const uint8_t *min_at = NULL, *max_at = NULL;
	int64_t lo = 0, hi = 0;
	struct st_value v;

	for (; p + w <= end; p += w) {
		int64_t k;

		if (is_float) {
			/* NaN: all exponent bits set and a non-zero fraction. */
			uint64_t u = le_get(p, (int)w);
			bool nan = w == 4 ? (u & 0x7fffffffu) > 0x7f800000u
			                  : (u & INT64_MAX) > 0x7ff0000000000000u;

			if (nan)
				continue;
		}
		k = order_key(c->ptype, is_float, p);
		if (min_at == NULL || k < lo) {
			lo = k;
			min_at = p;
		}
		if (max_at == NULL || k > hi) {
			hi = k;
			max_at = p;
		}
	}
	if (min_at == NULL)
		return 0;
	from_plain(c, min_at, &v);
	if (keep(&s->min, &s->min_store, &c->def.type, &v) != 0)
		return -1;
	from_plain(c, max_at, &v);
	if (keep(&s->max, &s->max_store, &c->def.type, &v) != 0)
		return -1;
	s->has = true;
	return 0;
}

/* The byte order of st_value_compare for byte arrays, deciding on the
 * first bytes before calling memcmp (most values differ there). */
static int bytes_order(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
	size_t n = an < bn ? an : bn;
	int d;

	if (n > 0 && a[0] != b[0])
		return a[0] < b[0] ? -1 : 1;
	d = n > 1 ? memcmp(a + 1, b + 1, n - 1) : 0;
	if (d != 0)
		return d;
	return an < bn ? -1 : an > bn ? 1 : 0;
}

/* rg_stats for BYTE_ARRAY columns: one pass over the PLAIN values (u32 LE
 * length + bytes) keeping where the least and greatest are (the first of
 * equal ones, as vstat_update keeps), then one copy of each. */
static int rg_stats_bytes(const struct pq_col *c, const uint8_t *p, const uint8_t *end,
                          struct vstat *s)
{
	const uint8_t *lo = NULL, *hi = NULL;
	size_t lo_n = 0, hi_n = 0;
	struct st_value v = {.null = false};

	while (p < end) {
		size_t n = (size_t)le_get(p, 4);
		const uint8_t *q = p + 4;

		if (lo == NULL || bytes_order(q, n, lo, lo_n) < 0) {
			lo = q;
			lo_n = n;
		}
		if (hi == NULL || bytes_order(q, n, hi, hi_n) > 0) {
			hi = q;
			hi_n = n;
		}
		p = q + n;
	}
	if (lo == NULL)
		return 0;
	v.v.bin.p = lo;
	v.v.bin.len = lo_n;
	if (keep(&s->min, &s->min_store, &c->def.type, &v) != 0)
		return -1;
	v.v.bin.p = hi;
	v.v.bin.len = hi_n;
	if (keep(&s->max, &s->max_store, &c->def.type, &v) != 0)
		return -1;
	s->has = true;
	return 0;
}

/* The row group's min and max of non-NaN values, from what it buffered:
 * the dictionary's entries (each distinct value once, in order of first
 * appearance) or every PLAIN value.  Done here rather than per value as
 * rows arrive, so that with encoder threads the reader does not do it. */
static int rg_stats(struct pq_job *j)
{
	const struct pq_col *c = j->c;
	struct pq_rgcol *rs = &j->rs;
	const struct st_type *t = &c->def.type;
	const uint8_t *p, *end;
	struct st_value v;

	rs->rg_stat.has = false;
	if (rs->dict_on) {
		p = rs->dict.plain.data;
		end = p + rs->dict.plain.len;
	} else {
		p = rs->values.data;
		end = p + rs->values.len;
	}
	if (p == NULL)
		return 0;
	if (stats_fixed(c))
		return rg_stats_fixed(c, p, end, &rs->rg_stat);
	if (c->ptype == PT_BYTE_ARRAY)
		return rg_stats_bytes(c, p, end, &rs->rg_stat);
	while (p < end) {
		p += from_plain(c, p, &v);
		if (!value_is_nan(t, &v) && vstat_update(&rs->rg_stat, t, &v) != 0)
			return -1;
	}
	return 0;
}

/* The data pages of a column chunk whose values are fixed width or
 * dictionary indices, when PAGE_ROW_LIMIT rows of values cannot
 * reach page_bytes: then every page but the last holds exactly
 * PAGE_ROW_LIMIT rows, and a page's values are counted from its definition
 * levels instead of walking them one row at a time (write_chunk's loop
 * gives the same pages). */
static int fixed_pages(struct pq_job *j, struct pq_enc *e, struct fl_err *err)
{
	const struct pq_col *c = j->c;
	const struct pq_rgcol *rs = &j->rs;
	const uint8_t *defs = rs->defs.data;
	size_t rows = j->rows, v0 = 0, b0 = 0;
	size_t width = rs->dict_on ? 0 : c->fixed_width;

	for (size_t r0 = 0; r0 < rows;) {
		size_t r1 = rows - r0 > PAGE_ROW_LIMIT ? r0 + PAGE_ROW_LIMIT : rows, vn = r1 - r0;

		if (!c->def.required) {
			vn = 0;
			for (size_t r = r0; r < r1; r++)
				vn += defs[r] != 0;
		}
		if (data_page(j, e, r0, r1, v0, vn, b0, b0 + vn * width, err) != 0)
			return -1;
		v0 += vn;
		b0 += vn * width;
		r0 = r1;
	}
	return 0;
}

/* Encodes one column chunk into j->out (offsets in j->ch relative to it). */
static int write_chunk(struct pq_job *j, struct pq_enc *e, struct fl_err *err)
{
	const struct pq_col *c = j->c;
	struct pq_rgcol *rs = &j->rs;
	struct pq_chunk *ch = &j->ch;
	size_t rows = j->rows, r0 = 0, v0 = 0, b0 = 0, vi = 0, bi = 0, vbytes = 0;
	size_t page_bytes = j->w->page_bytes;
	const uint8_t *defs = rs->defs.data;
	int bw = 1;

	memset(ch, 0, sizeof(*ch));
	st_buf_reset(&j->out);
	ch->data_page_offset = -1;
	ch->dict_page_offset = -1;
	ch->num_values = (int64_t)rows;
	ch->null_count = rs->rg_nulls;
	ch->nan_count = rs->rg_nans;
	if (rs->dict_on && rs->rg_nonnull == 0)
		rs->dict_on = false; /* all null: nothing to put in a dictionary */
	if (rg_stats(j) != 0)
		return fl_err_set(err, FL_ERR_NOMEM, "parquet: out of memory");
	ch->dict = rs->dict_on;
	if (rs->dict_on) {
		ch->dict_page_offset = 0;
		st_buf_reset(&e->page);
		if (st_buf_append(&e->page, rs->dict.plain.data, rs->dict.plain.len) != 0)
			return fl_err_set(err, FL_ERR_NOMEM, "parquet: out of memory");
		if (emit_page(j, e, PAGE_DICTIONARY, rs->dict.n_entries, ENC_PLAIN, err) != 0)
			return -1;
		bw = dict_bit_width(rs);
	}
	if ((rs->dict_on || c->fixed_width) &&
	    (rs->dict_on ? sizeof(uint32_t) : c->fixed_width) * PAGE_ROW_LIMIT < page_bytes) {
		if (fixed_pages(j, e, err) != 0)
			return -1;
	} else {
		for (size_t r = 0; r < rows; r++) {
			bool defined = c->def.required || defs[r];

			if (defined) {
				size_t sz;

				if (rs->dict_on) {
					sz = 0;
				} else if (c->fixed_width) {
					sz = c->fixed_width;
				} else {
					const uint8_t *q = rs->values.data + bi;

					sz = 4 + ((size_t)q[0] | (size_t)q[1] << 8 |
					          (size_t)q[2] << 16 | (size_t)q[3] << 24);
				}
				bi += sz;
				vi++;
				vbytes += rs->dict_on ? 0 : sz;
			}
			if (rs->dict_on)
				vbytes = ((vi - v0) * (size_t)bw + 7) / 8;
			if (r + 1 == rows || r + 1 - r0 >= PAGE_ROW_LIMIT || vbytes >= page_bytes) {
				if (data_page(j, e, r0, r + 1, v0, vi - v0, b0, bi, err) != 0)
					return -1;
				r0 = r + 1;
				v0 = vi;
				b0 = bi;
				vbytes = 0;
			}
		}
	}
	if (rows == 0)
		return 0;
	if (rs->rg_stat.has) {
		const struct st_alloc *a = j->w->alloc;

		if (stat_bytes(c, &rs->rg_stat.min, false, &ch->min, &ch->min_len, a) != 0 ||
		    stat_bytes(c, &rs->rg_stat.max, true, &ch->max, &ch->max_len, a) != 0)
			return fl_err_set(err, FL_ERR_NOMEM, "parquet: out of memory");
		ch->has_minmax = ch->min_len <= MAX_STAT_BYTES && ch->max_len <= MAX_STAT_BYTES;
	}
	return 0;
}

/* The task: one column chunk, on a worker thread (or the caller's). */
static void job_run(struct st_workq_task *t)
{
	struct pq_job *j = (struct pq_job *)t;
	struct pq_enc *e = enc_take(j->w);

	j->err.kind = FL_ERR_NONE;
	j->err.msg[0] = '\0';
	if (e == NULL) {
		j->rc = fl_err_set(&j->err, FL_ERR_NOMEM, "parquet: out of memory");
		return;
	}
	j->rc = write_chunk(j, e, &j->err);
	enc_give(j->w, e);
}

/* At least the bytes a row group of `bytes` buffered bytes and `rows` rows
 * can add to the file: every page body at most twice its buffered bytes
 * once compressed (ZSTD_compressBound is n + n/256 + 64), plus a header and
 * framing per page. */
static uint64_t rg_bound(const struct st_parquet_writer *w, size_t bytes, size_t rows)
{
	uint64_t pages = rows / PAGE_ROW_LIMIT + bytes / w->page_bytes + 3;

	return 2 * (uint64_t)bytes + (uint64_t)w->n_cols * pages * 256 + 4096;
}

/* Folds a finished row group's column state into the file totals and
 * empties rs for reuse. */
static int col_finish_rg(struct st_parquet_writer *w, struct pq_col *c, struct pq_rgcol *rs,
                         const struct pq_chunk *ch)
{
	c->nulls += rs->rg_nulls;
	c->nans += rs->rg_nans;
	c->size += ch->total_compressed;
	if (rs->rg_stat.has) {
		if (vstat_update(&c->file_stat, &c->def.type, &rs->rg_stat.min) != 0 ||
		    vstat_update(&c->file_stat, &c->def.type, &rs->rg_stat.max) != 0)
			return -1;
	}
	rgcol_reset(w, c, rs);
	return 0;
}

/* Waits for the oldest row group in flight and writes it to the sink. */
static int drain_one(struct st_parquet_writer *w, struct fl_err *err)
{
	struct pq_pending *pd = &w->pend[w->pend_head];
	struct pq_rg *rg;

	if (w->workq != NULL)
		st_workq_wait(w->workq, &pd->group);
	w->pend_head = (w->pend_head + 1) % w->max_pend;
	w->n_pend--;
	w->pend_bound -= pd->bound;
	if (w->broken)
		return fl_err_set(err, FL_ERR_IO, "parquet: the writer failed earlier");
	if (w->n_rgs == w->cap_rgs) {
		size_t cap = w->cap_rgs ? w->cap_rgs * 2 : 4;
		struct pq_rg *r = st_realloc(w->alloc, w->rgs, cap * sizeof(*r));

		if (r == NULL)
			goto nomem;
		w->rgs = r;
		w->cap_rgs = cap;
	}
	rg = &w->rgs[w->n_rgs];
	memset(rg, 0, sizeof(*rg));
	rg->chunks = st_calloc(w->alloc, w->n_cols, sizeof(*rg->chunks));
	if (rg->chunks == NULL)
		goto nomem;
	w->n_rgs++;
	/* The chunks (and their min/max) belong to the row group from here. */
	for (size_t i = 0; i < w->n_cols; i++) {
		rg->chunks[i] = pd->jobs[i].ch;
		memset(&pd->jobs[i].ch, 0, sizeof(pd->jobs[i].ch));
	}
	/* From here a failure leaves a partial row group in the sink. */
	w->broken = true;
	for (size_t i = 0; i < w->n_cols; i++) {
		if (pd->jobs[i].rc != 0) {
			*err = pd->jobs[i].err;
			return fl_err_prefix(err, "parquet: column %s", w->cols[i].def.name);
		}
	}
	rg->num_rows = (int64_t)pd->rows;
	rg->file_offset = (int64_t)w->offset;
	for (size_t i = 0; i < w->n_cols; i++) {
		struct pq_chunk *ch = &rg->chunks[i];
		struct pq_job *j = &pd->jobs[i];

		if (ch->dict_page_offset >= 0)
			ch->dict_page_offset += (int64_t)w->offset;
		ch->data_page_offset += (int64_t)w->offset;
		if (sink_write(w, j->out.data, j->out.len, err) != 0)
			return fl_err_prefix(err, "parquet: column %s", w->cols[i].def.name);
		rg->total_byte_size += ch->total_uncompressed;
		rg->total_compressed += ch->total_compressed;
		if (col_finish_rg(w, &w->cols[i], &j->rs, ch) != 0)
			goto nomem;
	}
	w->broken = false;
	return 0;
nomem:
	w->broken = true;
	return fl_err_set(err, FL_ERR_NOMEM, "parquet: out of memory");
}

int st_parquet_writer_settle(struct st_parquet_writer *w, struct fl_err *err)
{
	while (w->n_pend > 0)
		if (drain_one(w, err) != 0)
			return -1;
	return 0;
}

int st_parquet_writer_flush(struct st_parquet_writer *w, struct fl_err *err)
{
	struct pq_pending *pd;

	if (w->broken)
		return fl_err_set(err, FL_ERR_IO, "parquet: the writer failed earlier");
	if (w->rg_rows == 0)
		return 0;
	/* At most max_pend row groups in flight besides the one being filled. */
	if (w->n_pend == w->max_pend && drain_one(w, err) != 0)
		return -1;
	pd = &w->pend[(w->pend_head + w->n_pend) % w->max_pend];
	memset(&pd->group, 0, sizeof(pd->group));
	pd->rows = w->rg_rows;
	pd->bound = rg_bound(w, w->rg_bytes, w->rg_rows);
	for (size_t i = 0; i < w->n_cols; i++) {
		struct pq_job *j = &pd->jobs[i];
		struct pq_rgcol tmp = j->rs; /* emptied when it was last written */

		j->rs = w->cols[i].rs;
		w->cols[i].rs = tmp;
		j->rows = w->rg_rows;
		j->rc = 0;
	}
	w->n_pend++;
	w->pend_bound += pd->bound;
	w->rg_rows = 0;
	w->rg_bytes = 0;
	if (w->workq == NULL) {
		for (size_t i = 0; i < w->n_cols; i++)
			job_run(&pd->jobs[i].task);
		if (drain_one(w, err) != 0)
			return -1;
		/* One row group's buffers are enough here: take back those that
		 * have grown (both sides are empty now). */
		for (size_t i = 0; i < w->n_cols; i++) {
			struct pq_rgcol tmp = pd->jobs[i].rs;

			pd->jobs[i].rs = w->cols[i].rs;
			w->cols[i].rs = tmp;
		}
		return 0;
	}
	for (size_t i = 0; i < w->n_cols; i++) {
		pd->jobs[i].task.run = job_run;
		st_workq_submit(w->workq, &pd->group, &pd->jobs[i].task);
	}
	/* Write what is already done, without waiting. */
	while (w->n_pend > 0 && st_workq_done(w->workq, &w->pend[w->pend_head].group))
		if (drain_one(w, err) != 0)
			return -1;
	return 0;
}

int st_parquet_writer_write_row(struct st_parquet_writer *w, const struct st_value *row,
                                struct fl_err *err)
{
	size_t bytes = 0;

	if (w->broken)
		return fl_err_set(err, FL_ERR_IO, "parquet: the writer failed earlier");
	for (size_t i = 0; i < w->n_cols; i++) {
		if (check_value(&w->cols[i], &row[i], w->utf8_checked, err) != 0)
			return -1;
	}
	if (w->rg_rows >= (size_t)INT32_MAX && st_parquet_writer_flush(w, err) != 0)
		return -1;
	for (size_t i = 0; i < w->n_cols; i++) {
		long b = append_value(w, &w->cols[i], &row[i]);

		if (b < 0) {
			w->broken = true; /* other columns already hold this row */
			return fl_err_set(err, FL_ERR_NOMEM,
			                  "parquet: out of memory buffering a row");
		}
		bytes += (size_t)b;
	}
	w->rg_bytes += bytes;
	w->rg_rows++;
	w->rows++;
	if (w->rg_bytes >= w->row_group_bytes)
		return st_parquet_writer_flush(w, err);
	return 0;
}

uint64_t st_parquet_writer_size(const struct st_parquet_writer *w)
{
	return w->offset + w->pend_bound + w->rg_bytes;
}

/* ---- footer ------------------------------------------------------------------ */

static void schema_element(struct st_thrift *t, const struct pq_col *c)
{
	const struct st_type *ty = &c->def.type;
	bool nanos = ty->id == ST_TYPE_TIMESTAMP_NS || ty->id == ST_TYPE_TIMESTAMPTZ_NS;

	st_thrift_elem_struct_begin(t);
	st_thrift_i32(t, 1, c->ptype);
	if (c->ptype == PT_FLBA)
		st_thrift_i32(t, 2, c->type_length);
	st_thrift_i32(t, 3, c->def.required ? 0 : 1);
	st_thrift_string(t, 4, c->def.name);
	switch (ty->id) {
	case ST_TYPE_STRING: st_thrift_i32(t, 6, CT_UTF8); break;
	case ST_TYPE_DATE: st_thrift_i32(t, 6, CT_DATE); break;
	case ST_TYPE_TIME: st_thrift_i32(t, 6, CT_TIME_MICROS); break;
	case ST_TYPE_TIMESTAMP:
	case ST_TYPE_TIMESTAMPTZ: st_thrift_i32(t, 6, CT_TIMESTAMP_MICROS); break;
	case ST_TYPE_DECIMAL:
		st_thrift_i32(t, 6, CT_DECIMAL);
		st_thrift_i32(t, 7, ty->scale);
		st_thrift_i32(t, 8, ty->precision);
		break;
	default: break;
	}
	st_thrift_i32(t, 9, c->def.field_id);
	switch (ty->id) {
	case ST_TYPE_STRING:
		st_thrift_struct_begin(t, 10);
		st_thrift_struct_begin(t, 1); /* STRING */
		st_thrift_end(t);
		st_thrift_end(t);
		break;
	case ST_TYPE_DATE:
		st_thrift_struct_begin(t, 10);
		st_thrift_struct_begin(t, 6); /* DATE */
		st_thrift_end(t);
		st_thrift_end(t);
		break;
	case ST_TYPE_DECIMAL:
		st_thrift_struct_begin(t, 10);
		st_thrift_struct_begin(t, 5); /* DECIMAL */
		st_thrift_i32(t, 1, ty->scale);
		st_thrift_i32(t, 2, ty->precision);
		st_thrift_end(t);
		st_thrift_end(t);
		break;
	case ST_TYPE_TIME:
	case ST_TYPE_TIMESTAMP:
	case ST_TYPE_TIMESTAMPTZ:
	case ST_TYPE_TIMESTAMP_NS:
	case ST_TYPE_TIMESTAMPTZ_NS:
		st_thrift_struct_begin(t, 10);
		st_thrift_struct_begin(t, ty->id == ST_TYPE_TIME ? 7 : 8); /* TIME | TIMESTAMP */
		/* isAdjustedToUTC */
		st_thrift_bool(t, 1,
		               ty->id == ST_TYPE_TIMESTAMPTZ || ty->id == ST_TYPE_TIMESTAMPTZ_NS);
		st_thrift_struct_begin(t, 2); /* unit */
		st_thrift_struct_begin(t, nanos ? 3 : 2); /* NANOS | MICROS */
		st_thrift_end(t);
		st_thrift_end(t);
		st_thrift_end(t);
		st_thrift_end(t);
		break;
	case ST_TYPE_UUID:
		st_thrift_struct_begin(t, 10);
		st_thrift_struct_begin(t, 14); /* UUID */
		st_thrift_end(t);
		st_thrift_end(t);
		break;
	default: break;
	}
	st_thrift_end(t);
}

static void column_chunk(struct st_thrift *t, const struct pq_col *c, const struct pq_chunk *ch,
                         int codec)
{
	st_thrift_elem_struct_begin(t);
	st_thrift_i64(t, 2, 0); /* file_offset: deprecated, 0 per parquet.thrift */
	st_thrift_struct_begin(t, 3);
	st_thrift_i32(t, 1, c->ptype);
	st_thrift_list_begin(t, 2, ST_THRIFT_I32, ch->dict ? 3 : 2);
	st_thrift_elem_i32(t, ENC_PLAIN);
	st_thrift_elem_i32(t, ENC_RLE);
	if (ch->dict)
		st_thrift_elem_i32(t, ENC_RLE_DICTIONARY);
	st_thrift_list_begin(t, 3, ST_THRIFT_BINARY, 1);
	st_thrift_elem_binary(t, c->def.name, strlen(c->def.name));
	st_thrift_i32(t, 4, codec);
	st_thrift_i64(t, 5, ch->num_values);
	st_thrift_i64(t, 6, ch->total_uncompressed);
	st_thrift_i64(t, 7, ch->total_compressed);
	st_thrift_i64(t, 9, ch->data_page_offset);
	if (ch->dict_page_offset >= 0)
		st_thrift_i64(t, 11, ch->dict_page_offset);
	st_thrift_struct_begin(t, 12);
	st_thrift_i64(t, 3, ch->null_count);
	if (ch->has_minmax) {
		st_thrift_binary(t, 5, ch->max, ch->max_len);
		st_thrift_binary(t, 6, ch->min, ch->min_len);
	}
	if (st_type_is_floating(&c->def.type))
		st_thrift_i64(t, 9, ch->nan_count);
	st_thrift_end(t); /* Statistics */
	st_thrift_end(t); /* ColumnMetaData */
	st_thrift_end(t); /* ColumnChunk */
}

static int write_footer(struct st_parquet_writer *w, struct fl_err *err)
{
	struct st_buf footer, *b = &footer;
	struct st_thrift t;
	int rc = -1;
	size_t n_kv = w->n_kv + (w->iceberg_schema != NULL);
	uint8_t tail[8];

	st_buf_init(b, w->alloc);
	st_thrift_init(&t, b);
	st_thrift_i32(&t, 1, 1);
	st_thrift_list_begin(&t, 2, ST_THRIFT_STRUCT, w->n_cols + 1);
	st_thrift_elem_struct_begin(&t);
	st_thrift_string(&t, 4, "table");
	st_thrift_i32(&t, 5, (int32_t)w->n_cols);
	st_thrift_end(&t);
	for (size_t i = 0; i < w->n_cols; i++)
		schema_element(&t, &w->cols[i]);
	st_thrift_i64(&t, 3, w->rows);
	st_thrift_list_begin(&t, 4, ST_THRIFT_STRUCT, w->n_rgs);
	for (size_t r = 0; r < w->n_rgs; r++) {
		const struct pq_rg *rg = &w->rgs[r];

		st_thrift_elem_struct_begin(&t);
		st_thrift_list_begin(&t, 1, ST_THRIFT_STRUCT, w->n_cols);
		for (size_t i = 0; i < w->n_cols; i++)
			column_chunk(&t, &w->cols[i], &rg->chunks[i], w->codec);
		st_thrift_i64(&t, 2, rg->total_byte_size);
		st_thrift_i64(&t, 3, rg->num_rows);
		st_thrift_i64(&t, 5, rg->file_offset);
		st_thrift_i64(&t, 6, rg->total_compressed);
		st_thrift_end(&t);
	}
	if (n_kv > 0) {
		st_thrift_list_begin(&t, 5, ST_THRIFT_STRUCT, n_kv);
		if (w->iceberg_schema != NULL) {
			st_thrift_elem_struct_begin(&t);
			st_thrift_string(&t, 1, "iceberg.schema");
			st_thrift_string(&t, 2, w->iceberg_schema);
			st_thrift_end(&t);
		}
		for (size_t i = 0; i < w->n_kv; i++) {
			st_thrift_elem_struct_begin(&t);
			st_thrift_string(&t, 1, w->kv[i].key);
			if (w->kv[i].value != NULL)
				st_thrift_string(&t, 2, w->kv[i].value);
			st_thrift_end(&t);
		}
	}
	st_thrift_string(&t, 6, w->created_by);
	st_thrift_list_begin(&t, 7, ST_THRIFT_STRUCT, w->n_cols);
	for (size_t i = 0; i < w->n_cols; i++) {
		st_thrift_elem_struct_begin(&t);
		st_thrift_struct_begin(&t, 1); /* TYPE_ORDER */
		st_thrift_end(&t);
		st_thrift_end(&t);
	}
	st_thrift_end(&t);
	if (t.failed) {
		fl_err_set(err, FL_ERR_NOMEM, "parquet: out of memory writing the footer");
		goto out;
	}
	if (b->len > UINT32_MAX) {
		fl_err_set(err, FL_ERR_TOO_LARGE, "parquet: footer of %zu bytes", b->len);
		goto out;
	}
	le_bytes(tail, (uint32_t)b->len, 4);
	memcpy(tail + 4, "PAR1", 4);
	if (sink_write(w, b->data, b->len, err) != 0 || sink_write(w, tail, sizeof(tail), err) != 0)
		goto out;
	rc = 0;
out:
	st_buf_free(b);
	return rc;
}

/* ---- close and metrics -------------------------------------------------------- */

void st_parquet_metrics_free(struct st_parquet_metrics *m)
{
	if (m == NULL)
		return;
	for (size_t i = 0; i < m->n_columns; i++) {
		st_free(m->alloc, m->columns[i].lower);
		st_free(m->alloc, m->columns[i].upper);
	}
	st_free(m->alloc, m->columns);
	st_free(m->alloc, m->split_offsets);
	m->columns = NULL;
	m->split_offsets = NULL;
	m->n_columns = m->n_split_offsets = 0;
}

void st_parquet_metrics_to_data_file(const struct st_parquet_metrics *m, struct st_data_file *df)
{
	df->content = ST_CONTENT_DATA;
	df->file_format = "PARQUET";
	df->record_count = m->record_count;
	df->file_size_in_bytes = m->file_size;
	df->columns = m->columns;
	df->n_columns = m->n_columns;
	df->split_offsets = m->split_offsets;
	df->n_split_offsets = m->n_split_offsets;
}

static uint8_t *buf_take(struct st_buf *b, size_t *len)
{
	uint8_t *p = b->data;

	*len = b->len;
	b->data = NULL;
	b->len = b->cap = 0;
	return p;
}

/* Iceberg bounds of one column: single-value serialized, truncate(N). */
static int column_bounds(const struct st_parquet_writer *w, const struct pq_col *c, size_t width,
                         struct st_column_metrics *cm)
{
	const struct st_type *t = &c->def.type;
	struct st_buf full, b;
	bool has_upper;
	size_t lower_len;
	int rc = -1;

	st_buf_init(&full, w->alloc);
	st_buf_init(&b, w->alloc);
	if (!c->file_stat.has)
		return 0;
	if (st_value_serialize(t, &c->file_stat.min, &full) != 0)
		goto out;
	lower_len = st_bound_lower_len(t, full.data, full.len, width);
	if (st_buf_append(&b, full.data, lower_len) != 0 || st_buf_put_u8(&b, 0) != 0)
		goto out;
	b.len--;
	cm->lower = buf_take(&b, &cm->lower_len);
	cm->has_lower = true;
	st_buf_reset(&full);
	if (st_value_serialize(t, &c->file_stat.max, &full) != 0 ||
	    st_bound_upper(t, full.data, full.len, width, &b, &has_upper) != 0 ||
	    st_buf_put_u8(&b, 0) != 0)
		goto out;
	b.len--;
	if (has_upper) {
		cm->upper = buf_take(&b, &cm->upper_len);
		cm->has_upper = true;
	}
	rc = 0;
out:
	st_buf_free(&full);
	st_buf_free(&b);
	return rc;
}

static int metrics(const struct st_parquet_writer *w, struct st_parquet_metrics *m)
{
	memset(m, 0, sizeof(*m));
	m->alloc = w->alloc;
	m->record_count = w->rows;
	m->file_size = (int64_t)w->offset;
	m->columns = st_calloc(w->alloc, w->n_cols, sizeof(*m->columns));
	if (m->columns == NULL)
		return -1;
	m->n_columns = w->n_cols;
	if (w->n_rgs > 0) {
		m->split_offsets = st_calloc(w->alloc, w->n_rgs, sizeof(*m->split_offsets));
		if (m->split_offsets == NULL)
			return -1;
		m->n_split_offsets = w->n_rgs;
		for (size_t r = 0; r < w->n_rgs; r++)
			m->split_offsets[r] = w->rgs[r].file_offset;
	}
	for (size_t i = 0; i < w->n_cols; i++) {
		const struct pq_col *c = &w->cols[i];
		struct st_column_metrics *cm = &m->columns[i];

		size_t width = w->truncate;

		cm->field_id = c->def.field_id;
		cm->column_size = cm->value_count = cm->null_count = cm->nan_count = -1;
		if (c->def.metrics == ST_METRICS_NONE)
			continue;
		cm->column_size = c->size;
		cm->value_count = w->rows;
		cm->null_count = c->nulls;
		cm->nan_count = st_type_is_floating(&c->def.type) ? c->nans : -1;
		if (c->def.metrics == ST_METRICS_COUNTS)
			continue;
		if (c->def.metrics == ST_METRICS_TRUNCATE)
			width = c->def.metrics_truncate;
		else if (c->def.metrics == ST_METRICS_FULL)
			width = SIZE_MAX;
		if (column_bounds(w, c, width, cm) != 0)
			return -1;
	}
	return 0;
}

int st_parquet_writer_close(struct st_parquet_writer *w, struct st_parquet_metrics *m,
                            struct fl_err *err)
{
	struct st_parquet_metrics r;
	int rc = -1;

	memset(&r, 0, sizeof(r));
	if (st_parquet_writer_flush(w, err) != 0 || st_parquet_writer_settle(w, err) != 0 ||
	    write_footer(w, err) != 0)
		goto out;
	if (m != NULL) {
		if (metrics(w, &r) != 0) {
			st_parquet_metrics_free(&r);
			fl_err_set(err, FL_ERR_NOMEM, "parquet: out of memory collecting metrics");
			goto out;
		}
		*m = r;
	}
	rc = 0;
out:
	st_parquet_writer_free(w);
	return rc;
}
