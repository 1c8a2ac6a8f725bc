/* bounds.h - truncating column bounds for Iceberg's truncate(N) metrics mode
 * (Java default truncate(16); spec "Manifests", lower_bounds/upper_bounds).
 *
 * Only string and binary are truncated: strings to N Unicode code points,
 * binary to N bytes.  A truncated lower bound is a prefix, which is still
 * <= every value.  A truncated upper bound must stay >= the real maximum,
 * so its last code point (byte) is incremented; when no increment exists
 * (all U+10FFFF, all 0xFF) there is no upper bound at all.  Strings are
 * assumed to be valid UTF-8 (the Parquet writer checks them). */
#ifndef ST_BOUNDS_H
#define ST_BOUNDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "iceberg/types.h"

/* The length of the truncated lower bound of the n serialized bytes at p:
 * n itself for types that are not truncated or values already short enough. */
size_t st_bound_lower_len(const struct st_type *t, const uint8_t *p, size_t n, size_t width);

/* Appends the upper bound of the n serialized bytes at p to out and sets
 * *has; *has is false (and nothing appended) when no upper bound exists.
 * Returns -1 only when out of memory. */
int st_bound_upper(const struct st_type *t, const uint8_t *p, size_t n, size_t width,
                   struct st_buf *out, bool *has) FL_MUST_CHECK;

/* True when the n bytes at p are well-formed UTF-8 (no surrogates, no
 * overlong forms, nothing past U+10FFFF). */
bool st_utf8_valid(const uint8_t *p, size_t n);

#endif
