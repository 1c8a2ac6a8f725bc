/* fuzz_pct.c - fl_pct_decode and fl_pct_encode on arbitrary bytes.
 *
 * The first byte chooses plus_is_space; the rest is the input.  The decoder
 * is compared with a straightforward reference; every encoding decodes back
 * to its input (unless the input holds a NUL, which decoding refuses); an
 * encode into a too-small buffer fails without writing past it (the buffers
 * are exact-size heap blocks, so ASan sees any overrun). */
#include <stdbool.h>
#include <string.h>

#include "fuzz.h"
#include "pct.h"

static int hex(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Reference decoder: -1 on any invalid escape or decoded NUL. */
static long ref_decode(const unsigned char *in, size_t len, bool plus, unsigned char *out)
{
	size_t o = 0;

	for (size_t i = 0; i < len; i++) {
		if (in[i] == '%') {
			if (len - i < 3 || hex(in[i + 1]) < 0 || hex(in[i + 2]) < 0)
				return -1;
			out[o] = (unsigned char)(hex(in[i + 1]) * 16 + hex(in[i + 2]));
			if (out[o] == 0)
				return -1;
			o++;
			i += 2;
		} else {
			out[o++] = plus && in[i] == '+' ? ' ' : in[i];
		}
	}
	return (long)o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	bool plus;
	const char *in;
	size_t len, out_len = 0;
	char *out, *enc, *dec;
	unsigned char *ref;
	long want, elen;
	struct fl_err err;
	int rc;

	if (size == 0)
		return 0;
	plus = data[0] & 1;
	in = (const char *)data + 1;
	len = size - 1;

	out = malloc(len + 1);
	ref = malloc(len + 1);
	FUZZ_CHECK(out != NULL && ref != NULL);
	rc = fl_pct_decode(in, len, plus, out, &out_len, &err);
	want = ref_decode((const unsigned char *)in, len, plus, ref);
	FUZZ_CHECK((rc == 0) == (want >= 0));
	if (rc == 0) {
		FUZZ_CHECK(out_len == (size_t)want);
		FUZZ_CHECK(memcmp(out, ref, out_len) == 0);
		FUZZ_CHECK(out[out_len] == '\0');
		/* %00 is refused; a raw NUL in the input is copied like any byte
		 * (callers pass C strings, so it cannot occur there). */
		if (memchr(in, '\0', len) == NULL)
			FUZZ_CHECK(memchr(out, '\0', out_len) == NULL);
	} else {
		FUZZ_CHECK(err.kind == FL_ERR_BAD_REQUEST);
	}

	/* Encode with room enough, then decode back. */
	enc = malloc(3 * len + 1);
	dec = malloc(3 * len + 1);
	FUZZ_CHECK(enc != NULL && dec != NULL);
	elen = fl_pct_encode(in, len, enc, 3 * len + 1);
	FUZZ_CHECK(elen >= (long)len && elen <= (long)(3 * len));
	FUZZ_CHECK(enc[elen] == '\0');
	rc = fl_pct_decode(enc, (size_t)elen, plus, dec, &out_len, &err);
	if (memchr(in, '\0', len) != NULL) {
		FUZZ_CHECK(rc != 0);
	} else {
		FUZZ_CHECK(rc == 0);
		FUZZ_CHECK(out_len == len);
		FUZZ_CHECK(memcmp(dec, in, len) == 0);
	}
	free(enc);

	/* Encode into a buffer one byte too small: refused, nothing past it. */
	enc = malloc((size_t)elen);
	if (enc != NULL || elen == 0) {
		FUZZ_CHECK(fl_pct_encode(in, len, enc, (size_t)elen) == -1);
		free(enc);
	}
	free(dec);
	free(out);
	free(ref);
	return 0;
}
