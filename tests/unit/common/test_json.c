/* test_json.c - strict parsing (duplicates, depth bound, truncation, empty
 * bodies, NUL bytes), the bracket scanner, the typed getters' messages and
 * the UTF-8 validator. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "json.h"

/* Parses s (strlen) with max_depth; returns the value or NULL with err set. */
static json_t *parse(const char *s, int max_depth, struct fl_err *err)
{
	json_t *v = NULL;

	if (fl_json_parse(s, strlen(s), max_depth, &v, err) != 0)
		return NULL;
	return v;
}

/* A string of n '[' then "1" then n ']'. */
static char *nested(int n)
{
	char *s = malloc((size_t)n * 2 + 2);

	assert_non_null(s);
	memset(s, '[', (size_t)n);
	s[n] = '1';
	memset(s + n + 1, ']', (size_t)n);
	s[2 * n + 1] = '\0';
	return s;
}

struct reject_case {
	const char *in;
	size_t len; /* 0 = strlen(in) */
	enum fl_err_kind kind;
	const char *msg_has;
};

static const struct reject_case reject_cases[] = {
        {"{\"a\":1,\"a\":2}", 0, FL_ERR_BAD_REQUEST, "duplicate"},
        {"{\"x\":{\"b\":true,\"b\":false}}", 0, FL_ERR_BAD_REQUEST, "duplicate"},
        {"[{\"k\":1},{\"k\":1,\"k\":1}]", 0, FL_ERR_BAD_REQUEST, "duplicate"},
        {"{\"a\":", 0, FL_ERR_BAD_REQUEST, "malformed JSON"},
        {"{\"a\":1", 0, FL_ERR_BAD_REQUEST, "malformed JSON"},
        {"[1,2", 0, FL_ERR_BAD_REQUEST, "malformed JSON"},
        {"\"abc", 0, FL_ERR_BAD_REQUEST, "malformed JSON"},
        {"{} x", 0, FL_ERR_BAD_REQUEST, "malformed JSON"},
        {"{}{}", 0, FL_ERR_BAD_REQUEST, "malformed JSON"},
        {"   ", 0, FL_ERR_BAD_REQUEST, "malformed JSON"},
        {"{'a':1}", 0, FL_ERR_BAD_REQUEST, "malformed JSON"},
        {"{\"a\":1,}", 0, FL_ERR_BAD_REQUEST, "malformed JSON"},
        {"{\"a\":\"\\u0000\"}", 0, FL_ERR_BAD_REQUEST, "malformed JSON"},
        /* A raw NUL byte inside the body (length given explicitly). */
        {"{\"a\":\"b\0c\"}", 11, FL_ERR_BAD_REQUEST, "malformed JSON"},
        {"{}\0", 3, FL_ERR_BAD_REQUEST, "malformed JSON"},
        /* Invalid UTF-8 in a string. */
        {"{\"a\":\"\xc0\xaf\"}", 0, FL_ERR_BAD_REQUEST, "malformed JSON"},
        /* A body is an object or an array, never a bare scalar. */
        {"\"just a string\"", 0, FL_ERR_BAD_REQUEST, "malformed JSON"},
        {"42", 0, FL_ERR_BAD_REQUEST, "malformed JSON"},
        {"null", 0, FL_ERR_BAD_REQUEST, "malformed JSON"},
        {"", 0, FL_ERR_BAD_REQUEST, "empty"},
};

static void test_parse_rejects(void **state)
{
	for (size_t i = 0; i < sizeof(reject_cases) / sizeof(reject_cases[0]); i++) {
		const struct reject_case *c = &reject_cases[i];
		size_t len = c->len ? c->len : strlen(c->in);
		static char dummy;
		json_t *const sentinel = (json_t *)&dummy;
		json_t *v = sentinel; /* must stay untouched */
		struct fl_err err = {0};

		if (fl_json_parse(c->in, len, 64, &v, &err) == 0)
			fail_msg("case %zu (%s) was accepted", i, c->in);
		assert_ptr_equal(v, sentinel);
		if (err.kind != c->kind || strstr(err.msg, c->msg_has) == NULL)
			fail_msg(
			        "case %zu (%s): kind %s, message \"%s\"; want %s containing \"%s\"",
			        i, c->in, fl_err_kind_name(err.kind), err.msg,
			        fl_err_kind_name(c->kind), c->msg_has);
	}
}

