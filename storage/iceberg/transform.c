/* transform.c - partition transforms.
 *
 * bucket[N] = (murmur3_x86_32(bytes(v)) & INT_MAX) % N where bytes(v) is
 * Appendix B's hash input: int, long, date, time, timestamp(tz) as the
 * 8-byte little-endian long; decimal as the minimal big-endian two's
 * complement of the unscaled value; string as its UTF-8 bytes; uuid as its
 * 16 big-endian bytes; fixed and binary as themselves.  Floats and booleans
 * cannot be bucketed.  year/month/day/hour count from 1970-01-01T00:00 UTC
 * and floor toward negative infinity (1969-12-31 is day -1, month -1). */
#include "transform.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint32_t st_murmur3_32(const void *key, size_t len)
{
	const uint8_t *data = key;
	const uint32_t c1 = 0xcc9e2d51, c2 = 0x1b873593;
	size_t nblocks = len / 4;
	uint32_t h = 0, k;

	for (size_t i = 0; i < nblocks; i++) {
		k = (uint32_t)data[4 * i] | (uint32_t)data[4 * i + 1] << 8 |
		    (uint32_t)data[4 * i + 2] << 16 | (uint32_t)data[4 * i + 3] << 24;
		k *= c1;
		k = (k << 15) | (k >> 17);
		k *= c2;
		h ^= k;
		h = (h << 13) | (h >> 19);
		h = h * 5 + 0xe6546b64;
	}
	k = 0;
	switch (len & 3) {
	case 3: k ^= (uint32_t)data[4 * nblocks + 2] << 16; /* fall through */
	case 2: k ^= (uint32_t)data[4 * nblocks + 1] << 8; /* fall through */
	case 1:
		k ^= data[4 * nblocks];
		k *= c1;
		k = (k << 15) | (k >> 17);
		k *= c2;
		h ^= k;
	}
	h ^= (uint32_t)len;
	h ^= h >> 16;
	h *= 0x85ebca6b;
	h ^= h >> 13;
	h *= 0xc2b2ae35;
	h ^= h >> 16;
	return h;
}

static bool is_temporal(enum st_type_id id, bool with_time)
{
	return (!with_time && id == ST_TYPE_DATE) || id == ST_TYPE_TIMESTAMP ||
	       id == ST_TYPE_TIMESTAMPTZ || id == ST_TYPE_TIMESTAMP_NS ||
	       id == ST_TYPE_TIMESTAMPTZ_NS;
}

int st_transform_parse(const char *s, const struct st_type *src, struct st_transform *out,
                       struct st_type *result, struct fl_err *err)
{
	struct st_transform t = {0};
	struct st_type r = *src;
	char tail;
	enum st_type_id id = src->id;

	if (strcmp(s, "identity") == 0) {
		t.kind = ST_TR_IDENTITY;
	} else if (strcmp(s, "void") == 0) {
		t.kind = ST_TR_VOID;
	} else if (sscanf(s, "bucket[%d%c", &t.param, &tail) == 2 && tail == ']' && t.param > 0) {
		t.kind = ST_TR_BUCKET;
		if (id == ST_TYPE_BOOLEAN || id == ST_TYPE_FLOAT || id == ST_TYPE_DOUBLE)
			goto bad_source;
		r = (struct st_type){.id = ST_TYPE_INT};
	} else if (sscanf(s, "truncate[%d%c", &t.param, &tail) == 2 && tail == ']' && t.param > 0) {
		t.kind = ST_TR_TRUNCATE;
		if (id != ST_TYPE_INT && id != ST_TYPE_LONG && id != ST_TYPE_DECIMAL &&
		    id != ST_TYPE_STRING && id != ST_TYPE_BINARY)
			goto bad_source;
	} else if (strcmp(s, "year") == 0 || strcmp(s, "month") == 0 || strcmp(s, "day") == 0) {
		t.kind = s[0] == 'y' ? ST_TR_YEAR : s[0] == 'm' ? ST_TR_MONTH : ST_TR_DAY;
		if (!is_temporal(id, false))
			goto bad_source;
		r = (struct st_type){.id = t.kind == ST_TR_DAY ? ST_TYPE_DATE : ST_TYPE_INT};
	} else if (strcmp(s, "hour") == 0) {
		t.kind = ST_TR_HOUR;
		if (!is_temporal(id, true))
			goto bad_source;
		r = (struct st_type){.id = ST_TYPE_INT};
	} else {
		return fl_err_set(err, FL_ERR_UNSUPPORTED,
		                  "partition transform '%.40s' is not supported", s);
	}
	*out = t;
	*result = r;
	return 0;
bad_source : {
	char name[48];

	st_type_format(src, name, sizeof(name));
	return fl_err_set(err, FL_ERR_BAD_REQUEST, "partition transform %.40s cannot apply to %s",
	                  s, name);
}
}

static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;

	return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/* Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm). */
