/* deletes.c - positions removed by position delete files and deletion
 * vectors.
 *
 * Bytes read (format/puffin-spec.md "deletion-vector-v1"; RoaringFormatSpec
 * "Standard 32-bit Roaring Bitmap" and "Extension for 64-bit
 * implementations"):
 *   blob    u32 BE length of magic + vector | D1 D3 39 64 | vector |
 *           u32 BE CRC-32 of magic + vector
 *   vector  u64 LE bucket count | per bucket, keys strictly increasing:
 *           u32 LE key (the positions' high 32 bits) | 32-bit Roaring bitmap
 *   bitmap  u32 LE cookie: 12346 then u32 LE container count (no runs), or
 *           12347 | (count - 1) << 16 then (count + 7) / 8 bytes of run flags
 *           | per container u16 LE key, u16 LE cardinality - 1 (keys strictly
 *           increasing) | u32 LE offsets when there are no runs or 4 or more
 *           containers (skipped: containers are read in order) | containers:
 *           run: u16 LE run count, then (start, length - 1) u16 LE pairs;
 *           cardinality > 4096: 1024 u64 LE words; else cardinality u16 LE
 *           values, strictly increasing.
 * The blob's bitmaps are parsed in order, so the positions arrive sorted;
 * each is checked against the set's limit, which bounds the work by the
 * data file's row count whatever the blob claims. */
#include "iceberg/deletes.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "random.h"

#define DEFAULT_DV_BYTES ((size_t)256 << 20)
#define COOKIE_NO_RUN 12346u
#define COOKIE_RUN 12347u
#define ARRAY_MAX 4096u

/* ---- the set ----------------------------------------------------------- */

void st_posset_init(struct st_posset *s, int64_t limit, const struct st_alloc *a)
{
	memset(s, 0, sizeof(*s));
	s->limit = limit;
	s->sorted = true;
	s->alloc = a;
}

int st_posset_add(struct st_posset *s, int64_t pos, struct fl_err *err)
{
	if (pos < 0 || pos >= s->limit)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "position %" PRId64 " is outside the data file's %" PRId64
		                  " rows",
		                  pos, s->limit);
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		int64_t *v;

		/* Duplicates from a position delete file could grow the array
		 * past the limit: fold them first. */
		if (s->n > 0 && (int64_t)s->n >= s->limit) {
			st_posset_finish(s);
			if (s->n < s->cap)
				goto add;
		}
		v = st_realloc(s->alloc, s->v, cap * sizeof(*v));
		if (v == NULL)
			return fl_err_set(err, FL_ERR_NOMEM, "out of memory for %zu positions",
			                  cap);
		s->v = v;
		s->cap = cap;
	}
add:
	if (s->n > 0 && pos <= s->v[s->n - 1])
		s->sorted = false;
	s->v[s->n++] = pos;
	return 0;
}

static int cmp_pos(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

void st_posset_finish(struct st_posset *s)
{
	size_t k = 0;

	if (s->sorted)
		return;
	if (s->n > 1)
		qsort(s->v, s->n, sizeof(*s->v), cmp_pos);
	for (size_t i = 0; i < s->n; i++) {
		if (k == 0 || s->v[i] != s->v[k - 1])
			s->v[k++] = s->v[i];
	}
	s->n = k;
	s->sorted = true;
}

bool st_posset_has(const struct st_posset *s, int64_t pos)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->v[mid] == pos)
			return true;
		if (s->v[mid] < pos)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

void st_posset_free(struct st_posset *s)
{
	st_free(s->alloc, s->v);
	s->v = NULL;
	s->n = s->cap = 0;
	s->sorted = true;
}

/* ---- deletion vectors -------------------------------------------------- */

struct cur {
	const uint8_t *p;
	size_t left;
};

static uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[3] | (uint32_t)p[2] << 8 | (uint32_t)p[1] << 16 | (uint32_t)p[0] << 24;
}

