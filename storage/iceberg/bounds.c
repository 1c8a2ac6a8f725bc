/* bounds.c - truncate(N) for string and binary bounds.
 *
 * Follows the Java reference (iceberg-api UnicodeUtil.truncateStringMax and
 * BinaryUtil.truncateBinaryMax): the upper bound is the truncated prefix
 * with its last code point (byte) incremented, walking left past code
 * points (bytes) that cannot be incremented; the increment skips the
 * surrogate range U+D800..U+DFFF, which is not valid in UTF-8. */
#include "bounds.h"

/* Length of the UTF-8 sequence that starts with byte c (input is valid). */
static size_t utf8_seq_len(uint8_t c)
{
	if (c < 0x80)
		return 1;
	if (c < 0xe0)
		return 2;
	if (c < 0xf0)
		return 3;
	return 4;
}

static uint32_t utf8_decode(const uint8_t *p, size_t len)
{
	switch (len) {
	case 1: return p[0];
	case 2: return ((uint32_t)(p[0] & 0x1f) << 6) | (p[1] & 0x3f);
	case 3:
		return ((uint32_t)(p[0] & 0x0f) << 12) | ((uint32_t)(p[1] & 0x3f) << 6) |
		       (p[2] & 0x3f);
	default:
		return ((uint32_t)(p[0] & 0x07) << 18) | ((uint32_t)(p[1] & 0x3f) << 12) |
		       ((uint32_t)(p[2] & 0x3f) << 6) | (p[3] & 0x3f);
	}
}

static size_t utf8_encode(uint32_t cp, uint8_t out[4])
{
	if (cp < 0x80) {
		out[0] = (uint8_t)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (uint8_t)(0xc0 | (cp >> 6));
		out[1] = (uint8_t)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (uint8_t)(0xe0 | (cp >> 12));
		out[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (uint8_t)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (uint8_t)(0xf0 | (cp >> 18));
	out[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (uint8_t)(0x80 | (cp & 0x3f));
	return 4;
}

bool st_utf8_valid(const uint8_t *p, size_t n)
{
	size_t i = 0;

	while (i < n) {
		uint8_t c = p[i];
		size_t len;
		uint32_t cp;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c < 0xc2 || c > 0xf4)
			return false; /* continuation byte, overlong lead, or past U+10FFFF */
		len = utf8_seq_len(c);
		if (n - i < len)
			return false;
		for (size_t k = 1; k < len; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				return false;
		}
		cp = utf8_decode(p + i, len);
		if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += len;
	}
	return true;
}

/* Byte length of the first `width` code points of p (all of p if shorter). */
static size_t utf8_prefix(const uint8_t *p, size_t n, size_t width)
{
	size_t i = 0;

	for (size_t k = 0; k < width && i < n; k++)
		i += utf8_seq_len(p[i]);
	return i < n ? i : n;
}

size_t st_bound_lower_len(const struct st_type *t, const uint8_t *p, size_t n, size_t width)
{
	if (t->id == ST_TYPE_STRING)
		return utf8_prefix(p, n, width);
	if (t->id == ST_TYPE_BINARY)
		return n < width ? n : width;
	return n;
}

int st_bound_upper(const struct st_type *t, const uint8_t *p, size_t n, size_t width,
                   struct st_buf *out, bool *has)
{
	size_t keep = st_bound_lower_len(t, p, n, width);

	if (keep == n) {
		if (st_buf_append(out, p, n) != 0)
			return -1;
		*has = true;
		return 0;
	}
	if (t->id == ST_TYPE_BINARY) {
		for (size_t i = keep; i-- > 0;) {
			if (p[i] != 0xff) {
				if (st_buf_append(out, p, i) != 0 ||
				    st_buf_put_u8(out, (uint8_t)(p[i] + 1)) != 0)
					return -1;
				*has = true;
				return 0;
			}
		}
		*has = false;
		return 0;
	}
	/* String: find the start of each code point in the prefix, last first. */
	for (size_t end = keep; end > 0;) {
		size_t start = end - 1;
		uint32_t cp;
		uint8_t enc[4];
		size_t elen;

		while (start > 0 && (p[start] & 0xc0) == 0x80)
			start--;
		cp = utf8_decode(p + start, end - start);
		if (cp != 0x10ffff) {
			cp = cp == 0xd7ff ? 0xe000 : cp + 1;
			elen = utf8_encode(cp, enc);
			if (st_buf_append(out, p, start) != 0 || st_buf_append(out, enc, elen) != 0)
				return -1;
			*has = true;
			return 0;
		}
		end = start;
	}
	*has = false;
	return 0;
}
