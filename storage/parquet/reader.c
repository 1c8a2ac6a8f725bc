/* reader.c - streaming Parquet reader (see reader.h for what it accepts).
 *
 * Bytes read (apache/parquet-format README.md "File Format" and
 * src/main/thrift/parquet.thrift, Thrift compact protocol):
 *
 *   "PAR1" ... FileMetaData, u32 LE footer length, "PAR1"
 *   FileMetaData   1 version, 2 schema list<SchemaElement> (depth-first,
 *                  root first), 3 num_rows, 4 row_groups list<RowGroup>,
 *                  5 key_value_metadata list<KeyValue>
 *   SchemaElement  1 type, 2 type_length, 3 repetition_type, 4 name,
 *                  5 num_children, 6 converted_type, 7 scale, 8 precision,
 *                  9 field_id, 10 logicalType (union)
 *   RowGroup       1 columns list<ColumnChunk> (one per leaf, in leaf
 *                  order), 3 num_rows
 *   ColumnChunk    1 file_path (must be absent), 3 meta_data
 *   ColumnMetaData 1 type, 4 codec, 5 num_values, 7 total_compressed_size,
 *                  9 data_page_offset, 11 dictionary_page_offset
 *   PageHeader     1 type, 2 uncompressed_page_size, 3 compressed_page_size,
 *                  5 data_page_header{1 num_values, 2 encoding,
 *                  3 definition_level_encoding}, 7 dictionary_page_header{
 *                  1 num_values, 2 encoding}, 8 data_page_header_v2{
 *                  1 num_values, 4 encoding, 5 definition_levels_byte_length,
 *                  6 repetition_levels_byte_length, 7 is_compressed}
 *   data page v1   compressed: [u32 LE length + RLE-hybrid definition
 *                  levels] then values
 *   data page v2   uncompressed repetition levels, definition levels (no
 *                  length prefix), then the values, compressed unless
 *                  is_compressed is false
 *   values         PLAIN (LE fixed width; INT96 12 bytes; BYTE_ARRAY u32
 *                  LE length + bytes; BOOLEAN bit-packed LSB first) or
 *                  u8 bit width + RLE-hybrid indices into the chunk's
 *                  dictionary page (PLAIN entries), or u32 LE length +
 *                  RLE hybrid (booleans), or a DELTA_* / BYTE_STREAM_SPLIT
 *                  stream (see the decoders below), decoded a page at a
 *                  time
 *
 * Invariants: every offset and length taken from the file is checked
 * against the bytes it claims to lie in before it is used; a projected
 * column's chunk buffer and dictionary live for the current row group, a
 * page buffer until the batch after the one that finished with it
 * (`held`), so byte values in a batch stay valid until the next call. */
#include "parquet/reader.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_createDCtx_advanced, for the allocator hook */
#include <zstd.h>
#ifdef ST_HAVE_SNAPPY
#include "parquet/libsnappy.h"
#endif

#include "iceberg/bounds.h"
#include "parquet/format.h"
#include "parquet/rle.h"
#include "parquet/thrift.h"

#define DEFAULT_MAX_FOOTER ((size_t)64 << 20)
#define DEFAULT_MAX_ROW_GROUP ((size_t)1 << 30)
#define DEFAULT_MAX_PAGE ((size_t)256 << 20)
#define DEFAULT_BATCH_ROWS 4096
#define MAX_SCHEMA_DEPTH 64
#define JULIAN_EPOCH 2440588 /* Julian day number of 1970-01-01 */

/* How a physical value becomes an st_value. */
enum conv {
	CV_BOOL,
	CV_I32, /* -> i */
	CV_I32_LONG, /* -> l, sign-extended, times mult */
	CV_U32_LONG, /* -> l, zero-extended */
	CV_I32_DEC,
	CV_I64, /* -> l, times mult */
	CV_I64_DEC,
	CV_I96_TS, /* -> l, micros or nanos since the epoch */
	CV_F32,
	CV_F32_F64,
	CV_F64,
	CV_BYTES, /* -> bin */
	CV_STRING, /* -> bin, UTF-8 checked */
	CV_BYTES_DEC, /* big-endian two's complement -> dec */
};

/* One schema element as the footer gives it. */
struct selem {
	const uint8_t *name;
	size_t name_len;
	int ptype, type_length, repetition, converted, scale, precision, num_children;
	bool has_type, has_field_id, has_scale, has_precision;
	int32_t field_id;
	int logical; /* LT_* */
	int lt_scale, lt_precision, lt_unit, lt_bits;
	bool lt_utc, lt_signed;
};

struct leaf {
	struct st_parquet_leaf pub;
	char *path;
	int ptype, type_length;
	int max_def, max_rep;
	int unit; /* time/timestamp unit in the file (UNIT_*) */
	bool is_int96, is_uint32;
};

struct chunk_meta {
	int codec;
	int64_t num_values;
	uint64_t start, len; /* byte range of the chunk in the file */
};

struct row_group {
	int64_t num_rows;
	struct chunk_meta *chunks; /* one per leaf */
};

/* A physical value: bytes in the file's PLAIN layout (booleans: one byte). */
struct raw {
	const uint8_t *p;
	uint32_t n;
};

/* Where a data page's values come from. */
enum mode {
	MODE_PLAIN, /* vp..vend, PLAIN */
	MODE_DICT, /* idx into the dictionary */
	MODE_BOOL_RLE, /* idx: RLE-hybrid booleans of width 1 */
	MODE_FIXED, /* dec_buf: dec_n values of dec_width bytes, PLAIN layout */
	MODE_BYTES, /* dec_raw: dec_n byte arrays */
};

/* A projected column and its decoding state in the current row group. */
struct pcol {
	size_t leaf; /* SIZE_MAX: missing from the file, reads as nulls */
	struct st_type type;
	enum conv conv;
	int64_t mult; /* unit scale for CV_I32_LONG / CV_I64 / CV_I96_TS */
	/* row group state */
	uint8_t *chunk;
	size_t chunk_len, pos;
	int64_t values_left; /* in the chunk, per its metadata */
	uint8_t *dict_buf; /* decompressed dictionary page (owned) */
	struct raw *dict;
	size_t n_dict;
	/* the current data page */
	uint8_t *page_buf; /* owned decompressed page, or NULL */
	int64_t page_left; /* values left in the page */
	struct st_rle_reader defs;
	bool has_defs;
	enum mode mode;
	struct st_rle_reader idx;
	const uint8_t *vp, *vend; /* PLAIN values */
	unsigned bool_bit;
	/* values decoded up front (DELTA_*, BYTE_STREAM_SPLIT) */
	uint8_t *dec_buf; /* owned; byte values point into it, so it is held */
	struct raw *dec_raw; /* owned */
	size_t dec_n, dec_i, dec_width;
	uint8_t **held; /* finished pages still referenced by the batch */
	size_t n_held, cap_held;
	struct st_value *out; /* batch_rows values */
};

struct st_parquet_reader {
	const struct st_alloc *alloc;
	struct st_parquet_source src;
	size_t max_row_group, max_page, batch_rows;
	uint8_t *footer;
	size_t footer_len;
	uint64_t data_end; /* where the footer starts */
	struct leaf *leaves;
	size_t n_leaves;
	struct row_group *rgs;
	size_t n_rgs;
	int64_t num_rows;
	char **kv; /* key, value, key, value, ... (NUL-terminated copies) */
	size_t n_kv;
	struct pcol *cols;
	size_t n_cols;
	struct st_value **colv; /* the batch's column pointers */
	struct st_parquet_batch batch;
	size_t rg; /* current row group */
	int64_t rg_left; /* rows left in it */
	bool rg_loaded;
	bool broken;
	ZSTD_DCtx *zstd;
	z_stream zs;
	bool zinit;
};

static const uint8_t bool_bytes[2] = {0, 1};

/* ---- sources ------------------------------------------------------------ */

static int mem_read_at(void *ctx, uint64_t off, void *p, size_t n, struct fl_err *err)
{
	const struct st_parquet_mem *m = ctx;

	if (off > m->n || n > m->n - off)
		return fl_err_set(err, FL_ERR_IO, "parquet: read past the end of the buffer");
	if (n > 0)
		memcpy(p, m->p + off, n);
	return 0;
}

void st_parquet_source_mem(struct st_parquet_source *s, struct st_parquet_mem *m, const void *p,
                           size_t n)
{
	m->p = p;
	m->n = n;
	s->read_at = mem_read_at;
	s->ctx = m;
	s->size = n;
}

static int io_read_at(void *ctx, uint64_t off, void *p, size_t n, struct fl_err *err)
{
	const struct st_parquet_io_ctx *c = ctx;
	size_t got = 0;

	if (st_io_read_range(c->io, c->uri, off, n, p, &got, err) != 0)
		return -1;
	if (got != n)
		return fl_err_set(err, FL_ERR_IO, "%.200s: %zu bytes at %llu, read %zu", c->uri, n,
		                  (unsigned long long)off, got);
	return 0;
}

int st_parquet_source_io(struct st_parquet_source *s, struct st_parquet_io_ctx *ctx,
                         struct st_io *io, const char *uri, struct fl_err *err)
{
	uint64_t size;

	if (st_io_stat(io, uri, &size, err) != 0)
		return -1;
	ctx->io = io;
	ctx->uri = uri;
	s->read_at = io_read_at;
	s->ctx = ctx;
	s->size = size;
	return 0;
}

static int read_range(struct st_parquet_reader *r, uint64_t off, size_t n, uint8_t **out,
                      struct fl_err *err)
{
	uint8_t *p = st_malloc(r->alloc, n ? n : 1);

