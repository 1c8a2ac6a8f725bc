/* test_meta_view.c - the view-metadata builder (catalog/meta/view.c):
 * cat_viewmeta_create, cat_viewmeta_check_requirements,
 * cat_viewmeta_apply and cat_viewmeta_validate, one case per update action
 * and per broken field, passing and failing. */
#include "meta_test.h"

#include <string.h>

#include "viewmeta.h"

#define OK FL_ERR_NONE
#define BAD FL_ERR_BAD_REQUEST
#define FAIL FL_ERR_COMMIT_FAILED

#define SCHEMA \
	"{'type':'struct','schema-id':7,'fields':[{'id':1,'name':'a','type':'long','required':true}]}"
#define SCHEMA2                                                                                       \
	"{'type':'struct','schema-id':0,'fields':[{'id':1,'name':'a','type':'long','required':true}," \
	"{'id':2,'name':'b','type':'string','required':false}]}"
#define VERSION(sql, sid)                                                                       \
	"{'version-id':9,'timestamp-ms':1700000000123,'schema-id':" sid ",'summary':{'e':'x'}," \
	"'representations':[{'type':'sql','sql':'" sql                                          \
	"','dialect':'spark'}],'default-namespace':['n']}"

/* The base of every apply case: created from this request. */
static json_t *base_view(void)
{
	json_t *req = tm_json("{'name':'v','schema':" SCHEMA ",'view-version':" VERSION(
	        "select 1", "7") ",'properties':{'k':'v'}}");
	json_t *out = NULL;
	struct fl_err err = {0};

	assert_int_equal(cat_viewmeta_create(req, TM_LOCATION, TM_UUID, &out, &err), 0);
	json_decref(req);
	return out;
}

static void test_create(void **state)
{
	json_t *m = base_view();

	(void)state;
	tm_check(m,
	         "view-uuid='" TM_UUID "';format-version=1;location='" TM_LOCATION "';"
	         "current-version-id=1;versions#1;versions/0/version-id=1;versions/0/schema-id=0;"
	         "schemas#1;schemas/0/schema-id=0;version-log#1;version-log/0/version-id=1;"
	         "version-log/0/timestamp-ms=1700000000123;properties/k='v'");
	json_decref(m);
}

struct create_case {
	const char *name, *req, *msg;
};

static const struct create_case bad_creates[] = {
        {"no schema", "{'name':'v','view-version':" VERSION("s", "0") "}", "'schema'"},
        {"no version", "{'name':'v','schema':" SCHEMA "}", "'view-version'"},
        {"no representations",
         "{'name':'v','schema':" SCHEMA ",'view-version':{'version-id':1,'timestamp-ms':1,"
         "'schema-id':0,'summary':{},'representations':[],'default-namespace':[]}}",
         "representations must not be empty"},
        {"unknown representation",
         "{'name':'v','schema':" SCHEMA ",'view-version':{'version-id':1,'timestamp-ms':1,"
         "'schema-id':0,'summary':{},'representations':[{'type':'pig'}],'default-namespace':[]}}",
         "unknown type 'pig'"},
        {"two queries for one dialect",
         "{'name':'v','schema':" SCHEMA ",'view-version':{'version-id':1,'timestamp-ms':1,"
         "'schema-id':0,'summary':{},'representations':[{'type':'sql','sql':'a','dialect':'spark'},"
         "{'type':'sql','sql':'b','dialect':'Spark'}],'default-namespace':[]}}",
         "more than one representation for dialect"},
        {"a representation without its sql",
         "{'name':'v','schema':" SCHEMA ",'view-version':{'version-id':1,'timestamp-ms':1,"
         "'schema-id':0,'summary':{},'representations':[{'type':'sql','sql':'a','dialect':'spark'},"
         "{'type':'sql','dialect':'trino'}],'default-namespace':[]}}",
         "representations[1]: missing required field 'sql'"},
        {"a default namespace level that is not a string",
         "{'name':'v','schema':" SCHEMA ",'view-version':{'version-id':1,'timestamp-ms':1,"
         "'schema-id':0,'summary':{},'representations':[{'type':'sql','sql':'a','dialect':'spark'}],"
         "'default-namespace':['a',2]}}",
         "default-namespace[1] must be a string"},
        {"bad schema",
         "{'name':'v','schema':{'type':'struct','fields':[{'id':1}]},'view-version':" VERSION(
                 "s", "0") "}",
         "schema"},
        {"non-string property",
         "{'name':'v','schema':" SCHEMA
         ",'view-version':" VERSION("s", "0") ",'properties':{'a':1}}",
         "'a'"},
};

