/* test_meta_clients.c - the request bodies PyIceberg and DuckDB really send
 * (reference brief §B.1, §B.2), run through create, requirements and apply
 * as the commit path does, each result checked to validate. */
#include "meta_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WH "s3://warehouse/wh/ns/events"
#define META0 WH "/metadata/00000-0a6b1c5e-7d7e-4f3a-9c11-2b7e5d0a4f10.metadata.json"
#define META1 WH "/metadata/00001-6f1c0b9e-2f55-4b8e-8d7a-3c9e1a2b4d5f.metadata.json"
#define META2 WH "/metadata/00002-1d2c3b4a-5e6f-4a7b-8c9d-0e1f2a3b4c5d.metadata.json"

/* One commit as the server runs it: requirements, then updates. */
static json_t *commit(const json_t *base, const char *base_location, const char *body, int64_t now,
                      enum fl_err_kind want, const char *msg, bool *changed)
{
	struct fl_err err = {0};
	json_t *req = tm_json(body), *out = NULL;
	bool ch = false;
	int rc;

	rc = cat_meta_check_requirements(base, json_object_get(req, "requirements"), &err);
	if (rc == 0)
		rc = cat_meta_apply(base, base_location, json_object_get(req, "updates"), now, 100,
		                    &out, &ch, &err);
	json_decref(req);
	if (want != FL_ERR_NONE) {
		assert_int_equal(rc, -1);
		tm_err_is(&err, want, msg);
		return NULL;
	}
	if (rc != 0)
		fail_msg("commit failed: %s", err.msg);
	if (cat_meta_validate(out, &err) != 0)
		fail_msg("committed metadata does not validate: %s", err.msg);
	if (changed != NULL)
		*changed = ch;
	return out;
}

static json_t *create(const char *body, const char *location)
{
	struct fl_err err = {0};
	json_t *req = tm_json(body), *out = NULL;

	if (cat_meta_create(req, location, TM_UUID, TM_NOW, &out, &err) != 0)
		fail_msg("create failed: %s", err.msg);
	json_decref(req);
	if (cat_meta_validate(out, &err) != 0)
		fail_msg("created metadata does not validate: %s", err.msg);
	return out;
}

/* ---- PyIceberg ---- */

/* create_table_transaction: POST tables with stage-create, then the commit
 * [assert-create] + the full update list (set-current-schema(-1) etc.). */
#define PY_CREATE                                                                                                      \
	"{'name':'events','schema':{'type':'struct','fields':["                                                        \
	"{'id':1,'name':'id','type':'long','required':true},"                                                          \
	"{'id':2,'name':'name','type':'string','required':false},"                                                     \
	"{'id':3,'name':'ts','type':'timestamptz','required':false}],"                                                 \
	"'schema-id':0,'identifier-field-ids':[]},"                                                                    \
	"'partition-spec':{'spec-id':0,'fields':[{'source-id':3,'field-id':1000,'transform':'day','name':'ts_day'}]}," \
	"'write-order':{'order-id':0,'fields':[]},'stage-create':true,'properties':{}}"

#define PY_CREATE_COMMIT                                                                                                           \
	"{'identifier':{'namespace':['ns'],'name':'events'},"                                                                      \
	"'requirements':[{'type':'assert-create'}],"                                                                               \
	"'updates':["                                                                                                              \
	"{'action':'assign-uuid','uuid':'" TM_UUID "'},"                                                                           \
	"{'action':'upgrade-format-version','format-version':2},"                                                                  \
	"{'action':'add-schema','schema':{'type':'struct','fields':["                                                              \
	"{'id':1,'name':'id','type':'long','required':true},"                                                                      \
	"{'id':2,'name':'name','type':'string','required':false},"                                                                 \
	"{'id':3,'name':'ts','type':'timestamptz','required':false}],"                                                             \
	"'schema-id':0,'identifier-field-ids':[]}},"                                                                               \
	"{'action':'set-current-schema','schema-id':-1},"                                                                          \
	"{'action':'add-spec','spec':{'spec-id':0,'fields':[{'source-id':3,'field-id':1000,'transform':'day','name':'ts_day'}]}}," \
	"{'action':'set-default-spec','spec-id':-1},"                                                                              \
	"{'action':'add-sort-order','sort-order':{'order-id':0,'fields':[]}},"                                                     \
	"{'action':'set-default-sort-order','sort-order-id':-1},"                                                                  \
	"{'action':'set-location','location':'" WH "'},"                                                                           \
	"{'action':'set-properties','updates':{'write.parquet.compression-codec':'zstd'}}]}"

