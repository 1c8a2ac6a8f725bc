/* rle.c - RLE / bit-packed hybrid encoder.
 *
 * Bytes produced (Encodings.md, RLE = 3):
 *   rle-run        varint(count << 1), then the value in ceil(width / 8)
 *                  bytes, little-endian
 *   bit-packed-run varint(groups << 1 | 1), then groups * 8 values packed
 *                  LSB first, width bits each (groups * width bytes)
 *
 * Strategy: a value repeated 8 or more times becomes an RLE run; anything
 * else goes into bit-packed groups of 8.  A bit-packed run only ends at a
 * group boundary, and only the last group of the whole sequence is padded
 * (with zeros) - readers stop after the value count they were given.
 * Invariant: `i` below always sits at a run boundary. */
#include "rle.h"

struct src {
	const uint32_t *u32;
	const uint8_t *u8;
};

static uint32_t at(const struct src *s, size_t i)
{
	return s->u32 ? s->u32[i] : s->u8[i];
}

int st_bit_width(uint32_t max_value)
{
	int w = 0;

	while (max_value != 0) {
		w++;
		max_value >>= 1;
	}
	return w;
}

static size_t run_length(const struct src *s, size_t i, size_t n)
{
	size_t j = i + 1;

	while (j < n && at(s, j) == at(s, i))
		j++;
	return j - i;
}

static int put_rle_run(struct st_buf *out, uint32_t value, size_t count, int width)
{
	int bytes = (width + 7) / 8;

	if (st_buf_put_uvarint(out, (uint64_t)count << 1) != 0)
		return -1;
	for (int k = 0; k < bytes; k++) {
		if (st_buf_put_u8(out, (uint8_t)(value >> (8 * k))) != 0)
			return -1;
	}
	return 0;
}

/* Packs values [i, i + groups * 8) (zeros past n) into width-bit fields. */
static int put_packed(struct st_buf *out, const struct src *s, size_t i, size_t groups, size_t n,
                      int width)
{
	size_t nbytes = groups * (size_t)width;
	uint64_t acc = 0;
	int bits = 0;
	uint8_t *p;

	if (st_buf_put_uvarint(out, (uint64_t)groups << 1 | 1) != 0 ||
	    st_buf_reserve(out, nbytes) != 0)
		return -1;
	p = out->data + out->len;
	for (size_t k = 0; k < groups * 8; k++) {
		uint64_t v = i + k < n ? at(s, i + k) : 0;

		acc |= v << bits;
		bits += width;
		while (bits >= 8) {
			*p++ = (uint8_t)acc;
			acc >>= 8;
			bits -= 8;
		}
	}
	/* groups * 8 * width is a multiple of 8: nothing is left in acc. */
	out->len += nbytes;
	return 0;
}

static int encode(struct st_buf *out, const struct src *s, size_t n, int width)
{
	size_t i = 0;

	while (i < n) {
		size_t run = run_length(s, i, n);
		size_t start, groups;

		if (run >= 8) {
			if (put_rle_run(out, at(s, i), run, width) != 0)
				return -1;
			i += run;
			continue;
		}
		/* Collect groups of 8 until a long run starts at a group edge. */
		start = i;
		groups = 0;
		do {
			groups++;
			i += 8;
		} while (i < n && run_length(s, i, n) < 8);
		if (put_packed(out, s, start, groups, n, width) != 0)
			return -1;
	}
	return 0;
}

int st_rle_encode_u32(struct st_buf *out, const uint32_t *v, size_t n, int bit_width)
{
	struct src s = {v, NULL};

	return encode(out, &s, n, bit_width);
}

int st_rle_encode_u8(struct st_buf *out, const uint8_t *v, size_t n, int bit_width)
{
	struct src s = {NULL, v};

	return encode(out, &s, n, bit_width);
}

/* ---- decoder ------------------------------------------------------------
 *
 * Reads the runs described above.  Invariant: while `packed`, p points at
 * the start of the run's remaining bytes and `bit` counts the bits of it
 * already consumed; `left` never exceeds the values those bytes hold. */

void st_rle_reader_init(struct st_rle_reader *r, const uint8_t *p, size_t n, int bit_width)
{
	r->p = p;
	r->end = p + n;
	r->width = bit_width;
	r->packed = false;
	r->left = 0;
	r->value = 0;
	r->bit = 0;
}

static int read_uvarint(struct st_rle_reader *r, uint64_t *out)
{
	uint64_t v = 0;

	for (int shift = 0; shift < 64 && r->p < r->end; shift += 7) {
		uint8_t b = *r->p++;

		v |= (uint64_t)(b & 0x7f) << shift;
		if ((b & 0x80) == 0) {
			*out = v;
			return 0;
		}
	}
	return -1;
}

static int next_run(struct st_rle_reader *r)
{
	uint64_t h;

	do {
		if (read_uvarint(r, &h) != 0)
			return -1;
		if (h & 1) {
			uint64_t groups = h >> 1;
			size_t avail = (size_t)(r->end - r->p);
			uint64_t bytes = groups * (uint64_t)r->width;

			if (groups > (UINT64_MAX >> 6) / 32)
				return -1;
			r->packed = true;
			r->bit = 0;
			r->left = groups * 8;
			if (bytes > avail)
				r->left = (uint64_t)avail * 8 / (uint64_t)r->width;
		} else {
			int nbytes = (r->width + 7) / 8;

			if ((size_t)(r->end - r->p) < (size_t)nbytes)
				return -1;
			r->packed = false;
			r->value = 0;
			for (int k = 0; k < nbytes; k++)
				r->value |= (uint32_t)r->p[k] << (8 * k);
			r->p += nbytes;
			if (r->width < 32 && (r->value >> r->width) != 0)
				return -1;
			r->left = h >> 1;
		}
	} while (r->left == 0);
	return 0;
}

int st_rle_next(struct st_rle_reader *r, uint32_t *v)
{
	if (r->width == 0) {
		*v = 0;
		return 0;
	}
	if (r->width < 0 || r->width > 32)
		return -1;
	if (r->left == 0) {
		/* A finished bit-packed run: step over its bytes. */
		if (r->packed) {
			size_t used = (size_t)((r->bit + 7) / 8);

			r->p += used;
			r->packed = false;
			r->bit = 0;
		}
		if (next_run(r) != 0)
			return -1;
	}
	if (r->packed) {
		uint64_t acc = 0;
		size_t byte = (size_t)(r->bit / 8);
		int shift = (int)(r->bit % 8);
		int need = (shift + r->width + 7) / 8;

		for (int k = 0; k < need; k++)
			acc |= (uint64_t)r->p[byte + (size_t)k] << (8 * k);
		*v = (uint32_t)((acc >> shift) &
		                ((r->width == 32) ? 0xffffffffu : ((1u << r->width) - 1)));
		r->bit += (uint64_t)r->width;
		r->left--;
		return 0;
	}
	*v = r->value;
	r->left--;
	return 0;
}