	if (p == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "parquet: out of memory reading %zu bytes", n);
	if (r->src.read_at(r->src.ctx, off, p, n, err) != 0) {
		st_free(r->alloc, p);
		return -1;
	}
	*out = p;
	return 0;
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* ---- footer -------------------------------------------------------------- */

static int bad(struct fl_err *err, const char *what, const struct st_thrift_reader *t)
{
	return fl_err_set(err, FL_ERR_BAD_REQUEST, "parquet: malformed %s: %s at footer byte %zu",
	                  what, t->why ? t->why : "invalid value", (size_t)(t->p - t->start));
}

static void read_time_unit(struct st_thrift_reader *t, uint8_t type, int *unit)
{
	int16_t id;
	uint8_t ft;

	st_thrift_enter(t, type);
	while (st_thrift_field(t, &id, &ft)) {
		if (id >= UNIT_MILLIS && id <= UNIT_NANOS && ft == ST_THRIFT_STRUCT)
			*unit = id;
		st_thrift_skip(t, ft);
	}
}

static void read_logical(struct st_thrift_reader *t, uint8_t type, struct selem *e)
{
	int16_t id, sid;
	uint8_t ft, st;

	st_thrift_enter(t, type);
	while (st_thrift_field(t, &id, &ft)) {
		if (ft != ST_THRIFT_STRUCT) {
			st_thrift_skip(t, ft);
			continue;
		}
		e->logical = id;
		st_thrift_enter(t, ft);
		while (st_thrift_field(t, &sid, &st)) {
			if (id == LT_DECIMAL && sid == 1)
				e->lt_scale = st_thrift_read_i32(t, st);
			else if (id == LT_DECIMAL && sid == 2)
				e->lt_precision = st_thrift_read_i32(t, st);
			else if ((id == LT_TIME || id == LT_TIMESTAMP) && sid == 1)
				e->lt_utc = st_thrift_read_bool(t, st);
			else if ((id == LT_TIME || id == LT_TIMESTAMP) && sid == 2)
				read_time_unit(t, st, &e->lt_unit);
			else if (id == LT_INTEGER && sid == 1)
				e->lt_bits = (int)st_thrift_read_i64(t, st);
			else if (id == LT_INTEGER && sid == 2)
				e->lt_signed = st_thrift_read_bool(t, st);
			else
				st_thrift_skip(t, st);
		}
	}
}

static void read_selem(struct st_thrift_reader *t, struct selem *e)
{
	int16_t id;
	uint8_t ft;

	memset(e, 0, sizeof(*e));
	e->ptype = PT_NONE;
	e->converted = CT_NONE;
	e->repetition = REP_REQUIRED;
	st_thrift_enter(t, ST_THRIFT_STRUCT);
	while (st_thrift_field(t, &id, &ft)) {
		switch (id) {
		case 1:
			e->ptype = st_thrift_read_i32(t, ft);
			e->has_type = true;
			break;
		case 2: e->type_length = st_thrift_read_i32(t, ft); break;
		case 3: e->repetition = st_thrift_read_i32(t, ft); break;
		case 4: st_thrift_read_binary(t, ft, &e->name, &e->name_len); break;
		case 5: e->num_children = st_thrift_read_i32(t, ft); break;
		case 6: e->converted = st_thrift_read_i32(t, ft); break;
		case 7:
			e->scale = st_thrift_read_i32(t, ft);
			e->has_scale = true;
			break;
		case 8:
			e->precision = st_thrift_read_i32(t, ft);
			e->has_precision = true;
			break;
		case 9:
			e->field_id = st_thrift_read_i32(t, ft);
			e->has_field_id = true;
			break;
		case 10: read_logical(t, ft, e); break;
		default: st_thrift_skip(t, ft); break;
		}
	}
}

static void unreadable(struct leaf *l, const char *why)
{
	l->pub.readable = false;
	l->pub.why = why;
}

static void set_decimal(struct leaf *l, int precision, int scale)
{
	int max = l->ptype == PT_INT32 ? 9 : l->ptype == PT_INT64 ? 18 : 38;

	if (precision < 1 || precision > max || scale < 0 || scale > precision) {
		unreadable(l, "a decimal precision or scale out of range");
		return;
	}
	l->pub.type.id = ST_TYPE_DECIMAL;
	l->pub.type.precision = precision;
	l->pub.type.scale = scale;
}

static void set_time(struct leaf *l, enum st_type_id micros, enum st_type_id nanos, int unit)
{
	l->unit = unit;
	l->pub.type.id = unit == UNIT_NANOS ? nanos : micros;
	if (unit == UNIT_NANOS && micros == ST_TYPE_TIME)
		unreadable(l, "time in nanoseconds has no Iceberg type");
	if (unit == UNIT_NONE)
		unreadable(l, "a time unit the reader does not know");
}

/* The Iceberg type of a leaf from its physical type and annotations. */
static void map_leaf(struct leaf *l, const struct selem *e)
{
	int lt = e->logical;
	int ct = e->converted;
	struct st_type *t = &l->pub.type;

	l->pub.readable = true;
	l->ptype = e->ptype;
	l->type_length = e->type_length;
	l->unit = UNIT_MICROS;
	memset(t, 0, sizeof(*t));
	if (lt == LT_DECIMAL || ct == CT_DECIMAL) {
		if (l->ptype != PT_INT32 && l->ptype != PT_INT64 && l->ptype != PT_FLBA &&
		    l->ptype != PT_BYTE_ARRAY) {
			unreadable(l, "a decimal on an unsupported physical type");
			return;
		}
		if (lt == LT_DECIMAL)
			set_decimal(l, e->lt_precision, e->lt_scale);
		else
			set_decimal(l, e->precision, e->scale);
		if (l->ptype == PT_BYTE_ARRAY && l->pub.readable && l->pub.type.precision > 38)
			unreadable(l, "a decimal wider than 38 digits");
		return;
	}
	switch (l->ptype) {
	case PT_BOOLEAN: t->id = ST_TYPE_BOOLEAN; break;
	case PT_INT32:
		t->id = ST_TYPE_INT;
		if (lt == LT_DATE || ct == CT_DATE) {
			t->id = ST_TYPE_DATE;
		} else if (lt == LT_TIME || ct == CT_TIME_MILLIS) {
			set_time(l, ST_TYPE_TIME, ST_TYPE_TIME,
			         lt == LT_TIME ? e->lt_unit : UNIT_MILLIS);
			if (l->unit != UNIT_MILLIS)
				unreadable(l, "an INT32 time that is not in milliseconds");
		} else if ((lt == LT_INTEGER && !e->lt_signed && e->lt_bits == 32) ||
		           ct == CT_UINT_32) {
			t->id = ST_TYPE_LONG;
			l->is_uint32 = true;
		} else if (lt != LT_NONE && lt != LT_INTEGER && lt != LT_UNKNOWN) {
			unreadable(l, "an INT32 annotation the reader does not know");
		}
		break;
	case PT_INT64:
		t->id = ST_TYPE_LONG;
		if (lt == LT_TIME || ct == CT_TIME_MICROS) {
			set_time(l, ST_TYPE_TIME, ST_TYPE_TIME,
			         lt == LT_TIME ? e->lt_unit : UNIT_MICROS);
			if (l->unit == UNIT_MILLIS)
				unreadable(l, "an INT64 time in milliseconds");
		} else if (lt == LT_TIMESTAMP) {
			if (e->lt_utc)
				set_time(l, ST_TYPE_TIMESTAMPTZ, ST_TYPE_TIMESTAMPTZ_NS,
				         e->lt_unit);
			else
				set_time(l, ST_TYPE_TIMESTAMP, ST_TYPE_TIMESTAMP_NS, e->lt_unit);
		} else if (ct == CT_TIMESTAMP_MICROS || ct == CT_TIMESTAMP_MILLIS) {
			/* The converted types mean isAdjustedToUTC = true. */
			set_time(l, ST_TYPE_TIMESTAMPTZ, ST_TYPE_TIMESTAMPTZ_NS,
			         ct == CT_TIMESTAMP_MILLIS ? UNIT_MILLIS : UNIT_MICROS);
		} else if ((lt == LT_INTEGER && !e->lt_signed) || ct == CT_UINT_64) {
			unreadable(l, "UINT64 has no Iceberg type");
		} else if (lt != LT_NONE && lt != LT_INTEGER && lt != LT_UNKNOWN) {
			unreadable(l, "an INT64 annotation the reader does not know");
		}
		break;
	case PT_INT96:
		/* Legacy Spark and Impala timestamps: nanoseconds of the day and
		 * a Julian day, an instant in UTC. */
		t->id = ST_TYPE_TIMESTAMPTZ;
		l->is_int96 = true;
		break;
	case PT_FLOAT: t->id = ST_TYPE_FLOAT; break;
	case PT_DOUBLE: t->id = ST_TYPE_DOUBLE; break;
	case PT_BYTE_ARRAY:
		if (lt == LT_STRING || lt == LT_ENUM || lt == LT_JSON || ct == CT_UTF8 ||
		    ct == CT_ENUM || ct == CT_JSON)
			t->id = ST_TYPE_STRING;
		else if (lt == LT_NONE || lt == LT_BSON || lt == LT_UNKNOWN)
			t->id = ST_TYPE_BINARY;
		else
			unreadable(l, "a BYTE_ARRAY annotation the reader does not know");
		break;
	case PT_FLBA:
		if (l->type_length <= 0) {
			unreadable(l, "a FIXED_LEN_BYTE_ARRAY without a length");
		} else if (lt == LT_UUID) {
			t->id = ST_TYPE_UUID;
			if (l->type_length != 16)
				unreadable(l, "a UUID that is not 16 bytes");
		} else if (lt == LT_NONE && ct != CT_INTERVAL) {
			t->id = ST_TYPE_FIXED;
			t->length = (uint32_t)l->type_length;
		} else {
			unreadable(l, "a FIXED_LEN_BYTE_ARRAY annotation the reader does not "
			              "know");
		}
		break;
	default: unreadable(l, "an unknown physical type"); break;
	}
}

/* Walks the depth-first schema list: elems[*i] and its subtree.  names
 * holds the path so far (depth entries). */
struct walk {
	struct st_parquet_reader *r;
	const struct selem *elems;
	size_t n_elems;
	const char *names[MAX_SCHEMA_DEPTH];
	size_t cap_leaves;
	const struct st_name_mapping *mapping;
};

static int add_leaf(struct walk *w, const struct selem *e, int depth, int max_def, int max_rep,
                    bool in_list, struct fl_err *err)
{
	struct st_parquet_reader *r = w->r;
	struct leaf *l;
	size_t len = 0, k = 0;

	if (r->n_leaves == w->cap_leaves) {
		size_t cap = w->cap_leaves ? w->cap_leaves * 2 : 16;
		struct leaf *n = st_realloc(r->alloc, r->leaves, cap * sizeof(*n));

		if (n == NULL)
			return fl_err_set(err, FL_ERR_NOMEM, "parquet: out of memory");
		r->leaves = n;
		w->cap_leaves = cap;
	}
	l = &r->leaves[r->n_leaves];
	memset(l, 0, sizeof(*l));
	for (int d = 0; d < depth; d++)
		len += strlen(w->names[d]) + 1;
	l->path = st_malloc(r->alloc, len + 1);
	if (l->path == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "parquet: out of memory");
	r->n_leaves++;
	for (int d = 0; d < depth; d++) {
		size_t n = strlen(w->names[d]);

		if (d > 0)
			l->path[k++] = '.';
		memcpy(l->path + k, w->names[d], n);
		k += n;
	}
	l->path[k] = '\0';
	l->pub.path = l->path;
	l->max_def = max_def;
	l->max_rep = max_rep;
	l->pub.optional = max_def > 0;
	if (e->has_field_id)
		l->pub.field_id = e->field_id;
	else
		l->pub.field_id = st_name_mapping_find(w->mapping, w->names, (size_t)depth);
	map_leaf(l, e);
	if (in_list || max_rep > 0)
		unreadable(l, "inside a list or map");
	return 0;
}

static int walk(struct walk *w, size_t *i, int depth, int max_def, int max_rep, bool in_list,
                struct fl_err *err)
{
	const struct selem *e = &w->elems[*i];
	char *name;
	int children;

