/* test_meta_create.c - cat_meta_create: fresh ids as Java assigns them, the
 * fields every format version writes, properties, and each rejection. */
#include "meta_test.h"

#include <string.h>

static json_t *create_ok(const char *req, const char *location)
{
	struct fl_err err = {0};
	json_t *r = tm_json(req), *out = NULL;

	if (cat_meta_create(r, location, TM_UUID, TM_NOW, &out, &err) != 0)
		fail_msg("create failed: %s", err.msg);
	json_decref(r);
	if (cat_meta_validate(out, &err) != 0)
		fail_msg("created metadata does not validate: %s", err.msg);
	return out;
}

/* Nested ids in Java's order: a struct's own fields first, then each
 * field's nested type; list element, then map key and value. */
static void test_fresh_ids(void **state)
{
	json_t *m = create_ok(
	        "{'name':'t','stage-create':false,'schema':{'type':'struct','schema-id':5,'identifier-field-ids':[10],'fields':["
	        "{'id':10,'name':'a','required':true,'type':'int'},"
	        "{'id':20,'name':'s','required':false,'type':{'type':'struct','fields':["
	        "  {'id':21,'name':'x','required':false,'type':'long'},"
	        "  {'id':22,'name':'y','required':false,'type':'string'}]}},"
	        "{'id':30,'name':'l','required':false,'type':{'type':'list','element-id':31,'element-required':true,"
	        "  'element':{'type':'struct','fields':[{'id':32,'name':'z','required':false,'type':'double'}]}}},"
	        "{'id':40,'name':'m','required':false,'type':{'type':'map','key-id':41,'key':'string',"
	        "  'value-id':42,'value':'decimal(9, 2)','value-required':false}}]},"
	        "'partition-spec':{'spec-id':7,'fields':["
	        "  {'source-id':10,'field-id':5000,'name':'a_bucket','transform':'bucket[4]'},"
	        "  {'source-id':21,'name':'x','transform':'identity'}]},"
	        "'write-order':{'order-id':9,'fields':[{'source-id':22,'transform':'identity','direction':'desc','null-order':'nulls-last'}]},"
	        "'properties':{'format-version':'2','owner':'me','current-snapshot-id':'7','uuid':'u'}}",
	        "s3://bucket/wh/ns/t/");

	(void)state;
	tm_check(
	        m,
	        "format-version=2;table-uuid='" TM_UUID "';location='s3://bucket/wh/ns/t';"
	        "last-sequence-number=0;last-updated-ms=1700000000000;last-column-id=10;"
	        "current-schema-id=0;schemas#1;schemas/0/schema-id=0;schemas/0/identifier-field-ids=[1];"
	        "schemas/0/fields/0/id=1;schemas/0/fields/1/id=2;schemas/0/fields/2/id=3;schemas/0/fields/3/id=4;"
	        "schemas/0/fields/1/type/fields/0/id=5;schemas/0/fields/1/type/fields/1/id=6;"
	        "schemas/0/fields/2/type/element-id=7;schemas/0/fields/2/type/element/fields/0/id=8;"
	        "schemas/0/fields/3/type/key-id=9;schemas/0/fields/3/type/value-id=10;"
	        "default-spec-id=0;partition-specs#1;partition-specs/0/spec-id=0;"
	        "partition-specs/0/fields=[{'name':'a_bucket','transform':'bucket[4]','source-id':1,'field-id':1000},"
	        "{'name':'x','transform':'identity','source-id':5,'field-id':1001}];last-partition-id=1001;"
	        "default-sort-order-id=1;sort-orders=[{'order-id':1,'fields':[{'transform':'identity','source-id':6,"
	        "'direction':'desc','null-order':'nulls-last'}]}];"
	        "properties={'write.parquet.compression-codec':'zstd','owner':'me'};"
	        "current-snapshot-id=-1;refs={};snapshots=[];statistics=[];partition-statistics=[];"
	        "snapshot-log=[];metadata-log=[];!schema;!partition-spec;!next-row-id;!encryption-keys");
	json_decref(m);
}