/* Takes n bytes from c, or fails naming what was being read. */
static int take(struct cur *c, size_t n, const uint8_t **out, const char *what, struct fl_err *err)
{
	if (n > c->left)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "deletion vector: truncated %s (%zu bytes needed, %zu left)",
		                  what, n, c->left);
	*out = c->p;
	c->p += n;
	c->left -= n;
	return 0;
}

static int add_pos(struct st_posset *out, uint64_t high, uint32_t low, struct fl_err *err)
{
	if (st_posset_add(out, (int64_t)(high << 32 | low), err) != 0)
		return fl_err_prefix(err, "deletion vector");
	return 0;
}

static int check_card(uint32_t key, uint32_t total, uint32_t card, struct fl_err *err)
{
	if (total != card)
		return fl_err_set(
		        err, FL_ERR_BAD_REQUEST,
		        "deletion vector: container %u holds %u values, its header says %u", key,
		        total, card);
	return 0;
}

/* One container of cardinality card (1..65536), a run container when run. */
static int parse_container(struct cur *c, uint64_t high, uint32_t key, uint32_t card, bool run,
                           struct st_posset *out, struct fl_err *err)
{
	const uint8_t *p;
	uint32_t base = key << 16;

	if (run) {
		uint32_t nruns, total = 0;
		int64_t prev_end = -1;

		if (take(c, 2, &p, "run container", err) != 0)
			return -1;
		nruns = le16(p);
		if (take(c, (size_t)nruns * 4, &p, "run container", err) != 0)
			return -1;
		for (uint32_t r = 0; r < nruns; r++) {
			uint32_t start = le16(p + 4 * r), len = (uint32_t)le16(p + 4 * r + 2) + 1;

			if ((int64_t)start <= prev_end || start + len > 65536)
				return fl_err_set(
				        err, FL_ERR_BAD_REQUEST,
				        "deletion vector: run %u of container %u overlaps or "
				        "leaves the container",
				        r, key);
			prev_end = start + len - 1;
			total += len;
			for (uint32_t v = start; v < start + len; v++) {
				if (add_pos(out, high, base | v, err) != 0)
					return -1;
			}
		}
		return check_card(key, total, card, err);
	}
	if (card > ARRAY_MAX) {
		uint32_t total = 0;

		if (take(c, 8192, &p, "bitmap container", err) != 0)
			return -1;
		for (uint32_t w = 0; w < 1024; w++) {
			uint64_t word = (uint64_t)le32(p + 8 * w) | (uint64_t)le32(p + 8 * w + 4)
			                                                    << 32;

			while (word != 0) {
				uint32_t bit = (uint32_t)__builtin_ctzll(word);

				word &= word - 1;
				total++;
				if (add_pos(out, high, base | (w * 64 + bit), err) != 0)
					return -1;
			}
		}
		return check_card(key, total, card, err);
	}
	if (take(c, (size_t)card * 2, &p, "array container", err) != 0)
		return -1;
	for (uint32_t i = 0; i < card; i++) {
		if (i > 0 && le16(p + 2 * i) <= le16(p + 2 * i - 2))
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "deletion vector: array container %u is not strictly "
			                  "increasing",
			                  key);
		if (add_pos(out, high, base | le16(p + 2 * i), err) != 0)
			return -1;
	}
	return 0;
}

