/* fuzz_cast.c - st_cast_text and st_cast_json (storage/feed/cast.c) on
 * arbitrary text.
 *
 * The first byte picks the type (and tz_assume_utc), the rest is the value.
 * Invariants: a refusal is FL_ERR_BAD_REQUEST with a message naming the
 * value; an accepted value is in its type's range, and printing it back in
 * the canonical form and casting again gives the same value (so a cast is
 * exact and deterministic); the JSON string path agrees with the text path
 * for every type whose JSON form is a string with the text rules. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cast.h"
#include "fuzz.h"
#include "json.h"

static const char *const types[] = {
        "boolean",        "int",
        "long",           "float",
        "double",         "decimal(5, 2)",
        "decimal(38, 0)", "decimal(38, 38)",
        "decimal(1, 0)",  "decimal(18, 6)",
        "date",           "time",
        "timestamp",      "timestamptz",
        "timestamp_ns",   "timestamptz_ns",
        "string",         "uuid",
        "binary",         "fixed[3]",
};

/* Canonical text of a decimal: digits with the point at scale. */
static void dec_text(const uint8_t dec[16], int scale, char *out, size_t cap)
{
	__extension__ typedef unsigned __int128 u128;
	u128 u = 0;
	bool neg = dec[0] & 0x80;
	char tmp[64];
	size_t n = 0, o = 0;

	for (int i = 0; i < 16; i++)
		u = u << 8 | dec[i];
	if (neg)
		u = ~u + 1;
	do {
		tmp[n++] = (char)('0' + (int)(u % 10));
		u /= 10;
	} while (u != 0);
	while (n <= (size_t)scale)
		tmp[n++] = '0';
	if (neg)
		out[o++] = '-';
	while (n > 0 && o + 2 < cap) {
		if (n == (size_t)scale)
			out[o++] = '.';
		out[o++] = tmp[--n];
	}
	out[o] = '\0';
}

static int digits_of(const uint8_t dec[16])
{
	__extension__ typedef unsigned __int128 u128;
	u128 u = 0;
	int d = 0;

	for (int i = 0; i < 16; i++)
		u = u << 8 | dec[i];
	if (dec[0] & 0x80)
		u = ~u + 1;
	while (u != 0) {
		u /= 10;
		d++;
	}
	return d;
}

/* Prints v in a form the text rules accept; false when there is none
 * to check (NaN, infinities, and times outside 0001..9999). */