static void civil(int64_t days, int64_t *y, int *m)
{
	int64_t z = days + 719468, era = floor_div(z, 146097);
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t mp = (5 * doy + 2) / 153;
	int mm = (int)(mp < 10 ? mp + 3 : mp - 9);

	*y = yoe + era * 400 + (mm <= 2);
	*m = mm;
}

/* The value's point in time as days and micros-of-day counts. */
static int64_t to_micros(const struct st_type *src, const struct st_value *v)
{
	if (src->id == ST_TYPE_DATE)
		return (int64_t)v->v.i * 86400000000LL;
	if (src->id == ST_TYPE_TIMESTAMP_NS || src->id == ST_TYPE_TIMESTAMPTZ_NS)
		return floor_div(v->v.l, 1000);
	return v->v.l;
}

/* Minimal big-endian two's complement of a 16-byte unscaled decimal. */
static size_t decimal_min(const uint8_t dec[16], const uint8_t **p)
{
	size_t i = 0;

	while (i < 15 && ((dec[i] == 0x00 && !(dec[i + 1] & 0x80)) ||
	                  (dec[i] == 0xff && (dec[i + 1] & 0x80))))
		i++;
	*p = dec + i;
	return 16 - i;
}

static uint32_t hash_value(const struct st_type *src, const struct st_value *v)
{
	uint8_t b[8];
	int64_t l;
	const uint8_t *p;
	size_t n;

	switch (src->id) {
	case ST_TYPE_INT:
	case ST_TYPE_DATE: l = v->v.i; break;
	case ST_TYPE_DECIMAL: n = decimal_min(v->v.dec, &p); return st_murmur3_32(p, n);
	case ST_TYPE_STRING:
	case ST_TYPE_UUID:
	case ST_TYPE_FIXED:
	case ST_TYPE_BINARY: return st_murmur3_32(v->v.bin.p, v->v.bin.len);
	default: l = v->v.l; break;
	}
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)((uint64_t)l >> (8 * i));
	return st_murmur3_32(b, 8);
}

/* Subtracts ((u % w) + w) % w from a 16-byte big-endian unscaled value that
 * fits in an int64 (wider decimals are left unchanged: none fit a partition
 * truncate in practice, and the spec allows any width to map to itself). */
static void truncate_decimal(const uint8_t in[16], int32_t w, uint8_t out[16])
{
	int64_t u = 0;
	bool fits = true;

	for (int i = 0; i < 8; i++)
		if (in[i] != (in[8] & 0x80 ? 0xff : 0x00))
			fits = false;
	memcpy(out, in, 16);
	if (!fits)
		return;
	for (int i = 8; i < 16; i++)
		u = (int64_t)((uint64_t)u << 8 | in[i]);
	u -= ((u % w) + w) % w;
	for (int i = 15; i >= 0; i--) {
		out[i] = (uint8_t)u;
		u >>= 8;
	}
}

void st_transform_apply(const struct st_transform *t, const struct st_type *src,
                        const struct st_value *v, struct st_value *out)
{
	memset(out, 0, sizeof(*out));
	if (v->null || t->kind == ST_TR_VOID) {
		out->null = true;
		return;
	}
	switch (t->kind) {
	case ST_TR_IDENTITY: *out = *v; return;
	case ST_TR_BUCKET:
		out->v.i = (int32_t)((hash_value(src, v) & INT32_MAX) % (uint32_t)t->param);
		return;
	case ST_TR_TRUNCATE:
		if (src->id == ST_TYPE_INT) {
			out->v.i = v->v.i -
			           (int32_t)((((int64_t)v->v.i % t->param) + t->param) % t->param);
		} else if (src->id == ST_TYPE_LONG) {
			out->v.l = v->v.l - ((v->v.l % t->param) + t->param) % t->param;
		} else if (src->id == ST_TYPE_DECIMAL) {
			truncate_decimal(v->v.dec, t->param, out->v.dec);
		} else if (src->id == ST_TYPE_STRING) {
			/* W code points: count UTF-8 lead bytes. */
			size_t n = 0, cps = 0;

			while (n < v->v.bin.len) {
				if ((v->v.bin.p[n] & 0xc0) != 0x80) {
					if (cps == (size_t)t->param)
						break;
					cps++;
				}
				n++;
			}
			out->v.bin.p = v->v.bin.p;
			out->v.bin.len = n;
		} else {
			out->v.bin.p = v->v.bin.p;
			out->v.bin.len =
			        v->v.bin.len < (size_t)t->param ? v->v.bin.len : (size_t)t->param;
		}
		return;
	case ST_TR_YEAR:
	case ST_TR_MONTH: {
		int64_t days = floor_div(to_micros(src, v), 86400000000LL), y;
		int m;

		civil(days, &y, &m);
		out->v.i = (int32_t)(t->kind == ST_TR_YEAR ? y - 1970 : (y - 1970) * 12 + (m - 1));
		return;
	}
	case ST_TR_DAY: out->v.i = (int32_t)floor_div(to_micros(src, v), 86400000000LL); return;
	case ST_TR_HOUR: out->v.i = (int32_t)floor_div(to_micros(src, v), 3600000000LL); return;
	case ST_TR_VOID: break;
	}
}