static void test_create_bad(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bad_creates) / sizeof(bad_creates[0]); i++) {
		json_t *req = tm_json(bad_creates[i].req), *out = NULL;
		struct fl_err err = {0};

		if (cat_viewmeta_create(req, TM_LOCATION, TM_UUID, &out, &err) == 0)
			fail_msg("%s: accepted", bad_creates[i].name);
		if (err.kind != BAD || strstr(err.msg, bad_creates[i].msg) == NULL)
			fail_msg("%s: got kind %d '%s'", bad_creates[i].name, err.kind, err.msg);
		assert_null(out);
		json_decref(req);
	}
}

struct apply_case {
	const char *name, *updates;
	enum fl_err_kind kind;
	const char *expect; /* tm_check checks on success, a message part on failure */
};

static const struct apply_case applies[] = {
        {"nothing", "[]", OK, "current-version-id=1;versions#1"},
        {"assign the same uuid", "[{'action':'assign-uuid','uuid':'" TM_UUID "'}]", OK,
         "view-uuid='" TM_UUID "'"},
        {"reassign the uuid",
         "[{'action':'assign-uuid','uuid':'11111111-2222-4333-8444-555555555555'}]", BAD,
         "cannot reassign the view uuid"},
        {"upgrade to 1", "[{'action':'upgrade-format-version','format-version':1}]", OK,
         "format-version=1"},
        {"upgrade to 2", "[{'action':'upgrade-format-version','format-version':2}]", BAD,
         "unsupported view format version 2"},
        {"set-location", "[{'action':'set-location','location':'s3://b/other/'}]", OK,
         "location='s3://b/other'"},
        {"set-location empty", "[{'action':'set-location','location':'/'}]", BAD,
         "location must not be empty"},
        {"properties",
         "[{'action':'set-properties','updates':{'x':'1'}},"
         "{'action':'remove-properties','removals':['k','absent']}]",
         OK, "properties/x='1';!properties/k"},
        {"set-properties not strings", "[{'action':'set-properties','updates':{'x':1}}]", BAD,
         "'x'"},
        {"remove-properties not strings", "[{'action':'remove-properties','removals':[1]}]", BAD,
         "removals must be an array of strings"},
        {"add a schema and a version on it, make it current",
         "[{'action':'add-schema','schema':" SCHEMA2 "},"
         "{'action':'add-view-version','view-version':" VERSION(
                 "select 2", "-1") "},"
                                   "{'action':'set-current-view-version','view-version-id':-1}]",
         OK,
         "schemas#2;schemas/1/schema-id=1;versions#2;versions/1/version-id=2;"
         "versions/1/schema-id=1;current-version-id=2;version-log#2;version-log/1/version-id=2"},
        {"an equal schema is reused",
         "[{'action':'add-schema','schema':" SCHEMA "},"
         "{'action':'add-view-version','view-version':" VERSION("select 3", "-1") "}]",
         OK, "schemas#1;versions/1/schema-id=0;current-version-id=1"},
        {"an equal version is reused",
         "[{'action':'add-view-version','view-version':" VERSION(
                 "select 1", "0") "},"
                                  "{'action':'set-current-view-version','view-version-id':-1}]",
         OK, "versions#1;current-version-id=1;version-log#1"},
        {"set-current to an existing version",
         "[{'action':'set-current-view-version','view-version-id':1}]", OK,
         "current-version-id=1;version-log#1"},
        {"set-current -1 without an added version",
         "[{'action':'set-current-view-version','view-version-id':-1}]", BAD,
         "no version was added in this change"},
        {"set-current to a missing version",
         "[{'action':'set-current-view-version','view-version-id':5}]", BAD,
         "view version 5 does not exist"},
        {"schema-id -1 without an added schema",
         "[{'action':'add-view-version','view-version':" VERSION("x", "-1") "}]", BAD,
         "no schema was added in this change"},
        {"version on a missing schema",
         "[{'action':'add-view-version','view-version':" VERSION("x", "4") "}]", BAD,
         "schema 4 does not exist"},
        {"unknown action", "[{'action':'add-snapshot'}]", BAD,
         "unknown view update action 'add-snapshot'"},
        {"no action", "[{'uuid':'x'}]", BAD, "updates[0]: missing required field 'action'"},
        {"the second update without its action",
         "[{'action':'set-properties','updates':{'a':'b'}},{'location':'x'}]", BAD,
         "updates[1]: missing required field 'action'"},
        {"not an object", "[1]", BAD, "updates[0] must be an object"},
        {"not an array", "{}", BAD, "updates must be an array"},
};

