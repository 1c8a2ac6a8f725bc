/* fuzz_json.c - fl_json_parse on arbitrary bytes.
 *
 * Invariants: a rejected body gets a BAD_REQUEST or TOO_LARGE error with a
 * message; an accepted one nests no deeper than the limit, the bracket
 * scanner agrees with jansson on its depth, it is valid UTF-8, and its
 * compact dump parses back to an equal value.  The typed getters are run on
 * every member and must agree with the member's JSON type. */
#include <string.h>

#include "fuzz.h"
#include "json.h"

#define MAX_DEPTH 16

static int value_depth(const json_t *v)
{
	int max = 0;

	if (json_is_object(v)) {
		const char *k;
		json_t *m;

		json_object_foreach((json_t *)v, k, m)
		{
			int d = value_depth(m);

			if (d > max)
				max = d;
		}
		return max + 1;
	}
	if (json_is_array(v)) {
		for (size_t i = 0; i < json_array_size(v); i++) {
			int d = value_depth(json_array_get(v, i));

			if (d > max)
				max = d;
		}
		return max + 1;
	}
	return 0;
}

static void check_getters(const json_t *obj)
{
	const char *k;
	json_t *m;

	json_object_foreach((json_t *)obj, k, m)
	{
		struct fl_err err;
		const char *s = NULL;
		int64_t i = 0;
		bool b = false;
		json_t *o = NULL;
		bool null = json_is_null(m);

		FUZZ_CHECK((fl_json_get_str(obj, k, false, "Fuzz", &s, &err) == 0) ==
		           (null || json_is_string(m)));
		FUZZ_CHECK((fl_json_get_int(obj, k, false, "Fuzz", &i, &err) == 0) ==
		           (null || json_is_integer(m)));
		FUZZ_CHECK((fl_json_get_bool(obj, k, false, "Fuzz", &b, &err) == 0) ==
		           (null || json_is_boolean(m)));
		FUZZ_CHECK((fl_json_get_obj(obj, k, false, "Fuzz", &o, &err) == 0) ==
		           (null || json_is_object(m)));
		FUZZ_CHECK((fl_json_get_arr(obj, k, false, "Fuzz", &o, &err) == 0) ==
		           (null || json_is_array(m)));
		/* Required and null counts as missing. */
		FUZZ_CHECK((fl_json_get_str(obj, k, true, "Fuzz", &s, &err) == 0) ==
		           json_is_string(m));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	struct fl_err err = {0};
	json_t *v = NULL, *back = NULL;
	char *dump;
	size_t dlen = 0;
	int depth;

	(void)fl_json_depth(s, size);
	(void)fl_utf8_valid(s, size);
	if (fl_json_parse(s, size, MAX_DEPTH, &v, &err) != 0) {
		FUZZ_CHECK(v == NULL);
		FUZZ_CHECK(err.kind == FL_ERR_BAD_REQUEST || err.kind == FL_ERR_TOO_LARGE);
		FUZZ_CHECK(err.msg[0] != '\0');
		FUZZ_CHECK(memchr(err.msg, '\0', sizeof(err.msg)) != NULL);
		return 0;
	}
	depth = value_depth(v);
	FUZZ_CHECK(depth <= MAX_DEPTH);
	FUZZ_CHECK(fl_json_depth(s, size) == depth);
	FUZZ_CHECK(fl_utf8_valid(s, size));
	if (json_is_object(v))
		check_getters(v);
	dump = fl_json_dump(v, &dlen);
	FUZZ_CHECK(dump != NULL);
	FUZZ_CHECK(fl_json_depth(dump, dlen) == depth);
	FUZZ_CHECK(fl_json_parse(dump, dlen, MAX_DEPTH, &back, &err) == 0);
	FUZZ_CHECK(json_equal(v, back));
	free(dump);
	json_decref(back);
	json_decref(v);
	return 0;
}