	if (depth > MAX_SCHEMA_DEPTH - 1)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "parquet: schema nested deeper than %d",
		                  MAX_SCHEMA_DEPTH);
	if (e->repetition < REP_REQUIRED || e->repetition > REP_REPEATED)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "parquet: schema element %zu has an unknown repetition", *i);
	if (depth > 0) {
		if (e->repetition == REP_OPTIONAL)
			max_def++;
		if (e->repetition == REP_REPEATED) {
			max_def++;
			max_rep++;
		}
	}
	if (e->logical == LT_LIST || e->logical == LT_MAP || e->converted == 1 /* MAP */ ||
	    e->converted == 2 /* MAP_KEY_VALUE */ || e->converted == 3 /* LIST */)
		in_list = true;
	name = st_memdup(w->r->alloc, e->name ? (const char *)e->name : "", e->name_len);
	if (name == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "parquet: out of memory");
	if (depth > 0)
		w->names[depth - 1] = name;
	(*i)++;
	children = e->num_children;
	if (depth > 0 && children == 0) {
		int rc;

		if (!e->has_type) {
			st_free(w->r->alloc, name);
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "parquet: schema element %zu has no type and no children",
			                  *i - 1);
		}
		rc = add_leaf(w, e, depth, max_def, max_rep, in_list, err);
		st_free(w->r->alloc, name);
		return rc;
	}
	if (children < 0 || (size_t)children > w->n_elems - *i) {
		st_free(w->r->alloc, name);
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "parquet: schema element %zu claims %d children", *i - 1,
		                  children);
	}
	for (int c = 0; c < children; c++) {
		int rc = *i >= w->n_elems ? fl_err_set(err, FL_ERR_BAD_REQUEST,
		                                       "parquet: the schema ends inside a group")
		                          : walk(w, i, depth + 1, max_def, max_rep, in_list, err);

		if (rc != 0) {
			st_free(w->r->alloc, name);
			return -1;
		}
	}
	st_free(w->r->alloc, name);
	return 0;
}

static int read_schema(struct st_parquet_reader *r, struct st_thrift_reader *t, uint8_t type,
                       const struct st_name_mapping *mapping, struct fl_err *err)
{
	uint8_t elem;
	size_t n = st_thrift_read_list(t, type, &elem);
	struct walk w = {0};
	struct selem *elems;
	size_t i = 0;
	int rc;

	if (t->why != NULL || elem != ST_THRIFT_STRUCT || n == 0)
		return bad(err, "schema", t);
	elems = st_calloc(r->alloc, n, sizeof(*elems));
	if (elems == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "parquet: out of memory");
	for (size_t k = 0; k < n; k++)
		read_selem(t, &elems[k]);
	if (t->why != NULL) {
		st_free(r->alloc, elems);
		return bad(err, "schema", t);
	}
	w.r = r;
	w.elems = elems;
	w.n_elems = n;
	w.mapping = mapping;
	rc = walk(&w, &i, 0, 0, 0, false, err);
	if (rc == 0 && i != n)
		rc = fl_err_set(err, FL_ERR_BAD_REQUEST,
		                "parquet: the schema has %zu elements outside the root", n - i);
	if (rc == 0 && r->n_leaves == 0)
		rc = fl_err_set(err, FL_ERR_BAD_REQUEST, "parquet: the schema has no columns");
	st_free(r->alloc, elems);
	return rc;
}

static void read_column_meta(struct st_thrift_reader *t, uint8_t type, struct chunk_meta *c,
                             int *ptype, int64_t *data_off, int64_t *dict_off, int64_t *compressed)
{
	int16_t id;
	uint8_t ft;

	st_thrift_enter(t, type);
	while (st_thrift_field(t, &id, &ft)) {
		switch (id) {
		case 1: *ptype = st_thrift_read_i32(t, ft); break;
		case 4: c->codec = st_thrift_read_i32(t, ft); break;
		case 5: c->num_values = st_thrift_read_i64(t, ft); break;
		case 7: *compressed = st_thrift_read_i64(t, ft); break;
		case 9: *data_off = st_thrift_read_i64(t, ft); break;
		case 11: *dict_off = st_thrift_read_i64(t, ft); break;
		default: st_thrift_skip(t, ft); break;
		}
	}
}

static int read_chunk(struct st_parquet_reader *r, struct st_thrift_reader *t, size_t g, size_t k,
                      struct chunk_meta *c, struct fl_err *err)
{
	int16_t id;
	uint8_t ft;
	bool has_meta = false, external = false;
	int ptype = PT_NONE;
	int64_t data_off = -1, dict_off = -1, compressed = -1;
	const struct leaf *l = &r->leaves[k];

	st_thrift_enter(t, ST_THRIFT_STRUCT);
	while (st_thrift_field(t, &id, &ft)) {
		if (id == 1) {
			external = true;
			st_thrift_skip(t, ft);
		} else if (id == 3) {
			has_meta = true;
			read_column_meta(t, ft, c, &ptype, &data_off, &dict_off, &compressed);
		} else {
			st_thrift_skip(t, ft);
		}
	}
	if (t->why != NULL)
		return bad(err, "row group", t);
	if (external)
		return fl_err_set(err, FL_ERR_UNSUPPORTED,
		                  "parquet: column %s in row group %zu lives in another file",
		                  l->path, g);
	if (!has_meta || ptype != l->ptype || data_off < 4 || compressed < 0 || c->num_values < 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "parquet: column %s in row group %zu has missing or inconsistent "
		                  "metadata",
		                  l->path, g);
	/* Some writers store dictionary_page_offset 0 for "none". */
	c->start = (uint64_t)data_off;
	if (dict_off >= 4 && dict_off < data_off)
		c->start = (uint64_t)dict_off;
	c->len = (uint64_t)compressed;
	if (c->start > r->data_end || c->len > r->data_end - c->start)
		return fl_err_set(
		        err, FL_ERR_BAD_REQUEST,
		        "parquet: column %s in row group %zu claims bytes %llu..%llu, past "
		        "the data (%llu bytes)",
		        l->path, g, (unsigned long long)c->start,
		        (unsigned long long)(c->start + c->len), (unsigned long long)r->data_end);
	return 0;
}

static int read_row_groups(struct st_parquet_reader *r, struct st_thrift_reader *t, uint8_t type,
                           struct fl_err *err)
{
	uint8_t elem;
	size_t n = st_thrift_read_list(t, type, &elem);

	if (t->why != NULL || (n > 0 && elem != ST_THRIFT_STRUCT))
		return bad(err, "row groups", t);
	r->rgs = st_calloc(r->alloc, n ? n : 1, sizeof(*r->rgs));
	if (r->rgs == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "parquet: out of memory");
	for (size_t g = 0; g < n; g++) {
		struct row_group *rg = &r->rgs[g];
		int16_t id;
		uint8_t ft;
		size_t n_chunks = 0;
		bool has_rows = false;

		r->n_rgs++;
		rg->chunks = st_calloc(r->alloc, r->n_leaves, sizeof(*rg->chunks));
		if (rg->chunks == NULL)
			return fl_err_set(err, FL_ERR_NOMEM, "parquet: out of memory");
		st_thrift_enter(t, ST_THRIFT_STRUCT);
		while (st_thrift_field(t, &id, &ft)) {
			if (id == 1) {
				n_chunks = st_thrift_read_list(t, ft, &elem);
				if (t->why == NULL && (n_chunks != r->n_leaves ||
				                       (n_chunks > 0 && elem != ST_THRIFT_STRUCT)))
					return fl_err_set(err, FL_ERR_BAD_REQUEST,
					                  "parquet: row group %zu has %zu column "
					                  "chunks for %zu columns",
					                  g, n_chunks, r->n_leaves);
				for (size_t k = 0; k < n_chunks && t->why == NULL; k++) {
					if (read_chunk(r, t, g, k, &rg->chunks[k], err) != 0)
						return -1;
				}
			} else if (id == 3) {
				rg->num_rows = st_thrift_read_i64(t, ft);
				has_rows = true;
			} else {
				st_thrift_skip(t, ft);
			}
		}
		if (t->why != NULL)
			return bad(err, "row group", t);
		if (n_chunks != r->n_leaves || !has_rows || rg->num_rows < 0)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "parquet: row group %zu has no columns or no row count",
			                  g);
	}
	return 0;
}

static int read_kv(struct st_parquet_reader *r, struct st_thrift_reader *t, uint8_t type,
                   struct fl_err *err)
{
	uint8_t elem;
	size_t n = st_thrift_read_list(t, type, &elem);

	if (t->why != NULL || (n > 0 && elem != ST_THRIFT_STRUCT))
		return bad(err, "key/value metadata", t);
	r->kv = st_calloc(r->alloc, n ? 2 * n : 1, sizeof(*r->kv));
	if (r->kv == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "parquet: out of memory");
	for (size_t i = 0; i < n; i++) {
		const uint8_t *p[2] = {NULL, NULL};
		size_t len[2] = {0, 0};
		int16_t id;
		uint8_t ft;

		st_thrift_enter(t, ST_THRIFT_STRUCT);
		while (st_thrift_field(t, &id, &ft)) {
			if (id == 1 || id == 2)
				st_thrift_read_binary(t, ft, &p[id - 1], &len[id - 1]);
			else
				st_thrift_skip(t, ft);
		}
		if (t->why != NULL || p[0] == NULL)
			return bad(err, "key/value metadata", t);
		r->n_kv++;
		r->kv[2 * i] = st_memdup(r->alloc, p[0], len[0]);
		r->kv[2 * i + 1] = p[1] ? st_memdup(r->alloc, p[1], len[1]) : NULL;
		if (r->kv[2 * i] == NULL || (p[1] != NULL && r->kv[2 * i + 1] == NULL))
			return fl_err_set(err, FL_ERR_NOMEM, "parquet: out of memory");
	}
	return 0;
}

static int read_footer(struct st_parquet_reader *r, const struct st_name_mapping *mapping,
                       struct fl_err *err)
{
	struct st_thrift_reader t;
	int16_t id;
	uint8_t ft;
	bool has_schema = false, has_rows = false, has_rgs = false;
	int64_t sum = 0;

