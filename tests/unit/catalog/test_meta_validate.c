/* test_meta_validate.c - cat_meta_validate on hand-written documents of
 * each format version (what register-table receives), the accessors and the
 * metadata file name. */
#include "meta_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uuid.h"

/* A complete v2 document as Java writes it, with one snapshot on main. */
#define V2_DOC                                                                                                  \
	"{'format-version':2,'table-uuid':'" TM_UUID "','location':'s3://b/t',"                                 \
	"'last-sequence-number':3,'last-updated-ms':1700000000000,'last-column-id':3,"                          \
	"'current-schema-id':0,'schemas':[{'type':'struct','schema-id':0,'fields':["                            \
	"{'id':1,'name':'id','required':true,'type':'long'},"                                                   \
	"{'id':2,'name':'data','required':false,'type':'string'},"                                              \
	"{'id':3,'name':'ts','required':false,'type':'timestamptz'}]}],"                                        \
	"'default-spec-id':0,'partition-specs':[{'spec-id':0,'fields':[{'name':'ts_day','transform':'day',"     \
	"'source-id':3,'field-id':1000}]}],'last-partition-id':1000,"                                           \
	"'default-sort-order-id':1,'sort-orders':[{'order-id':0,'fields':[]},{'order-id':1,'fields':["          \
	"{'transform':'identity','source-id':1,'direction':'asc','null-order':'nulls-first'}]}],"               \
	"'properties':{'owner':'x'},'current-snapshot-id':7,"                                                   \
	"'refs':{'main':{'snapshot-id':7,'type':'branch'},'v1':{'snapshot-id':7,'type':'tag'}},"                \
	"'snapshots':[{'snapshot-id':7,'sequence-number':3,'timestamp-ms':1700000000000,"                       \
	"'manifest-list':'s3://b/t/metadata/snap-7.avro','summary':{'operation':'append','added-records':'5'}," \
	"'schema-id':0}],'statistics':[],'partition-statistics':[],"                                            \
	"'snapshot-log':[{'timestamp-ms':1700000000000,'snapshot-id':7}],"                                      \
	"'metadata-log':[{'timestamp-ms':1600000000000,'metadata-file':'s3://b/t/metadata/00000-a.metadata.json'}]}"

/* A v1 document of an old writer: no schemas list, no refs, no sort orders. */
#define V1_DOC                                                                                  \
	"{'format-version':1,'location':'s3://b/t','last-updated-ms':1,'last-column-id':2,"     \
	"'schema':{'type':'struct','fields':[{'id':1,'name':'a','required':true,'type':'int'}," \
	"{'id':2,'name':'d','required':false,'type':'date'}]},"                                 \
	"'partition-spec':[{'name':'d','transform':'identity','source-id':2}],"                 \
	"'properties':{},'current-snapshot-id':-1,'snapshots':[]}"

/* A v3 document with row lineage and an encryption key. */
#define V3_DOC                                                                                       \
	"{'format-version':3,'table-uuid':'" TM_UUID "','location':'s3://b/t',"                      \
	"'last-sequence-number':0,'last-updated-ms':1,'last-column-id':1,'next-row-id':0,"           \
	"'current-schema-id':0,'schemas':[{'type':'struct','schema-id':0,'fields':["                 \
	"{'id':1,'name':'v','required':false,'type':'variant'}]}],"                                  \
	"'default-spec-id':0,'partition-specs':[{'spec-id':0,'fields':[]}],'last-partition-id':999," \
	"'default-sort-order-id':0,'sort-orders':[{'order-id':0,'fields':[]}],"                      \
	"'properties':{},'current-snapshot-id':null,'refs':{},'snapshots':[],"                       \
	"'encryption-keys':[{'key-id':'k','encrypted-key-metadata':'AA=='}]}"

