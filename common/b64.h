/* b64.h - base64 (RFC 4648 §4) and base64url (§5), for tokens, keys and
 * secrets.  Pure functions; thread-safe. */
#ifndef FL_B64_H
#define FL_B64_H

#include <stddef.h>

/* Unpadded base64url of the n bytes at p into out, which needs room for
 * (4 * n + 2) / 3 + 1 bytes; NUL-terminated. */
void fl_b64url_encode(const unsigned char *p, size_t n, char *out);

/* Decodes base64 in either alphabet (standard or url, which may be mixed),
 * with or without '=' padding, into out (cap bytes).  Returns 0 and sets
 * *out_len, or -1 on a character outside both alphabets, a dangling final
 * character, or output longer than cap. */
int fl_b64_decode(const char *s, size_t n, unsigned char *out, size_t cap, size_t *out_len);

#endif