static void test_apply(void **state)
{
	json_t *base = base_view();

	(void)state;
	for (size_t i = 0; i < sizeof(applies) / sizeof(applies[0]); i++) {
		const struct apply_case *c = &applies[i];
		json_t *ups = tm_json(c->updates), *out = NULL, *before = json_deep_copy(base);
		struct fl_err err = {0};
		int rc = cat_viewmeta_apply(base, ups, &out, &err);

		if (c->kind == OK) {
			if (rc != 0)
				fail_msg("%s: %s", c->name, err.msg);
			tm_check(out, c->expect);
		} else {
			if (rc == 0)
				fail_msg("%s: accepted", c->name);
			if (err.kind != c->kind || strstr(err.msg, c->expect) == NULL)
				fail_msg("%s: got kind %d '%s'", c->name, err.kind, err.msg);
			assert_null(out);
		}
		assert_true(json_equal(base, before)); /* base is never changed */
		json_decref(out);
		json_decref(before);
		json_decref(ups);
	}
	json_decref(base);
}

/* version.history.num-entries: replacing the view past the limit keeps the
 * current version and the newest others, and the log after the last entry
 * naming a dropped version; a bad value is refused by name. */
static void test_history_trim(void **state)
{
	json_t *m = base_view(), *next = NULL, *ups;
	struct fl_err err = {0};
	char buf[512];

	(void)state;
	ups = tm_json(
	        "[{'action':'set-properties','updates':{'version.history.num-entries':'3'}}]");
	assert_int_equal(cat_viewmeta_apply(m, ups, &next, &err), 0);
	json_decref(ups);
	json_decref(m);
	m = next;
	for (int i = 2; i <= 6; i++) {
		snprintf(
		        buf, sizeof(buf),
		        "[{'action':'add-view-version','view-version':" VERSION(
		                "select %d",
		                "0") "},{'action':'set-current-view-version','view-version-id':-1}]",
		        i);
		ups = tm_json(buf);
		next = NULL;
		if (cat_viewmeta_apply(m, ups, &next, &err) != 0)
			fail_msg("version %d: %s", i, err.msg);
		json_decref(ups);
		json_decref(m);
		m = next;
	}
	tm_check(m, "current-version-id=6;versions#3;versions/0/version-id=4;"
	            "versions/2/version-id=6;version-log#3;version-log/0/version-id=4;"
	            "version-log/2/version-id=6");
	/* Back to version 5: the log entry for 6 stays, 4..6 are all kept. */
	ups = tm_json("[{'action':'set-current-view-version','view-version-id':5}]");
	next = NULL;
	assert_int_equal(cat_viewmeta_apply(m, ups, &next, &err), 0);
	json_decref(ups);
	tm_check(next, "current-version-id=5;versions#3;version-log#4;version-log/3/version-id=5");
	json_decref(next);
	ups = tm_json(
	        "[{'action':'set-properties','updates':{'version.history.num-entries':'x'}}]");
	next = NULL;
	assert_int_not_equal(cat_viewmeta_apply(m, ups, &next, &err), 0);
	assert_non_null(strstr(err.msg, "version.history.num-entries must be an integer"));
	assert_null(next);
	json_decref(ups);
	json_decref(m);
}

