/* transform.h - Iceberg partition transforms (spec "Partition Transforms"
 * and Appendix B for bucket hashing): identity, bucket[N], truncate[W],
 * year, month, day, hour, void.  Pure and thread-safe. */
#ifndef ST_TRANSFORM_H
#define ST_TRANSFORM_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "iceberg/types.h"

enum st_transform_kind {
	ST_TR_IDENTITY,
	ST_TR_BUCKET,
	ST_TR_TRUNCATE,
	ST_TR_YEAR,
	ST_TR_MONTH,
	ST_TR_DAY,
	ST_TR_HOUR,
	ST_TR_VOID,
};

struct st_transform {
	enum st_transform_kind kind;
	int32_t param; /* N for bucket, W for truncate */
};

/* Parses "bucket[16]", "truncate[4]", "day", … and checks that it applies to
 * a source of type src; *result is the partition value's type (int for
 * bucket/year/month/hour, date for day, the source type otherwise). */
int st_transform_parse(const char *s, const struct st_type *src, struct st_transform *out,
                       struct st_type *result, struct fl_err *err) FL_MUST_CHECK;

/* Applies t to a non-null v of type src.  For truncate of strings and
 * binary, out->v.bin points into v (a prefix).  A null v gives a null out. */
void st_transform_apply(const struct st_transform *t, const struct st_type *src,
                        const struct st_value *v, struct st_value *out);

/* Murmur3 x86 32-bit hash with seed 0 (for bucket, and for tests against the
 * spec's reference values). */
uint32_t st_murmur3_32(const void *p, size_t n);

#endif