/* append(df): snapshot without parent-snapshot-id (None is not sent),
 * added-rows never sent. */
#define PY_APPEND1                                                                                              \
	"{'identifier':{'namespace':['ns'],'name':'events'},"                                                   \
	"'requirements':[{'type':'assert-ref-snapshot-id','ref':'main','snapshot-id':null},"                    \
	"{'type':'assert-table-uuid','uuid':'" TM_UUID "'}],"                                                   \
	"'updates':[{'action':'add-snapshot','snapshot':{'snapshot-id':3051729675574597004,"                    \
	"'sequence-number':1,'timestamp-ms':1700000100000,"                                                     \
	"'manifest-list':'" WH                                                                                  \
	"/metadata/snap-3051729675574597004-0-7c3bb0f2-5f7e-4e6a-9a26-6a1b2c3d4e5f.avro',"                      \
	"'summary':{'operation':'append','added-files-size':'1234','added-data-files':'1','added-records':'3'," \
	"'total-data-files':'1','total-delete-files':'0','total-records':'3','total-files-size':'1234',"        \
	"'total-position-deletes':'0','total-equality-deletes':'0'},'schema-id':0}},"                           \
	"{'action':'set-snapshot-ref','ref-name':'main','type':'branch','snapshot-id':3051729675574597004}]}"

#define PY_APPEND2                                                                                              \
	"{'identifier':{'namespace':['ns'],'name':'events'},"                                                   \
	"'requirements':[{'type':'assert-ref-snapshot-id','ref':'main','snapshot-id':3051729675574597004},"     \
	"{'type':'assert-table-uuid','uuid':'" TM_UUID "'}],"                                                   \
	"'updates':[{'action':'add-snapshot','snapshot':{'snapshot-id':5987435921386129183,"                    \
	"'parent-snapshot-id':3051729675574597004,'sequence-number':2,'timestamp-ms':1700000200000,"            \
	"'manifest-list':'" WH                                                                                  \
	"/metadata/snap-5987435921386129183-0-0b9f7a6e-1c2d-4e3f-8a9b-0c1d2e3f4a5b.avro',"                      \
	"'summary':{'operation':'append','added-files-size':'1000','added-data-files':'1','added-records':'2'," \
	"'total-data-files':'2','total-delete-files':'0','total-records':'5','total-files-size':'2234',"        \
	"'total-position-deletes':'0','total-equality-deletes':'0'},'schema-id':0}},"                           \
	"{'action':'set-snapshot-ref','ref-name':'main','type':'branch','snapshot-id':5987435921386129183}]}"

/* update_schema().add_column('country', StringType()) */
#define PY_ADD_COLUMN                                                                \
	"{'identifier':{'namespace':['ns'],'name':'events'},"                        \
	"'requirements':[{'type':'assert-current-schema-id','current-schema-id':0}," \
	"{'type':'assert-table-uuid','uuid':'" TM_UUID "'}],"                        \
	"'updates':[{'action':'add-schema','schema':{'type':'struct','fields':["     \
	"{'id':1,'name':'id','type':'long','required':true},"                        \
	"{'id':2,'name':'name','type':'string','required':false},"                   \
	"{'id':3,'name':'ts','type':'timestamptz','required':false},"                \
	"{'id':4,'name':'country','type':'string','required':false}],"               \
	"'schema-id':1,'identifier-field-ids':[]}},"                                 \
	"{'action':'set-current-schema','schema-id':-1}]}"

