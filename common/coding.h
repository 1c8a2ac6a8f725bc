/* coding.h - HTTP content codings of response bodies (RFC 9110 §8.4).
 *
 * A client that sends Accept-Encoding with gzip or zstd may get a body so
 * coded: Iceberg metadata is JSON that shrinks 6-9 times, and a table's
 * grows with its snapshots.  Both codings run at level 1 (the body is
 * usually coded once per version and sent many times, but a hot table
 * makes a version every few milliseconds). */
#ifndef FL_CODING_H
#define FL_CODING_H

#include <stddef.h>

#include "err.h"

enum fl_coding { FL_CODING_IDENTITY = 0, FL_CODING_GZIP, FL_CODING_ZSTD, FL_CODING_COUNT };

/* The token of c for Content-Encoding ("gzip", "zstd"; "identity"). */
const char *fl_coding_name(enum fl_coding c);

/* The coding to answer with, given the value of an Accept-Encoding header
 * (NULL: the header is absent, which means identity here).  Among gzip
 * (also "x-gzip") and zstd, the one with the highest q-value above 0 wins,
 * zstd on a tie (cheaper to make and to read); "*" stands for a coding
 * not listed.  Anything malformed in an element makes that element count
 * for nothing; at most the first 64 elements are looked at. */
enum fl_coding fl_coding_accepted(const char *accept_encoding);

/* Codes the n bytes at p with c (not identity) into a malloc'd buffer,
 * *out of *out_len bytes.  0, or -1 when out of memory (or n is too large
 * for the coder). */
int fl_coding_encode(enum fl_coding c, const void *p, size_t n, char **out,
                     size_t *out_len) FL_MUST_CHECK;

#endif
