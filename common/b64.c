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

static int digit(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

int fl_b64_decode(const char *s, size_t n, unsigned char *out, size_t cap, size_t *out_len)
{
	unsigned v = 0;
	size_t o = 0;
	int bits = 0;

	while (n > 0 && s[n - 1] == '=')
		n--;
	for (size_t i = 0; i < n; i++) {
		int d = digit((unsigned char)s[i]);

		if (d < 0)
			return -1;
		v = (v << 6) | (unsigned)d;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (o == cap)
				return -1;
			out[o++] = (unsigned char)(v >> bits);
		}
	}
	if (bits >= 6) /* a lone trailing character encodes no whole byte */
		return -1;
	*out_len = o;
	return 0;
}
