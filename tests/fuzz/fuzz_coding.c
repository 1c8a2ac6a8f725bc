/* fuzz_coding.c - fl_coding_accepted on arbitrary header values, and the
 * gzip and zstd coders on arbitrary bodies.
 *
 * The value is copied into an exact-size heap block (ASan sees any read
 * past its NUL).  The answer is a coding Floe makes, and one the header
 * names: gzip needs "gzip" or "*" in it, zstd "zstd" or "*" (any case).
 * The same bytes as a body must code and decode back to themselves with
 * zlib and libzstd. */
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include <zlib.h>
#include <zstd.h>

#include "coding.h"
#include "fuzz.h"

static bool names(const char *s, const char *tok)
{
	for (; *s; s++)
		if (strncasecmp(s, tok, strlen(tok)) == 0)
			return true;
	return false;
}

static void round_trip(enum fl_coding c, const uint8_t *data, size_t size)
{
	char *z = NULL, *back = malloc(size ? size : 1);
	size_t zn = 0;

	FUZZ_CHECK(back != NULL);
	FUZZ_CHECK(fl_coding_encode(c, data, size, &z, &zn) == 0);
	if (c == FL_CODING_GZIP) {
		z_stream zs = {0};

		FUZZ_CHECK(inflateInit2(&zs, 15 + 16) == Z_OK);
		zs.next_in = (Bytef *)z;
		zs.avail_in = (uInt)zn;
		zs.next_out = (Bytef *)back;
		zs.avail_out = (uInt)(size ? size : 1);
		FUZZ_CHECK(inflate(&zs, Z_FINISH) == Z_STREAM_END);
		FUZZ_CHECK(zs.total_out == size && zs.avail_in == 0);
		inflateEnd(&zs);
	} else {
		FUZZ_CHECK(ZSTD_decompress(back, size ? size : 1, z, zn) == size);
	}
	FUZZ_CHECK(size == 0 || memcmp(back, data, size) == 0);
	free(z);
	free(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *ae = malloc(size + 1);
	enum fl_coding c;

	FUZZ_CHECK(ae != NULL);
	memcpy(ae, data, size);
	ae[size] = '\0';
	c = fl_coding_accepted(ae);
	FUZZ_CHECK(c == FL_CODING_IDENTITY || c == FL_CODING_GZIP || c == FL_CODING_ZSTD);
	if (c == FL_CODING_GZIP)
		FUZZ_CHECK(names(ae, "gzip") || names(ae, "*"));
	if (c == FL_CODING_ZSTD)
		FUZZ_CHECK(names(ae, "zstd") || names(ae, "*"));
	free(ae);
	if (size <= 65536) {
		round_trip(FL_CODING_GZIP, data, size);
		round_trip(FL_CODING_ZSTD, data, size);
	}
	return 0;
}
