/* types.c - Iceberg primitive types and the single-value serialization
 * (apache/iceberg format/spec.md, "Appendix D: Single-value serialization").
 *
 * Bytes produced by st_value_serialize:
 *   boolean 1 byte (0x00/0x01); int, date 4 bytes LE; long, time,
 *   timestamp(tz) (micros) and timestamp(tz)_ns (nanos) 8 bytes LE; float 4, double 8 bytes LE IEEE 754;
 *   string UTF-8 bytes, binary/fixed raw bytes, no length; uuid 16 bytes
 *   big-endian; decimal the unscaled value as two's complement big-endian
 *   in the minimum number of bytes. */
#include "types.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
	const char *name;
	enum st_type_id id;
} simple_types[] = {
        {"boolean", ST_TYPE_BOOLEAN},
        {"int", ST_TYPE_INT},
        {"long", ST_TYPE_LONG},
        {"float", ST_TYPE_FLOAT},
        {"double", ST_TYPE_DOUBLE},
        {"date", ST_TYPE_DATE},
        {"time", ST_TYPE_TIME},
        {"timestamp", ST_TYPE_TIMESTAMP},
        {"timestamptz", ST_TYPE_TIMESTAMPTZ},
        {"string", ST_TYPE_STRING},
        {"uuid", ST_TYPE_UUID},
        {"binary", ST_TYPE_BINARY},
        {"timestamp_ns", ST_TYPE_TIMESTAMP_NS},
        {"timestamptz_ns", ST_TYPE_TIMESTAMPTZ_NS},
};

/* Reads a decimal integer at *p (after optional spaces) into *out. */
static bool parse_uint(const char **p, long *out)
{
	char *end;
	long v;

	while (**p == ' ')
		(*p)++;
	if (!isdigit((unsigned char)**p))
		return false;
	v = strtol(*p, &end, 10);
	if (v < 0 || v > 1000000000L)
		return false;
	*p = end;
	while (**p == ' ')
		(*p)++;
	*out = v;
	return true;
}

int st_type_parse(const char *s, struct st_type *out, struct fl_err *err)
{
	struct st_type t = {0};
	const char *p;
	long a, b;

	for (size_t i = 0; i < sizeof(simple_types) / sizeof(simple_types[0]); i++) {
		if (strcmp(s, simple_types[i].name) == 0) {
			t.id = simple_types[i].id;
			*out = t;
			return 0;
		}
	}
	if (strncmp(s, "decimal(", 8) == 0) {
		p = s + 8;
		if (!parse_uint(&p, &a) || *p++ != ',' || !parse_uint(&p, &b) || *p++ != ')' ||
		    *p != '\0' || a < 1 || a > 38 || b > a)
			goto bad;
		t.id = ST_TYPE_DECIMAL;
		t.precision = (int)a;
		t.scale = (int)b;
		*out = t;
		return 0;
	}
	if (strncmp(s, "fixed[", 6) == 0) {
		p = s + 6;
		if (!parse_uint(&p, &a) || *p++ != ']' || *p != '\0' || a < 1)
			goto bad;
		t.id = ST_TYPE_FIXED;
		t.length = (uint32_t)a;
		*out = t;
		return 0;
	}
bad:
	return fl_err_set(err, FL_ERR_BAD_REQUEST, "unsupported or malformed type \"%.64s\"", s);
}

void st_type_format(const struct st_type *t, char *out, size_t cap)
{
	if (t->id == ST_TYPE_DECIMAL) {
		snprintf(out, cap, "decimal(%d, %d)", t->precision, t->scale);
		return;
	}
	if (t->id == ST_TYPE_FIXED) {
		snprintf(out, cap, "fixed[%u]", t->length);
		return;
	}
	for (size_t i = 0; i < sizeof(simple_types) / sizeof(simple_types[0]); i++) {
		if (simple_types[i].id == t->id) {
			snprintf(out, cap, "%s", simple_types[i].name);
			return;
		}
	}
	snprintf(out, cap, "unknown");
}

bool st_type_is_floating(const struct st_type *t)
{
	return t->id == ST_TYPE_FLOAT || t->id == ST_TYPE_DOUBLE;
}

int st_decimal_bytes(int precision)
{
	/* Smallest n with 10^precision - 1 < 2^(8n - 1). */
	double bits = 0;
	int n = 1;

	for (int i = 0; i < precision; i++)
		bits += 3.321928094887362; /* log2(10) */
	while ((double)(8 * n - 1) < bits)
		n++;
	return n;
}