static void test_parse_accepts(void **state)
{
	static const char *const ok[] = {"{}", "[]", "{\"a\":1,\"b\":[1,2,{\"a\":1}]}",
	                                 "  {\"a\" : \"\\u00e9\"}  \n",
	                                 /* Equal keys in different objects are not duplicates. */
	                                 "[{\"a\":1},{\"a\":2}]", "{\"a\":{\"a\":{\"a\":1}}}"};
	struct fl_err err;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		json_t *v = parse(ok[i], 64, &err);

		if (v == NULL)
			fail_msg("\"%s\" rejected: %s", ok[i], err.msg);
		json_decref(v);
	}
}

static void test_depth_limit(void **state)
{
	struct fl_err err;
	char *s;
	json_t *v;

	/* Exactly at the limit is fine. */
	s = nested(4);
	v = parse(s, 4, &err);
	assert_non_null(v);
	json_decref(v);
	free(s);
	/* One over is malformed input (400, not 413) and names the setting. */
	s = nested(5);
	assert_null(parse(s, 4, &err));
	assert_int_equal(err.kind, FL_ERR_BAD_REQUEST);
	assert_non_null(strstr(err.msg, "max-json-depth"));
	assert_non_null(strstr(err.msg, "depth 5"));
	assert_non_null(strstr(err.msg, "limit of 4"));
	free(s);
	/* Objects count as much as arrays. */
	assert_null(parse("{\"a\":{\"b\":{\"c\":{\"d\":{}}}}}", 4, &err));
	assert_non_null(strstr(err.msg, "max-json-depth"));
	/* A deep hostile body is refused by the scan even when it is also
	 * truncated (it never reaches the recursive parser). */
	s = nested(100000);
	s[100000 + 1] = '\0';
	assert_null(parse(s, 64, &err));
	assert_non_null(strstr(err.msg, "max-json-depth"));
	free(s);
}

static void test_deep_but_allowed(void **state)
{
	struct fl_err err;

	for (int d = 60; d <= 1000; d += 470) {
		char *s = nested(d);
		json_t *v = parse(s, d, &err);

		if (v == NULL)
			fail_msg("depth %d with limit %d rejected: %s", d, d, err.msg);
		json_decref(v);
		free(s);
	}
}

static void test_depth_scanner(void **state)
{
	static const struct {
		const char *in;
		int want;
	} cases[] = {
	        {"", 0},
	        {"1", 0},
	        {"[]", 1},
	        {"[[],[[]]]", 3},
	        {"{\"a\":[{}]}", 3},
	        /* Brackets inside strings do not count. */
	        {"\"[[[[[[\"", 0},
	        {"{\"a\":\"{{{{[[[[\"}", 1},
	        {"{\"[[[\":\"]]]\"}", 1},
	        /* An escaped quote does not end the string. */
	        {"[\"\\\"[[[[\"]", 1},
	        {"{\"a\\\"[[\":1}", 1},
	        /* An escaped backslash does end before the quote. */
	        {"[\"\\\\\",[1]]", 2},
	        {"[\"\\\\\\\"[[\"]", 1},
	        /* Unicode escapes are just characters. */
	        {"[\"\\u005b\\u005b\"]", 1},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int got = fl_json_depth(cases[i].in, strlen(cases[i].in));

		if (got != cases[i].want)
			fail_msg("fl_json_depth(%s) = %d, want %d", cases[i].in, got,
			         cases[i].want);
	}
}