static void test_valid_documents(void **state)
{
	const char *docs[] = {V2_DOC, V1_DOC, V3_DOC};
	struct fl_err err = {0};

	(void)state;
	for (size_t i = 0; i < 3; i++) {
		json_t *d = tm_json(docs[i]);

		if (cat_meta_validate(d, &err) != 0)
			fail_msg("document %zu: %s", i, err.msg);
		json_decref(d);
	}
}

/* A v1 document is normalized when a commit rewrites it. */
static void test_v1_normalized_on_commit(void **state)
{
	json_t *d = tm_json(V1_DOC), *out;

	(void)state;
	out = tm_apply_ok(d, "[{'action':'set-properties','updates':{'k':'v'}}]", TM_NOW);
	tm_check(
	        out,
	        "format-version=1;schemas#1;schemas/0/schema-id=0;current-schema-id=0;"
	        "partition-spec=[{'name':'d','transform':'identity','source-id':2,'field-id':1000}];"
	        "partition-specs/0/fields/0/field-id=1000;last-partition-id=1000;"
	        "sort-orders=[{'order-id':0,'fields':[]}];default-sort-order-id=0;"
	        "schema/fields#2;current-snapshot-id=-1;refs={};!table-uuid");
	json_decref(out);
	/* and gains a uuid when upgraded to v2 */
	out = tm_apply_ok(d, "[{'action':'upgrade-format-version','format-version':2}]", TM_NOW);
	assert_true(fl_uuid_valid(cat_meta_uuid(out)));
	tm_check(out, "format-version=2;last-sequence-number=0;!schema");
	json_decref(out);
	json_decref(d);
}

struct bad_doc {
	const char *name;
	const char *base; /* V1_DOC, V2_DOC or V3_DOC */
	const char *path; /* member to change ("a" or "a/b/0/c") */
	const char *value; /* JSON, or NULL to delete it */
	const char *msg;
};