	st_thrift_reader_init(&t, r->footer, r->footer_len);
	while (st_thrift_field(&t, &id, &ft)) {
		switch (id) {
		case 2:
			if (has_schema)
				return bad(err, "footer (two schemas)", &t);
			if (read_schema(r, &t, ft, mapping, err) != 0)
				return -1;
			has_schema = true;
			break;
		case 3:
			r->num_rows = st_thrift_read_i64(&t, ft);
			has_rows = true;
			break;
		case 4:
			/* The thrift field order puts the schema first; writers
			 * follow it, and the chunks need the leaves. */
			if (!has_schema || has_rgs)
				return bad(err, "footer (row groups before the schema)", &t);
			if (read_row_groups(r, &t, ft, err) != 0)
				return -1;
			has_rgs = true;
			break;
		case 5:
			if (r->kv != NULL)
				return bad(err, "footer (two key/value lists)", &t);
			if (read_kv(r, &t, ft, err) != 0)
				return -1;
			break;
		default: st_thrift_skip(&t, ft); break;
		}
	}
	if (t.why != NULL)
		return bad(err, "footer", &t);
	if (!has_schema || !has_rows || !has_rgs || r->num_rows < 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "parquet: the footer lacks the schema, row count or row groups");
	for (size_t g = 0; g < r->n_rgs; g++) {
		if (r->rgs[g].num_rows > INT64_MAX - sum)
			return fl_err_set(err, FL_ERR_BAD_REQUEST, "parquet: row counts overflow");
		sum += r->rgs[g].num_rows;
	}
	if (sum != r->num_rows)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "parquet: the footer claims %lld rows, its row groups hold %lld",
		                  (long long)r->num_rows, (long long)sum);
	/* Each leaf's bytes on disk (Iceberg's column_sizes), saturating: row
	 * groups may claim overlapping ranges. */
	for (size_t k = 0; k < r->n_leaves; k++) {
		int64_t bytes = 0;

		for (size_t g = 0; g < r->n_rgs; g++) {
			uint64_t len = r->rgs[g].chunks[k].len;

			bytes = len > (uint64_t)(INT64_MAX - bytes) ? INT64_MAX
			                                            : bytes + (int64_t)len;
		}
		r->leaves[k].pub.compressed_size = bytes;
	}
	return 0;
}

/* ---- open / free ------------------------------------------------------------ */

static void release_rg(struct st_parquet_reader *r)
{
	for (size_t j = 0; j < r->n_cols; j++) {
		struct pcol *c = &r->cols[j];

		st_free(r->alloc, c->chunk);
		st_free(r->alloc, c->dict_buf);
		st_free(r->alloc, c->dict);
		st_free(r->alloc, c->page_buf);
		st_free(r->alloc, c->dec_buf);
		st_free(r->alloc, c->dec_raw);
		c->dec_buf = NULL;
		c->dec_raw = NULL;
		for (size_t k = 0; k < c->n_held; k++)
			st_free(r->alloc, c->held[k]);
		c->n_held = 0;
		c->chunk = NULL;
		c->dict_buf = NULL;
		c->dict = NULL;
		c->n_dict = 0;
		c->page_buf = NULL;
		c->page_left = 0;
		c->chunk_len = c->pos = 0;
		c->values_left = 0;
	}
	r->rg_loaded = false;
}

static void free_cols(struct st_parquet_reader *r, struct pcol *cols, size_t n)
{
	for (size_t j = 0; j < n; j++) {
		st_free(r->alloc, cols[j].out);
		st_free(r->alloc, cols[j].held);
	}
	st_free(r->alloc, cols);
}

void st_parquet_reader_free(struct st_parquet_reader *r)
{
	if (r == NULL)
		return;
	release_rg(r);
	free_cols(r, r->cols, r->n_cols);
	st_free(r->alloc, r->colv);
	for (size_t i = 0; i < r->n_leaves; i++)
		st_free(r->alloc, r->leaves[i].path);
	st_free(r->alloc, r->leaves);
	for (size_t g = 0; g < r->n_rgs; g++)
		st_free(r->alloc, r->rgs[g].chunks);
	st_free(r->alloc, r->rgs);
	for (size_t i = 0; i < 2 * r->n_kv; i++)
		st_free(r->alloc, r->kv[i]);
	st_free(r->alloc, r->kv);
	st_free(r->alloc, r->footer);
	if (r->zstd != NULL)
		ZSTD_freeDCtx(r->zstd);
	if (r->zinit)
		inflateEnd(&r->zs);
	st_free(r->alloc, r);
}

int st_parquet_reader_open(const struct st_parquet_source *src,
                           const struct st_parquet_reader_opts *opts,
                           struct st_parquet_reader **out, struct fl_err *err)
{
	static const struct st_parquet_reader_opts defaults = {0};
	const struct st_parquet_reader_opts *o = opts ? opts : &defaults;
	size_t max_footer = o->max_footer_bytes ? o->max_footer_bytes : DEFAULT_MAX_FOOTER;
	struct st_parquet_reader *r;
	uint8_t tail[8], head[4];
	uint32_t flen;
	struct st_parquet_want *want = NULL;
	size_t n_want = 0;

	if (src->size < 12)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "parquet: %llu bytes is too short for a Parquet file",
		                  (unsigned long long)src->size);
	if (src->read_at(src->ctx, 0, head, 4, err) != 0 ||
	    src->read_at(src->ctx, src->size - 8, tail, 8, err) != 0)
		return -1;
	if (memcmp(head, "PAR1", 4) != 0 || memcmp(tail + 4, "PAR1", 4) != 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "parquet: not a Parquet file (no PAR1 magic at both ends)");
	flen = le32(tail);
	if (flen == 0 || flen > src->size - 12)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "parquet: the footer claims %u bytes of a %llu-byte file", flen,
		                  (unsigned long long)src->size);
	if (flen > max_footer)
		return fl_err_set(err, FL_ERR_TOO_LARGE,
		                  "parquet: a footer of %u bytes is over the limit of %zu", flen,
		                  max_footer);
	r = st_calloc(o->alloc, 1, sizeof(*r));
	if (r == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "parquet: out of memory");
	r->alloc = o->alloc;
	r->src = *src;
	r->max_row_group = o->max_row_group_bytes ? o->max_row_group_bytes : DEFAULT_MAX_ROW_GROUP;
	r->max_page = o->max_page_bytes ? o->max_page_bytes : DEFAULT_MAX_PAGE;
	r->batch_rows = o->batch_rows ? o->batch_rows : DEFAULT_BATCH_ROWS;
	if (r->max_page > INT32_MAX)
		r->max_page = INT32_MAX;
	r->data_end = src->size - 8 - flen;
	r->footer_len = flen;
	if (read_range(r, r->data_end, flen, &r->footer, err) != 0 ||
	    read_footer(r, o->name_mapping, err) != 0)
		goto fail;
	/* The default projection: every readable leaf with a unique id, as the
	 * type the file gives it. */
	want = st_calloc(r->alloc, r->n_leaves, sizeof(*want));
	if (want == NULL) {
		fl_err_set(err, FL_ERR_NOMEM, "parquet: out of memory");
		goto fail;
	}
	for (size_t i = 0; i < r->n_leaves; i++) {
		const struct leaf *l = &r->leaves[i];
		bool dup = false;

		for (size_t k = 0; k < r->n_leaves; k++)
			dup |= k != i && r->leaves[k].pub.field_id == l->pub.field_id;
		if (!l->pub.readable || l->pub.field_id < 0 || dup)
			continue;
		want[n_want].field_id = l->pub.field_id;
		want[n_want].type = l->pub.type;
		n_want++;
	}
	if (st_parquet_reader_project(r, want, n_want, err) != 0)
		goto fail;
	st_free(r->alloc, want);
	*out = r;
	return 0;
fail:
	st_free(r->alloc, want);
	st_parquet_reader_free(r);
	return -1;
}

/* ---- projection ------------------------------------------------------------ */

/* How a leaf's values become values of type want, or -1 when they cannot. */
static int plan_conv(const struct leaf *l, const struct st_type *want, struct pcol *c)
{
	const struct st_type *have = &l->pub.type;
	enum st_type_id w = want->id, h = have->id;
	bool ts_h = h == ST_TYPE_TIMESTAMP || h == ST_TYPE_TIMESTAMPTZ;
	bool ts_w = w == ST_TYPE_TIMESTAMP || w == ST_TYPE_TIMESTAMPTZ;
	bool tsn_h = h == ST_TYPE_TIMESTAMP_NS || h == ST_TYPE_TIMESTAMPTZ_NS;
	bool tsn_w = w == ST_TYPE_TIMESTAMP_NS || w == ST_TYPE_TIMESTAMPTZ_NS;

	c->mult = 1;
	if (w == ST_TYPE_DECIMAL) {
		if (h != ST_TYPE_DECIMAL || want->scale != have->scale ||
		    want->precision < have->precision)
			return -1;
		c->conv = l->ptype == PT_INT32   ? CV_I32_DEC
		          : l->ptype == PT_INT64 ? CV_I64_DEC
		                                 : CV_BYTES_DEC;
		return 0;
	}
	if (h == ST_TYPE_DECIMAL)
		return -1;
	if (l->is_int96) {
		if (!ts_w && !tsn_w)
			return -1;
		c->conv = CV_I96_TS;
		c->mult = tsn_w ? 1 : 1000; /* divisor: nanos to micros */
		return 0;
	}
	if ((ts_h && ts_w) || (tsn_h && tsn_w) || (ts_h && tsn_w) ||
	    (h == w && h == ST_TYPE_TIME)) {
		/* Scale the file's unit to the wanted one; never down. */
		int64_t to = tsn_w ? 1000000000 : 1000000;
		int64_t from = l->unit == UNIT_MILLIS   ? 1000
		               : l->unit == UNIT_MICROS ? 1000000
		                                        : 1000000000;

		if (from > to)
			return -1;
		c->mult = to / from;
		c->conv = l->ptype == PT_INT32 ? CV_I32_LONG : CV_I64;
		return 0;
	}
	switch (w) {
	case ST_TYPE_BOOLEAN:
		if (h != w)
			return -1;
		c->conv = CV_BOOL;
		return 0;
	case ST_TYPE_INT:
	case ST_TYPE_DATE:
		if (h != w)
			return -1;
		c->conv = CV_I32;
		return 0;
	case ST_TYPE_LONG:
		if (h == ST_TYPE_INT)
			c->conv = CV_I32_LONG;
		else if (h == ST_TYPE_LONG)
			c->conv = l->is_uint32 ? CV_U32_LONG : CV_I64;
		else
			return -1;
		return 0;
	case ST_TYPE_FLOAT:
		if (h != w)
			return -1;
		c->conv = CV_F32;
		return 0;
	case ST_TYPE_DOUBLE:
		if (h == ST_TYPE_FLOAT)
			c->conv = CV_F32_F64;
		else if (h == ST_TYPE_DOUBLE)
			c->conv = CV_F64;
		else
			return -1;
		return 0;
	case ST_TYPE_STRING:
		if (h != ST_TYPE_STRING && h != ST_TYPE_BINARY)
			return -1;
		c->conv = CV_STRING;
		return 0;
	case ST_TYPE_BINARY:
		if (h != ST_TYPE_BINARY && h != ST_TYPE_STRING)
			return -1;
		c->conv = CV_BYTES;
		return 0;
	case ST_TYPE_UUID:
		if (h != ST_TYPE_UUID && !(h == ST_TYPE_FIXED && have->length == 16))
			return -1;
		c->conv = CV_BYTES;
		return 0;
	case ST_TYPE_FIXED:
		if (!((h == ST_TYPE_FIXED || h == ST_TYPE_UUID) && l->type_length > 0 &&
		      (uint32_t)l->type_length == want->length))
			return -1;
		c->conv = CV_BYTES;
		return 0;
	default: return -1;
	}
}