void st_value_set_decimal(struct st_value *v, int64_t unscaled)
{
	uint64_t u = (uint64_t)unscaled;

	v->null = false;
	memset(v->v.dec, unscaled < 0 ? 0xff : 0x00, 8);
	for (int i = 0; i < 8; i++)
		v->v.dec[15 - i] = (uint8_t)(u >> (8 * i));
}

static int cmp_bytes(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
	size_t n = an < bn ? an : bn;
	int c = n ? memcmp(a, b, n) : 0;

	if (c != 0)
		return c;
	return an < bn ? -1 : an > bn ? 1 : 0;
}

static int cmp_double(double a, double b)
{
	if (a < b)
		return -1;
	if (a > b)
		return 1;
	/* Equal: only the zeros differ, and -0.0 sorts first. */
	return (int)(signbit(b) != 0) - (int)(signbit(a) != 0);
}

int st_value_compare(const struct st_type *t, const struct st_value *a, const struct st_value *b)
{
	switch (t->id) {
	case ST_TYPE_BOOLEAN: return (int)a->v.b - (int)b->v.b;
	case ST_TYPE_INT:
	case ST_TYPE_DATE: return (a->v.i > b->v.i) - (a->v.i < b->v.i);
	case ST_TYPE_LONG:
	case ST_TYPE_TIME:
	case ST_TYPE_TIMESTAMP:
	case ST_TYPE_TIMESTAMPTZ:
	case ST_TYPE_TIMESTAMP_NS:
	case ST_TYPE_TIMESTAMPTZ_NS: return (a->v.l > b->v.l) - (a->v.l < b->v.l);
	case ST_TYPE_FLOAT: return cmp_double(a->v.f, b->v.f);
	case ST_TYPE_DOUBLE: return cmp_double(a->v.d, b->v.d);
	case ST_TYPE_DECIMAL: {
		/* Two's complement big-endian: flip the sign bit, then the
		 * unsigned byte order is the numeric order. */
		uint8_t x = a->v.dec[0] ^ 0x80, y = b->v.dec[0] ^ 0x80;

		if (x != y)
			return x < y ? -1 : 1;
		return memcmp(a->v.dec + 1, b->v.dec + 1, 15);
	}
	case ST_TYPE_STRING:
	case ST_TYPE_UUID:
	case ST_TYPE_FIXED:
	case ST_TYPE_BINARY: return cmp_bytes(a->v.bin.p, a->v.bin.len, b->v.bin.p, b->v.bin.len);
	}
	return 0;
}

int st_value_serialize(const struct st_type *t, const struct st_value *v, struct st_buf *out)
{
	switch (t->id) {
	case ST_TYPE_BOOLEAN: return st_buf_put_u8(out, v->v.b ? 1 : 0);
	case ST_TYPE_INT:
	case ST_TYPE_DATE: return st_buf_put_le32(out, (uint32_t)v->v.i);
	case ST_TYPE_LONG:
	case ST_TYPE_TIME:
	case ST_TYPE_TIMESTAMP:
	case ST_TYPE_TIMESTAMPTZ:
	case ST_TYPE_TIMESTAMP_NS:
	case ST_TYPE_TIMESTAMPTZ_NS: return st_buf_put_le64(out, (uint64_t)v->v.l);
	case ST_TYPE_FLOAT: {
		uint32_t u;

		memcpy(&u, &v->v.f, sizeof(u));
		return st_buf_put_le32(out, u);
	}
	case ST_TYPE_DOUBLE: {
		uint64_t u;

		memcpy(&u, &v->v.d, sizeof(u));
		return st_buf_put_le64(out, u);
	}
	case ST_TYPE_DECIMAL: {
		const uint8_t *d = v->v.dec;
		size_t n = 16;

		/* Drop leading bytes that only repeat the sign. */
		while (n > 1 &&
		       ((d[0] == 0x00 && !(d[1] & 0x80)) || (d[0] == 0xff && (d[1] & 0x80)))) {
			d++;
			n--;
		}
		return st_buf_append(out, d, n);
	}
	case ST_TYPE_STRING:
	case ST_TYPE_UUID:
	case ST_TYPE_FIXED:
	case ST_TYPE_BINARY: return st_buf_append(out, v->v.bin.p, v->v.bin.len);
	}
	return -1;
}
