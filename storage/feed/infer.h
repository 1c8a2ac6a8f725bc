/* infer.h - inferring an Iceberg schema from sample feed rows.
 *
 * Each column starts with no evidence and takes the narrowest type that
 * every non-null sampled value casts to under cast.h's rules: long, double
 * (long and double together give double), boolean, date, timestamp,
 * timestamptz, and string for everything else (any other mix, and a column
 * with no non-null value).  CSV text is tried in that order (so 1 and 0 are
 * long, true/false boolean; NaN, Infinity and -Infinity count as double only
 * spelled so; an empty field is no evidence).  JSON values are typed by
 * their JSON type (integer long, other numbers double, true/false boolean)
 * and JSON strings are date, timestamp, timestamptz or string, never
 * numbers, because st_cast_json refuses a string for a numeric column.
 * Every inferred column is optional.  Nested JSON (objects, arrays) is
 * refused: Floe's data files are flat.
 *
 * Not thread-safe; one inference per sample. */
#ifndef ST_FEED_INFER_H
#define ST_FEED_INFER_H

#include <jansson.h>
#include <stddef.h>

#include "base/alloc.h"
#include "csv.h"
#include "err.h"

#define ST_INFER_DEFAULT_MAX_COLUMNS 4096

struct st_infer;

/* Returns an empty inference.  max_columns 0 means the default.
 * FL_ERR_NOMEM; *out untouched on failure. */
int st_infer_open(const struct st_alloc *alloc, size_t max_columns, struct st_infer **out,
                  struct fl_err *err) FL_MUST_CHECK;

/* Names the columns from a CSV header, in order.  Must come before any row.
 * FL_ERR_BAD_REQUEST for an empty or duplicate name; FL_ERR_TOO_LARGE past
 * max_columns; FL_ERR_NOMEM. */
int st_infer_csv_header(struct st_infer *s, const struct st_csv_record *hdr,
                        struct fl_err *err) FL_MUST_CHECK;

/* Adds one CSV data record.  Without a header the first record fixes the
 * column count and the columns are named column_1, column_2, ...
 * FL_ERR_BAD_REQUEST (nothing learned; the caller may skip the record and go
 * on) for a malformed record, invalid UTF-8 or a field count that differs
 * from the columns'. */
int st_infer_csv_row(struct st_infer *s, const struct st_csv_record *rec,
                     struct fl_err *err) FL_MUST_CHECK;

/* Adds one NDJSON object; keys not seen before become new columns, in the
 * order first seen.  FL_ERR_BAD_REQUEST (nothing learned) when obj is not an
 * object or holds a nested object or array; FL_ERR_TOO_LARGE past
 * max_columns; FL_ERR_NOMEM. */
int st_infer_json_object(struct st_infer *s, const json_t *obj, struct fl_err *err) FL_MUST_CHECK;

/* Number of rows (records or objects) that contributed evidence. */
size_t st_infer_rows(const struct st_infer *s);

/* The inferred schema as Iceberg schema JSON (a new reference):
 * {"type":"struct","schema-id":0,"fields":[{"id":1,"name":"a",
 * "required":false,"type":"long"},...]}, field ids 1..n in column order.
 * FL_ERR_BAD_REQUEST when there are no columns; FL_ERR_NOMEM. */
int st_infer_schema(const struct st_infer *s, json_t **out, struct fl_err *err) FL_MUST_CHECK;

/* The type two inferences of one column agree on, by the rules above:
 * equal types stay, "long" and "double" give "double", anything else
 * "string".  A NULL a gives b.  Used to type a column seen in several
 * inputs. */
const char *st_infer_join_type(const char *a, const char *b);

/* Releases the inference; accepts NULL. */
void st_infer_free(struct st_infer *s);

#endif