static void test_strings_with_brackets_under_low_limit(void **state)
{
	struct fl_err err;
	json_t *v = parse("{\"a\":\"[[[[[[[[[[{{{{{{{\",\"b\\\"[[[[[\":[\"]]]]\"]}", 4, &err);

	if (v == NULL)
		fail_msg("rejected: %s", err.msg);
	json_decref(v);
}

static void test_getters(void **state)
{
	struct fl_err err;
	json_t *o = parse("{\"s\":\"text\",\"i\":-7,\"b\":false,\"o\":{\"k\":\"v\"},\"a\":[1],"
	                  "\"n\":null,\"r\":1.5}",
	                  64, &err);
	const char *s = "untouched";
	int64_t i = 99;
	bool b = true;
	json_t *sub = NULL;

	assert_non_null(o);
	assert_int_equal(fl_json_get_str(o, "s", true, "Req", &s, &err), 0);
	assert_string_equal(s, "text");
	assert_int_equal(fl_json_get_int(o, "i", true, "Req", &i, &err), 0);
	assert_int_equal(i, -7);
	assert_int_equal(fl_json_get_bool(o, "b", true, "Req", &b, &err), 0);
	assert_false(b);
	assert_int_equal(fl_json_get_obj(o, "o", true, "Req", &sub, &err), 0);
	assert_true(json_is_object(sub));
	assert_int_equal(fl_json_get_arr(o, "a", true, "Req", &sub, &err), 0);
	assert_true(json_is_array(sub));

	/* Optional and absent (or null): 0 and the output untouched. */
	s = "untouched";
	assert_int_equal(fl_json_get_str(o, "missing", false, "Req", &s, &err), 0);
	assert_string_equal(s, "untouched");
	assert_int_equal(fl_json_get_str(o, "n", false, "Req", &s, &err), 0);
	assert_string_equal(s, "untouched");

	/* Required and absent. */
	assert_int_equal(fl_json_get_str(o, "namespace", true, "CreateNamespaceRequest", &s, &err),
	                 -1);
	assert_int_equal(err.kind, FL_ERR_BAD_REQUEST);
	assert_string_equal(err.msg, "CreateNamespaceRequest: missing required field 'namespace'");
	assert_int_equal(fl_json_get_int(o, "n", true, "Req", &i, &err), -1);
	assert_string_equal(err.msg, "Req: missing required field 'n'");

	/* Wrong types name the field, the wanted type and the actual one. */
	static const struct {
		const char *key;
		int getter; /* 0 str, 1 int, 2 bool, 3 obj, 4 arr */
		const char *msg;
	} wrong[] = {
	        {"i", 0, "Req: field 'i' must be a string, got integer"},
	        {"s", 1, "Req: field 's' must be an integer, got string"},
	        {"r", 1, "Req: field 'r' must be an integer, got number"},
	        {"i", 2, "Req: field 'i' must be a boolean, got integer"},
	        {"a", 3, "Req: field 'a' must be an object, got array"},
	        {"o", 4, "Req: field 'o' must be an array, got object"},
	        {"b", 0, "Req: field 'b' must be a string, got boolean"},
	};
	for (size_t k = 0; k < sizeof(wrong) / sizeof(wrong[0]); k++) {
		int rc = -2;

		s = "untouched";
		i = 99;
		sub = NULL;
		switch (wrong[k].getter) {
		case 0: rc = fl_json_get_str(o, wrong[k].key, false, "Req", &s, &err); break;
		case 1: rc = fl_json_get_int(o, wrong[k].key, false, "Req", &i, &err); break;
		case 2: rc = fl_json_get_bool(o, wrong[k].key, false, "Req", &b, &err); break;
		case 3: rc = fl_json_get_obj(o, wrong[k].key, false, "Req", &sub, &err); break;
		case 4: rc = fl_json_get_arr(o, wrong[k].key, false, "Req", &sub, &err); break;
		}
		assert_int_equal(rc, -1);
		assert_int_equal(err.kind, FL_ERR_BAD_REQUEST);
		assert_string_equal(err.msg, wrong[k].msg);
		assert_string_equal(s, "untouched");
		assert_int_equal(i, 99);
		assert_null(sub);
	}

	/* The container itself must be an object. */
	json_t *arr = json_array();

	assert_int_equal(fl_json_get_str(arr, "x", false, "Body", &s, &err), -1);
	assert_string_equal(err.msg, "Body must be a JSON object");
	json_decref(arr);
	json_decref(o);
}

