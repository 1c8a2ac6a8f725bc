/* b64.c - base64 and base64url (RFC 4648 §4 and §5).
 *
 * The decoder accepts both alphabets because its inputs come from both:
 * HTTP Basic credentials are standard base64, JWT parts and JWK members are
 * base64url without padding. */
#include "b64.h"

static const char url_alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

void fl_b64url_encode(const unsigned char *p, size_t n, char *out)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)p[i] << 16 | (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0) |
		             (i + 2 < n ? p[i + 2] : 0);

		out[o++] = url_alphabet[(v >> 18) & 63];
		out[o++] = url_alphabet[(v >> 12) & 63];
		if (i + 1 < n)
			out[o++] = url_alphabet[(v >> 6) & 63];
		if (i + 2 < n)
			out[o++] = url_alphabet[v & 63];
	}
	out[o] = '\0';
}

/* The value of each character in either alphabet ('+' and '-' are 62, '/'
 * and '_' are 63), -1 for any other. */
static const signed char digit[256] = {
        -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
        -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 62,
        -1, 62, -1, 63, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, -1, -1, -1, -1, -1, -1, -1, 0,
        1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22,
        23, 24, 25, -1, -1, -1, -1, 63, -1, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38,
        39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, -1, -1, -1, -1, -1, -1, -1, -1, -1,
        -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
        -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
        -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
        -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
        -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
        -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
};

int fl_b64_decode(const char *s, size_t n, unsigned char *out, size_t cap, size_t *out_len)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, o = 0;
	unsigned v;

	while (n > 0 && s[n - 1] == '=')
		n--;
	/* Four characters make three bytes (packed metadata documents are
	 * decoded on every loadTable miss: doc.c). */
	for (; n - i >= 4; i += 4) {
		int a = digit[u[i]], b = digit[u[i + 1]], c = digit[u[i + 2]], d = digit[u[i + 3]];

		if ((a | b | c | d) < 0 || cap - o < 3)
			return -1;
		v = (unsigned)a << 18 | (unsigned)b << 12 | (unsigned)c << 6 | (unsigned)d;
		out[o++] = (unsigned char)(v >> 16);
		out[o++] = (unsigned char)(v >> 8);
		out[o++] = (unsigned char)v;
	}
	/* Two or three left encode one or two bytes; a lone one none. */
	if (n - i == 1)
		return -1;
	if (n - i >= 2) {
		int a = digit[u[i]], b = digit[u[i + 1]], c = n - i == 3 ? digit[u[i + 2]] : 0;

		if ((a | b | c) < 0 || cap - o < n - i - 1)
			return -1;
		v = (unsigned)a << 18 | (unsigned)b << 12 | (unsigned)c << 6;
		out[o++] = (unsigned char)(v >> 16);
		if (n - i == 3)
			out[o++] = (unsigned char)(v >> 8);
	}
	*out_len = o;
	return 0;
}