/* Unpartitioned and unsorted: last-partition-id 999, order 0. */
static void test_unpartitioned(void **state)
{
	json_t *m = create_ok("{'name':'t','schema':{'type':'struct','fields':["
	                      "{'id':1,'name':'a','required':false,'type':'int'}]},"
	                      "'write-order':{'order-id':0,'fields':[]}}",
	                      TM_LOCATION);

	(void)state;
	tm_check(
	        m,
	        "format-version=2;last-partition-id=999;partition-specs=[{'spec-id':0,'fields':[]}];"
	        "sort-orders=[{'order-id':0,'fields':[]}];default-sort-order-id=0;last-column-id=1;"
	        "!schemas/0/identifier-field-ids");
	json_decref(m);
}

static void test_v1(void **state)
{
	json_t *m = create_ok(
	        "{'name':'t','schema':{'type':'struct','fields':["
	        "{'id':1,'name':'a','required':false,'type':'int'},"
	        "{'id':2,'name':'d','required':false,'type':'date'}]},"
	        "'partition-spec':{'fields':[{'source-id':2,'name':'d_month','transform':'month'}]},"
	        "'properties':{'format-version':'1'}}",
	        TM_LOCATION);

	(void)state;
	tm_check(
	        m,
	        "format-version=1;!last-sequence-number;schema/schema-id=0;schema/fields#2;"
	        "partition-spec=[{'name':'d_month','transform':'month','source-id':2,'field-id':1000}];"
	        "current-snapshot-id=-1;!next-row-id;last-partition-id=1000");
	json_decref(m);
}

static void test_v3(void **state)
{
	json_t *m = create_ok(
	        "{'name':'t','schema':{'type':'struct','fields':["
	        "{'id':1,'name':'a','required':false,'type':'timestamp_ns'},"
	        "{'id':2,'name':'v','required':false,'type':'variant'},"
	        "{'id':3,'name':'c','required':false,'type':'int','initial-default':1,'write-default':2}]},"
	        "'properties':{'format-version':'3','write.parquet.compression-codec':'snappy'}}",
	        TM_LOCATION);

	(void)state;
	tm_check(m,
	         "format-version=3;next-row-id=0;current-snapshot-id=null;last-sequence-number=0;"
	         "properties={'write.parquet.compression-codec':'snappy'};"
	         "schemas/0/fields/2/initial-default=1");
	json_decref(m);
}

struct bad_case {
	const char *name;
	const char *req;
	const char *location;
	const char *msg;
};

#define S1 \
	"'schema':{'type':'struct','fields':[{'id':1,'name':'a','required':true,'type':'string'}]}"