static void test_pyiceberg(void **state)
{
	json_t *staged = create(PY_CREATE, WH), *t0, *t1, *t2, *t3, *copy;
	bool changed;

	(void)state;
	/* the staged table is what PyIceberg builds its update list from */
	tm_check(staged, "partition-specs/0/fields/0/field-id=1000;last-partition-id=1000;"
	                 "default-sort-order-id=0;location='" WH "'");
	t0 = commit(NULL, NULL, PY_CREATE_COMMIT, TM_NOW + 10, FL_ERR_NONE, NULL, &changed);
	assert_true(changed);
	/* building from the update list gives the staged metadata again */
	copy = json_deep_copy(staged);
	json_object_set_new(copy, "last-updated-ms", json_integer(TM_NOW + 10));
	if (!json_equal(copy, t0)) {
		char *a = json_dumps(copy, JSON_SORT_KEYS), *b = json_dumps(t0, JSON_SORT_KEYS);

		fail_msg("staged and committed differ:\n%s\n%s", a, b);
	}
	json_decref(copy);
	tm_check(t0,
	         "table-uuid='" TM_UUID "';current-schema-id=0;default-spec-id=0;metadata-log=[]");

	/* the same create again: the table exists now */
	commit(t0, META0, PY_CREATE_COMMIT, TM_NOW + 11, FL_ERR_COMMIT_FAILED,
	       "requirement assert-create failed: the table already exists", NULL);

	t1 = commit(t0, META0, PY_APPEND1, TM_NOW + 20, FL_ERR_NONE, NULL, NULL);
	tm_check(t1,
	         "current-snapshot-id=3051729675574597004;last-sequence-number=1;"
	         "refs={'main':{'snapshot-id':3051729675574597004,'type':'branch'}};"
	         "snapshot-log=[{'timestamp-ms':1700000100000,'snapshot-id':3051729675574597004}];"
	         "metadata-log=[{'timestamp-ms':1700000000010,'metadata-file':'" META0 "'}]");
	assert_string_equal(
	        json_string_value(json_object_get(cat_meta_current_summary(t1), "added-records")),
	        "3");

	t2 = commit(t1, META1, PY_APPEND2, TM_NOW + 30, FL_ERR_NONE, NULL, NULL);
	tm_check(t2, "current-snapshot-id=5987435921386129183;last-sequence-number=2;snapshots#2;"
	             "snapshot-log#2;metadata-log#2;metadata-log/1/metadata-file='" META1 "'");

	/* a writer that still sees t1 retries the second append: 409, main moved */
	commit(t2, META2, PY_APPEND2, TM_NOW + 40, FL_ERR_COMMIT_FAILED,
	       "requirement assert-ref-snapshot-id failed: branch main is at 5987435921386129183, "
	       "expected 3051729675574597004",
	       NULL);
	/* the first append replayed on t2 as if main were still empty */
	commit(t2, META2, PY_APPEND1, TM_NOW + 40, FL_ERR_COMMIT_FAILED,
	       "branch main was created concurrently", NULL);

	t3 = commit(t2, META2, PY_ADD_COLUMN, TM_NOW + 50, FL_ERR_NONE, NULL, NULL);
	tm_check(t3,
	         "current-schema-id=1;schemas#2;last-column-id=4;schemas/1/fields/3/name='country';"
	         "current-snapshot-id=5987435921386129183");
	/* the same schema change again is stale */
	commit(t3, META2, PY_ADD_COLUMN, TM_NOW + 60, FL_ERR_COMMIT_FAILED,
	       "requirement assert-current-schema-id failed: current-schema-id is 1, expected 0",
	       NULL);

	json_decref(staged);
	json_decref(t0);
	json_decref(t1);
	json_decref(t2);
	json_decref(t3);
}

/* ---- DuckDB ---- */

#define DUCK_SCHEMA                                                                      \
	"{'type':'struct','fields':[{'name':'id','id':1,'required':false,'type':'int'}," \
	"{'name':'s','id':2,'required':false,'type':'string'}],'schema-id':0}"

/* CREATE TABLE with STAGE_CREATE_TABLES (the default) */
#define DUCK_CREATE(fv, spec_fields)                                                 \
	"{'stage-create':true,'name':'events','schema':" DUCK_SCHEMA ","             \
	"'partition-spec':{'spec-id':0,'type':'struct','fields':[" spec_fields "]}," \
	"'write-order':{'order-id':0,'fields':[]},'properties':{'format-version':'" #fv "'}}"

#define DUCK_SNAP(id, parent, seq, extra)                                                                 \
	"{'snapshot-id':" #id ",'parent-snapshot-id':" #parent ",'sequence-number':" #seq                 \
	",'timestamp-ms':1700000100000,'manifest-list':'" WH "/metadata/snap-" #id "-1.avro',"            \
	"'summary':{'operation':'append','added-data-files':'1','added-records':'3'},'schema-id':0" extra \
	"}"

/* The commit of the transaction that created the table: set-current-schema
 * comes last, after add-spec and add-snapshot. */