/* One 32-bit Roaring bitmap of bucket `high`. */
static int parse_bitmap(struct cur *c, uint64_t high, struct st_posset *out, struct fl_err *err)
{
	const uint8_t *p, *runs = NULL, *desc;
	uint32_t cookie, size;
	bool has_run;

	if (take(c, 4, &p, "bitmap cookie", err) != 0)
		return -1;
	cookie = le32(p);
	if ((cookie & 0xFFFF) == COOKIE_RUN) {
		has_run = true;
		size = (cookie >> 16) + 1;
		if (take(c, (size + 7) / 8, &runs, "run flags", err) != 0)
			return -1;
	} else if (cookie == COOKIE_NO_RUN) {
		has_run = false;
		if (take(c, 4, &p, "container count", err) != 0)
			return -1;
		size = le32(p);
		if (size > 65536)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "deletion vector: %u containers (at most 65536)", size);
	} else {
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "deletion vector: bitmap cookie 0x%08x is not a Roaring cookie",
		                  cookie);
	}
	if (take(c, (size_t)size * 4, &desc, "container headers", err) != 0)
		return -1;
	if ((!has_run || size >= 4) && take(c, (size_t)size * 4, &p, "container offsets", err) != 0)
		return -1;
	for (uint32_t k = 0; k < size; k++) {
		uint32_t key = le16(desc + 4 * k), card = (uint32_t)le16(desc + 4 * k + 2) + 1;
		bool run = has_run && (runs[k / 8] >> (k % 8) & 1);

		if (k > 0 && key <= le16(desc + 4 * k - 4))
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "deletion vector: container keys are not increasing");
		if (parse_container(c, high, key, card, run, out, err) != 0)
			return -1;
	}
	return 0;
}

int st_dv_parse(const uint8_t *blob, size_t n, struct st_posset *out, struct fl_err *err)
{
	static const uint8_t magic[4] = {0xD1, 0xD3, 0x39, 0x64};
	struct cur c;
	const uint8_t *p;
	uint64_t buckets;
	int64_t prev = -1;
	uLong crc;

	if (n < 20)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "deletion vector: %zu bytes is too short for a blob", n);
	if ((uint64_t)be32(blob) != (uint64_t)n - 8)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "deletion vector: length field %u does not match the blob's %zu "
		                  "bytes",
		                  be32(blob), n);
	if (memcmp(blob + 4, magic, 4) != 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "deletion vector: wrong magic (expected D1 D3 39 64)");
	crc = crc32(0L, blob + 4, (uInt)(n - 8));
	if ((uint32_t)crc != be32(blob + n - 4))
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "deletion vector: CRC-32 %08x does not match the stored %08x",
		                  (unsigned)crc, be32(blob + n - 4));
	c.p = blob + 8;
	c.left = n - 12;
	if (take(&c, 8, &p, "bucket count", err) != 0)
		return -1;
	buckets = (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
	/* Each bucket takes at least a key and an empty bitmap (12 bytes). */
	if (buckets > c.left / 12)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "deletion vector: %" PRIu64 " buckets cannot fit in %zu bytes",
		                  buckets, c.left);
	for (uint64_t b = 0; b < buckets; b++) {
		uint32_t key;

		if (take(&c, 4, &p, "bucket key", err) != 0)
			return -1;
		key = le32(p);
		if (key & 0x80000000u)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "deletion vector: bucket key %u makes positions negative",
			                  key);
		if ((int64_t)key <= prev)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "deletion vector: bucket keys are not increasing");
		prev = key;
		if (parse_bitmap(&c, key, out, err) != 0)
			return -1;
	}
	if (c.left != 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "deletion vector: %zu bytes after the last bitmap", c.left);
	return 0;
}

int st_dv_read(struct st_io *io, const char *uri, int64_t offset, int64_t size, size_t max_bytes,
               struct st_posset *out, struct fl_err *err)
{
	uint8_t *blob;
	size_t got = 0;
	int rc;

