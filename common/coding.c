/* coding.c - gzip and zstd bodies, and Accept-Encoding. */
#include "coding.h"

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <zlib.h>
#include <zstd.h>

#define LEVEL_GZIP 1
#define LEVEL_ZSTD 1
#define MAX_ELEMENTS 64

const char *fl_coding_name(enum fl_coding c)
{
	switch (c) {
	case FL_CODING_GZIP: return "gzip";
	case FL_CODING_ZSTD: return "zstd";
	default: return "identity";
	}
}

static bool is_ows(char c)
{
	return c == ' ' || c == '\t';
}

/* The q-value of one element's parameters (";q=0.5"), in thousandths: 1000
 * when there is none, -1 when they are malformed. */
static int qvalue(const char *p, const char *end)
{
	int q = 1000;

	while (p < end) {
		while (p < end && is_ows(*p))
			p++;
		if (p == end)
			break;
		if (*p != ';')
			return -1;
		p++;
		while (p < end && is_ows(*p))
			p++;
		if (end - p < 2 || (p[0] != 'q' && p[0] != 'Q') || p[1] != '=')
			return -1; /* only q is defined for Accept-Encoding */
		p += 2;
		/* qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] ) */
		if (p == end || (*p != '0' && *p != '1'))
			return -1;
		q = (*p++ - '0') * 1000;
		if (p < end && *p == '.') {
			int scale = 100;

			for (p++; p < end && *p >= '0' && *p <= '9'; p++) {
				if (scale == 0)
					return -1;
				q += (*p - '0') * scale;
				scale /= 10;
			}
		}
		if (q > 1000)
			return -1;
	}
	return q;
}

static bool token_is(const char *p, size_t n, const char *tok)
{
	return strlen(tok) == n && strncasecmp(p, tok, n) == 0;
}

enum fl_coding fl_coding_accepted(const char *ae)
{
	int q_gzip = -1, q_zstd = -1, q_any = -1;
	const char *p = ae;

	if (ae == NULL)
		return FL_CODING_IDENTITY;
	for (int i = 0; i < MAX_ELEMENTS && *p != '\0'; i++) {
		const char *end = strchr(p, ','), *t, *te;
		int q;

		if (end == NULL)
			end = p + strlen(p);
		for (t = p; t < end && is_ows(*t); t++)
			;
		for (te = t; te < end && *te != ';' && !is_ows(*te); te++)
			;
		q = te > t ? qvalue(te, end) : -1;
		if (q >= 0) {
			size_t n = (size_t)(te - t);

			if (token_is(t, n, "gzip") || token_is(t, n, "x-gzip"))
				q_gzip = q > q_gzip ? q : q_gzip;
			else if (token_is(t, n, "zstd"))
				q_zstd = q > q_zstd ? q : q_zstd;
			else if (token_is(t, n, "*"))
				q_any = q > q_any ? q : q_any;
		}
		p = *end == ',' ? end + 1 : end;
	}
	if (q_gzip < 0)
		q_gzip = q_any;
	if (q_zstd < 0)
		q_zstd = q_any;
	if (q_zstd > 0 && q_zstd >= q_gzip)
		return FL_CODING_ZSTD;
	return q_gzip > 0 ? FL_CODING_GZIP : FL_CODING_IDENTITY;
}

static int encode_gzip(const void *p, size_t n, char **out, size_t *out_len)
{
	z_stream zs = {0};
	size_t cap;
	char *buf;

	if (n > UINT_MAX)
		return -1;
	/* 15 + 16: a window of 32 KiB inside a gzip header and trailer. */
	if (deflateInit2(&zs, LEVEL_GZIP, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -1;
	cap = deflateBound(&zs, (uLong)n);
	buf = malloc(cap);
	if (buf == NULL || cap > UINT_MAX) {
		free(buf);
		deflateEnd(&zs);
		return -1;
	}
	zs.next_in = (Bytef *)(uintptr_t)p;
	zs.avail_in = (uInt)n;
	zs.next_out = (Bytef *)buf;
	zs.avail_out = (uInt)cap;
	/* deflateBound leaves room for the whole stream in one call. */
	if (deflate(&zs, Z_FINISH) != Z_STREAM_END) {
		free(buf);
		deflateEnd(&zs);
		return -1;
	}
	*out_len = zs.total_out;
	deflateEnd(&zs);
	*out = buf;
	return 0;
}

static int encode_zstd(const void *p, size_t n, char **out, size_t *out_len)
{
	size_t cap = ZSTD_compressBound(n), z;
	char *buf = ZSTD_isError(cap) ? NULL : malloc(cap);

	if (buf == NULL)
		return -1;
	z = ZSTD_compress(buf, cap, p, n, LEVEL_ZSTD);
	if (ZSTD_isError(z)) {
		free(buf);
		return -1;
	}
	*out = buf;
	*out_len = z;
	return 0;
}

int fl_coding_encode(enum fl_coding c, const void *p, size_t n, char **out, size_t *out_len)
{
	char *small;
	int rc;

	switch (c) {
	case FL_CODING_GZIP: rc = encode_gzip(p, n, out, out_len); break;
	case FL_CODING_ZSTD: rc = encode_zstd(p, n, out, out_len); break;
	default: return -1;
	}
	/* The coder's bound is the input's size and more: what the body did
	 * not use goes back (a cached body is counted by its length). */
	if (rc == 0 && (small = realloc(*out, *out_len ? *out_len : 1)) != NULL)
		*out = small;
	return rc;
}
