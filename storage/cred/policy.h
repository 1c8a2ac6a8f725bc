/* policy.h - table locations on S3 and the session policy that limits vended
 * credentials to one table.
 *
 * A table at s3://bucket/prefix gets credentials whose policy allows
 * objects under bucket/prefix/ only.  The list permission is conditioned on
 * s3:prefix "prefix/" and "prefix/" followed by the wildcard, with the trailing slash, so that a
 * sibling table at prefix-2 is not covered.  Pure and thread-safe. */
#ifndef ST_POLICY_H
#define ST_POLICY_H

#include <stddef.h>

#include "err.h"

/* What a caller may do with a table's objects.  The server decides it per
 * caller and table (authorization); storage only applies it. */
enum st_access {
	ST_ACCESS_READ, /* GET / HEAD, list */
	ST_ACCESS_READ_WRITE, /* also PUT, DELETE, multipart uploads */
};

/* The name used in logs and cache keys ("read", "read-write"). */
const char *st_access_name(enum st_access a);

struct st_s3_loc {
	char bucket[64];
	char prefix[1024]; /* the key prefix without leading or trailing '/'; may be "" */
};

/* Splits "s3://bucket/some/prefix/" (st_s3_uri_split checks the bucket
 * name); the prefix must not hold
 * empty, "." or ".." segments, backslashes or control bytes.
 * FL_ERR_BAD_REQUEST naming the problem otherwise. */
int st_s3_loc_parse(const char *uri, struct st_s3_loc *out, struct fl_err *err) FL_MUST_CHECK;

/* The IAM session policy for a table at loc and access level a, as compact
 * JSON in a stable byte order (malloc'd, *len bytes).  The prefix must be
 * non-empty and free of the IAM wildcards '*' and '?' and of "${" (policy
 * variables), which would widen the grant: FL_ERR_BAD_REQUEST.  A policy
 * longer than STS accepts (2048 bytes) is FL_ERR_TOO_LARGE. */
int st_policy_session(const struct st_s3_loc *loc, enum st_access a, char **out, size_t *len,
                      struct fl_err *err) FL_MUST_CHECK;

#endif