#define DUCK_CREATE_COMMIT(fv, spec_fields, snap)                                           \
	"{'identifier':{'namespace':['ns'],'name':'events'},"                               \
	"'requirements':[{'type':'assert-create'}],'updates':["                             \
	"{'action':'assign-uuid','uuid':'" TM_UUID "'},"                                    \
	"{'action':'upgrade-format-version','format-version':" #fv "},"                     \
	"{'action':'add-schema','schema':" DUCK_SCHEMA ",'last-column-id':2},"              \
	"{'action':'add-spec','spec':{'spec-id':0,'fields':[" spec_fields "]}},"            \
	"{'action':'set-default-spec','spec-id':0},"                                        \
	"{'action':'add-sort-order','sort-order':{'order-id':0,'fields':[]}},"              \
	"{'action':'set-default-sort-order','sort-order-id':0},"                            \
	"{'action':'set-location','location':'" WH "'},"                                    \
	"{'action':'set-properties','updates':{'format-version':'" #fv "'}},"               \
	"{'action':'add-snapshot','snapshot':" snap "},"                                    \
	"{'action':'set-snapshot-ref','ref-name':'main','type':'branch','snapshot-id':11}," \
	"{'action':'set-current-schema','schema-id':0}]}"

#define DUCK_PART "{'name':'s','transform':'identity','source-id':2,'field-id':1000}"

#define DUCK_INSERT(parent, id, seq, extra)                                                                \
	"{'table-changes':[{'identifier':{'namespace':['ns'],'name':'events'},"                            \
	"'requirements':[{'type':'assert-table-uuid','uuid':'" TM_UUID "'},"                               \
	"{'type':'assert-ref-snapshot-id','ref':'main','snapshot-id':" #parent "}],"                       \
	"'updates':[{'action':'add-snapshot','snapshot':" DUCK_SNAP(                                       \
	        id, parent, seq,                                                                           \
	        extra) "},"                                                                                \
	               "{'action':'set-snapshot-ref','ref-name':'main','type':'branch','snapshot-id':" #id \
	               "}]}]}"

/* transactions/commit carries table-changes; each runs like one commit. */
static json_t *commit_tx(const json_t *base, const char *loc, const char *body, int64_t now)
{
	json_t *tx = tm_json(body),
	       *change = json_array_get(json_object_get(tx, "table-changes"), 0);
	char *one = json_dumps(change, JSON_COMPACT);
	json_t *out;

	/* tm_json maps ' to ", so the dumped change needs nothing more */
	out = commit(base, loc, one, now, FL_ERR_NONE, NULL, NULL);
	free(one);
	json_decref(tx);
	return out;
}

static void test_duckdb_stage_create(void **state)
{
	json_t *staged = create(DUCK_CREATE(2, DUCK_PART), WH), *t0;

	(void)state;
	tm_check(staged, "partition-specs/0/fields=[" DUCK_PART "];!properties/format-version");
	t0 = commit(NULL, NULL, DUCK_CREATE_COMMIT(2, DUCK_PART, DUCK_SNAP(11, null, 1, "")),
	            TM_NOW + 5, FL_ERR_NONE, NULL, NULL);
	tm_check(t0,
	         "format-version=2;current-schema-id=0;schemas#1;default-spec-id=0;"
	         "partition-specs=[{'spec-id':0,'fields':[" DUCK_PART "]}];last-partition-id=1000;"
	         "current-snapshot-id=11;refs/main/snapshot-id=11;last-sequence-number=1;"
	         "last-column-id=2;location='" WH
	         "';!properties/format-version;table-uuid='" TM_UUID "'");
	json_decref(t0);
	json_decref(staged);
}

static void test_duckdb_v3_inserts(void **state)
{
	json_t *t0, *t1, *t2;

	(void)state;
	t0 = commit(NULL, NULL,
	            DUCK_CREATE_COMMIT(3, "",
	                               DUCK_SNAP(11, null, 1, ",'first-row-id':0,'added-rows':3")),
	            TM_NOW + 5, FL_ERR_NONE, NULL, NULL);
	tm_check(t0, "format-version=3;next-row-id=3;current-snapshot-id=11;last-partition-id=999");
	t1 = commit_tx(t0, META0, DUCK_INSERT(11, 12, 2, ",'first-row-id':3,'added-rows':2"),
	               TM_NOW + 6);
	tm_check(t1, "next-row-id=5;current-snapshot-id=12;snapshots#2;last-sequence-number=2");
	t2 = commit_tx(t1, META1, DUCK_INSERT(12, 13, 3, ",'first-row-id':5,'added-rows':4"),
	               TM_NOW + 7);
	tm_check(t2, "next-row-id=9;current-snapshot-id=13;snapshot-log#3;metadata-log#2");
	json_decref(t0);
	json_decref(t1);
	json_decref(t2);
}

