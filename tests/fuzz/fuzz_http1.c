/* fuzz_http1.c - the response parser of the HTTP/1.1 client
 * (storage/rest/http1.c) on arbitrary bytes, as a head and as a chunked
 * body.
 *
 * Invariants: a complete head ends inside the input and no shorter prefix
 * is complete; a complete chunked body ends inside the input, decodes to no
 * more bytes than it spans, decodes the same from exactly its own bytes, and
 * is not complete one byte short.  The input is an exact-size heap block,
 * so ASan sees any read past it. */
#include <string.h>

#include "fuzz.h"
#include "http1.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *in = malloc(size ? size : 1);
	struct st_http1_head h, h2;
	struct fl_buf out = FL_BUF_INIT, again = FL_BUF_INIT;
	struct fl_err err;
	size_t used = 0, used2 = 0;

	FUZZ_CHECK(in != NULL);
	memcpy(in, data, size);
	if (st_http1_parse_head(in, size, &h, &err) == 1) {
		FUZZ_CHECK(h.head_len >= 4 && h.head_len <= size);
		FUZZ_CHECK(h.status >= 100 && h.status <= 999);
		FUZZ_CHECK(h.length >= -1 && h.length <= (int64_t)ST_HTTP1_MAX_BODY);
		FUZZ_CHECK(!(h.chunked && h.length >= 0));
		FUZZ_CHECK(st_http1_parse_head(in, h.head_len - 1, &h2, &err) != 1);
	}
	if (st_http1_dechunk(in, size, &out, &used, &err) == 1) {
		FUZZ_CHECK(used <= size && out.len <= used);
		FUZZ_CHECK(out.len <= ST_HTTP1_MAX_BODY);
		FUZZ_CHECK(st_http1_dechunk(in, used, &again, &used2, &err) == 1);
		FUZZ_CHECK(used2 == used && again.len == out.len);
		FUZZ_CHECK(out.len == 0 || memcmp(again.data, out.data, out.len) == 0);
		fl_buf_reset(&again);
		FUZZ_CHECK(st_http1_dechunk(in, used - 1, &again, &used2, &err) != 1);
		FUZZ_CHECK(again.len == 0);
	}
	fl_buf_free(&out);
	fl_buf_free(&again);
	free(in);
	return 0;
}