static const struct bad_case bad[] = {
        {"not an object", "[]", TM_LOCATION, "must be a JSON object"},
        {"missing name", "{" S1 "}", TM_LOCATION, "field 'name' must be a non-empty string"},
        {"missing schema", "{'name':'t'}", TM_LOCATION, "field 'schema' must be an object"},
        {"properties not strings", "{'name':'t'," S1 ",'properties':{'a':1}}", TM_LOCATION,
         "value of 'a' must be a string"},
        {"format-version 4", "{'name':'t'," S1 ",'properties':{'format-version':'4'}}", TM_LOCATION,
         "unsupported format-version '4'"},
        {"format-version garbage", "{'name':'t'," S1 ",'properties':{'format-version':'2x'}}",
         TM_LOCATION, "unsupported format-version '2x'"},
        {"unknown type",
         "{'name':'t','schema':{'type':'struct','fields':[{'id':1,'name':'a','required':true,'type':'varchar'}]}}",
         TM_LOCATION, "unknown type 'varchar'"},
        {"v3 type in v2",
         "{'name':'t','schema':{'type':'struct','fields':[{'id':1,'name':'a','required':true,'type':'variant'}]}}",
         TM_LOCATION, "type 'variant' is not supported until format version 3"},
        {"default in v2",
         "{'name':'t','schema':{'type':'struct','fields':[{'id':1,'name':'a','required':false,'type':'int','initial-default':3}]}}",
         TM_LOCATION, "default values are not supported until format version 3"},
        {"duplicate field id",
         "{'name':'t','schema':{'type':'struct','fields':[{'id':1,'name':'a','required':true,'type':'int'},"
         "{'id':1,'name':'b','required':true,'type':'int'}]}}",
         TM_LOCATION, "field id 1 is used more than once, by 'a' and by 'b'"},
        {"field id out of range",
         "{'name':'t','schema':{'type':'struct','fields':[{'id':-1,'name':'a','required':true,'type':'int'}]}}",
         TM_LOCATION, "field id -1 of a is out of range (0 to 2147483647)"},
        {"list element id out of range",
         "{'name':'t','schema':{'type':'struct','fields':[{'id':1,'name':'l','required':false,'type':"
         "{'type':'list','element-id':3000000000,'element':'int','element-required':false}}]}}",
         TM_LOCATION,
         "field id 3000000000 of a list element or map key or value is out of range (0 to "
         "2147483647)"},
        {"duplicate field name",
         "{'name':'t','schema':{'type':'struct','fields':[{'id':1,'name':'a','required':true,'type':'int'},"
         "{'id':2,'name':'a','required':true,'type':'int'}]}}",
         TM_LOCATION, "duplicate field name 'a'"},
        {"bad decimal",
         "{'name':'t','schema':{'type':'struct','fields':[{'id':1,'name':'a','required':true,'type':'decimal(40,2)'}]}}",
         TM_LOCATION, "type 'decimal(40,2)': a decimal's precision must be 1 to 38"},
        {"decimal scale over its precision",
         "{'name':'t','schema':{'type':'struct','fields':[{'id':1,'name':'a','required':true,'type':'decimal(5, 6)'}]}}",
         TM_LOCATION, "and its scale 0 to its precision"},
        {"fixed too long",
         "{'name':'t','schema':{'type':'struct','fields':[{'id':1,'name':'a','required':true,'type':'fixed[2147483648]'}]}}",
         TM_LOCATION, "type 'fixed[2147483648]': a fixed's length must be 0 to 2147483647"},
        {"decimal without its scale",
         "{'name':'t','schema':{'type':'struct','fields':[{'id':1,'name':'a','required':true,'type':'decimal(5)'}]}}",
         TM_LOCATION, "unknown type 'decimal(5)'"},
        {"identifier field optional",
         "{'name':'t','schema':{'type':'struct','identifier-field-ids':[1],'fields':[{'id':1,'name':'a','required':false,'type':'int'}]}}",
         TM_LOCATION, "identifier field 1 is not a required field"},
        {"identifier field double",
         "{'name':'t','schema':{'type':'struct','identifier-field-ids':[1],'fields':[{'id':1,'name':'a','required':true,'type':'double'}]}}",
         TM_LOCATION, "must not be float or double"},
        {"identifier field missing",
         "{'name':'t','schema':{'type':'struct','identifier-field-ids':[9],'fields':[{'id':1,'name':'a','required':true,'type':'int'}]}}",
         TM_LOCATION, "identifier field 9 does not exist"},
        {"partition source missing",
         "{'name':'t'," S1
         ",'partition-spec':{'fields':[{'source-id':99,'name':'p','transform':'identity'}]}}",
         TM_LOCATION, "cannot find source column 99"},
        {"partition transform wrong for type",
         "{'name':'t'," S1
         ",'partition-spec':{'fields':[{'source-id':1,'name':'p','transform':'hour'}]}}",
         TM_LOCATION, "fields[0]: invalid source type string of column 'a' for transform hour"},
        {"the column named as the client named it, not by its fresh id",
         "{'name':'t','schema':{'type':'struct','fields':[{'id':10,'name':'id','required':false,'type':'long'},"
         "{'id':20,'name':'name','required':false,'type':'string'}]},"
         "'partition-spec':{'fields':[{'source-id':10,'name':'i','transform':'identity'},"
         "{'source-id':20,'name':'d','transform':'day'}]}}",
         TM_LOCATION, "fields[1]: invalid source type string of column 'name' for transform day"},
        {"partition unknown transform",
         "{'name':'t'," S1
         ",'partition-spec':{'fields':[{'source-id':1,'name':'p','transform':'zorder'}]}}",
         TM_LOCATION, "unknown transform 'zorder'"},
        {"partition on a list element",
         "{'name':'t','schema':{'type':'struct','fields':[{'id':1,'name':'l','required':false,'type':"
         "{'type':'list','element-id':2,'element':'int','element-required':false}}]},"
         "'partition-spec':{'fields':[{'source-id':2,'name':'p','transform':'identity'}]}}",
         TM_LOCATION,
         "cannot partition by a list element or map key or value in column 'l': it is inside a "
         "list or map"},
        {"partition on a struct",
         "{'name':'t','schema':{'type':'struct','fields':[{'id':1,'name':'s','required':false,'type':"
         "{'type':'struct','fields':[{'id':2,'name':'x','required':false,'type':'int'}]}}]},"
         "'partition-spec':{'fields':[{'source-id':1,'name':'p','transform':'identity'}]}}",
         TM_LOCATION, "cannot partition by column 's': it is not of a primitive type"},
        {"sort direction",
         "{'name':'t'," S1
         ",'write-order':{'order-id':1,'fields':[{'source-id':1,'transform':'identity','direction':'sideways','null-order':'nulls-first'}]}}",
         TM_LOCATION, "field 'direction' must be"},
        {"sort source missing",
         "{'name':'t'," S1
         ",'write-order':{'order-id':1,'fields':[{'source-id':5,'transform':'identity','direction':'asc','null-order':'nulls-first'}]}}",
         TM_LOCATION, "cannot find source column 5"},
        {"partition-spec not an object", "{'name':'t'," S1 ",'partition-spec':[]}", TM_LOCATION,
         "field 'partition-spec' must be an object"},
        {"stage-create not a boolean", "{'name':'t'," S1 ",'stage-create':'yes'}", TM_LOCATION,
         "field 'stage-create' must be a boolean"},
        {"empty location", "{'name':'t'," S1 "}", "/", "the table location is empty"},
};

