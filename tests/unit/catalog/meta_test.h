/* meta_test.h - helpers shared by the catalog/meta unit tests.
 *
 * JSON in tests is written with single quotes for readability: tm_json turns
 * every ' into " before parsing (no test string needs a literal quote).
 * Checks are a ';'-separated list, each one of
 *   path=JSON    the value at path equals JSON
 *   path#N       the array or object at path has N members
 *   !path        nothing at path
 * where path is '/'-separated object keys and array indexes ("refs/main",
 * "schemas/1/fields/0/id"). */
#ifndef META_TEST_H
#define META_TEST_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>

#include "tablemeta.h"

/* The fixed values every fixture uses. */
#define TM_UUID "9c12d441-03fe-4693-9a96-a0705ddf69c1"
#define TM_LOCATION "s3://bucket/wh/ns/t"
#define TM_NOW 1700000000000LL

/* Parses single-quoted JSON; fails the test on a syntax error. */
json_t *tm_json(const char *text);

/* The value at path (borrowed), or NULL. */
json_t *tm_get(const json_t *doc, const char *path);

/* Asserts every check in checks (NULL = none). */
void tm_check(const json_t *doc, const char *checks);

/* A fresh table of format version fv from cat_meta_create: schema
 * {1 id long required, 2 data string, 3 ts timestamptz}, identifier [1],
 * unpartitioned, unsorted, location TM_LOCATION, uuid TM_UUID. */
json_t *tm_table(int fv);

/* Applies updates (single-quoted JSON array) to base, asserts success and
 * that the result validates; returns the new metadata. */
json_t *tm_apply_ok(const json_t *base, const char *updates, int64_t now_ms);

/* Asserts that err has kind and a message containing want. */
void tm_err_is(const struct fl_err *err, enum fl_err_kind kind, const char *want);

#endif