	if (max_bytes == 0)
		max_bytes = DEFAULT_DV_BYTES;
	if (offset < 0 || size < 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "%.200s: deletion vector offset %" PRId64 " or size %" PRId64
		                  " is negative",
		                  uri, offset, size);
	if ((uint64_t)size > max_bytes)
		return fl_err_set(err, FL_ERR_TOO_LARGE,
		                  "%.200s: deletion vector of %" PRId64 " bytes (limit %zu)", uri,
		                  size, max_bytes);
	blob = st_malloc(out->alloc, size > 0 ? (size_t)size : 1);
	if (blob == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	rc = st_io_read_range(io, uri, (uint64_t)offset, (size_t)size, blob, &got, err);
	if (rc == 0 && got != (size_t)size)
		rc = fl_err_set(err, FL_ERR_BAD_REQUEST,
		                "deletion vector at %" PRId64 "+%" PRId64 " runs past the end",
		                offset, size);
	if (rc == 0)
		rc = st_dv_parse(blob, (size_t)size, out, err);
	st_free(out->alloc, blob);
	if (rc != 0)
		fl_err_prefix(err, "%.200s", uri);
	return rc;
}

/* ---- position delete files --------------------------------------------- */

int st_pos_deletes_read(const struct st_parquet_source *src,
                        const struct st_parquet_reader_opts *ropts, st_pos_delete_fn fn, void *arg,
                        struct fl_err *err)
{
	struct st_parquet_want want[2] = {
	        {ST_FIELD_DELETE_FILE_PATH, {ST_TYPE_STRING, 0, 0, 0}, true},
	        {ST_FIELD_DELETE_POS, {ST_TYPE_LONG, 0, 0, 0}, true},
	};
	struct st_parquet_reader *r = NULL;
	const struct st_parquet_batch *b;
	int rc = -1;

	if (st_parquet_reader_open(src, ropts, &r, err) != 0 ||
	    st_parquet_reader_project(r, want, 2, err) != 0)
		goto out;
	for (;;) {
		if (st_parquet_reader_next(r, &b, err) != 0)
			goto out;
		if (b == NULL)
			break;
		for (size_t i = 0; i < b->n_rows; i++) {
			const struct st_value *path = &b->columns[0][i], *pos = &b->columns[1][i];

			if (path->null || pos->null) {
				fl_err_set(
				        err, FL_ERR_BAD_REQUEST,
				        "position delete file: a row has a null file_path or pos");
				goto out;
			}
			if (fn(arg, path->v.bin.p, path->v.bin.len, pos->v.l, err) != 0)
				goto out;
		}
	}
	rc = 0;
out:
	st_parquet_reader_free(r);
	return rc;
}

struct for_one {
	const char *path;
	size_t len;
	struct st_posset *out;
};

static int for_one_row(void *arg, const uint8_t *path, size_t len, int64_t pos, struct fl_err *err)
{
	struct for_one *f = arg;

	if (len != f->len || memcmp(path, f->path, len) != 0)
		return 0;
	if (st_posset_add(f->out, pos, err) != 0)
		return fl_err_prefix(err, "position delete file");
	return 0;
}

int st_pos_deletes_for(const struct st_parquet_source *src,
                       const struct st_parquet_reader_opts *ropts, const char *data_path,
                       struct st_posset *out, struct fl_err *err)
{
	struct for_one f = {data_path, strlen(data_path), out};