static void test_rejections(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct fl_err err = {0};
		json_t *r = tm_json(bad[i].req), *out = NULL;

		print_message("case: %s\n", bad[i].name);
		if (cat_meta_create(r, bad[i].location, TM_UUID, TM_NOW, &out, &err) == 0)
			fail_msg("%s: expected an error", bad[i].name);
		assert_null(out);
		tm_err_is(&err, FL_ERR_BAD_REQUEST, bad[i].msg);
		json_decref(r);
	}
}

/* The request is only read. */
static void test_request_untouched(void **state)
{
	struct fl_err err = {0};
	json_t *r = tm_json(
	        "{'name':'t','schema':{'type':'struct','fields':[{'id':7,'name':'a','required':true,'type':'int'}]},"
	        "'partition-spec':{'fields':[{'source-id':7,'field-id':1,'name':'p','transform':'identity'}]}}");
	json_t *copy = json_deep_copy(r), *out = NULL;

	(void)state;
	assert_int_equal(cat_meta_create(r, TM_LOCATION, TM_UUID, TM_NOW, &out, &err), 0);
	assert_true(json_equal(r, copy));
	tm_check(out, "schemas/0/fields/0/id=1;partition-specs/0/fields/0/source-id=1;"
	              "partition-specs/0/fields/0/field-id=1000");
	json_decref(out);
	json_decref(copy);
	json_decref(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_fresh_ids),  cmocka_unit_test(test_unpartitioned),
	        cmocka_unit_test(test_v1),         cmocka_unit_test(test_v3),
	        cmocka_unit_test(test_rejections), cmocka_unit_test(test_request_untouched),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