static void test_check_str_map(void **state)
{
	struct fl_err err;
	json_t *good = parse("{\"a\":\"1\",\"b\":\"\"}", 64, &err);
	json_t *bad = parse("{\"a\":\"1\",\"owner\":5}", 64, &err);

	assert_non_null(good);
	assert_non_null(bad);
	assert_int_equal(fl_json_check_str_map(good, "properties", &err), 0);
	assert_int_equal(fl_json_check_str_map(bad, "properties", &err), -1);
	assert_int_equal(err.kind, FL_ERR_BAD_REQUEST);
	assert_string_equal(err.msg, "properties: value of 'owner' must be a string, got integer");
	json_decref(good);
	json_decref(bad);
}

static void test_dump(void **state)
{
	struct fl_err err;
	json_t *v = parse("{ \"b\" : [1, 2], \"a\" : \"x\" }", 64, &err);
	size_t len = 0;
	char *s;

	assert_non_null(v);
	s = fl_json_dump(v, &len);
	assert_string_equal(s, "{\"b\":[1,2],\"a\":\"x\"}");
	assert_int_equal(len, strlen(s));
	free(s);
	json_decref(v);
	/* Scalars are dumped too (JSON_ENCODE_ANY). */
	v = json_integer(5);
	s = fl_json_dump(v, NULL);
	assert_string_equal(s, "5");
	free(s);
	/* fl_json_decref is json_decref, shaped for fl_arena_defer. */
	fl_json_decref(v);
}

/* A random string of n bytes: plain ASCII, the bytes JSON escapes (controls,
 * NUL included, '"' and '\\'), '/' and valid multi-byte UTF-8. */
static size_t random_text(char *out, size_t cap)
{
	static const char *const pieces[] = {
	        "a",       "Z",    "0",    " ",        "\"",           "\\",
	        "/",       "\n",   "\t",   "\r",       "\b",           "\f",
	        "\x01",    "\x1f", "\x7f", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80",
	        "s3://b/k"};
	size_t n = 0, want = (size_t)(rand() % 24);

	for (size_t k = 0; k < want; k++) {
		size_t i = (size_t)rand() % (sizeof(pieces) / sizeof(pieces[0]) + 1);
		const char *p = i < sizeof(pieces) / sizeof(pieces[0]) ? pieces[i] : "";
		size_t len = i < sizeof(pieces) / sizeof(pieces[0]) ? strlen(p) : 1; /* "" = NUL */

		if (n + len > cap)
			break;
		memcpy(out + n, p, len);
		n += len;
	}
	return n;
}

static json_t *random_value(int depth)
{
	static const json_int_t ints[] = {0,         1,        -1, 9, 10, -10, 1234567890123LL,
	                                  INT64_MAX, INT64_MIN};
	char text[128];
	int kind = rand() % (depth > 5 ? 6 : 8);

	switch (kind) {
	case 0: return json_null();
	case 1: return json_boolean(rand() % 2);
	case 2:
		return json_integer(rand() % 2 ? ints[rand() % 9]
		                               : (json_int_t)rand() - RAND_MAX / 2);
	case 3: return json_real((double)rand() / 7.0 - 1e5);
	case 4:
	case 5: return json_stringn(text, random_text(text, sizeof(text)));
	case 6: {
		json_t *a = json_array();

		for (int i = rand() % 5; i > 0; i--)
			json_array_append_new(a, random_value(depth + 1));
		return a;
	}
	default: {
		json_t *o = json_object();

		for (int i = rand() % 5; i > 0; i--) {
			size_t kl = random_text(text, sizeof(text));

			json_object_setn_new(o, text, kl, random_value(depth + 1));
		}
		return o;
	}
	}
}