static const struct bad_doc bad[] = {
        {"missing format-version", V2_DOC, "format-version", NULL,
         "missing required field 'format-version'"},
        {"format-version 4", V2_DOC, "format-version", "4", "unsupported format-version 4"},
        {"format-version string", V2_DOC, "format-version", "'2'",
         "'format-version' must be an integer"},
        {"v2 without table-uuid", V2_DOC, "table-uuid", NULL,
         "missing required field 'table-uuid'"},
        {"table-uuid not a uuid", V2_DOC, "table-uuid", "'abc'", "'table-uuid' is not a UUID"},
        {"v2 without last-sequence-number", V2_DOC, "last-sequence-number", NULL,
         "missing required field 'last-sequence-number'"},
        {"v3 without next-row-id", V3_DOC, "next-row-id", NULL,
         "missing required field 'next-row-id'"},
        {"missing location", V2_DOC, "location", NULL, "missing required field 'location'"},
        {"location not a string", V2_DOC, "location", "5", "field 'location' must be a string"},
        {"missing last-updated-ms", V2_DOC, "last-updated-ms", NULL,
         "missing required field 'last-updated-ms'"},
        {"v2 without schemas", V2_DOC, "schemas", NULL, "missing required field 'schemas'"},
        {"v2 without sort-orders", V2_DOC, "sort-orders", NULL,
         "missing required field 'sort-orders'"},
        {"v2 without last-partition-id", V2_DOC, "last-partition-id", NULL,
         "missing required field 'last-partition-id'"},
        {"current schema unknown", V2_DOC, "current-schema-id", "4",
         "current-schema-id 4 is not in schemas"},
        {"default spec unknown", V2_DOC, "default-spec-id", "3",
         "default-spec-id 3 is not in partition-specs"},
        {"default sort order unknown", V2_DOC, "default-sort-order-id", "5",
         "default-sort-order-id 5 is not in sort-orders"},
        {"last-column-id too low", V2_DOC, "last-column-id", "2",
         "last-column-id 2 is below field id 3"},
        {"last-partition-id too low", V2_DOC, "last-partition-id", "999",
         "last-partition-id 999 is below a field id of spec 0"},
        {"snapshot sequence above last", V2_DOC, "last-sequence-number", "2",
         "has sequence number 3 above last-sequence-number 2"},
        {"current snapshot unknown", V2_DOC, "current-snapshot-id", "8",
         "current-snapshot-id 8 is not in snapshots"},
        {"ref to a missing snapshot", V2_DOC, "refs/v1/snapshot-id", "99",
         "ref v1 points at snapshot 99, which does not exist"},
        {"main is a tag", V2_DOC, "refs/main/type", "'tag'", "ref main must be a branch"},
        {"ref type unknown", V2_DOC, "refs/v1/type", "'leaf'", "field 'type' must be"},
        {"current snapshot without main", V2_DOC, "refs", "{}", "there is no main branch"},
        {"main without current snapshot", V2_DOC, "current-snapshot-id", "-1",
         "branch main is at snapshot 7 but current-snapshot-id is -1"},
        {"snapshot without manifest-list in v2", V2_DOC, "snapshots/0/manifest-list", NULL,
         "missing required field 'manifest-list'"},
        {"snapshot without summary in v2", V2_DOC, "snapshots/0/summary", NULL,
         "missing required field 'summary'"},
        {"duplicate schema id", V2_DOC, "schemas/1", "{'type':'struct','schema-id':0,'fields':[]}",
         "schema id 0 is used more than once"},
        {"schema with a bad type", V2_DOC, "schemas/0/fields/1/type", "'text'",
         "unknown type 'text'"},
        {"default spec not bound to the schema", V2_DOC, "partition-specs/0/fields/0/source-id",
         "2", "invalid source type string of column 'data' for transform day"},
        {"current-schema-id out of range", V2_DOC, "current-schema-id", "3000000000",
         "field 'current-schema-id' is 3000000000, out of range (0 to 2147483647)"},
        {"properties not strings", V2_DOC, "properties/n", "1", "value of 'n' must be a string"},
        {"snapshot-log entry malformed", V2_DOC, "snapshot-log/0/snapshot-id", "'7'",
         "field 'snapshot-id' must be an integer"},
        {"metadata-log entry malformed", V2_DOC, "metadata-log/0/metadata-file", NULL,
         "missing required field 'metadata-file'"},
        {"encryption keys before v3", V2_DOC, "encryption-keys",
         "[{'key-id':'k','encrypted-key-metadata':'AA=='}]",
         "encryption-keys need format version 3"},
        {"statistics malformed", V2_DOC, "statistics", "[{'snapshot-id':7}]",
         "missing required field 'statistics-path'"},
        {"v1 without schema", V1_DOC, "schema", NULL, "missing required field 'schema'"},
        /* register-table reads any file: once answered "out of memory" */
        {"schema without fields", V2_DOC, "schemas/0/fields", NULL,
         "metadata: schema 0: missing required field 'fields'"},
        {"v1 schema without fields", V1_DOC, "schema/fields", NULL,
         "metadata: schema 0: missing required field 'fields'"},
        {"not an object", NULL, NULL, NULL, "must be a JSON object"},
};

/* Sets (or deletes) the member at a '/'-path of doc. */
static void mutate(json_t *doc, const char *path, const char *value)
{
	char buf[128], *slash;
	json_t *parent = doc;
	const char *leaf = buf;

	snprintf(buf, sizeof(buf), "%s", path);
	slash = strrchr(buf, '/');
	if (slash != NULL) {
		*slash = '\0';
		parent = tm_get(doc, buf);
		leaf = slash + 1;
	}
	assert_non_null(parent);
	if (json_is_array(parent)) {
		size_t i = strtoul(leaf, NULL, 10);

		if (value == NULL)
			json_array_remove(parent, i);
		else if (i < json_array_size(parent))
			json_array_set_new(parent, i, tm_json(value));
		else
			json_array_append_new(parent, tm_json(value));
	} else if (value == NULL) {
		json_object_del(parent, leaf);
	} else {
		json_object_set_new(parent, leaf, tm_json(value));
	}
}