struct req_case {
	const char *name, *reqs;
	enum fl_err_kind kind;
	const char *msg;
};

static const struct req_case reqs[] = {
        {"none", "[]", OK, NULL},
        {"assert-view-uuid", "[{'type':'assert-view-uuid','uuid':'" TM_UUID "'}]", OK, NULL},
        {"assert-view-uuid upper case",
         "[{'type':'assert-view-uuid','uuid':'9C12D441-03FE-4693-9A96-A0705DDF69C1'}]", OK, NULL},
        {"assert-view-uuid mismatch",
         "[{'type':'assert-view-uuid','uuid':'11111111-2222-4333-8444-555555555555'}]", FAIL,
         "requirement assert-view-uuid failed: view uuid is " TM_UUID},
        {"assert-view-uuid without uuid", "[{'type':'assert-view-uuid'}]", BAD, "'uuid'"},
        {"a table requirement", "[{'type':'assert-table-uuid','uuid':'" TM_UUID "'}]", BAD,
         "unknown view requirement type 'assert-table-uuid'"},
        {"not an object", "['x']", BAD, "requirements[0] must be an object"},
};

static void test_requirements(void **state)
{
	json_t *base = base_view();

	(void)state;
	for (size_t i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++) {
		json_t *r = tm_json(reqs[i].reqs);
		struct fl_err err = {0};
		int rc = cat_viewmeta_check_requirements(base, r, &err);

		if (reqs[i].kind == OK && rc != 0)
			fail_msg("%s: %s", reqs[i].name, err.msg);
		if (reqs[i].kind != OK &&
		    (rc == 0 || err.kind != reqs[i].kind || strstr(err.msg, reqs[i].msg) == NULL))
			fail_msg("%s: got rc %d kind %d '%s'", reqs[i].name, rc, err.kind, err.msg);
		json_decref(r);
	}
	json_decref(base);
}

/* cat_viewmeta_validate: the created base passes; each break is named. */
static void test_validate(void **state)
{
	static const struct {
		const char *key, *value, *msg;
	} breaks[] = {
	        {"view-uuid", NULL, "'view-uuid'"},
	        {"format-version", "2", "unsupported view format version 2"},
	        {"current-version-id", "5", "current-version-id 5 is not among the versions"},
	        {"versions", "[" VERSION("s", "3") "]", "names the missing schema 3"},
	        {"schemas", "[{'type':'struct','fields':[]}]", "'schema-id'"},
	        {"version-log", "[{'version-id':1}]", "'timestamp-ms'"},
	        {"properties", "{'a':1}", "'a'"},
	};
	json_t *base = base_view();
	struct fl_err err = {0};

	(void)state;
	assert_int_equal(cat_viewmeta_validate(base, &err), 0);
	for (size_t i = 0; i < sizeof(breaks) / sizeof(breaks[0]); i++) {
		json_t *m = json_deep_copy(base);

		memset(&err, 0, sizeof(err));
		if (breaks[i].value == NULL)
			json_object_del(m, breaks[i].key);
		else
			json_object_set_new(m, breaks[i].key, tm_json(breaks[i].value));
		if (cat_viewmeta_validate(m, &err) == 0)
			fail_msg("%s: accepted", breaks[i].key);
		if (err.kind != BAD || strstr(err.msg, breaks[i].msg) == NULL)
			fail_msg("%s: got kind %d '%s'", breaks[i].key, err.kind, err.msg);
		json_decref(m);
	}
	json_decref(base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_create),   cmocka_unit_test(test_create_bad),
	        cmocka_unit_test(test_apply),    cmocka_unit_test(test_requirements),
	        cmocka_unit_test(test_validate), cmocka_unit_test(test_history_trim),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
