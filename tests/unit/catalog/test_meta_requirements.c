/* test_meta_requirements.c - cat_meta_check_requirements: one case per
 * requirement type, passing and failing, and every malformed form. */
#include "meta_test.h"

#include <string.h>

struct req_case {
	const char *name;
	bool exists; /* false: the table does not exist (base NULL) */
	const char *reqs;
	enum fl_err_kind kind;
	const char *msg;
};

#define OK FL_ERR_NONE
#define BAD FL_ERR_BAD_REQUEST
#define FAIL FL_ERR_COMMIT_FAILED

/* The base: a v2 table with snapshot 80 on main and tag v1 at 80. */
static const struct req_case cases[] = {
        {"no requirements", true, "[]", OK, NULL},
        {"null requirements", true, "null", OK, NULL},

        {"assert-create on a new table", false, "[{'type':'assert-create'}]", OK, NULL},
        {"assert-create on an existing table", true, "[{'type':'assert-create'}]", FAIL,
         "requirement assert-create failed: the table already exists"},
        {"assert-create with another requirement", false,
         "[{'type':'assert-create'},{'type':'assert-table-uuid','uuid':'" TM_UUID "'}]", BAD,
         "assert-create must be the only requirement"},

        {"assert-create twice", false, "[{'type':'assert-create'},{'type':'assert-create'}]", OK,
         NULL},
        {"assert-table-uuid", true, "[{'type':'assert-table-uuid','uuid':'" TM_UUID "'}]", OK,
         NULL},
        {"assert-table-uuid upper case", true,
         "[{'type':'assert-table-uuid','uuid':'9C12D441-03FE-4693-9A96-A0705DDF69C1'}]", OK, NULL},
        {"assert-table-uuid mismatch", true,
         "[{'type':'assert-table-uuid','uuid':'11111111-2222-4333-8444-555555555555'}]", FAIL,
         "requirement assert-table-uuid failed: table uuid is " TM_UUID
         ", expected 11111111-2222-4333-8444-555555555555"},
        {"assert-table-uuid missing uuid", true, "[{'type':'assert-table-uuid'}]", BAD,
         "requirements[0] assert-table-uuid: field 'uuid' must be a string"},
        {"assert-table-uuid on a missing table", false,
         "[{'type':'assert-table-uuid','uuid':'" TM_UUID "'}]", FAIL,
         "requirement assert-table-uuid failed: the table does not exist"},

        {"assert-ref-snapshot-id main", true,
         "[{'type':'assert-ref-snapshot-id','ref':'main','snapshot-id':80}]", OK, NULL},
        {"assert-ref-snapshot-id main moved", true,
         "[{'type':'assert-ref-snapshot-id','ref':'main','snapshot-id':81}]", FAIL,
         "requirement assert-ref-snapshot-id failed: branch main is at 80, expected 81"},
        {"assert-ref-snapshot-id null but main exists", true,
         "[{'type':'assert-ref-snapshot-id','ref':'main','snapshot-id':null}]", FAIL,
         "requirement assert-ref-snapshot-id failed: branch main was created concurrently"},
        {"assert-ref-snapshot-id null for an absent ref", true,
         "[{'type':'assert-ref-snapshot-id','ref':'dev','snapshot-id':null}]", OK, NULL},
        {"assert-ref-snapshot-id id for an absent ref", true,
         "[{'type':'assert-ref-snapshot-id','ref':'dev','snapshot-id':5}]", FAIL,
         "requirement assert-ref-snapshot-id failed: branch or tag dev is missing, expected 5"},
        {"assert-ref-snapshot-id tag", true,
         "[{'type':'assert-ref-snapshot-id','ref':'v1','snapshot-id':1}]", FAIL,
         "tag v1 is at 80, expected 1"},
        {"assert-ref-snapshot-id without snapshot-id key", true,
         "[{'type':'assert-ref-snapshot-id','ref':'main'}]", BAD,
         "field 'snapshot-id' must be an integer or null"},
        {"assert-ref-snapshot-id snapshot-id string", true,
         "[{'type':'assert-ref-snapshot-id','ref':'main','snapshot-id':'80'}]", BAD,
         "field 'snapshot-id' must be an integer or null"},
        {"assert-ref-snapshot-id without ref", true,
         "[{'type':'assert-ref-snapshot-id','snapshot-id':80}]", BAD,
         "field 'ref' must be a string"},

        {"assert-last-assigned-field-id", true,
         "[{'type':'assert-last-assigned-field-id','last-assigned-field-id':3}]", OK, NULL},
        {"assert-last-assigned-field-id mismatch", true,
         "[{'type':'assert-last-assigned-field-id','last-assigned-field-id':4}]", FAIL,
         "requirement assert-last-assigned-field-id failed: last-column-id is 3, expected 4"},
        {"assert-current-schema-id", true,
         "[{'type':'assert-current-schema-id','current-schema-id':0}]", OK, NULL},
        {"assert-current-schema-id mismatch", true,
         "[{'type':'assert-current-schema-id','current-schema-id':1}]", FAIL,
         "requirement assert-current-schema-id failed: current-schema-id is 0, expected 1"},
        {"assert-current-schema-id wrong type", true,
         "[{'type':'assert-current-schema-id','current-schema-id':'0'}]", BAD,
         "field 'current-schema-id' must be an integer"},
        {"assert-last-assigned-partition-id", true,
         "[{'type':'assert-last-assigned-partition-id','last-assigned-partition-id':999}]", OK,
         NULL},
        {"assert-last-assigned-partition-id mismatch", true,
         "[{'type':'assert-last-assigned-partition-id','last-assigned-partition-id':1000}]", FAIL,
         "last-partition-id is 999, expected 1000"},
        {"assert-default-spec-id", true, "[{'type':'assert-default-spec-id','default-spec-id':0}]",
         OK, NULL},
        {"assert-default-spec-id mismatch", true,
         "[{'type':'assert-default-spec-id','default-spec-id':2}]", FAIL,
         "requirement assert-default-spec-id failed: default-spec-id is 0, expected 2"},
        {"assert-default-spec-id missing field", true, "[{'type':'assert-default-spec-id'}]", BAD,
         "field 'default-spec-id' must be an integer"},
        {"assert-default-sort-order-id", true,
         "[{'type':'assert-default-sort-order-id','default-sort-order-id':0}]", OK, NULL},
        {"assert-default-sort-order-id mismatch", true,
         "[{'type':'assert-default-sort-order-id','default-sort-order-id':1}]", FAIL,
         "default-sort-order-id is 0, expected 1"},

        {"unknown type", true, "[{'type':'assert-view-uuid','uuid':'" TM_UUID "'}]", BAD,
         "requirements[0]: unknown requirement type 'assert-view-uuid'"},
        {"missing type", true, "[{'uuid':'x'}]", BAD, "missing required string field 'type'"},
        {"requirement not an object", true, "[1]", BAD, "requirements[0] must be an object"},
        {"requirements not an array", true, "{}", BAD, "'requirements' must be an array"},
        {"malformed after a failing one is still 400", true,
         "[{'type':'assert-current-schema-id','current-schema-id':9},{'type':'nope'}]", BAD,
         "requirements[1]: unknown requirement type 'nope'"},
        {"first failure wins", true,
         "[{'type':'assert-table-uuid','uuid':'" TM_UUID "'},"
         "{'type':'assert-current-schema-id','current-schema-id':9},"
         "{'type':'assert-default-spec-id','default-spec-id':9}]",
         FAIL, "assert-current-schema-id failed"},
        {"all pass", true,
         "[{'type':'assert-table-uuid','uuid':'" TM_UUID "'},"
         "{'type':'assert-ref-snapshot-id','ref':'main','snapshot-id':80},"
         "{'type':'assert-current-schema-id','current-schema-id':0},"
         "{'type':'assert-last-assigned-field-id','last-assigned-field-id':3},"
         "{'type':'assert-last-assigned-partition-id','last-assigned-partition-id':999},"
         "{'type':'assert-default-spec-id','default-spec-id':0},"
         "{'type':'assert-default-sort-order-id','default-sort-order-id':0}]",
         OK, NULL},
};