/* fl_json_dump against jansson's own json_dumps, byte for byte: random
 * documents, then a table's metadata.  (A wrong escape, a lost key or a
 * misplaced comma each fail it.) */
static void test_dump_matches_jansson(void **state)
{
	struct fl_err err;
	json_t *meta;

	(void)state;
	srand(20261202);
	for (int k = 0; k < 3000; k++) {
		json_t *v = random_value(0);
		size_t len = 0;
		char *mine = fl_json_dump(v, &len),
		     *theirs = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);

		assert_non_null(mine);
		assert_non_null(theirs);
		assert_int_equal(len, strlen(theirs));
		assert_memory_equal(mine, theirs, len + 1);
		free(mine);
		free(theirs);
		json_decref(v);
	}
	meta = parse(
	        "{\"format-version\":2,\"table-uuid\":\"9c12d441-03fe-4693-9a96-a0705ddf69c1\","
	        "\"location\":\"s3://bucket/ns/t\",\"last-updated-ms\":1602638573590,"
	        "\"properties\":{\"comment\":\"line 1\\nline \\\"2\\\" \\u00e9\\u0001\"},"
	        "\"schemas\":[{\"type\":\"struct\",\"schema-id\":0,\"fields\":[{\"id\":1,"
	        "\"name\":\"x\",\"required\":true,\"type\":\"decimal(9, 2)\"}]}],"
	        "\"snapshots\":[],\"refs\":{},\"current-snapshot-id\":-1,\"rate\":0.25}",
	        64, &err);
	assert_non_null(meta);
	{
		char *mine = fl_json_dump(meta, NULL),
		     *theirs = json_dumps(meta, JSON_COMPACT | JSON_ENCODE_ANY);

		assert_string_equal(mine, theirs);
		free(mine);
		free(theirs);
	}
	json_decref(meta);
}

/* One element of a memoized array: a small object, new each time. */
static json_t *memo_element(int k)
{
	return json_pack("{sisss[ii]}", "id", k, "s", k % 3 ? "plain" : "q\"uote\n", "l", k, -k);
}

/* The next version of doc: its arrays copied (their elements shared, as
 * the table builder shares them) and changed at random: elements added
 * anywhere, dropped from the front or the middle, swapped, taken from the
 * other array or repeated; the members in a random order. */
static json_t *memo_next(const json_t *doc, int *next_id)
{
	static const char *const names[] = {"a", "b", "c"};
	json_t *arr[3], *out = json_object();
	int order = rand() % 6;

	for (int k = 0; k < 3; k++) {
		arr[k] = json_copy(json_object_get(doc, names[k]));
		for (int op = rand() % 4; op > 0; op--) {
			size_t n = json_array_size(arr[k]);
			size_t i = n > 0 ? (size_t)rand() % n : 0;

			switch (rand() % 6) {
			case 0: json_array_append_new(arr[k], memo_element((*next_id)++)); break;
			case 1: json_array_insert_new(arr[k], i, memo_element((*next_id)++)); break;
			case 2: json_array_remove(arr[k], 0); break;
			case 3: json_array_remove(arr[k], i); break;
			case 4:
				if (n > 1) {
					json_t *e = json_incref(json_array_get(arr[k], i));

					json_array_set(arr[k], i,
					               json_array_get(arr[k], n - 1 - i));
					json_array_set_new(arr[k], n - 1 - i, e);
				}
				break;
			default: {
				const json_t *o = json_object_get(doc, names[(k + 1) % 3]);

				if (json_array_size(o) > 0)
					json_array_append(arr[k], json_array_get(o, 0));
				if (n > 0)
					json_array_append(arr[k], json_array_get(arr[k], i));
			}
			}
		}
	}
	json_object_set_new(out, "v", json_integer(*next_id));
	for (int j = 0; j < 3; j++) {
		int k = (j + order) % 3;

		json_object_set_new(out, names[order >= 3 ? 2 - k : k],
		                    arr[order >= 3 ? 2 - k : k]);
	}
	return out;
}