int st_parquet_reader_project(struct st_parquet_reader *r, const struct st_parquet_want *want,
                              size_t n, struct fl_err *err)
{
	struct pcol *cols = st_calloc(r->alloc, n ? n : 1, sizeof(*cols));
	struct st_value **colv = st_calloc(r->alloc, n ? n : 1, sizeof(*colv));
	char tn[64], hn[64];

	if (cols == NULL || colv == NULL)
		goto nomem;
	for (size_t j = 0; j < n; j++) {
		struct pcol *c = &cols[j];

		c->leaf = SIZE_MAX;
		c->type = want[j].type;
		for (size_t i = 0; i < r->n_leaves; i++) {
			if (r->leaves[i].pub.field_id != want[j].field_id)
				continue;
			if (c->leaf != SIZE_MAX) {
				fl_err_set(err, FL_ERR_BAD_REQUEST,
				           "parquet: field id %d names two columns, %s and %s",
				           (int)want[j].field_id, r->leaves[c->leaf].path,
				           r->leaves[i].path);
				goto fail;
			}
			c->leaf = i;
		}
		if (c->leaf == SIZE_MAX) {
			if (want[j].required) {
				fl_err_set(
				        err, FL_ERR_BAD_REQUEST,
				        "parquet: the file has no column with field id %d, which "
				        "is required",
				        (int)want[j].field_id);
				goto fail;
			}
		} else {
			const struct leaf *l = &r->leaves[c->leaf];

			if (!l->pub.readable) {
				fl_err_set(err, FL_ERR_UNSUPPORTED,
				           "parquet: column %s (field id %d) cannot be read: %s",
				           l->path, (int)l->pub.field_id, l->pub.why);
				goto fail;
			}
			if (plan_conv(l, &want[j].type, c) != 0) {
				st_type_format(&want[j].type, tn, sizeof(tn));
				st_type_format(&l->pub.type, hn, sizeof(hn));
				fl_err_set(
				        err, FL_ERR_BAD_REQUEST,
				        "parquet: column %s holds %s, which cannot be read as %s",
				        l->path, hn, tn);
				goto fail;
			}
		}
		c->out = st_calloc(r->alloc, r->batch_rows, sizeof(*c->out));
		if (c->out == NULL)
			goto nomem;
		colv[j] = c->out;
	}
	release_rg(r);
	free_cols(r, r->cols, r->n_cols);
	st_free(r->alloc, r->colv);
	r->cols = cols;
	r->colv = colv;
	r->n_cols = n;
	r->rg = 0;
	r->rg_left = 0;
	r->broken = false;
	return 0;
nomem:
	fl_err_set(err, FL_ERR_NOMEM, "parquet: out of memory");
fail:
	if (cols != NULL)
		free_cols(r, cols, n);
	st_free(r->alloc, colv);
	return -1;
}

/* ---- pages ------------------------------------------------------------------- */

static int decompress(struct st_parquet_reader *r, int codec, const uint8_t *in, size_t n,
                      uint8_t *out, size_t want, struct fl_err *err)
{
	switch (codec) {
	case CODEC_UNCOMPRESSED:
		if (n != want)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "an uncompressed page of %zu bytes claims %zu", n, want);
		if (n > 0)
			memcpy(out, in, n);
		return 0;
	case CODEC_ZSTD: {
		size_t got;

		if (r->zstd == NULL) {
			ZSTD_customMem cm = {st_alloc_hook_zstd, st_alloc_hook_free,
			                     (void *)r->alloc};

			r->zstd = r->alloc ? ZSTD_createDCtx_advanced(cm) : ZSTD_createDCtx();
			if (r->zstd == NULL)
				return fl_err_set(err, FL_ERR_NOMEM, "cannot start zstd");
		}
		got = ZSTD_decompressDCtx(r->zstd, out, want, in, n);
		if (ZSTD_isError(got) || got != want)
			return fl_err_set(
			        err, FL_ERR_BAD_REQUEST,
			        "zstd data does not decompress to the %zu bytes its header "
			        "states (%s)",
			        want, ZSTD_isError(got) ? ZSTD_getErrorName(got) : "size");
		return 0;
	}
	case CODEC_GZIP: {
		int rc;

		if (n > UINT_MAX || want > UINT_MAX)
			return fl_err_set(err, FL_ERR_TOO_LARGE, "a gzip page of %zu bytes", n);
		if (!r->zinit) {
			r->zs.zalloc = st_alloc_hook_zlib;
			r->zs.zfree = st_alloc_hook_free;
			r->zs.opaque = (void *)r->alloc;
			/* 15 + 32: a gzip member or a zlib stream, as writers differ. */
			if (inflateInit2(&r->zs, 15 + 32) != Z_OK)
				return fl_err_set(err, FL_ERR_NOMEM, "cannot start gzip");
			r->zinit = true;
		} else if (inflateReset(&r->zs) != Z_OK) {
			return fl_err_set(err, FL_ERR_INTERNAL, "gzip reset failed");
		}
		r->zs.next_in = (Bytef *)(uintptr_t)in;
		r->zs.avail_in = (uInt)n;
		r->zs.next_out = out;
		r->zs.avail_out = (uInt)want;
		rc = inflate(&r->zs, Z_FINISH);
		if (rc == Z_MEM_ERROR)
			return fl_err_set(err, FL_ERR_NOMEM, "out of memory in gzip");
		if (rc != Z_STREAM_END || r->zs.total_out != want)
			return fl_err_set(
			        err, FL_ERR_BAD_REQUEST,
			        "gzip data does not decompress to the %zu bytes its header "
			        "states",
			        want);
		return 0;
	}
#ifdef ST_HAVE_SNAPPY
	case CODEC_SNAPPY: {
		const struct st_libsnappy *sn = st_libsnappy_load(err);
		size_t len;

		if (sn == NULL)
			return -1;
		if (sn->uncompressed_length((const char *)in, n, &len) != SNAPPY_OK || len != want)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "snappy data does not decompress to the %zu bytes its "
			                  "header states",
			                  want);
		if (sn->uncompress((const char *)in, n, (char *)out, &len) != SNAPPY_OK ||
		    len != want)
			return fl_err_set(err, FL_ERR_BAD_REQUEST, "snappy data is corrupt");
		return 0;
	}
#endif
	default: return fl_err_set(err, FL_ERR_UNSUPPORTED, "codec %d is not supported", codec);
	}
}

struct page_header {
	int type;
	int32_t uncompressed, compressed;
	int32_t num_values;
	int encoding, def_encoding;
	int32_t def_len, rep_len;
	bool is_compressed;
	bool has_sub;
};

static void read_sub(struct st_thrift_reader *t, uint8_t type, struct page_header *h, int which)
{
	int16_t id;
	uint8_t ft;

	h->has_sub = true;
	st_thrift_enter(t, type);
	while (st_thrift_field(t, &id, &ft)) {
		if (id == 1)
			h->num_values = st_thrift_read_i32(t, ft);
		else if (which != PAGE_DATA_V2 && id == 2)
			h->encoding = st_thrift_read_i32(t, ft);
		else if (which == PAGE_DATA && id == 3)
			h->def_encoding = st_thrift_read_i32(t, ft);
		else if (which == PAGE_DATA_V2 && id == 4)
			h->encoding = st_thrift_read_i32(t, ft);
		else if (which == PAGE_DATA_V2 && id == 5)
			h->def_len = st_thrift_read_i32(t, ft);
		else if (which == PAGE_DATA_V2 && id == 6)
			h->rep_len = st_thrift_read_i32(t, ft);
		else if (which == PAGE_DATA_V2 && id == 7)
			h->is_compressed = st_thrift_read_bool(t, ft);
		else
			st_thrift_skip(t, ft);
	}
}

/* Parses the page header at c->pos; *hlen receives its size. */
static int read_page_header(struct pcol *c, struct page_header *h, size_t *hlen, struct fl_err *err)
{
	struct st_thrift_reader t;
	int16_t id;
	uint8_t ft;

	memset(h, 0, sizeof(*h));
	h->type = -1;
	h->is_compressed = true;
	h->def_encoding = ENC_RLE;
	st_thrift_reader_init(&t, c->chunk + c->pos, c->chunk_len - c->pos);
	while (st_thrift_field(&t, &id, &ft)) {
		switch (id) {
		case 1: h->type = st_thrift_read_i32(&t, ft); break;
		case 2: h->uncompressed = st_thrift_read_i32(&t, ft); break;
		case 3: h->compressed = st_thrift_read_i32(&t, ft); break;
		case 5:
		case 7:
		case 8:
			if (id == 5 && h->type == PAGE_DATA)
				read_sub(&t, ft, h, PAGE_DATA);
			else if (id == 7 && h->type == PAGE_DICTIONARY)
				read_sub(&t, ft, h, PAGE_DICTIONARY);
			else if (id == 8 && h->type == PAGE_DATA_V2)
				read_sub(&t, ft, h, PAGE_DATA_V2);
			else
				st_thrift_skip(&t, ft);
			break;
		default: st_thrift_skip(&t, ft); break;
		}
	}
	if (t.why != NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "a malformed page header: %s", t.why);
	*hlen = (size_t)(t.p - t.start);
	if (h->uncompressed < 0 || h->compressed < 0 ||
	    (size_t)h->compressed > c->chunk_len - c->pos - *hlen)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "a page claims %d bytes, past the end of its chunk",
		                  (int)h->compressed);
	if ((h->type == PAGE_DATA || h->type == PAGE_DICTIONARY || h->type == PAGE_DATA_V2) &&
	    (!h->has_sub || h->num_values < 0))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "a page header without its value count");
	return 0;
}

