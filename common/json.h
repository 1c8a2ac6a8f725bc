/* json.h - strict JSON parsing and typed field access over jansson.
 *
 * Every request body goes through fl_json_parse: duplicate keys, NUL bytes,
 * trailing garbage and nesting deeper than the configured bound are rejected
 * with a message that names the problem and its position. */
#ifndef FL_JSON_H
#define FL_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "err.h"

/* Parses len bytes at s into *out (a new reference) after checking that no
 * array or object nests deeper than max_depth.  On failure *out is untouched
 * and err is FL_ERR_BAD_REQUEST, naming max-json-depth when too deep. */
int fl_json_parse(const char *s, size_t len, int max_depth, json_t **out,
                  struct fl_err *err) FL_MUST_CHECK;

/* Nesting depth of the JSON text (brackets outside strings), without parsing. */
int fl_json_depth(const char *s, size_t len);

/* Typed member access.  `what` names the containing object in messages
 * ("CreateNamespaceRequest").  A missing optional member leaves *out as is
 * and returns 0; a missing required one or a wrong type is FL_ERR_BAD_REQUEST
 * naming the member and the expected type. */
int fl_json_get_str(const json_t *obj, const char *key, bool required, const char *what,
                    const char **out, struct fl_err *err) FL_MUST_CHECK;
int fl_json_get_int(const json_t *obj, const char *key, bool required, const char *what,
                    int64_t *out, struct fl_err *err) FL_MUST_CHECK;
int fl_json_get_bool(const json_t *obj, const char *key, bool required, const char *what, bool *out,
                     struct fl_err *err) FL_MUST_CHECK;
int fl_json_get_obj(const json_t *obj, const char *key, bool required, const char *what,
                    json_t **out, struct fl_err *err) FL_MUST_CHECK;
int fl_json_get_arr(const json_t *obj, const char *key, bool required, const char *what,
                    json_t **out, struct fl_err *err) FL_MUST_CHECK;

/* Checks that every value of obj is a string; names the first bad key. */
int fl_json_check_str_map(const json_t *obj, const char *what, struct fl_err *err) FL_MUST_CHECK;

/* Serializes compactly (keys in insertion order) into a malloc'd string of
 * *len bytes, byte for byte what json_dumps(v, JSON_COMPACT |
 * JSON_ENCODE_ANY) writes; NULL when out of memory or nested deeper than
 * 2048 levels (a cycle included). */
char *fl_json_dump(const json_t *v, size_t *len);

/* A string s as JSON text (quoted, escaped as fl_json_dump escapes it) in
 * a malloc'd string of *len bytes; NULL when out of memory. */
char *fl_json_dump_string(const char *s, size_t *len);

/* A document's text and where the elements of some of its arrays lie in
 * it, so that the dump of a later document that shares those elements
 * (the same json_t, as a table's next metadata shares its snapshots and
 * its logs' entries with the last one) copies their bytes instead of
 * writing them again.  It holds the document, so those elements stay
 * alive; nothing may modify them.  Shared between threads by reference
 * count. */
struct fl_json_memo;

/* fl_json_dump of object v, whose array members named in keys (NULL-ended,
 * at most four) are memoized: each of their elements that prev (NULL for
 * none) holds is copied from prev's text, a run of them that prev holds in
 * the same order at once.  When memo is not NULL it receives a new memo of
 * v and the returned text (a copy of it; NULL when out of memory, which
 * fails nothing else). */
char *fl_json_dump_memo(const json_t *v, const char *const *keys, const struct fl_json_memo *prev,
                        struct fl_json_memo **memo, size_t *len);
struct fl_json_memo *fl_json_memo_ref(struct fl_json_memo *m);
void fl_json_memo_unref(struct fl_json_memo *m);
/* Something its owner derived from the memo's document, kept and freed
 * (free_fn, which may be NULL) with the memo: attached before the memo is
 * shared, read-only after.  fl_json_memo_attached of a NULL memo is NULL. */
void fl_json_memo_attach(struct fl_json_memo *m, void *p, void (*free_fn)(void *));
void *fl_json_memo_attached(const struct fl_json_memo *m);
/* The text a memo holds (NUL-terminated) and its length. */
const char *fl_json_memo_text(const struct fl_json_memo *m, size_t *len);

/* True when the n bytes at s are well-formed UTF-8 (no overlongs, no
 * surrogates, nothing past U+10FFFF). */
bool fl_utf8_valid(const char *s, size_t n);

/* The first object of array arr whose member key is the integer id (the
 * schema, spec or snapshot with that id, say); NULL when there is none or
 * arr is not an array. */
json_t *fl_json_find_int(const json_t *arr, const char *key, json_int_t id);

/* Releases a json_t; shaped for fl_arena_defer. */
void fl_json_decref(void *v);

#endif