static size_t first_difference(const char *a, const char *b)
{
	size_t i = 0;

	while (a[i] != '\0' && a[i] == b[i])
		i++;
	return i;
}

/* fl_json_dump_memo writes what fl_json_dump writes, whatever the next
 * version did to the memoized arrays: "a" and "b" are memoized (named in
 * the opposite order to the text's in half the versions), "c" is not. */
static void test_dump_memo_matches_dump(void **state)
{
	static const char *const keys[] = {"b", "a", NULL};
	int next_id = 0;

	(void)state;
	srand(20261204);
	for (int round = 0; round < 20; round++) {
		json_t *doc = json_pack("{s[]s[]s[]}", "a", "b", "c");
		struct fl_json_memo *memo = NULL;

		for (int step = 0; step < 200; step++) {
			json_t *nd = memo_next(doc, &next_id);
			struct fl_json_memo *next = NULL;
			size_t len = 0, mlen = 0;
			char *plain = fl_json_dump(nd, NULL),
			     *fast = fl_json_dump_memo(nd, keys, memo, &next, &len);

			assert_non_null(plain);
			assert_non_null(fast);
			assert_non_null(next);
			if (strcmp(plain, fast) != 0)
				fail_msg("round %d step %d: the texts differ from byte %zu on",
				         round, step, first_difference(plain, fast));
			assert_int_equal(len, strlen(plain));
			assert_string_equal(fl_json_memo_text(next, &mlen), plain);
			assert_int_equal(mlen, len);
			free(plain);
			free(fast);
			fl_json_memo_unref(memo);
			memo = next;
			json_decref(doc); /* the memo keeps the shared elements alive */
			doc = nd;
		}
		fl_json_memo_unref(memo);
		json_decref(doc);
	}
}

/* Nesting past 2048 levels, and so a cycle, is refused rather than followed. */
/* fl_json_dump_string writes a string as jansson writes it, escapes
 * included. */
static void test_dump_string_matches_jansson(void **state)
{
	static const char *const cases[] = {
	        "",
	        "file:///tmp/wh/ns/t/metadata/00001-a.metadata.json",
	        "s3://b/q\"t\\x,{y}/\xc3\xa9",
	        "tab\tnl\ncr\rbs\bff\f",
	        "\x01\x1f\x7f end",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *v = json_string(cases[i]);
		char *want = json_dumps(v, JSON_ENCODE_ANY), *got;
		size_t n;

		assert_non_null(want);
		got = fl_json_dump_string(cases[i], &n);
		assert_non_null(got);
		assert_string_equal(got, want);
		assert_int_equal(n, strlen(want));
		free(got);
		free(want);
		json_decref(v);
	}
}

static void test_dump_depth_bound(void **state)
{
	json_t *top = json_array(), *a = top, *c1 = json_array(), *c2 = json_array();

	(void)state;
	for (int i = 0; i < 2100; i++) {
		json_t *b = json_array();

		json_array_append_new(a, b);
		a = b;
	}
	assert_null(fl_json_dump(top, NULL));
	json_decref(top);
	assert_int_equal(json_array_append(c1, c2), 0);
	assert_int_equal(json_array_append(c2, c1), 0);
	assert_null(fl_json_dump(c1, NULL));
	json_array_clear(c2);
	json_decref(c1);
	json_decref(c2);
}

struct utf8_case {
	const char *in;
	size_t len;
	bool valid;
	const char *what;
};

#define U(s, ok, what)                     \
	{                                  \
		s, sizeof(s) - 1, ok, what \
	}