/* Splits PLAIN entries of the dictionary page into c->dict. */
static int load_dict(struct st_parquet_reader *r, struct pcol *c, const struct leaf *l,
                     const uint8_t *p, size_t n, int32_t count, struct fl_err *err)
{
	const uint8_t *end = p + n;
	size_t width = l->ptype == PT_INT32 || l->ptype == PT_FLOAT    ? 4
	               : l->ptype == PT_INT64 || l->ptype == PT_DOUBLE ? 8
	               : l->ptype == PT_INT96                          ? 12
	               : l->ptype == PT_FLBA                           ? (size_t)l->type_length
	                                                               : 0;

	/* Every entry takes a byte at least (a boolean a bit). */
	if ((uint64_t)count > (uint64_t)n * 8)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "a dictionary of %d entries in %zu bytes", (int)count, n);
	c->dict = st_calloc(r->alloc, count ? (size_t)count : 1, sizeof(*c->dict));
	if (c->dict == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	for (int32_t i = 0; i < count; i++) {
		struct raw *e = &c->dict[i];

		if (l->ptype == PT_BOOLEAN) {
			if ((size_t)i / 8 >= n)
				goto short_dict;
			e->p = &bool_bytes[(p[i / 8] >> (i % 8)) & 1];
			e->n = 1;
		} else if (l->ptype == PT_BYTE_ARRAY) {
			uint32_t len;

			if (end - p < 4)
				goto short_dict;
			len = le32(p);
			p += 4;
			if (len > (size_t)(end - p))
				goto short_dict;
			e->p = p;
			e->n = len;
			p += len;
		} else {
			if ((size_t)(end - p) < width)
				goto short_dict;
			e->p = p;
			e->n = (uint32_t)width;
			p += width;
		}
	}
	c->n_dict = (size_t)count;
	return 0;
short_dict:
	return fl_err_set(err, FL_ERR_BAD_REQUEST,
	                  "the dictionary page holds fewer than its %d entries", (int)count);
}

/* Keeps *buf alive until the next batch (the current one may point into
 * it) and clears *buf. */
static int hold(struct st_parquet_reader *r, struct pcol *c, uint8_t **buf)
{
	if (*buf == NULL)
		return 0;
	if (c->n_held == c->cap_held) {
		size_t cap = c->cap_held ? c->cap_held * 2 : 4;
		uint8_t **h = st_realloc(r->alloc, c->held, cap * sizeof(*h));

		if (h == NULL)
			return -1;
		c->held = h;
		c->cap_held = cap;
	}
	c->held[c->n_held++] = *buf;
	*buf = NULL;
	return 0;
}

/* Finishes with the current page's buffers. */
static int hold_page(struct st_parquet_reader *r, struct pcol *c)
{
	st_free(r->alloc, c->dec_raw);
	c->dec_raw = NULL;
	c->dec_n = c->dec_i = 0;
	if (hold(r, c, &c->page_buf) != 0 || hold(r, c, &c->dec_buf) != 0)
		return -1;
	return 0;
}

/* ---- DELTA_* and BYTE_STREAM_SPLIT (Encodings.md) ------------------------
 *
 * These are decoded a page at a time: the count of non-null values comes
 * from the definition levels, and the decoded values may not take more
 * than max_page bytes. */

static int cur_uvarint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	uint64_t x = 0;

	for (int shift = 0; shift < 64 && *p < end; shift += 7) {
		uint8_t b = *(*p)++;

		x |= (uint64_t)(b & 0x7f) << shift;
		if ((b & 0x80) == 0) {
			*v = x;
			return 0;
		}
	}
	return -1;
}

/* DELTA_BINARY_PACKED at [*p, end): exactly want values into out (wrapping
 * two's complement arithmetic, as writers compute the deltas), leaving *p
 * after the last miniblock that holds one of them.
 *   header  uvarint block size, uvarint miniblocks per block, uvarint
 *           total count, zig-zag first value
 *   block   zig-zag min delta, one bit width byte per miniblock, then
 *           the miniblocks, each (block size / miniblocks) values packed
 *           LSB first; miniblocks past the last value are left out */
static int dbp_decode(const uint8_t **p, const uint8_t *end, uint64_t *out, size_t want,
                      struct fl_err *err)
{
	uint64_t block, minis, total, first, per_mini, prev;
	size_t got = 0;

	if (cur_uvarint(p, end, &block) != 0 || cur_uvarint(p, end, &minis) != 0 ||
	    cur_uvarint(p, end, &total) != 0 || cur_uvarint(p, end, &first) != 0)
		goto bad;
	if (block == 0 || minis == 0 || block % minis != 0 || block > (1u << 20) ||
	    (per_mini = block / minis) % 8 != 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "DELTA_BINARY_PACKED blocks of %llu values in %llu miniblocks",
		                  (unsigned long long)block, (unsigned long long)minis);
	if (total < want)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "DELTA_BINARY_PACKED holds %llu values, the page needs %zu",
		                  (unsigned long long)total, want);
	if (want == 0)
		return 0;
	prev = (uint64_t)st_zigzag_decode(first);
	out[got++] = prev;
	while (got < want) {
		uint64_t zmin, min;
		const uint8_t *widths;

		if (cur_uvarint(p, end, &zmin) != 0 || (uint64_t)(end - *p) < minis)
			goto bad;
		min = (uint64_t)st_zigzag_decode(zmin);
		widths = *p;
		*p += minis;
		for (uint64_t m = 0; m < minis && got < want; m++) {
			unsigned w = widths[m];
			uint64_t bit = 0;
			size_t bytes = (size_t)(per_mini * w / 8);

			if (w > 64)
				return fl_err_set(err, FL_ERR_BAD_REQUEST,
				                  "a miniblock bit width of %u", w);
			for (uint64_t k = 0; k < per_mini && got < want; k++) {
				uint64_t d = 0;

				for (unsigned b = 0; b < w; b++, bit++) {
					size_t at = (size_t)(bit / 8);

					if (at >= (size_t)(end - *p))
						goto bad;
					d |= (uint64_t)(((*p)[at] >> (bit % 8)) & 1) << b;
				}
				prev += min + d;
				out[got++] = prev;
			}
			/* The last miniblock is padded to full size; tolerate
			 * writers that cut it. */
			*p += bytes <= (size_t)(end - *p) ? bytes : (size_t)(end - *p);
		}
	}
	return 0;
bad:
	return fl_err_set(err, FL_ERR_BAD_REQUEST, "DELTA_BINARY_PACKED data ends early");
}

/* Allocates the int64 scratch for n values, within the page limit. */
static uint64_t *alloc_u64(struct st_parquet_reader *r, size_t n, struct fl_err *err)
{
	uint64_t *v;

	if (n > r->max_page / sizeof(uint64_t)) {
		fl_err_set(err, FL_ERR_TOO_LARGE, "a page of %zu values is over the limit", n);
		return NULL;
	}
	v = st_malloc(r->alloc, n ? n * sizeof(uint64_t) : 1);
	if (v == NULL)
		fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	return v;
}

/* DELTA_LENGTH_BYTE_ARRAY: n lengths (DBP), then the bytes back to back;
 * fills c->dec_raw pointing into the page and leaves *p after the bytes. */
static int dlba_decode(struct st_parquet_reader *r, struct pcol *c, const uint8_t **p,
                       const uint8_t *end, size_t n, struct fl_err *err)
{
	uint64_t *len = alloc_u64(r, n, err);
	int rc = -1;

	if (len == NULL)
		return -1;
	if (dbp_decode(p, end, len, n, err) != 0)
		goto out;
	c->dec_raw = st_calloc(r->alloc, n ? n : 1, sizeof(*c->dec_raw));
	if (c->dec_raw == NULL) {
		fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if (len[i] > (uint64_t)(end - *p)) {
			fl_err_set(err, FL_ERR_BAD_REQUEST,
			           "DELTA_LENGTH_BYTE_ARRAY lengths past the page");
			goto out;
		}
		c->dec_raw[i].p = *p;
		c->dec_raw[i].n = (uint32_t)len[i];
		*p += len[i];
	}
	rc = 0;
out:
	st_free(r->alloc, len);
	return rc;
}

/* DELTA_BYTE_ARRAY: n prefix lengths (DBP), then the suffixes
 * (DELTA_LENGTH_BYTE_ARRAY); value i is the first prefix[i] bytes of value
 * i - 1 followed by suffix i.  The values are rebuilt into c->dec_buf. */
static int dba_decode(struct st_parquet_reader *r, struct pcol *c, const uint8_t *p,
                      const uint8_t *end, size_t n, struct fl_err *err)
{
	uint64_t *pre = alloc_u64(r, n, err);
	uint64_t total = 0, prev_len = 0;
	uint8_t *q;
	int rc = -1;

	if (pre == NULL)
		return -1;
	if (dbp_decode(&p, end, pre, n, err) != 0 || dlba_decode(r, c, &p, end, n, err) != 0)
		goto out;
	for (size_t i = 0; i < n; i++) {
		if (pre[i] > prev_len) {
			fl_err_set(err, FL_ERR_BAD_REQUEST,
			           "DELTA_BYTE_ARRAY prefix longer than the previous value");
			goto out;
		}
		prev_len = pre[i] + c->dec_raw[i].n;
		total += prev_len;
		if (prev_len > UINT32_MAX || total > r->max_page) {
			fl_err_set(err, FL_ERR_TOO_LARGE,
			           "DELTA_BYTE_ARRAY values over the page limit");
			goto out;
		}
	}
	c->dec_buf = st_malloc(r->alloc, total ? (size_t)total : 1);
	if (c->dec_buf == NULL) {
		fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		goto out;
	}
	q = c->dec_buf;
	for (size_t i = 0; i < n; i++) {
		const uint8_t *prev = i ? c->dec_raw[i - 1].p : NULL;

		if (pre[i] > 0)
			memcpy(q, prev, (size_t)pre[i]);
		if (c->dec_raw[i].n > 0)
			memcpy(q + pre[i], c->dec_raw[i].p, c->dec_raw[i].n);
		c->dec_raw[i].p = q;
		c->dec_raw[i].n += (uint32_t)pre[i];
		q += c->dec_raw[i].n;
	}
	rc = 0;
out:
	st_free(r->alloc, pre);
	return rc;
}

/* The non-null values among the page's n, from a copy of its levels. */
static int count_defined(const struct pcol *c, const struct leaf *l, int32_t n, size_t *out,
                         struct fl_err *err)
{
	struct st_rle_reader d = c->defs;
	size_t k = 0;

