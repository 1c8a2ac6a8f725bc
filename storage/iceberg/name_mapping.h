/* name_mapping.h - Iceberg name mapping (spec "Column Projection", table
 * property schema.name-mapping.default): field ids for columns of data
 * files written without them, found by the column's names.
 *
 * The JSON is a list of {"field-id": N, "names": [..], "fields": [..]}
 * where "fields" maps the names nested in a struct.  A column whose path
 * has no mapping gets no id and is not read, as the spec says.  A parsed
 * mapping is immutable and may be shared between threads. */
#ifndef ST_NAME_MAPPING_H
#define ST_NAME_MAPPING_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

struct st_name_mapping;

/* Parses and checks the len bytes of JSON at s.  FL_ERR_BAD_REQUEST names
 * the problem (not a list, a field-id that is not an integer, names that
 * are not strings, a name mapped twice at one level, nesting deeper than
 * 32); FL_ERR_NOMEM; *out untouched on failure. */
int st_name_mapping_parse(const char *s, size_t len, struct st_name_mapping **out,
                          struct fl_err *err) FL_MUST_CHECK;

/* The field id mapped to the column path names[0..n) (top-level name
 * first), or -1 when some name on the path is not mapped or the entry has
 * no field-id. */
int32_t st_name_mapping_find(const struct st_name_mapping *m, const char *const *names, size_t n);

/* Releases a mapping; accepts NULL. */
void st_name_mapping_free(struct st_name_mapping *m);

#endif