static void test_cases(void **state)
{
	json_t *t = tm_table(2);
	json_t *base = tm_apply_ok(
	        t,
	        "[{'action':'add-snapshot','snapshot':{'snapshot-id':80,'sequence-number':1,"
	        "'timestamp-ms':1700000000100,'manifest-list':'s3://b/m.avro','summary':{'operation':'append'}}},"
	        "{'action':'set-snapshot-ref','ref-name':'main','type':'branch','snapshot-id':80},"
	        "{'action':'set-snapshot-ref','ref-name':'v1','type':'tag','snapshot-id':80}]",
	        TM_NOW + 1);

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct req_case *c = &cases[i];
		struct fl_err err = {0};
		json_t *r = tm_json(c->reqs);
		int rc;

		print_message("case: %s\n", c->name);
		rc = cat_meta_check_requirements(c->exists ? base : NULL, r, &err);
		if (c->kind == FL_ERR_NONE) {
			if (rc != 0)
				fail_msg("%s: unexpected error: %s", c->name, err.msg);
		} else {
			if (rc == 0)
				fail_msg("%s: expected an error", c->name);
			tm_err_is(&err, c->kind, c->msg);
		}
		json_decref(r);
	}
	json_decref(base);
	json_decref(t);
}

/* A legacy document without refs: main is its current snapshot. */
static void test_legacy_main(void **state)
{
	struct fl_err err = {0};
	json_t *doc = tm_json(
	        "{'format-version':1,'location':'s3://b/t','last-updated-ms':1,'last-column-id':1,"
	        "'schema':{'type':'struct','fields':[{'id':1,'name':'a','required':true,'type':'int'}]},"
	        "'partition-spec':[],'current-snapshot-id':7,"
	        "'snapshots':[{'snapshot-id':7,'timestamp-ms':1,'manifest-list':'m'}]}");
	json_t *ok = tm_json("[{'type':'assert-ref-snapshot-id','ref':'main','snapshot-id':7}]");
	json_t *bad = tm_json("[{'type':'assert-ref-snapshot-id','ref':'main','snapshot-id':8}]");

	(void)state;
	assert_int_equal(cat_meta_validate(doc, &err), 0);
	assert_int_equal(cat_meta_check_requirements(doc, ok, &err), 0);
	assert_int_equal(cat_meta_check_requirements(doc, bad, &err), -1);
	tm_err_is(&err, FL_ERR_COMMIT_FAILED, "branch main is at 7, expected 8");
	json_decref(doc);
	json_decref(ok);
	json_decref(bad);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_cases),
	        cmocka_unit_test(test_legacy_main),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
