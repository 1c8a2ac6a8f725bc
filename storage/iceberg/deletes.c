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