static const struct utf8_case utf8_cases[] = {
        U("", true, "empty"),
        U("plain ascii", true, "ascii"),
        U("\x7f", true, "DEL"),
        U("\xc2\x80", true, "U+0080, smallest 2-byte"),
        U("\xdf\xbf", true, "U+07FF, largest 2-byte"),
        U("\xe0\xa0\x80", true, "U+0800, smallest 3-byte"),
        U("\xed\x9f\xbf", true, "U+D7FF, below the surrogates"),
        U("\xee\x80\x80", true, "U+E000, above the surrogates"),
        U("\xef\xbf\xbf", true, "U+FFFF"),
        U("\xf0\x90\x80\x80", true, "U+10000, smallest 4-byte"),
        U("\xf4\x8f\xbf\xbf", true, "U+10FFFF, largest"),
        U("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\x9f", true, "mixed"),
        U("a\0b", true, "NUL is ASCII"),
        U("\x80", false, "lone continuation"),
        U("\xbf", false, "lone continuation"),
        U("\xc0\x80", false, "overlong NUL"),
        U("\xc0\xaf", false, "overlong '/'"),
        U("\xc1\xbf", false, "overlong 2-byte"),
        U("\xe0\x80\xaf", false, "overlong 3-byte '/'"),
        U("\xe0\x9f\xbf", false, "overlong 3-byte U+07FF"),
        U("\xf0\x80\x80\xaf", false, "overlong 4-byte '/'"),
        U("\xf0\x8f\xbf\xbf", false, "overlong 4-byte U+FFFF"),
        U("\xed\xa0\x80", false, "U+D800 surrogate"),
        U("\xed\xbf\xbf", false, "U+DFFF surrogate"),
        U("\xed\xa0\xbd\xed\xb2\xa9", false, "surrogate pair (CESU-8)"),
        U("\xf4\x90\x80\x80", false, "U+110000"),
        U("\xf5\x80\x80\x80", false, "F5 lead"),
        U("\xf8\x88\x80\x80\x80", false, "5-byte form"),
        U("\xfc\x84\x80\x80\x80\x80", false, "6-byte form"),
        U("\xfe", false, "FE"),
        U("\xff", false, "FF"),
        U("\xc3", false, "truncated 2-byte"),
        U("\xe2\x82", false, "truncated 3-byte"),
        U("\xf0\x9f\x90", false, "truncated 4-byte"),
        U("ab\xe2", false, "truncated at end"),
        U("\xc3\x28", false, "bad continuation"),
        U("\xe2\x28\xa1", false, "bad second byte"),
        U("\xe2\x82\x28", false, "bad third byte"),
        U("\xf0\x9f\x90\x28", false, "bad fourth byte"),
};

static void test_utf8_table(void **state)
{
	for (size_t i = 0; i < sizeof(utf8_cases) / sizeof(utf8_cases[0]); i++) {
		const struct utf8_case *c = &utf8_cases[i];

		if (fl_utf8_valid(c->in, c->len) != c->valid)
			fail_msg("fl_utf8_valid(%s) should be %s", c->what,
			         c->valid ? "true" : "false");
	}
	/* The length bounds the scan: a valid prefix of an invalid buffer. */
	assert_true(fl_utf8_valid("ok\xff", 2));
	assert_false(fl_utf8_valid("\xe2\x82\xac", 2));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_parse_rejects),
	        cmocka_unit_test(test_parse_accepts),
	        cmocka_unit_test(test_depth_limit),
	        cmocka_unit_test(test_deep_but_allowed),
	        cmocka_unit_test(test_depth_scanner),
	        cmocka_unit_test(test_strings_with_brackets_under_low_limit),
	        cmocka_unit_test(test_getters),
	        cmocka_unit_test(test_check_str_map),
	        cmocka_unit_test(test_dump),
	        cmocka_unit_test(test_dump_matches_jansson),
	        cmocka_unit_test(test_dump_memo_matches_dump),
	        cmocka_unit_test(test_dump_string_matches_jansson),
	        cmocka_unit_test(test_dump_depth_bound),
	        cmocka_unit_test(test_utf8_table),
	};

	return cmocka_run_group_tests_name("common/json", tests, NULL, NULL);
}