	if (!c->has_defs) {
		*out = (size_t)n;
		return 0;
	}
	for (int32_t i = 0; i < n; i++) {
		uint32_t v;

		if (st_rle_next(&d, &v) != 0)
			return fl_err_set(err, FL_ERR_BAD_REQUEST, "definition levels end early");
		k += v == (uint32_t)l->max_def;
	}
	*out = k;
	return 0;
}

static size_t plain_width(const struct leaf *l)
{
	switch (l->ptype) {
	case PT_BOOLEAN: return 1;
	case PT_INT32:
	case PT_FLOAT: return 4;
	case PT_INT64:
	case PT_DOUBLE: return 8;
	case PT_INT96: return 12;
	case PT_FLBA: return (size_t)l->type_length;
	default: return 0;
	}
}

/* Decodes the page's values [data, data + n) of a DELTA_* or
 * BYTE_STREAM_SPLIT encoding into dec_buf / dec_raw. */
static int decode_page_values(struct st_parquet_reader *r, struct pcol *c, const struct leaf *l,
                              int enc, const uint8_t *data, size_t n, int32_t num_values,
                              struct fl_err *err)
{
	size_t count = 0, w = plain_width(l);

	if (count_defined(c, l, num_values, &count, err) != 0)
		return -1;
	if (w > 0 && count > r->max_page / w)
		return fl_err_set(err, FL_ERR_TOO_LARGE, "a page of %zu values is over the limit",
		                  count);
	c->dec_n = count;
	c->dec_i = 0;
	c->dec_width = w;
	if (enc == ENC_DELTA_BINARY_PACKED && (l->ptype == PT_INT32 || l->ptype == PT_INT64)) {
		const uint8_t *p = data;
		uint64_t *v = alloc_u64(r, count, err);

		if (v == NULL)
			return -1;
		c->dec_buf = st_malloc(r->alloc, count ? count * w : 1);
		if (c->dec_buf == NULL || dbp_decode(&p, data + n, v, count, err) != 0) {
			if (c->dec_buf == NULL)
				fl_err_set(err, FL_ERR_NOMEM, "out of memory");
			st_free(r->alloc, v);
			return -1;
		}
		for (size_t i = 0; i < count; i++) {
			for (size_t b = 0; b < w; b++)
				c->dec_buf[i * w + b] = (uint8_t)(v[i] >> (8 * b));
		}
		st_free(r->alloc, v);
		c->mode = MODE_FIXED;
		return 0;
	}
	if (enc == ENC_DELTA_LENGTH_BYTE_ARRAY && l->ptype == PT_BYTE_ARRAY) {
		const uint8_t *p = data;

		c->mode = MODE_BYTES;
		return dlba_decode(r, c, &p, data + n, count, err);
	}
	if (enc == ENC_DELTA_BYTE_ARRAY && (l->ptype == PT_BYTE_ARRAY || l->ptype == PT_FLBA)) {
		if (dba_decode(r, c, data, data + n, count, err) != 0)
			return -1;
		for (size_t i = 0; l->ptype == PT_FLBA && i < count; i++) {
			if (c->dec_raw[i].n != w)
				return fl_err_set(
				        err, FL_ERR_BAD_REQUEST,
				        "a DELTA_BYTE_ARRAY value of %u bytes in a column "
				        "of %zu",
				        c->dec_raw[i].n, w);
		}
		c->mode = MODE_BYTES;
		return 0;
	}
	if (enc == ENC_BYTE_STREAM_SPLIT && w > 0 && l->ptype != PT_BOOLEAN &&
	    l->ptype != PT_INT96) {
		/* Byte k of value i is at data[k * count + i]. */
		if (count > n / w)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "BYTE_STREAM_SPLIT data shorter than its values");
		c->dec_buf = st_malloc(r->alloc, count ? count * w : 1);
		if (c->dec_buf == NULL)
			return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		for (size_t k = 0; k < w; k++) {
			for (size_t i = 0; i < count; i++)
				c->dec_buf[i * w + k] = data[k * count + i];
		}
		c->mode = MODE_FIXED;
		return 0;
	}
	return fl_err_set(err, FL_ERR_UNSUPPORTED, "encoding %d is not supported for this column",
	                  enc);
}

/* Reads pages until a data page with values is ready. */
static int next_page(struct st_parquet_reader *r, struct pcol *c, const struct leaf *l, int codec,
                     struct fl_err *err)
{
	for (;;) {
		struct page_header h;
		size_t hlen = 0, body_len, levels = 0, out_len;
		const uint8_t *body, *data;
		uint8_t *buf = NULL;

		if (c->pos >= c->chunk_len)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "the chunk ends before its row group's values do");
		if (read_page_header(c, &h, &hlen, err) != 0)
			return -1;
		body = c->chunk + c->pos + hlen;
		body_len = (size_t)h.compressed;
		c->pos += hlen + body_len;
		if (h.type != PAGE_DATA && h.type != PAGE_DATA_V2 && h.type != PAGE_DICTIONARY)
			continue; /* index pages and unknown kinds carry no values */
		if ((size_t)h.uncompressed > r->max_page)
			return fl_err_set(err, FL_ERR_TOO_LARGE,
			                  "a page of %d bytes is over the limit of %zu",
			                  (int)h.uncompressed, r->max_page);
		if (h.type == PAGE_DICTIONARY) {
			if (c->dict != NULL)
				return fl_err_set(err, FL_ERR_BAD_REQUEST,
				                  "a second dictionary page");
			if (h.encoding != ENC_PLAIN && h.encoding != ENC_PLAIN_DICTIONARY)
				return fl_err_set(err, FL_ERR_UNSUPPORTED,
				                  "dictionary encoding %d is not supported",
				                  h.encoding);
			c->dict_buf = st_malloc(r->alloc, (size_t)h.uncompressed + 1);
			if (c->dict_buf == NULL)
				return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
			if (decompress(r, codec, body, body_len, c->dict_buf,
			               (size_t)h.uncompressed, err) != 0 ||
			    load_dict(r, c, l, c->dict_buf, (size_t)h.uncompressed, h.num_values,
			              err) != 0)
				return -1;
			continue;
		}
		if (h.num_values == 0)
			continue;
		if (h.num_values > c->values_left)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "a page of %d values is more than the chunk's %lld left",
			                  (int)h.num_values, (long long)c->values_left);
		if (hold_page(r, c) != 0)
			return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		/* v2 keeps the levels uncompressed in front of the values. */
		if (h.type == PAGE_DATA_V2) {
			if (h.def_len < 0 || h.rep_len < 0 ||
			    (size_t)h.def_len + (size_t)h.rep_len > body_len ||
			    h.def_len + h.rep_len > h.uncompressed)
				return fl_err_set(err, FL_ERR_BAD_REQUEST,
				                  "page v2 level lengths past the page");
			levels = (size_t)h.def_len + (size_t)h.rep_len;
		}
		out_len = (size_t)h.uncompressed - levels;
		if (codec == CODEC_UNCOMPRESSED || (h.type == PAGE_DATA_V2 && !h.is_compressed)) {
			if (body_len - levels != out_len)
				return fl_err_set(err, FL_ERR_BAD_REQUEST,
				                  "an uncompressed page of %zu bytes claims %zu",
				                  body_len - levels, out_len);
			data = body + levels;
		} else {
			buf = st_malloc(r->alloc, out_len + 1);
			if (buf == NULL)
				return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
			c->page_buf = buf;
			if (decompress(r, codec, body + levels, body_len - levels, buf, out_len,
			               err) != 0)
				return -1;
			data = buf;
		}
		c->has_defs = l->max_def > 0;
		if (h.type == PAGE_DATA_V2) {
			st_rle_reader_init(&c->defs, body + h.rep_len, (size_t)h.def_len,
			                   st_bit_width((uint32_t)l->max_def));
		} else if (c->has_defs) {
			uint32_t dl;

			if (h.def_encoding != ENC_RLE)
				return fl_err_set(err, FL_ERR_UNSUPPORTED,
				                  "definition level encoding %d is not supported",
				                  h.def_encoding);
			if (out_len < 4 || (dl = le32(data)) > out_len - 4)
				return fl_err_set(err, FL_ERR_BAD_REQUEST,
				                  "definition levels past the page");
			st_rle_reader_init(&c->defs, data + 4, dl,
			                   st_bit_width((uint32_t)l->max_def));
			data += 4 + dl;
			out_len -= 4 + (size_t)dl;
		}
		c->vp = data;
		c->vend = data + out_len;
		c->bool_bit = 0;
		if (h.encoding == ENC_PLAIN) {
			c->mode = MODE_PLAIN;
		} else if (h.encoding == ENC_PLAIN_DICTIONARY || h.encoding == ENC_RLE_DICTIONARY) {
			if (c->dict == NULL)
				return fl_err_set(err, FL_ERR_BAD_REQUEST,
				                  "a dictionary-encoded page without a dictionary");
			c->mode = MODE_DICT;
			/* A page of nulls only may have no index bytes at all. */
			if (out_len == 0) {
				st_rle_reader_init(&c->idx, data, 0, 0);
			} else {
				if (data[0] > 32)
					return fl_err_set(err, FL_ERR_BAD_REQUEST,
					                  "a dictionary index width of %d bits",
					                  data[0]);
				st_rle_reader_init(&c->idx, data + 1, out_len - 1, data[0]);
			}
		} else if (h.encoding == ENC_RLE && l->ptype == PT_BOOLEAN) {
			/* Booleans as a length-prefixed RLE hybrid of width 1. */
			uint32_t bl;

			if (out_len < 4 || (bl = le32(data)) > out_len - 4)
				return fl_err_set(err, FL_ERR_BAD_REQUEST,
				                  "RLE booleans past the page");
			st_rle_reader_init(&c->idx, data + 4, bl, 1);
			c->mode = MODE_BOOL_RLE;
		} else if (decode_page_values(r, c, l, h.encoding, data, out_len, h.num_values,
		                              err) != 0) {
			return -1;
		}
		c->page_left = h.num_values;
		c->values_left -= h.num_values;
		return 0;
	}
}

/* ---- values ----------------------------------------------------------------- */