static void test_duckdb_v2_first_insert(void **state)
{
	json_t *t0 = create(DUCK_CREATE(2, ""), WH), *t1, *t2;

	(void)state;
	/* a table created without stage-create gets its first snapshot with
	 * assert-ref-snapshot-id(main, null) */
	t1 = commit_tx(t0, META0, DUCK_INSERT(null, 21, 1, ""), TM_NOW + 6);
	tm_check(t1,
	         "current-snapshot-id=21;!snapshots/0/parent-snapshot-id;last-sequence-number=1");
	t2 = commit_tx(t1, META1, DUCK_INSERT(21, 22, 2, ""), TM_NOW + 7);
	tm_check(t2, "current-snapshot-id=22;snapshots/1/parent-snapshot-id=21");
	json_decref(t0);
	json_decref(t1);
	json_decref(t2);
}

/* ALTER TABLE ADD COLUMN: add-schema with the old last-column-id, then
 * set-current-schema with the explicit new id. */
#define DUCK_ALTER                                                                                  \
	"{'identifier':{'namespace':['ns'],'name':'events'},"                                       \
	"'requirements':[{'type':'assert-table-uuid','uuid':'" TM_UUID "'},"                        \
	"{'type':'assert-current-schema-id','current-schema-id':0}],"                               \
	"'updates':[{'action':'add-schema','last-column-id':2,'schema':{'type':'struct','fields':[" \
	"{'name':'id','id':1,'required':false,'type':'int'},"                                       \
	"{'name':'s','id':2,'required':false,'type':'string'},"                                     \
	"{'name':'n','id':3,'required':false,'type':'double'}],'schema-id':1}},"                    \
	"{'action':'set-current-schema','schema-id':1}]}"

static void test_duckdb_alter(void **state)
{
	json_t *t0 = create(DUCK_CREATE(2, ""), WH), *t1;

	(void)state;
	t1 = commit(t0, META0, DUCK_ALTER, TM_NOW + 6, FL_ERR_NONE, NULL, NULL);
	tm_check(t1, "current-schema-id=1;last-column-id=3;schemas#2;schemas/1/fields/2/name='n'");
	commit(t1, META1, DUCK_ALTER, TM_NOW + 7, FL_ERR_COMMIT_FAILED,
	       "assert-current-schema-id failed: current-schema-id is 1, expected 0", NULL);
	json_decref(t0);
	json_decref(t1);
}

/* STAGE_CREATE_TABLES=false: the table is created for real, then the same
 * update list arrives without assert-create and must change nothing. */
static void test_duckdb_no_stage_create(void **state)
{
	json_t *t0 = create(DUCK_CREATE(2, DUCK_PART), WH), *t1;
	bool changed = true;

	(void)state;
	t1 = commit(t0, META0,
	            "{'requirements':[{'type':'assert-table-uuid','uuid':'" TM_UUID "'},"
	            "{'type':'assert-current-schema-id','current-schema-id':0}],'updates':["
	            "{'action':'assign-uuid','uuid':'" TM_UUID "'},"
	            "{'action':'upgrade-format-version','format-version':2},"
	            "{'action':'add-schema','schema':" DUCK_SCHEMA ",'last-column-id':2},"
	            "{'action':'add-spec','spec':{'spec-id':0,'fields':[" DUCK_PART "]}},"
	            "{'action':'set-default-spec','spec-id':0},"
	            "{'action':'add-sort-order','sort-order':{'order-id':0,'fields':[]}},"
	            "{'action':'set-default-sort-order','sort-order-id':0},"
	            "{'action':'set-location','location':'" WH "'},"
	            "{'action':'set-properties','updates':{'format-version':'2'}},"
	            "{'action':'set-current-schema','schema-id':0}]}",
	            TM_NOW + 6, FL_ERR_NONE, NULL, &changed);
	assert_false(changed);
	assert_true(json_equal(t0, t1));
	json_decref(t0);
	json_decref(t1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_pyiceberg),
	        cmocka_unit_test(test_duckdb_stage_create),
	        cmocka_unit_test(test_duckdb_v3_inserts),
	        cmocka_unit_test(test_duckdb_v2_first_insert),
	        cmocka_unit_test(test_duckdb_alter),
	        cmocka_unit_test(test_duckdb_no_stage_create),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