	return st_pos_deletes_read(src, ropts, for_one_row, &f, err);
}

/* ---- equality deletes ---------------------------------------------------
 *
 * A tuple is stored as its encoding: per field 0 (null) or 1 then the
 * value, fixed-width values as their little-endian bytes (a float or
 * double's bits, every NaN as the canonical one), byte strings as a u32
 * length and the bytes.  Equal tuples have equal encodings, so the set is
 * an open-addressing table of encodings (linear probing, at most half
 * full), each with its highest data sequence number.  A lookup hashes and
 * compares the row's values as it encodes them, without copying them. */

#define DEFAULT_EQ_BYTES ((size_t)256 << 20)

struct eq_slot {
	uint64_t hash;
	uint64_t off; /* of the tuple in keys, plus 1; 0: empty */
	int64_t seq;
};

struct st_eqset {
	struct st_parquet_want f[ST_EQSET_MAX_FIELDS];
	size_t nf;
	uint64_t seed;
	uint8_t *keys; /* u32 length, then the encoding, per tuple */
	size_t keys_len, keys_cap;
	struct eq_slot *slots;
	size_t n, cap; /* tuples held; slots (a power of two) */
	size_t max_bytes;
	const struct st_alloc *alloc;
};

/* Where an encoding goes: into a hash, and into out or against cmp. */
struct eq_stream {
	uint64_t h;
	size_t len;
	uint8_t *out;
	const uint8_t *cmp;
	size_t cmp_len;
	bool differ;
};

static void eq_feed(struct eq_stream *k, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		k->h = (k->h ^ b[i]) * 0x100000001b3ULL;
	if (k->out != NULL)
		memcpy(k->out + k->len, p, n);
	if (k->cmp != NULL && !k->differ &&
	    (k->len + n > k->cmp_len || memcmp(k->cmp + k->len, p, n) != 0))
		k->differ = true;
	k->len += n;
}

static void eq_feed_le(struct eq_stream *k, uint64_t v, size_t width)
{
	uint8_t b[8];

	for (size_t i = 0; i < width; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	eq_feed(k, b, width);
}

static void eq_encode(const struct st_eqset *s, const struct st_value *vals, struct eq_stream *k)
{
	k->h = 0xcbf29ce484222325ULL ^ s->seed;
	for (size_t j = 0; j < s->nf; j++) {
		const struct st_value *v = &vals[j];
		uint8_t tag = v->null ? 0 : 1;
		uint32_t u32;
		uint64_t u64;

		eq_feed(k, &tag, 1);
		if (v->null)
			continue;
		switch (s->f[j].type.id) {
		case ST_TYPE_BOOLEAN: eq_feed_le(k, v->v.b ? 1 : 0, 1); break;
		case ST_TYPE_INT:
		case ST_TYPE_DATE: eq_feed_le(k, (uint32_t)v->v.i, 4); break;
		case ST_TYPE_FLOAT:
			memcpy(&u32, &v->v.f, 4);
			eq_feed_le(k, v->v.f != v->v.f ? 0x7fc00000u : u32, 4);
			break;
		case ST_TYPE_DOUBLE:
			memcpy(&u64, &v->v.d, 8);
			eq_feed_le(k, v->v.d != v->v.d ? 0x7ff8000000000000ULL : u64, 8);
			break;
		case ST_TYPE_DECIMAL: eq_feed(k, v->v.dec, 16); break;
		case ST_TYPE_STRING:
		case ST_TYPE_UUID:
		case ST_TYPE_FIXED:
		case ST_TYPE_BINARY:
			eq_feed_le(k, (uint32_t)v->v.bin.len, 4);
			eq_feed(k, v->v.bin.p, v->v.bin.len);
			break;
		default: /* long, time, timestamps */ eq_feed_le(k, (uint64_t)v->v.l, 8); break;
		}
	}
	/* fmix64: spread FNV's low bits, which pick the slot */
	k->h ^= k->h >> 33;
	k->h *= 0xff51afd7ed558ccdULL;
	k->h ^= k->h >> 33;
}

/* The slot of vals: the one holding it, else the empty one it would take. */
static struct eq_slot *eq_find(const struct st_eqset *s, const struct st_value *vals,
                               uint64_t *hash, size_t *len)
{
	struct eq_stream k = {0};
	size_t mask = s->cap - 1, i;

	eq_encode(s, vals, &k);
	*hash = k.h;
	*len = k.len;
	for (i = k.h & mask;; i = (i + 1) & mask) {
		struct eq_slot *sl = &s->slots[i];
		struct eq_stream c = {0};
		uint32_t klen;

		if (sl->off == 0)
			return sl;
		if (sl->hash != k.h)
			continue;
		memcpy(&klen, s->keys + sl->off - 1, 4);
		if (klen != k.len)
			continue;
		c.cmp = s->keys + sl->off - 1 + 4;
		c.cmp_len = klen;
		eq_encode(s, vals, &c);
		if (!c.differ)
			return sl;
	}
}

int st_eqset_new(const struct st_parquet_want *fields, size_t n, size_t max_bytes,
                 const struct st_alloc *a, struct st_eqset **out, struct fl_err *err)
{
	struct st_eqset *s;

	if (n == 0 || n > ST_EQSET_MAX_FIELDS)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "equality deletes: %zu equality fields (1 to %d are read)", n,
		                  ST_EQSET_MAX_FIELDS);
	s = st_calloc(a, 1, sizeof(*s));
	if (s != NULL)
		s->slots = st_calloc(a, 64, sizeof(*s->slots));
	if (s == NULL || s->slots == NULL) {
		if (s != NULL)
			st_free(a, s);
		return fl_err_set(err, FL_ERR_NOMEM, "equality deletes: out of memory");
	}
	memcpy(s->f, fields, n * sizeof(*fields));
	s->nf = n;
	s->cap = 64;
	s->max_bytes = max_bytes ? max_bytes : DEFAULT_EQ_BYTES;
	s->alloc = a;
	if (fl_random_bytes(&s->seed, sizeof(s->seed)) != 0)
		s->seed = (uint64_t)(uintptr_t)s;
	*out = s;
	return 0;
}

static int eq_grow(struct st_eqset *s, struct fl_err *err)
{
	size_t cap = s->cap * 2, mask = cap - 1;
	struct eq_slot *v;

	if (s->keys_len + cap * sizeof(*v) > s->max_bytes)
		return fl_err_set(err, FL_ERR_TOO_LARGE,
		                  "equality deletes: %zu distinct rows need more than the %zu "
		                  "bytes allowed",
		                  s->n + 1, s->max_bytes);
	v = st_calloc(s->alloc, cap, sizeof(*v));
	if (v == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "equality deletes: out of memory");
	for (size_t i = 0; i < s->cap; i++) {
		size_t j;

		if (s->slots[i].off == 0)
			continue;
		for (j = s->slots[i].hash & mask; v[j].off != 0; j = (j + 1) & mask)
			;
		v[j] = s->slots[i];
	}
	st_free(s->alloc, s->slots);
	s->slots = v;
	s->cap = cap;
	return 0;
}

int st_eqset_add(struct st_eqset *s, const struct st_value *vals, int64_t seq, struct fl_err *err)
{
	struct eq_slot *sl;
	uint64_t hash;
	size_t len, need;
	uint32_t len32;

	if ((s->n + 1) * 2 > s->cap && eq_grow(s, err) != 0)
		return -1;
	sl = eq_find(s, vals, &hash, &len);
	if (sl->off != 0) {
		if (seq > sl->seq)
			sl->seq = seq;
		return 0;
	}
	if (len > UINT32_MAX - 4)
		return fl_err_set(err, FL_ERR_TOO_LARGE, "equality deletes: a row of %zu bytes",
		                  len);
	need = s->keys_len + 4 + len;
	if (need + s->cap * sizeof(*sl) > s->max_bytes)
		return fl_err_set(err, FL_ERR_TOO_LARGE,
		                  "equality deletes: %zu distinct rows need more than the %zu "
		                  "bytes allowed",
		                  s->n + 1, s->max_bytes);
	if (need > s->keys_cap) {
		size_t cap = s->keys_cap ? s->keys_cap : 4096;
		uint8_t *k;

		while (cap < need)
			cap *= 2;
		k = st_realloc(s->alloc, s->keys, cap);
		if (k == NULL)
			return fl_err_set(err, FL_ERR_NOMEM, "equality deletes: out of memory");
		s->keys = k;
		s->keys_cap = cap;
	}
	len32 = (uint32_t)len;
	memcpy(s->keys + s->keys_len, &len32, 4);
	{
		struct eq_stream w = {.out = s->keys + s->keys_len + 4};

		eq_encode(s, vals, &w);
	}
	sl->hash = hash;
	sl->off = s->keys_len + 1;
	sl->seq = seq;
	s->keys_len = need;
	s->n++;
	return 0;
}

int st_eqset_add_file(struct st_eqset *s, const struct st_parquet_source *src,
                      const struct st_parquet_reader_opts *ropts, int64_t seq, struct fl_err *err)
{
	struct st_parquet_want want[ST_EQSET_MAX_FIELDS];
	struct st_value row[ST_EQSET_MAX_FIELDS];
	struct st_parquet_reader *r = NULL;
	const struct st_parquet_batch *b;
	int rc = -1;

	for (size_t j = 0; j < s->nf; j++) {
		want[j] = s->f[j];
		want[j].required = false;
	}
	if (st_parquet_reader_open(src, ropts, &r, err) != 0 ||
	    st_parquet_reader_project(r, want, s->nf, err) != 0)
		goto out;
	for (size_t j = 0; j < s->nf; j++) {
		if (st_parquet_reader_projected_leaf(r, j) == SIZE_MAX) {
			fl_err_set(err, FL_ERR_BAD_REQUEST,
			           "no column has field id %" PRId32
			           ", which its equality_ids name",
			           s->f[j].field_id);
			goto out;
		}
	}
	for (;;) {
		if (st_parquet_reader_next(r, &b, err) != 0)
			goto out;
		if (b == NULL)
			break;
		for (size_t i = 0; i < b->n_rows; i++) {
			st_parquet_batch_row(b, i, row);
			if (st_eqset_add(s, row, seq, err) != 0)
				goto out;
		}
	}
	rc = 0;
out:
	st_parquet_reader_free(r);
	return rc;
}

bool st_pos_delete_applies(bool same_partition, int64_t data_seq, int64_t del_seq)
{
	return same_partition && data_seq <= del_seq;
}

bool st_eq_delete_applies(bool same_partition, bool global, int64_t data_seq, int64_t del_seq)
{
	return (same_partition || global) && data_seq < del_seq;
}

bool st_eqset_deletes(const struct st_eqset *s, const struct st_value *vals, int64_t data_seq)
{
	uint64_t hash;
	size_t len;
	const struct eq_slot *sl;

	if (s->n == 0)
		return false;
	sl = eq_find(s, vals, &hash, &len);
	/* The same partition: the caller chose the files read into s. */
	return sl->off != 0 && st_eq_delete_applies(true, false, data_seq, sl->seq);
}

size_t st_eqset_size(const struct st_eqset *s)
{
	return s->n;
}

void st_eqset_free(struct st_eqset *s)
{
	if (s == NULL)
		return;
	st_free(s->alloc, s->keys);
	st_free(s->alloc, s->slots);
	st_free(s->alloc, s);
}

/* ---- the equality deletes of a rewrite ---- */

struct st_eqdeletes_set {
	int32_t ids[ST_EQSET_MAX_FIELDS]; /* sorted */
	size_t n, col[ST_EQSET_MAX_FIELDS];
	struct st_eqset *set;
};

void st_eqdeletes_init(struct st_eqdeletes *d, const struct st_parquet_column *cols, size_t ncols,
                       const struct st_parquet_reader_opts *ropts)
{
	memset(d, 0, sizeof(*d));
	d->cols = cols;
	d->ncols = ncols;
	d->ropts = ropts;
}

static int cmp_id(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

	return (x > y) - (x < y);
}

/* The set of the sorted ids, made (empty) when new. */
static struct st_eqdeletes_set *eqdeletes_set(struct st_eqdeletes *d, const char *uri,
                                              const int32_t *id, size_t n, struct fl_err *err)
{
	struct st_parquet_want want[ST_EQSET_MAX_FIELDS];
	struct st_eqdeletes_set a = {0}, *grown;

	for (size_t i = 0; i < d->nsets; i++) {
		if (d->sets[i].n == n && memcmp(d->sets[i].ids, id, n * sizeof(*id)) == 0)
			return &d->sets[i];
	}
	for (size_t i = 0; i < n; i++) {
		size_t k;

		for (k = 0; k < d->ncols && d->cols[k].field_id != id[i]; k++)
			;
		if (k == d->ncols) {
			fl_err_set(err, FL_ERR_UNSUPPORTED,
			           "equality delete file %.200s names field id %" PRId32
			           ", which the current schema lacks; such deletes are not applied",
			           uri, id[i]);
			return NULL;
		}
		a.ids[i] = id[i];
		a.col[i] = k;
		want[i].field_id = id[i];
		want[i].type = d->cols[k].type;
		want[i].required = false;
	}
	a.n = n;
	grown = realloc(d->sets, (d->nsets + 1) * sizeof(*grown));
	if (grown == NULL) {
		fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		return NULL;
	}
	d->sets = grown;
	if (st_eqset_new(want, n, 0, NULL, &a.set, err) != 0)
		return NULL;
	d->sets[d->nsets] = a;
	return &d->sets[d->nsets++];
}

int st_eqdeletes_add(struct st_eqdeletes *d, struct st_io *io, const char *uri, const int32_t *ids,
                     size_t nids, int64_t seq, struct fl_err *err)
{
	int32_t id[ST_EQSET_MAX_FIELDS];
	struct st_eqdeletes_set *s;
	struct st_parquet_source src;
	struct st_parquet_io_ctx ictx;
	char **grown, *copy;

	for (size_t i = 0; i < d->nread; i++) {
		if (strcmp(d->read[i], uri) == 0)
			return 0;
	}
	if (nids == 0 || nids > ST_EQSET_MAX_FIELDS)
		return fl_err_set(err, nids == 0 ? FL_ERR_BAD_REQUEST : FL_ERR_UNSUPPORTED,
		                  "equality delete file %.200s has %zu equality_ids (1 to %d are "
		                  "applied)",
		                  uri, nids, ST_EQSET_MAX_FIELDS);
	memcpy(id, ids, nids * sizeof(*id));
	qsort(id, nids, sizeof(*id), cmp_id);
	for (size_t i = 1; i < nids; i++) {
		if (id[i] == id[i - 1])
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "equality delete file %.200s names field id %" PRId32
			                  " twice",
			                  uri, id[i]);
	}
	s = eqdeletes_set(d, uri, id, nids, err);
	if (s == NULL)
		return -1;
	grown = realloc(d->read, (d->nread + 1) * sizeof(*grown));
	if (grown != NULL)
		d->read = grown;
	copy = grown != NULL ? strdup(uri) : NULL;
	if (copy == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	d->read[d->nread++] = copy;
	if (st_parquet_source_io(&src, &ictx, io, uri, err) != 0 ||
	    st_eqset_add_file(s->set, &src, d->ropts, seq, err) != 0)
		return fl_err_prefix(err, "equality delete file %.200s", uri);
	return 0;
}

bool st_eqdeletes_match(const struct st_eqdeletes *d, const struct st_value *row, int64_t data_seq)
{
	struct st_value vals[ST_EQSET_MAX_FIELDS];

	for (size_t i = 0; i < d->nsets; i++) {
		const struct st_eqdeletes_set *s = &d->sets[i];

		for (size_t j = 0; j < s->n; j++)
			vals[j] = row[s->col[j]];
		if (st_eqset_deletes(s->set, vals, data_seq))
			return true;
	}
	return false;
}

void st_eqdeletes_free(struct st_eqdeletes *d)
{
	for (size_t i = 0; i < d->nsets; i++)
		st_eqset_free(d->sets[i].set);
	for (size_t i = 0; i < d->nread; i++)
		free(d->read[i]);
	free(d->sets);
	free(d->read);
	d->sets = NULL;
	d->read = NULL;
	d->nsets = d->nread = 0;
}