static int next_raw(struct pcol *c, const struct leaf *l, struct raw *v, struct fl_err *err)
{
	size_t width;

	if (c->mode == MODE_FIXED || c->mode == MODE_BYTES) {
		if (c->dec_i >= c->dec_n)
			goto short_page;
		if (c->mode == MODE_BYTES) {
			*v = c->dec_raw[c->dec_i++];
		} else {
			v->p = c->dec_buf + c->dec_i++ * c->dec_width;
			v->n = (uint32_t)c->dec_width;
		}
		return 0;
	}
	if (c->mode == MODE_BOOL_RLE) {
		uint32_t b;

		if (st_rle_next(&c->idx, &b) != 0)
			goto short_page;
		v->p = &bool_bytes[b & 1];
		v->n = 1;
		return 0;
	}
	if (c->mode == MODE_DICT) {
		uint32_t i;

		if (st_rle_next(&c->idx, &i) != 0)
			return fl_err_set(err, FL_ERR_BAD_REQUEST, "dictionary indices end early");
		if (i >= c->n_dict)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "dictionary index %u of %zu entries", i, c->n_dict);
		*v = c->dict[i];
		return 0;
	}
	switch (l->ptype) {
	case PT_BOOLEAN:
		if (c->vp >= c->vend)
			goto short_page;
		v->p = &bool_bytes[(*c->vp >> c->bool_bit) & 1];
		v->n = 1;
		if (++c->bool_bit == 8) {
			c->bool_bit = 0;
			c->vp++;
		}
		return 0;
	case PT_BYTE_ARRAY: {
		uint32_t len;

		if (c->vend - c->vp < 4)
			goto short_page;
		len = le32(c->vp);
		if (len > (size_t)(c->vend - c->vp) - 4)
			goto short_page;
		v->p = c->vp + 4;
		v->n = len;
		c->vp += 4 + (size_t)len;
		return 0;
	}
	case PT_INT32:
	case PT_FLOAT: width = 4; break;
	case PT_INT64:
	case PT_DOUBLE: width = 8; break;
	case PT_INT96: width = 12; break;
	default: width = (size_t)l->type_length; break;
	}
	if ((size_t)(c->vend - c->vp) < width)
		goto short_page;
	v->p = c->vp;
	v->n = (uint32_t)width;
	c->vp += width;
	return 0;
short_page:
	return fl_err_set(err, FL_ERR_BAD_REQUEST, "the page holds fewer values than it claims");
}

/* Big-endian two's complement of n bytes into a 16-byte decimal. */
static int be_to_dec(const uint8_t *p, size_t n, uint8_t dec[16])
{
	uint8_t ext = (n > 0 && (p[0] & 0x80)) ? 0xff : 0x00;

	if (n > 16) {
		/* Leading bytes beyond 16 may only sign-extend. */
		for (size_t i = 0; i < n - 16; i++) {
			if (p[i] != ext)
				return -1;
		}
		if ((p[n - 16] & 0x80) != (ext & 0x80))
			return -1;
		p += n - 16;
		n = 16;
	}
	memset(dec, ext, 16 - n);
	if (n > 0)
		memcpy(dec + 16 - n, p, n);
	return 0;
}

static int mul_exact(int64_t a, int64_t m, int64_t *out)
{
	if (m == 1) {
		*out = a;
		return 0;
	}
	if (a > INT64_MAX / m || a < INT64_MIN / m)
		return -1;
	*out = a * m;
	return 0;
}

static int convert(const struct pcol *c, const struct raw *raw, struct st_value *v,
                   struct fl_err *err)
{
	v->null = false;
	switch (c->conv) {
	case CV_BOOL: v->v.b = raw->p[0] != 0; return 0;
	case CV_I32: v->v.i = (int32_t)le32(raw->p); return 0;
	case CV_I32_LONG:
		if (mul_exact((int32_t)le32(raw->p), c->mult, &v->v.l) != 0)
			goto range;
		return 0;
	case CV_U32_LONG: v->v.l = (int64_t)le32(raw->p); return 0;
	case CV_I32_DEC: st_value_set_decimal(v, (int32_t)le32(raw->p)); return 0;
	case CV_I64:
		if (mul_exact((int64_t)le64(raw->p), c->mult, &v->v.l) != 0)
			goto range;
		return 0;
	case CV_I64_DEC: st_value_set_decimal(v, (int64_t)le64(raw->p)); return 0;
	case CV_I96_TS: {
		int64_t nanos = (int64_t)le64(raw->p);
		int64_t days = (int64_t)le32(raw->p + 8) - JULIAN_EPOCH;
		int64_t t;

		if (nanos < 0 || nanos >= 86400LL * 1000000000LL ||
		    mul_exact(days, 86400LL * 1000000000LL / c->mult, &t) != 0)
			goto range;
		v->v.l = t + nanos / c->mult;
		return 0;
	}
	case CV_F32: memcpy(&v->v.f, raw->p, 4); return 0;
	case CV_F32_F64: {
		float f;

		memcpy(&f, raw->p, 4);
		v->v.d = f;
		return 0;
	}
	case CV_F64: memcpy(&v->v.d, raw->p, 8); return 0;
	case CV_STRING:
		if (!st_utf8_valid(raw->p, raw->n))
			return fl_err_set(err, FL_ERR_BAD_REQUEST, "a string that is not UTF-8");
		/* fall through */
	case CV_BYTES:
		v->v.bin.p = raw->p;
		v->v.bin.len = raw->n;
		return 0;
	case CV_BYTES_DEC:
		if (be_to_dec(raw->p, raw->n, v->v.dec) != 0)
			goto range;
		return 0;
	}
	return fl_err_set(err, FL_ERR_INTERNAL, "unknown conversion");
range:
	return fl_err_set(err, FL_ERR_BAD_REQUEST, "a value out of its type's range");
}

/* Decodes n values of column c into c->out. */
static int decode(struct st_parquet_reader *r, struct pcol *c, size_t n, struct fl_err *err)
{
	const struct leaf *l = &r->leaves[c->leaf];
	int codec = r->rgs[r->rg].chunks[c->leaf].codec;

	for (size_t i = 0; i < n; i++) {
		struct st_value *v = &c->out[i];
		struct raw raw = {NULL, 0};

		if (c->page_left == 0 && next_page(r, c, l, codec, err) != 0)
			return -1;
		c->page_left--;
		if (c->has_defs) {
			uint32_t d;

			if (st_rle_next(&c->defs, &d) != 0)
				return fl_err_set(err, FL_ERR_BAD_REQUEST,
				                  "definition levels end early");
			if (d > (uint32_t)l->max_def)
				return fl_err_set(err, FL_ERR_BAD_REQUEST,
				                  "definition level %u over the maximum %d", d,
				                  l->max_def);
			if (d < (uint32_t)l->max_def) {
				memset(v, 0, sizeof(*v));
				v->null = true;
				continue;
			}
		}
		if (next_raw(c, l, &raw, err) != 0 || convert(c, &raw, v, err) != 0)
			return -1;
	}
	return 0;
}

static int load_rg(struct st_parquet_reader *r, struct fl_err *err)
{
	const struct row_group *rg = &r->rgs[r->rg];
	uint64_t total = 0;

	for (size_t j = 0; j < r->n_cols; j++) {
		if (r->cols[j].leaf != SIZE_MAX)
			total += rg->chunks[r->cols[j].leaf].len;
	}
	if (total > r->max_row_group)
		return fl_err_set(err, FL_ERR_TOO_LARGE,
		                  "parquet: row group %zu needs %llu bytes, over the limit of %zu",
		                  r->rg, (unsigned long long)total, r->max_row_group);
	for (size_t j = 0; j < r->n_cols; j++) {
		struct pcol *c = &r->cols[j];
		const struct chunk_meta *m;

		if (c->leaf == SIZE_MAX)
			continue;
		m = &rg->chunks[c->leaf];
		if (m->num_values < rg->num_rows)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "parquet: column %s in row group %zu has %lld values for "
			                  "%lld rows",
			                  r->leaves[c->leaf].path, r->rg, (long long)m->num_values,
			                  (long long)rg->num_rows);
		if (read_range(r, m->start, (size_t)m->len, &c->chunk, err) != 0)
			return -1;
		c->chunk_len = (size_t)m->len;
		c->pos = 0;
		c->values_left = m->num_values;
	}
	r->rg_loaded = true;
	return 0;
}

int st_parquet_reader_next(struct st_parquet_reader *r, const struct st_parquet_batch **out,
                           struct fl_err *err)
{
	size_t n;

	if (r->broken)
		return fl_err_set(err, FL_ERR_INTERNAL, "parquet: the reader failed before");
	for (size_t j = 0; j < r->n_cols; j++) {
		struct pcol *c = &r->cols[j];

		for (size_t k = 0; k < c->n_held; k++)
			st_free(r->alloc, c->held[k]);
		c->n_held = 0;
	}
	while (r->rg_left == 0) {
		if (r->rg_loaded) {
			release_rg(r);
			r->rg++;
		}
		if (r->rg >= r->n_rgs) {
			*out = NULL;
			return 0;
		}
		if (load_rg(r, err) != 0)
			goto fail;
		r->rg_left = r->rgs[r->rg].num_rows;
	}
	n = r->rg_left < (int64_t)r->batch_rows ? (size_t)r->rg_left : r->batch_rows;
	for (size_t j = 0; j < r->n_cols; j++) {
		struct pcol *c = &r->cols[j];

		if (c->leaf == SIZE_MAX) {
			for (size_t i = 0; i < n; i++) {
				memset(&c->out[i], 0, sizeof(c->out[i]));
				c->out[i].null = true;
			}
			continue;
		}
		if (decode(r, c, n, err) != 0) {
			fl_err_prefix(err, "parquet: column %s, row group %zu",
			              r->leaves[c->leaf].path, r->rg);
			goto fail;
		}
	}
	r->rg_left -= (int64_t)n;
	r->batch.n_rows = n;
	r->batch.n_columns = r->n_cols;
	r->batch.columns = r->colv;
	*out = &r->batch;
	return 0;
fail:
	r->broken = true;
	return -1;
}

void st_parquet_batch_row(const struct st_parquet_batch *b, size_t i, struct st_value *row)
{
	for (size_t j = 0; j < b->n_columns; j++)
		row[j] = b->columns[j][i];
}

/* ---- accessors ---------------------------------------------------------------- */

size_t st_parquet_reader_n_leaves(const struct st_parquet_reader *r)
{
	return r->n_leaves;
}

const struct st_parquet_leaf *st_parquet_reader_leaf(const struct st_parquet_reader *r, size_t i)
{
	return i < r->n_leaves ? &r->leaves[i].pub : NULL;
}

size_t st_parquet_reader_projected_leaf(const struct st_parquet_reader *r, size_t j)
{
	return j < r->n_cols ? r->cols[j].leaf : SIZE_MAX;
}

int64_t st_parquet_reader_num_rows(const struct st_parquet_reader *r)
{
	return r->num_rows;
}

size_t st_parquet_reader_n_row_groups(const struct st_parquet_reader *r)
{
	return r->n_rgs;
}

const char *st_parquet_reader_kv(const struct st_parquet_reader *r, const char *key)
{
	for (size_t i = 0; i < r->n_kv; i++) {
		if (strcmp(r->kv[2 * i], key) == 0)
			return r->kv[2 * i + 1];
	}
	return NULL;
}
