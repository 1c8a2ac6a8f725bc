/* pct.h - percent-encoding of URL path segments and query values (RFC 3986).
 *
 * The server receives raw paths (libmicrohttpd's unescaping is switched off)
 * and decodes each segment after splitting on '/', so "%2F" inside a name is
 * data.  Decoding is strict: a '%' not followed by two hex digits is an error. */
#ifndef FL_PCT_H
#define FL_PCT_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

/* Decodes len bytes at in into out (room for len + 1 bytes), NUL-terminates
 * and stores the decoded length in *out_len.  With plus_is_space, '+' decodes
 * to ' ' (form and query encoding).  A decoded NUL byte is rejected. */
int fl_pct_decode(const char *in, size_t len, bool plus_is_space, char *out, size_t *out_len,
                  struct fl_err *err) FL_MUST_CHECK;

/* Encodes s so that every byte outside unreserved (A-Z a-z 0-9 - . _ ~) is
 * %XX.  Writes at most cap bytes including the NUL; returns the length or -1
 * when cap is too small. */
long fl_pct_encode(const char *s, size_t len, char *out, size_t cap);

#endif