static bool canonical(const struct st_type *t, const struct st_value *v, char *out, size_t cap)
{
	switch (t->id) {
	case ST_TYPE_BOOLEAN: snprintf(out, cap, "%s", v->v.b ? "true" : "false"); return true;
	case ST_TYPE_INT: snprintf(out, cap, "%d", v->v.i); return true;
	case ST_TYPE_LONG: snprintf(out, cap, "%lld", (long long)v->v.l); return true;
	case ST_TYPE_FLOAT:
		if (!isfinite(v->v.f))
			return false;
		snprintf(out, cap, "%.9g", (double)v->v.f);
		return true;
	case ST_TYPE_DOUBLE:
		if (!isfinite(v->v.d))
			return false;
		snprintf(out, cap, "%.17g", v->v.d);
		return true;
	case ST_TYPE_DECIMAL: dec_text(v->v.dec, t->scale, out, cap); return true;
	default: return false;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct st_type t;
	struct st_cast_opts o = {0};
	struct st_value v, w;
	struct fl_err err = {0};
	uint8_t room[4096], room2[4096];
	struct st_cast_scratch sc = {room, sizeof(room), 0}, sc2 = {room2, sizeof(room2), 0};
	const char *s;
	size_t n;
	int rc;
	char buf[128];

	if (size < 1 || size > 2048)
		return 0;
	FUZZ_CHECK(st_type_parse(types[(data[0] & 0x7f) % (sizeof(types) / sizeof(types[0]))], &t,
	                         &err) == 0);
	o.tz_assume_utc = data[0] & 0x80;
	s = (const char *)data + 1;
	n = size - 1;
	rc = st_cast_text(&t, s, n, &o, &sc, &v, &err);
	if (rc != 0) {
		FUZZ_CHECK(err.kind == FL_ERR_BAD_REQUEST);
		FUZZ_CHECK(strncmp(err.msg, "value \"", 7) == 0);
		FUZZ_CHECK(memchr(err.msg, '\0', sizeof(err.msg)) != NULL);
	} else {
		FUZZ_CHECK(!v.null);
		switch (t.id) {
		case ST_TYPE_DECIMAL: FUZZ_CHECK(digits_of(v.v.dec) <= t.precision); break;
		case ST_TYPE_DATE: FUZZ_CHECK(v.v.i >= -719162 && v.v.i <= 2932896); break;
		case ST_TYPE_TIME: FUZZ_CHECK(v.v.l >= 0 && v.v.l < 86400000000LL); break;
		case ST_TYPE_TIMESTAMP:
			FUZZ_CHECK(v.v.l >= -62135596800000000LL && v.v.l <= 253402300799999999LL);
			break;
		case ST_TYPE_TIMESTAMPTZ:
			/* The zone may move it up to a day outside the calendar. */
			FUZZ_CHECK(v.v.l >= -62135596800000000LL - 86400000000LL &&
			           v.v.l <= 253402300799999999LL + 86400000000LL);
			break;
		case ST_TYPE_STRING:
			FUZZ_CHECK(v.v.bin.len == n && fl_utf8_valid((const char *)v.v.bin.p, n));
			break;
		case ST_TYPE_UUID: FUZZ_CHECK(v.v.bin.len == 16); break;
		case ST_TYPE_FIXED: FUZZ_CHECK(v.v.bin.len == 3); break;
		case ST_TYPE_BINARY: FUZZ_CHECK(v.v.bin.len <= n / 2); break;
		default: break;
		}
		if (canonical(&t, &v, buf, sizeof(buf))) {
			FUZZ_CHECK(st_cast_text(&t, buf, strlen(buf), &o, &sc2, &w, &err) == 0);
			FUZZ_CHECK(memcmp(&v.v, &w.v, sizeof(v.v)) == 0 ||
			           (t.id == ST_TYPE_DOUBLE && v.v.d == w.v.d) ||
			           (t.id == ST_TYPE_FLOAT && v.v.f == w.v.f));
		}
	}

	/* A JSON string takes the text rules for these types. */
	if (fl_utf8_valid(s, n) && memchr(s, '\0', n) == NULL &&
	    (t.id == ST_TYPE_DATE || t.id == ST_TYPE_TIME || t.id == ST_TYPE_TIMESTAMP ||
	     t.id == ST_TYPE_TIMESTAMPTZ || t.id == ST_TYPE_TIMESTAMP_NS ||
	     t.id == ST_TYPE_TIMESTAMPTZ_NS || t.id == ST_TYPE_STRING || t.id == ST_TYPE_UUID ||
	     t.id == ST_TYPE_DECIMAL)) {
		json_t *j = json_stringn(s, n);
		int rj;

		FUZZ_CHECK(j != NULL);
		sc2.used = 0;
		rj = st_cast_json(&t, j, &o, &sc2, &w, &err);
		FUZZ_CHECK((rj == 0) == (rc == 0));
		if (rc == 0 && t.id != ST_TYPE_STRING && t.id != ST_TYPE_UUID)
			FUZZ_CHECK(memcmp(&v.v, &w.v, sizeof(v.v)) == 0);
		if (rc == 0 && t.id == ST_TYPE_UUID)
			FUZZ_CHECK(memcmp(v.v.bin.p, w.v.bin.p, 16) == 0);
		json_decref(j);
	}
	return 0;
}
