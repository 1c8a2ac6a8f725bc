/* pct.c - strict percent decoding and conservative encoding. */
#include "pct.h"

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int fl_pct_decode(const char *in, size_t len, bool plus_is_space, char *out, size_t *out_len,
                  struct fl_err *err)
{
	size_t o = 0;

	for (size_t i = 0; i < len; i++) {
		char c = in[i];

		if (c == '%') {
			int hi, lo;

			if (i + 2 >= len)
				return fl_err_set(
				        err, FL_ERR_BAD_REQUEST,
				        "invalid percent-encoding: '%%' at offset %zu is not followed by two hex digits",
				        i);
			hi = hexval(in[i + 1]);
			lo = hexval(in[i + 2]);
			if (hi < 0 || lo < 0)
				return fl_err_set(
				        err, FL_ERR_BAD_REQUEST,
				        "invalid percent-encoding: '%%' at offset %zu is not followed by two hex digits",
				        i);
			c = (char)(hi << 4 | lo);
			if (c == '\0')
				return fl_err_set(err, FL_ERR_BAD_REQUEST,
				                  "invalid percent-encoding: %%00 is not allowed");
			i += 2;
		} else if (c == '+' && plus_is_space) {
			c = ' ';
		}
		out[o++] = c;
	}
	out[o] = '\0';
	*out_len = o;
	return 0;
}

long fl_pct_encode(const char *s, size_t len, char *out, size_t cap)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		             (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';

		if (o + (plain ? 1 : 3) >= cap)
			return -1;
		if (plain) {
			out[o++] = (char)c;
		} else {
			out[o++] = '%';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	if (o >= cap)
		return -1;
	out[o] = '\0';
	return (long)o;
}