static void test_rejections(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct fl_err err = {0};
		json_t *d = tm_json(bad[i].base ? bad[i].base : "[]");

		print_message("case: %s\n", bad[i].name);
		if (bad[i].path != NULL)
			mutate(d, bad[i].path, bad[i].value);
		if (cat_meta_validate(d, &err) == 0)
			fail_msg("%s: expected an error", bad[i].name);
		tm_err_is(&err, FL_ERR_BAD_REQUEST, bad[i].msg);
		json_decref(d);
	}
}

static void test_accessors(void **state)
{
	json_t *v2 = tm_json(V2_DOC), *v3 = tm_json(V3_DOC), *t2 = tm_table(2);

	(void)state;
	assert_int_equal(cat_meta_format_version(v2), 2);
	assert_int_equal(cat_meta_format_version(v3), 3);
	assert_string_equal(cat_meta_location(v2), "s3://b/t");
	assert_string_equal(cat_meta_uuid(v2), TM_UUID);
	assert_int_equal(cat_meta_current_snapshot_id(v2), 7);
	assert_int_equal(cat_meta_current_snapshot_id(v3), -1); /* null */
	assert_int_equal(cat_meta_current_snapshot_id(t2), -1); /* -1 */
	assert_string_equal(
	        json_string_value(json_object_get(cat_meta_current_summary(v2), "added-records")),
	        "5");
	assert_null(cat_meta_current_summary(v3));
	assert_null(cat_meta_current_summary(t2));
	/* The current snapshot wherever it is in the list (the search starts
	 * from the newest), and none for an id the list does not hold. */
	for (int id = 8; id <= 9; id++)
		json_array_append_new(
		        json_object_get(v2, "snapshots"),
		        json_pack("{sisisIsss{ssss}}", "snapshot-id", id, "sequence-number", id,
		                  "timestamp-ms", (json_int_t)1700000000000, "manifest-list",
		                  "s3://b/t/metadata/snap.avro", "summary", "operation", "append",
		                  "added-records", id == 8 ? "80" : "90"));
	for (int id = 7; id <= 9; id++) {
		const char *want[] = {"5", "80", "90"};

		json_object_set_new(v2, "current-snapshot-id", json_integer(id));
		assert_string_equal(json_string_value(json_object_get(cat_meta_current_summary(v2),
		                                                      "added-records")),
		                    want[id - 7]);
	}
	json_object_set_new(v2, "current-snapshot-id", json_integer(42));
	assert_null(cat_meta_current_summary(v2));
	json_decref(v2);
	json_decref(v3);
	json_decref(t2);
}

static void test_file_name(void **state)
{
	char a[CAT_META_FILE_NAME_MAX], b[CAT_META_FILE_NAME_MAX], u[FL_UUID_STR];

	(void)state;
	cat_meta_metadata_file_name(7, a);
	cat_meta_metadata_file_name(123456, b);
	assert_int_equal(strlen(a), 5 + 1 + 36 + strlen(".metadata.json"));
	assert_memory_equal(a, "00007-", 6);
	assert_string_equal(a + 42, ".metadata.json");
	memcpy(u, a + 6, 36);
	u[36] = '\0';
	assert_true(fl_uuid_valid(u));
	assert_true(u[14] == '4'); /* v4 */
	assert_memory_equal(b, "123456-", 7);
	cat_meta_metadata_file_name(7, b);
	assert_string_not_equal(a, b); /* a fresh uuid each time */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_valid_documents),
	        cmocka_unit_test(test_v1_normalized_on_commit),
	        cmocka_unit_test(test_rejections),
	        cmocka_unit_test(test_accessors),
	        cmocka_unit_test(test_file_name),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
