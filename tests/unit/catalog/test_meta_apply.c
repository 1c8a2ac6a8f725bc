/* test_meta_apply.c - cat_meta_apply: one case per update action and per
 * rejection, then the builder-wide rules (metadata-log, limits, no-op). */
#include "meta_test.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A snapshot as clients send it (v2 fields; v3 adds first-row-id/added-rows). */
#define SNAP(id, parent, seq)                                                                   \
	"{'snapshot-id':" #id ",'parent-snapshot-id':" #parent ",'sequence-number':" #seq       \
	",'timestamp-ms':1700000000500,'manifest-list':'s3://bucket/wh/ns/t/metadata/snap-" #id \
	".avro','summary':{'operation':'append','added-records':'10'},'schema-id':0}"
#define SNAP3(id, parent, seq, first, added)                                                    \
	"{'snapshot-id':" #id ",'parent-snapshot-id':" #parent ",'sequence-number':" #seq       \
	",'timestamp-ms':1700000000500,'manifest-list':'s3://bucket/wh/ns/t/metadata/snap-" #id \
	".avro','summary':{'operation':'append'},'schema-id':0,'first-row-id':" #first          \
	",'added-rows':" #added "}"
#define ADD(snap) "{'action':'add-snapshot','snapshot':" snap "}"
#define MAIN(id) \
	"{'action':'set-snapshot-ref','ref-name':'main','type':'branch','snapshot-id':" #id "}"
#define STATS(id, path)                                                                 \
	"{'snapshot-id':" #id ",'statistics-path':'" path "','file-size-in-bytes':100," \
	"'file-footer-size-in-bytes':20,'blob-metadata':[]}"
#define PSTATS(id, path) \
	"{'snapshot-id':" #id ",'statistics-path':'" path "','file-size-in-bytes':100}"
/* The base schema plus column 4. */
#define SCHEMA4                                                                 \
	"{'type':'struct','schema-id':42,'identifier-field-ids':[1],'fields':[" \
	"{'id':1,'name':'id','required':true,'type':'long'},"                   \
	"{'id':2,'name':'data','required':false,'type':'string'},"              \
	"{'id':3,'name':'ts','required':false,'type':'timestamptz'},"           \
	"{'id':4,'name':'extra','required':false,'type':'int'}]}"
/* Exactly the base schema (schema-id differs, which does not matter). */
#define SCHEMA0                                                                \
	"{'type':'struct','schema-id':7,'identifier-field-ids':[1],'fields':[" \
	"{'id':1,'name':'id','required':true,'type':'long'},"                  \
	"{'id':2,'name':'data','required':false,'type':'string'},"             \
	"{'id':3,'name':'ts','required':false,'type':'timestamptz'}]}"
#define KEY(id) "{'key-id':'" id "','encrypted-key-metadata':'AAEC'}"

struct apply_case {
	const char *name;
	int fv; /* base format version */
	const char *setup; /* updates applied first, or NULL */
	const char *updates;
	enum fl_err_kind kind; /* FL_ERR_NONE = must succeed */
	const char *msg; /* substring of the error message */
	int changed; /* -1 = do not check */
	const char *checks;
};

#define OK FL_ERR_NONE
#define BAD FL_ERR_BAD_REQUEST
#define RETRY FL_ERR_COMMIT_FAILED

static const struct apply_case cases[] = {
        /* assign-uuid */
        {"assign-uuid same (case-insensitive)", 2, NULL,
         "[{'action':'assign-uuid','uuid':'9C12D441-03FE-4693-9A96-A0705DDF69C1'}]", OK, NULL, 0,
         NULL},
        {"assign-uuid different", 2, NULL,
         "[{'action':'assign-uuid','uuid':'11111111-2222-4333-8444-555555555555'}]", BAD,
         "updates[0] assign-uuid: cannot change the table uuid", -1, NULL},
        {"assign-uuid not a uuid", 2, NULL, "[{'action':'assign-uuid','uuid':'xyz'}]", BAD,
         "not a UUID", -1, NULL},
        {"assign-uuid missing field", 2, NULL, "[{'action':'assign-uuid'}]", BAD,
         "missing required field 'uuid'", -1, NULL},

        /* upgrade-format-version */
        {"upgrade 2 to 3", 2, NULL, "[{'action':'upgrade-format-version','format-version':3}]", OK,
         NULL, 1, "format-version=3;next-row-id=0;current-snapshot-id=null;last-sequence-number=0"},
        {"upgrade 1 to 2", 1, NULL, "[{'action':'upgrade-format-version','format-version':2}]", OK,
         NULL, 1,
         "format-version=2;last-sequence-number=0;!schema;!partition-spec;current-snapshot-id=-1"},
        /* v2 needs every snapshot to have a summary (and a manifest list):
         * a v1 snapshot without one refuses the upgrade, where the table's
         * next load would otherwise fail */
        {"upgrade 1 to 2 with snapshots", 1, "[" ADD(SNAP(1, null, 0)) "," MAIN(1) "]",
         "[{'action':'upgrade-format-version','format-version':2}]", OK, NULL, 1,
         "format-version=2;current-snapshot-id=1;snapshots#1"},
        {"upgrade 1 to 2, a snapshot without summary", 1,
         "[" ADD("{'snapshot-id':1,'timestamp-ms':1700000000500,"
                 "'manifest-list':'s3://bucket/wh/ns/t/metadata/snap-1.avro'}") "," MAIN(1) "]",
         "[{'action':'upgrade-format-version','format-version':2}]", BAD,
         "cannot upgrade from v1 to v2: snapshot 1: missing required field 'summary'", -1, NULL},
        {"upgrade to same version", 2, NULL,
         "[{'action':'upgrade-format-version','format-version':2}]", OK, NULL, 0, NULL},
        {"downgrade", 2, NULL, "[{'action':'upgrade-format-version','format-version':1}]", BAD,
         "cannot downgrade v2 table to v1", -1, NULL},
        {"upgrade past max", 2, NULL, "[{'action':'upgrade-format-version','format-version':4}]",
         BAD, "unsupported format version v4", -1, NULL},
        {"upgrade wrong type", 2, NULL,
         "[{'action':'upgrade-format-version','format-version':'3'}]", BAD,
         "field 'format-version' must be an integer", -1, NULL},

        /* add-schema */
        {"add-schema new", 2, NULL, "[{'action':'add-schema','schema':" SCHEMA4 "}]", OK, NULL, 1,
         "schemas#2;schemas/1/schema-id=1;last-column-id=4;current-schema-id=0;"
         "schemas/1/identifier-field-ids=[1];schemas/1/type='struct'"},
        {"add-schema then set-current -1", 2, NULL,
         "[{'action':'add-schema','schema':" SCHEMA4 ",'last-column-id':4},"
         "{'action':'set-current-schema','schema-id':-1}]",
         OK, NULL, 1, "current-schema-id=1;last-column-id=4"},
        {"add-schema identical is reused", 2, NULL,
         "[{'action':'add-schema','schema':" SCHEMA0 "}]", OK, NULL, 0, "schemas#1"},
        {"add-schema identical then set-current -1", 2, NULL,
         "[{'action':'add-schema','schema':" SCHEMA0
         "},{'action':'set-current-schema','schema-id':-1}]",
         OK, NULL, 0, "schemas#1;current-schema-id=0"},
        {"add-schema ignores the client's last-column-id", 2, NULL,
         "[{'action':'add-schema','last-column-id':2,'schema':{'type':'struct','fields':["
         "{'id':1,'name':'id','required':true,'type':'long'},"
         "{'id':7,'name':'x','required':false,'type':'string'}]}}]",
         OK, NULL, 1, "last-column-id=7;schemas/1/schema-id=1"},
        {"add-schema never lowers last-column-id", 2, NULL,
         "[{'action':'add-schema','schema':{'type':'struct','fields':["
         "{'id':1,'name':'id','required':true,'type':'long'}]}},"
         "{'action':'set-current-schema','schema-id':-1}]",
         OK, NULL, 1, "last-column-id=3;current-schema-id=1;schemas/1/fields#1"},
        {"add-schema missing schema", 2, NULL, "[{'action':'add-schema'}]", BAD,
         "updates[0] add-schema: missing required field 'schema'", -1, NULL},
        {"add-schema unknown type", 2, NULL,
         "[{'action':'add-schema','schema':{'type':'struct','fields':["
         "{'id':1,'name':'id','required':true,'type':'varchar'}]}}]",
         BAD, "unknown type 'varchar'", -1, NULL},
        {"add-schema duplicate field id", 2, NULL,
         "[{'action':'add-schema','schema':{'type':'struct','fields':["
         "{'id':1,'name':'a','required':true,'type':'long'},"
         "{'id':1,'name':'b','required':true,'type':'long'}]}}]",
         BAD, "field id 1 is used more than once", -1, NULL},
        {"add-schema v3 type in v2", 2, NULL,
         "[{'action':'add-schema','schema':{'type':'struct','fields':["
         "{'id':1,'name':'a','required':true,'type':'timestamp_ns'}]}}]",
         BAD, "not supported until format version 3", -1, NULL},
        {"add-schema optional identifier field", 2, NULL,
         "[{'action':'add-schema','schema':{'type':'struct','identifier-field-ids':[2],'fields':["
         "{'id':1,'name':'a','required':true,'type':'long'},"
         "{'id':2,'name':'b','required':false,'type':'long'}]}}]",
         BAD, "identifier field 2 is not a required field", -1, NULL},
        {"add-schema field without required", 2, NULL,
         "[{'action':'add-schema','schema':{'type':'struct','fields':["
         "{'id':1,'name':'a','type':'long'}]}}]",
         BAD, "field 'required' must be a boolean", -1, NULL},
        {"add-schema nested ids count", 2, NULL,
         "[{'action':'add-schema','schema':{'type':'struct','fields':["
         "{'id':1,'name':'id','required':true,'type':'long'},"
         "{'id':4,'name':'tags','required':false,'type':{'type':'list','element-id':9,"
         "'element':'string','element-required':false}}]}}]",
         OK, NULL, 1, "last-column-id=9"},

        /* set-current-schema */
        {"set-current-schema -1 with nothing added", 2, NULL,
         "[{'action':'set-current-schema','schema-id':-1}]", BAD,
         "cannot set the last added schema: no schema has been added", -1, NULL},
        {"set-current-schema unknown", 2, NULL, "[{'action':'set-current-schema','schema-id':7}]",
         BAD, "unknown schema 7", -1, NULL},
        {"set-current-schema same", 2, NULL, "[{'action':'set-current-schema','schema-id':0}]", OK,
         NULL, 0, NULL},
        {"set-current-schema back to an older one", 2,
         "[{'action':'add-schema','schema':" SCHEMA4
         "},{'action':'set-current-schema','schema-id':-1}]",
         "[{'action':'set-current-schema','schema-id':0}]", OK, NULL, 1,
         "current-schema-id=0;schemas#2"},
        {"set-current-schema wrong type", 2, NULL,
         "[{'action':'set-current-schema','schema-id':null}]", BAD,
         "missing required field 'schema-id'", -1, NULL},

        /* add-spec / set-default-spec */
        {"add-spec assigns field ids after last-partition-id", 2, NULL,
         "[{'action':'add-spec','spec':{'fields':[{'source-id':1,'name':'id_bucket','transform':'bucket[16]'}]}},"
         "{'action':'set-default-spec','spec-id':-1}]",
         OK, NULL, 1,
         "partition-specs#2;partition-specs/1/spec-id=1;partition-specs/1/fields/0/field-id=1000;"
         "last-partition-id=1000;default-spec-id=1;partition-specs/1/fields/0/source-id=1"},
        {"add-spec keeps given field ids", 2, NULL,
         "[{'action':'add-spec','spec':{'spec-id':9,'fields':[{'source-id':3,'field-id':1005,'name':'ts_day','transform':'day'}]}}]",
         OK, NULL, 1,
         "partition-specs/1/fields/0/field-id=1005;last-partition-id=1005;default-spec-id=0;partition-specs/1/spec-id=1"},
        {"add-spec compatible spec is reused", 2, NULL,
         "[{'action':'add-spec','spec':{'spec-id':3,'fields':[]}},{'action':'set-default-spec','spec-id':-1}]",
         OK, NULL, 0, "partition-specs#1;default-spec-id=0"},
        {"add-spec same spec twice", 2,
         "[{'action':'add-spec','spec':{'fields':[{'source-id':2,'field-id':1000,'name':'data','transform':'identity'}]}}]",
         "[{'action':'add-spec','spec':{'fields':[{'source-id':2,'field-id':1000,'name':'data','transform':'identity'}]}},"
         "{'action':'set-default-spec','spec-id':-1}]",
         OK, NULL, 1, "partition-specs#2;default-spec-id=1"},
        {"add-spec source missing", 2, NULL,
         "[{'action':'add-spec','spec':{'fields':[{'source-id':9,'name':'x','transform':'identity'}]}}]",
         BAD, "cannot find source column 9", -1, NULL},
        {"add-spec transform not for type", 2, NULL,
         "[{'action':'add-spec','spec':{'fields':[{'source-id':2,'name':'d','transform':'day'}]}}]",
         BAD, "fields[0]: invalid source type string of column 'data' for transform day", -1, NULL},
        {"add-spec unknown transform", 2, NULL,
         "[{'action':'add-spec','spec':{'fields':[{'source-id':1,'name':'z','transform':'zorder'}]}}]",
         BAD, "unknown transform 'zorder'", -1, NULL},
        {"add-spec bucket without width", 2, NULL,
         "[{'action':'add-spec','spec':{'fields':[{'source-id':1,'name':'b','transform':'bucket[0]'}]}}]",
         BAD, "transform 'bucket[0]': the bucket count must be an integer from 1 to 2147483647", -1,
         NULL},
        {"add-spec truncate too wide", 2, NULL,
         "[{'action':'add-spec','spec':{'fields':[{'source-id':2,'name':'t','transform':'truncate[2147483648]'}]}}]",
         BAD, "transform 'truncate[2147483648]': the width must be an integer from 1 to", -1, NULL},
        {"add-spec duplicate names", 2, NULL,
         "[{'action':'add-spec','spec':{'fields':[{'source-id':1,'name':'p','transform':'identity'},"
         "{'source-id':2,'name':'p','transform':'identity'}]}}]",
         BAD, "partition name 'p' is used more than once", -1, NULL},
        {"add-spec name of another column", 2, NULL,
         "[{'action':'add-spec','spec':{'fields':[{'source-id':1,'name':'data','transform':'bucket[2]'}]}}]",
         BAD, "partition name 'data' is the name of another column", -1, NULL},
        {"add-spec missing spec", 2, NULL, "[{'action':'add-spec'}]", BAD,
         "missing required field 'spec'", -1, NULL},
        {"add-spec source-id wrong type", 2, NULL,
         "[{'action':'add-spec','spec':{'fields':[{'source-id':'1','name':'x','transform':'identity'}]}}]",
         BAD, "field 'source-id' must be an integer", -1, NULL},
        {"add-spec v1 needs sequential ids", 1, NULL,
         "[{'action':'add-spec','spec':{'fields':[{'source-id':1,'field-id':1005,'name':'x','transform':'identity'}]}}]",
         BAD,
         "spec: fields[0]: field-id 1005 must be 1000 (v1 numbers partition fields from 1000, in order)",
         -1, NULL},
        {"add-spec v1 numbers missing ids from 1000", 1, NULL,
         "[{'action':'add-spec','spec':{'fields':[{'source-id':1,'name':'b','transform':'bucket[8]'},"
         "{'source-id':3,'name':'h','transform':'hour'}]}},{'action':'set-default-spec','spec-id':-1}]",
         OK, NULL, 1,
         "partition-spec=[{'name':'b','transform':'bucket[8]','source-id':1,'field-id':1000},"
         "{'name':'h','transform':'hour','source-id':3,'field-id':1001}];last-partition-id=1001"},
        {"set-default-spec -1 with nothing added", 2, NULL,
         "[{'action':'set-default-spec','spec-id':-1}]", BAD, "no spec has been added", -1, NULL},
        {"set-default-spec unknown", 2, NULL, "[{'action':'set-default-spec','spec-id':5}]", BAD,
         "unknown spec 5", -1, NULL},

        /* add-sort-order / set-default-sort-order */
        {"add-sort-order sorted gets id 1", 2, NULL,
         "[{'action':'add-sort-order','sort-order':{'order-id':5,'fields':[{'transform':'identity','source-id':1,"
         "'direction':'asc','null-order':'nulls-first'}]}},{'action':'set-default-sort-order','sort-order-id':-1}]",
         OK, NULL, 1,
         "sort-orders#2;sort-orders/1/order-id=1;default-sort-order-id=1;sort-orders/1/fields/0/direction='asc'"},
        {"add-sort-order unsorted is reused", 2, NULL,
         "[{'action':'add-sort-order','sort-order':{'order-id':0,'fields':[]}},"
         "{'action':'set-default-sort-order','sort-order-id':-1}]",
         OK, NULL, 0, "sort-orders#1;default-sort-order-id=0"},
        {"add-sort-order identical is reused", 2,
         "[{'action':'add-sort-order','sort-order':{'order-id':1,'fields':[{'transform':'identity','source-id':1,"
         "'direction':'desc','null-order':'nulls-last'}]}}]",
         "[{'action':'add-sort-order','sort-order':{'order-id':1,'fields':[{'transform':'identity','source-id':1,"
         "'direction':'desc','null-order':'nulls-last'}]}},{'action':'set-default-sort-order','sort-order-id':-1}]",
         OK, NULL, 1, "sort-orders#2;default-sort-order-id=1"},
        {"add-sort-order bad direction", 2, NULL,
         "[{'action':'add-sort-order','sort-order':{'order-id':1,'fields':[{'transform':'identity','source-id':1,"
         "'direction':'up','null-order':'nulls-first'}]}}]",
         BAD, "field 'direction' must be", -1, NULL},
        {"add-sort-order bad null-order", 2, NULL,
         "[{'action':'add-sort-order','sort-order':{'order-id':1,'fields':[{'transform':'identity','source-id':1,"
         "'direction':'asc'}]}}]",
         BAD, "field 'null-order' must be", -1, NULL},
        {"add-sort-order source missing", 2, NULL,
         "[{'action':'add-sort-order','sort-order':{'order-id':1,'fields':[{'transform':'identity','source-id':77,"
         "'direction':'asc','null-order':'nulls-first'}]}}]",
         BAD, "cannot find source column 77", -1, NULL},
        {"add-sort-order missing", 2, NULL, "[{'action':'add-sort-order'}]", BAD,
         "missing required field 'sort-order'", -1, NULL},
        {"set-default-sort-order -1 with nothing added", 2, NULL,
         "[{'action':'set-default-sort-order','sort-order-id':-1}]", BAD,
         "no sort order has been added", -1, NULL},
        {"set-default-sort-order unknown", 2, NULL,
         "[{'action':'set-default-sort-order','sort-order-id':3}]", BAD, "unknown order 3", -1,
         NULL},

        /* add-snapshot */
        {"add-snapshot and set main", 2, NULL, "[" ADD(SNAP(5, null, 1)) "," MAIN(5) "]", OK, NULL,
         1,
         "current-snapshot-id=5;refs/main={'snapshot-id':5,'type':'branch'};last-sequence-number=1;"
         "snapshot-log=[{'timestamp-ms':1700000000500,'snapshot-id':5}];snapshots#1"},
        {"add-snapshot without ref", 2, NULL, "[" ADD(SNAP(5, null, 1)) "]", OK, NULL, 1,
         "current-snapshot-id=-1;refs#0;snapshots#1;last-sequence-number=1"},
        {"add-snapshot duplicate id", 2, "[" ADD(SNAP(5, null, 1)) "," MAIN(5) "]",
         "[" ADD(SNAP(5, 5, 2)) "]", BAD, "snapshot 5 already exists", -1, NULL},
        {"add-snapshot stale sequence number", 2, "[" ADD(SNAP(5, null, 1)) "," MAIN(5) "]",
         "[" ADD(SNAP(6, 5, 1)) "," MAIN(6) "]", RETRY,
         "sequence number 1, not above last sequence number 1", -1, NULL},
        {"add-snapshot without sequence number in v2", 2, NULL,
         "[{'action':'add-snapshot','snapshot':{'snapshot-id':5,'timestamp-ms':1,'manifest-list':'m',"
         "'summary':{'operation':'append'}}}]",
         BAD, "'sequence-number' is required in v2", -1, NULL},
        {"add-snapshot without manifest-list", 2, NULL,
         "[{'action':'add-snapshot','snapshot':{'snapshot-id':5,'timestamp-ms':1,'sequence-number':1,"
         "'summary':{'operation':'append'}}}]",
         BAD, "missing required field 'manifest-list'", -1, NULL},
        {"add-snapshot without operation", 2, NULL,
         "[{'action':'add-snapshot','snapshot':{'snapshot-id':5,'timestamp-ms':1,'sequence-number':1,"
         "'manifest-list':'m','summary':{}}}]",
         BAD, "missing required field 'operation'", -1, NULL},
        {"add-snapshot unknown operation", 2, NULL,
         "[{'action':'add-snapshot','snapshot':{'snapshot-id':5,'timestamp-ms':1,'sequence-number':1,"
         "'manifest-list':'m','summary':{'operation':'merge'}}}]",
         BAD, "unknown operation 'merge'", -1, NULL},
        {"add-snapshot id wrong type", 2, NULL,
         "[{'action':'add-snapshot','snapshot':{'snapshot-id':'5','timestamp-ms':1,'sequence-number':1,"
         "'manifest-list':'m','summary':{'operation':'append'}}}]",
         BAD, "field 'snapshot-id' must be an integer", -1, NULL},
        {"add-snapshot missing snapshot", 2, NULL, "[{'action':'add-snapshot'}]", BAD,
         "missing required field 'snapshot'", -1, NULL},
        {"add-snapshot v3 row lineage", 3, "[" ADD(SNAP3(5, null, 1, 0, 10)) "," MAIN(5) "]",
         "[" ADD(SNAP3(6, 5, 2, 10, 7)) "," MAIN(6) "]", OK, NULL, 1,
         "next-row-id=17;current-snapshot-id=6;last-sequence-number=2"},
        {"add-snapshot v3 first-row-id behind", 3,
         "[" ADD(SNAP3(5, null, 1, 0, 10)) "," MAIN(5) "]", "[" ADD(SNAP3(6, 5, 2, 3, 7)) "]",
         RETRY, "first-row-id 3 is behind the table's next-row-id 10", -1, NULL},
        {"add-snapshot v3 without added-rows", 3, NULL,
         "[" ADD("{'snapshot-id':5,'sequence-number':1,'timestamp-ms':1,'manifest-list':'m',"
                 "'summary':{'operation':'append'},'first-row-id':0}") "]",
         BAD, "'added-rows' is required in v3", -1, NULL},
        {"add-snapshot v3 without first-row-id", 3, NULL,
         "[" ADD("{'snapshot-id':5,'sequence-number':1,'timestamp-ms':1,'manifest-list':'m',"
                 "'summary':{'operation':'append'},'added-rows':1}") "]",
         BAD, "'first-row-id' is required in v3", -1, NULL},
        {"add-snapshot v1 has no sequence rule", 1, NULL,
         "[" ADD("{'snapshot-id':5,'timestamp-ms':1,'manifest-list':'m','summary':{'operation':'append'}}") "," MAIN(
                 5) "]",
         OK, NULL, 1, "current-snapshot-id=5;!last-sequence-number"},
        {"add-snapshot v1 ignores sequence numbers", 1, NULL,
         "[" ADD("{'snapshot-id':5,'sequence-number':4,'timestamp-ms':1,'manifest-list':'m','summary':{'operation':'append'}}") "]",
         OK, NULL, 1, "!last-sequence-number;snapshots#1"},

        /* set-snapshot-ref */
        {"set-snapshot-ref main as tag", 2, "[" ADD(SNAP(5, null, 1)) "]",
         "[{'action':'set-snapshot-ref','ref-name':'main','type':'tag','snapshot-id':5}]", BAD,
         "cannot set main to a tag", -1, NULL},
        {"set-snapshot-ref to missing snapshot", 2, NULL, "[" MAIN(77) "]", BAD,
         "cannot set main to unknown snapshot 77", -1, NULL},
        {"set-snapshot-ref tag", 2, "[" ADD(SNAP(5, null, 1)) "," MAIN(5) "]",
         "[{'action':'set-snapshot-ref','ref-name':'v1','type':'tag','snapshot-id':5,'max-ref-age-ms':1000}]",
         OK, NULL, 1,
         "refs/v1={'snapshot-id':5,'type':'tag','max-ref-age-ms':1000};current-snapshot-id=5;snapshot-log#1"},
        {"set-snapshot-ref type in upper case", 2, "[" ADD(SNAP(5, null, 1)) "]",
         "[{'action':'set-snapshot-ref','ref-name':'main','type':'BRANCH','snapshot-id':5}]", OK,
         NULL, 1, "refs/main/type='branch';current-snapshot-id=5"},
        {"set-snapshot-ref same ref again", 2, "[" ADD(SNAP(5, null, 1)) "," MAIN(5) "]",
         "[" MAIN(5) "]", OK, NULL, 0, NULL},
        {"set-snapshot-ref rollback logs now", 2,
         "[" ADD(SNAP(5, null, 1)) "," MAIN(5) "," ADD(SNAP(6, 5, 2)) "," MAIN(6) "]",
         "[" MAIN(5) "]", OK, NULL, 1,
         "current-snapshot-id=5;snapshot-log#2;snapshot-log/0/snapshot-id=6;"
         "snapshot-log/1={'timestamp-ms':1700000001000,'snapshot-id':5}"},
        {"set-snapshot-ref intermediate snapshot leaves the log", 2, NULL,
         "[" ADD(SNAP(5, null, 1)) "," MAIN(5) "," ADD(SNAP(6, 5, 2)) "," MAIN(6) "]", OK, NULL, 1,
         "current-snapshot-id=6;snapshot-log=[{'timestamp-ms':1700000000500,'snapshot-id':6}];snapshots#2"},
        {"set-snapshot-ref tag with min-snapshots-to-keep", 2, "[" ADD(SNAP(5, null, 1)) "]",
         "[{'action':'set-snapshot-ref','ref-name':'t','type':'tag','snapshot-id':5,'min-snapshots-to-keep':2}]",
         BAD, "tags do not support 'min-snapshots-to-keep'", -1, NULL},
        {"set-snapshot-ref bad type", 2, "[" ADD(SNAP(5, null, 1)) "]",
         "[{'action':'set-snapshot-ref','ref-name':'b','type':'leaf','snapshot-id':5}]", BAD,
         "field 'type' must be", -1, NULL},
        {"set-snapshot-ref max-ref-age-ms 0", 2, "[" ADD(SNAP(5, null, 1)) "]",
         "[{'action':'set-snapshot-ref','ref-name':'b','type':'branch','snapshot-id':5,'max-ref-age-ms':0}]",
         BAD, "'max-ref-age-ms' must be greater than 0", -1, NULL},
        {"set-snapshot-ref missing ref-name", 2, NULL,
         "[{'action':'set-snapshot-ref','type':'branch','snapshot-id':5}]", BAD,
         "missing required field 'ref-name'", -1, NULL},

        /* remove-snapshots */
        {"remove-snapshots old one cuts the log", 2,
         "[" ADD(SNAP(5, null, 1)) "," MAIN(5) "," ADD(SNAP(6, 5, 2)) "," MAIN(6) "]",
         "[{'action':'remove-snapshots','snapshot-ids':[5]}]", OK, NULL, 1,
         "snapshots#1;snapshots/0/snapshot-id=6;snapshot-log#1;snapshot-log/0/snapshot-id=6;current-snapshot-id=6"},
        {"remove-snapshots current drops main", 2, "[" ADD(SNAP(5, null, 1)) "," MAIN(5) "]",
         "[{'action':'remove-snapshots','snapshot-ids':[5]}]", OK, NULL, 1,
         "snapshots#0;refs#0;current-snapshot-id=-1;snapshot-log#0"},
        {"remove-snapshots drops tags and statistics", 2,
         "[" ADD(SNAP(5, null, 1)) "," MAIN(5) "," ADD(SNAP(6, 5, 2)) "," MAIN(
                 6) ","
                    "{'action':'set-snapshot-ref','ref-name':'old','type':'tag','snapshot-id':5},"
                    "{'action':'set-statistics','statistics':" STATS(
                            5,
                            "s3://x/5.stats") "},"
                                              "{'action':'set-partition-statistics','partition-statistics':" PSTATS(
                                                      5, "s3://x/5.pstats") "}]",
         "[{'action':'remove-snapshots','snapshot-ids':[5]}]", OK, NULL, 1,
         "!refs/old;refs#1;statistics#0;partition-statistics#0"},
        {"remove-snapshots unknown id", 2, NULL,
         "[{'action':'remove-snapshots','snapshot-ids':[99]}]", OK, NULL, 0, NULL},
        {"remove-snapshots wrong type", 2, NULL,
         "[{'action':'remove-snapshots','snapshot-ids':['5']}]", BAD,
         "snapshot-ids[0] must be an integer", -1, NULL},

        /* remove-snapshot-ref */
        {"remove-snapshot-ref main", 2, "[" ADD(SNAP(5, null, 1)) "," MAIN(5) "]",
         "[{'action':'remove-snapshot-ref','ref-name':'main'}]", OK, NULL, 1,
         "current-snapshot-id=-1;refs#0;snapshots#1"},
        {"remove-snapshot-ref main v3 writes null", 3,
         "[" ADD(SNAP3(5, null, 1, 0, 1)) "," MAIN(5) "]",
         "[{'action':'remove-snapshot-ref','ref-name':'main'}]", OK, NULL, 1,
         "current-snapshot-id=null;refs#0"},
        {"remove-snapshot-ref unknown", 2, NULL,
         "[{'action':'remove-snapshot-ref','ref-name':'nope'}]", OK, NULL, 0, NULL},

        /* set-location */
        {"set-location strips the slash", 2, NULL,
         "[{'action':'set-location','location':'s3://other/t/'}]", OK, NULL, 1,
         "location='s3://other/t'"},
        {"set-location same", 2, NULL, "[{'action':'set-location','location':'" TM_LOCATION "/'}]",
         OK, NULL, 0, NULL},
        {"set-location empty", 2, NULL, "[{'action':'set-location','location':'/'}]", BAD,
         "must not be empty", -1, NULL},
        {"set-location wrong type", 2, NULL, "[{'action':'set-location','location':3}]", BAD,
         "field 'location' must be a string", -1, NULL},

        /* set-properties / remove-properties */
        {"set-properties", 2, NULL, "[{'action':'set-properties','updates':{'a':'1','b':'2'}}]", OK,
         NULL, 1, "properties/a='1';properties/b='2'"},
        {"set-properties same values", 2, NULL,
         "[{'action':'set-properties','updates':{'write.parquet.compression-codec':'zstd'}}]", OK,
         NULL, 0, NULL},
        {"set-properties format-version upgrades", 2, NULL,
         "[{'action':'set-properties','updates':{'format-version':'3','k':'v'}}]", OK, NULL, 1,
         "format-version=3;!properties/format-version;properties/k='v'"},
        {"set-properties format-version downgrade", 2, NULL,
         "[{'action':'set-properties','updates':{'format-version':'1'}}]", BAD,
         "cannot downgrade v2 table to v1", -1, NULL},
        {"set-properties format-version not a number", 2, NULL,
         "[{'action':'set-properties','updates':{'format-version':'two'}}]", BAD,
         "must be a number", -1, NULL},
        {"set-properties reserved keys dropped", 2, NULL,
         "[{'action':'set-properties','updates':{'uuid':'x','current-snapshot-id':'3'}}]", OK, NULL,
         0, "!properties/uuid;!properties/current-snapshot-id"},
        {"set-properties value not a string", 2, NULL,
         "[{'action':'set-properties','updates':{'a':1}}]", BAD, "value of 'a' must be a string",
         -1, NULL},
        {"set-properties missing updates", 2, NULL, "[{'action':'set-properties'}]", BAD,
         "missing required field 'updates'", -1, NULL},
        {"remove-properties", 2, "[{'action':'set-properties','updates':{'a':'1','b':'2'}}]",
         "[{'action':'remove-properties','removals':['a','zz']}]", OK, NULL, 1,
         "!properties/a;properties/b='2'"},
        {"remove-properties absent key", 2, NULL,
         "[{'action':'remove-properties','removals':['zz']}]", OK, NULL, 0, NULL},
        {"remove-properties not strings", 2, NULL,
         "[{'action':'remove-properties','removals':[1]}]", BAD, "removals[0] must be a string", -1,
         NULL},

        /* statistics */
        {"set-statistics", 2, "[" ADD(SNAP(5, null, 1)) "]",
         "[{'action':'set-statistics','snapshot-id':5,'statistics':" STATS(5,
                                                                           "s3://x/a.stats") "}]",
         OK, NULL, 1, "statistics#1;statistics/0/statistics-path='s3://x/a.stats'"},
        {"set-statistics replaces per snapshot", 2,
         "[{'action':'set-statistics','statistics':" STATS(5, "s3://x/a.stats") "}]",
         "[{'action':'set-statistics','statistics':" STATS(5, "s3://x/b.stats") "}]", OK, NULL, 1,
         "statistics#1;statistics/0/statistics-path='s3://x/b.stats'"},
        {"set-statistics missing blob-metadata", 2, NULL,
         "[{'action':'set-statistics','statistics':{'snapshot-id':5,'statistics-path':'p',"
         "'file-size-in-bytes':1,'file-footer-size-in-bytes':1}}]",
         BAD, "missing required field 'blob-metadata'", -1, NULL},
        {"remove-statistics", 2,
         "[{'action':'set-statistics','statistics':" STATS(5, "s3://x/a.stats") "}]",
         "[{'action':'remove-statistics','snapshot-id':5}]", OK, NULL, 1, "statistics#0"},
        {"remove-statistics unknown", 2, NULL, "[{'action':'remove-statistics','snapshot-id':5}]",
         OK, NULL, 0, NULL},
        {"set-partition-statistics", 2, NULL,
         "[{'action':'set-partition-statistics','partition-statistics':" PSTATS(5, "s3://x/p") "}]",
         OK, NULL, 1, "partition-statistics#1;partition-statistics/0/snapshot-id=5"},
        {"set-partition-statistics missing path", 2, NULL,
         "[{'action':'set-partition-statistics','partition-statistics':{'snapshot-id':5,'file-size-in-bytes':1}}]",
         BAD, "missing required field 'statistics-path'", -1, NULL},
        {"remove-partition-statistics", 2,
         "[{'action':'set-partition-statistics','partition-statistics':" PSTATS(5, "s3://x/p") "}]",
         "[{'action':'remove-partition-statistics','snapshot-id':5}]", OK, NULL, 1,
         "partition-statistics#0"},
        {"remove-partition-statistics wrong type", 2, NULL,
         "[{'action':'remove-partition-statistics','snapshot-id':'5'}]", BAD,
         "field 'snapshot-id' must be an integer", -1, NULL},

        /* remove-partition-specs / remove-schemas */
        {"remove-partition-specs default", 2, NULL,
         "[{'action':'remove-partition-specs','spec-ids':[0]}]", BAD,
         "cannot remove the default partition spec 0", -1, NULL},
        {"remove-partition-specs old", 2,
         "[{'action':'add-spec','spec':{'fields':[{'source-id':1,'name':'b','transform':'bucket[4]'}]}}]",
         "[{'action':'remove-partition-specs','spec-ids':[1]}]", OK, NULL, 1,
         "partition-specs#1;partition-specs/0/spec-id=0;last-partition-id=1000"},
        {"remove-schemas current", 2, NULL, "[{'action':'remove-schemas','schema-ids':[0]}]", BAD,
         "cannot remove the current schema 0", -1, NULL},
        {"remove-schemas old", 2,
         "[{'action':'add-schema','schema':" SCHEMA4
         "},{'action':'set-current-schema','schema-id':-1}]",
         "[{'action':'remove-schemas','schema-ids':[0]}]", OK, NULL, 1,
         "schemas#1;schemas/0/schema-id=1;current-schema-id=1"},
        {"remove-schemas not an array", 2, NULL, "[{'action':'remove-schemas','schema-ids':0}]",
         BAD, "field 'schema-ids' must be an array", -1, NULL},

        /* encryption keys */
        {"add-encryption-key needs v3", 2, NULL,
         "[{'action':'add-encryption-key','encryption-key':" KEY("k1") "}]", BAD,
         "encryption keys need format version 3", -1, NULL},
        {"add-encryption-key", 3, NULL,
         "[{'action':'add-encryption-key','encryption-key':" KEY("k1") "}]", OK, NULL, 1,
         "encryption-keys#1;encryption-keys/0/key-id='k1'"},
        {"add-encryption-key existing", 3,
         "[{'action':'add-encryption-key','encryption-key':" KEY("k1") "}]",
         "[{'action':'add-encryption-key','encryption-key':" KEY("k1") "}]", OK, NULL, 0, NULL},
        {"add-encryption-key missing metadata", 3, NULL,
         "[{'action':'add-encryption-key','encryption-key':{'key-id':'k'}}]", BAD,
         "missing required field 'encrypted-key-metadata'", -1, NULL},
        {"remove-encryption-key", 3,
         "[{'action':'add-encryption-key','encryption-key':" KEY("k1") "}]",
         "[{'action':'remove-encryption-key','key-id':'k1'}]", OK, NULL, 1, "!encryption-keys"},
        {"remove-encryption-key unknown", 3, NULL,
         "[{'action':'remove-encryption-key','key-id':'k9'}]", OK, NULL, 0, NULL},

        /* malformed updates */
        {"unknown action", 2, NULL, "[{'action':'frobnicate'}]", BAD,
         "updates[0]: unknown update action 'frobnicate'", -1, NULL},
        {"view action on a table", 2, NULL,
         "[{'action':'set-current-view-version','view-version-id':1}]", BAD,
         "unknown update action 'set-current-view-version'", -1, NULL},
        {"missing action", 2, NULL, "[{'uuid':'x'}]", BAD, "missing required string field 'action'",
         -1, NULL},
        {"update not an object", 2, NULL, "[[]]", BAD, "updates[0] must be an object", -1, NULL},
        {"updates not an array", 2, NULL, "{}", BAD, "'updates' must be an array", -1, NULL},
        {"second update names its index", 2, NULL,
         "[{'action':'set-properties','updates':{}},{'action':'set-location'}]", BAD,
         "updates[1] set-location: missing required field 'location'", -1, NULL},
        {"empty update list", 2, NULL, "[]", OK, NULL, 0, NULL},
};

/* cat_meta_apply_built on the same base (every base here validates)
 * answers as cat_meta_apply did: the same error, or the same document but
 * for a table-uuid an upgrade drew at random. */
static void same_as_built(const char *name, const json_t *base, const char *loc, const json_t *u,
                          int rc, const json_t *out, const struct fl_err *err)
{
	struct fl_err e2 = {0};
	json_t *out2 = NULL, *a, *b;
	bool changed;

	if (cat_meta_apply_built(base, loc, u, TM_NOW + 1000, 1000, &out2, &changed, &e2) != rc)
		fail_msg("%s: apply_built %s where apply %s", name,
		         rc == 0 ? "failed" : "succeeded", rc == 0 ? "succeeded" : "failed");
	if (rc != 0) {
		assert_int_equal(e2.kind, err->kind);
		assert_string_equal(e2.msg, err->msg);
		return;
	}
	a = json_copy((json_t *)out);
	b = json_copy(out2);
	if (json_object_get(base, "table-uuid") == NULL) {
		json_object_del(a, "table-uuid");
		json_object_del(b, "table-uuid");
	}
	if (!json_equal(a, b))
		fail_msg("%s: apply_built built another document", name);
	json_decref(a);
	json_decref(b);
	json_decref(out2);
}

static void run_case(const struct apply_case *c)
{
	const char *loc = "s3://bucket/wh/ns/t/metadata/00001-b.metadata.json";
	struct fl_err err = {0};
	json_t *base = tm_table(c->fv), *u, *out = NULL;
	bool changed = false;
	int rc;

	print_message("case: %s\n", c->name);
	if (c->setup != NULL) {
		json_t *next = tm_apply_ok(base, c->setup, TM_NOW + 500);

		json_decref(base);
		base = next;
	}
	u = tm_json(c->updates);
	rc = cat_meta_apply(base, loc, u, TM_NOW + 1000, 1000, &out, &changed, &err);
	same_as_built(c->name, base, loc, u, rc, out, &err);
	if (c->kind == FL_ERR_NONE) {
		if (rc != 0)
			fail_msg("%s: unexpected error: %s", c->name, err.msg);
		if (cat_meta_validate(out, &err) != 0)
			fail_msg("%s: result does not validate: %s", c->name, err.msg);
		if (c->changed >= 0 && changed != (c->changed == 1))
			fail_msg("%s: changed is %d, expected %d", c->name, changed, c->changed);
		if (changed) {
			json_t *log = tm_get(out, "metadata-log");
			json_t *last = json_array_get(log, json_array_size(log) - 1);

			/* the previous file is logged at the base's last-updated-ms */
			tm_check(out, "last-updated-ms=1700000001000");
			assert_string_equal(
			        json_string_value(json_object_get(last, "metadata-file")), loc);
			assert_int_equal(
			        json_integer_value(json_object_get(last, "timestamp-ms")),
			        json_integer_value(json_object_get(base, "last-updated-ms")));
		} else {
			assert_true(json_equal(out, base));
		}
		tm_check(out, c->checks);
		json_decref(out);
	} else {
		if (rc == 0)
			fail_msg("%s: expected %s, got success", c->name,
			         fl_err_kind_name(c->kind));
		assert_null(out);
		tm_err_is(&err, c->kind, c->msg);
	}
	json_decref(u);
	json_decref(base);
}

static void test_cases(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_case(&cases[i]);
}

/* The previous file joins metadata-log with the base's last-updated-ms,
 * and the log keeps at most write.metadata.previous-versions-max entries. */
static void test_metadata_log(void **state)
{
	struct fl_err err = {0};
	json_t *m = tm_table(2), *u, *out;
	bool changed;
	char loc[64], checks[256];

	(void)state;
	u = tm_json(
	        "[{'action':'set-properties','updates':{'write.metadata.previous-versions-max':'2'}}]");
	assert_int_equal(cat_meta_apply(m, "f0", u, TM_NOW + 1, 10, &out, &changed, &err), 0);
	json_decref(u);
	json_decref(m);
	m = out;
	tm_check(m, "metadata-log=[{'timestamp-ms':1700000000000,'metadata-file':'f0'}]");
	for (int i = 1; i <= 3; i++) {
		snprintf(loc, sizeof(loc), "f%d", i);
		snprintf(checks, sizeof(checks), "{'action':'set-properties','updates':{'n':'%d'}}",
		         i);
		u = tm_json(checks);
		json_t *arr = json_pack("[O]", u);
		assert_int_equal(
		        cat_meta_apply(m, loc, arr, TM_NOW + 1 + i, 10, &out, &changed, &err), 0);
		assert_true(changed);
		json_decref(arr);
		json_decref(u);
		json_decref(m);
		m = out;
	}
	/* f0 and f1 were trimmed; f2 was written at TM_NOW+3 (the base of the
	 * last commit was last updated then) */
	tm_check(
	        m,
	        "metadata-log#2;metadata-log/0/metadata-file='f2';metadata-log/1/metadata-file='f3';"
	        "metadata-log/1/timestamp-ms=1700000000003;last-updated-ms=1700000000004");
	assert_int_equal(cat_meta_validate(m, &err), 0);
	json_decref(m);
}

/* No base location (e.g. the first commit of a staged table): no log entry. */
static void test_no_base_location(void **state)
{
	struct fl_err err = {0};
	json_t *m = tm_table(2), *u = tm_json("[{'action':'set-properties','updates':{'a':'b'}}]"),
	       *out;
	bool changed;

	(void)state;
	assert_int_equal(cat_meta_apply(m, NULL, u, TM_NOW + 1, 10, &out, &changed, &err), 0);
	tm_check(out, "metadata-log#0;properties/a='b'");
	json_decref(out);
	json_decref(u);
	json_decref(m);
}

/* A no-op commit returns a copy of base: nothing to write. */
static void test_no_change_is_copy(void **state)
{
	struct fl_err err = {0};
	json_t *m = tm_table(3),
	       *u = tm_json("[{'action':'set-location','location':'" TM_LOCATION "'}]");
	json_t *out = NULL;
	bool changed = true;

	(void)state;
	assert_int_equal(cat_meta_apply(m, "f0", u, TM_NOW + 9, 10, &out, &changed, &err), 0);
	assert_false(changed);
	assert_true(out != m);
	assert_true(json_equal(out, m));
	json_decref(out);
	json_decref(u);
	json_decref(m);
}

static void test_too_many_updates(void **state)
{
	struct fl_err err = {0};
	json_t *m = tm_table(2), *one = tm_json("{'action':'set-properties','updates':{'a':'b'}}");
	json_t *arr = json_array(), *out = NULL;
	bool changed = false;

	(void)state;
	for (int i = 0; i < 100000; i++)
		assert_int_equal(json_array_append(arr, one), 0);
	assert_int_equal(cat_meta_apply(m, "f", arr, TM_NOW, 1000, &out, &changed, &err), -1);
	tm_err_is(&err, FL_ERR_TOO_LARGE, "100000 updates; the limit is 1000");
	assert_null(out);
	/* at the limit it is applied */
	assert_int_equal(cat_meta_apply(m, "f", arr, TM_NOW, 100000, &out, &changed, &err), 0);
	assert_true(changed);
	json_decref(out);
	json_decref(arr);
	json_decref(one);
	json_decref(m);
}

/* A malformed base document is reported, not trusted. */
static void test_bad_base(void **state)
{
	struct fl_err err = {0};
	json_t *base = tm_json("{'format-version':2}"), *u = tm_json("[]"), *out = NULL;
	bool changed;

	(void)state;
	assert_int_equal(cat_meta_apply(base, NULL, u, TM_NOW, 10, &out, &changed, &err), -1);
	tm_err_is(&err, FL_ERR_BAD_REQUEST,
	          "base metadata: metadata: missing required field 'table-uuid'");
	json_decref(base);
	json_decref(u);
}

/* Building from empty with no updates has nothing to build. */
static void test_empty_build_needs_updates(void **state)
{
	struct fl_err err = {0};
	json_t *u = tm_json("[]"), *out = NULL;
	bool changed;

	(void)state;
	assert_int_equal(cat_meta_apply(NULL, NULL, u, TM_NOW, 10, &out, &changed, &err), -1);
	tm_err_is(&err, FL_ERR_BAD_REQUEST, "location is required");
	json_decref(u);
}

/* The base is never modified. */
static void test_base_untouched(void **state)
{
	struct fl_err err = {0};
	json_t *m = tm_table(2), *before = json_deep_copy(m), *out;
	json_t *u = tm_json("[" ADD(SNAP(5, null, 1)) "," MAIN(
	        5) ",{'action':'set-properties','updates':{'a':'b'}}]");
	bool changed;

	(void)state;
	assert_int_equal(cat_meta_apply(m, "f", u, TM_NOW + 5, 10, &out, &changed, &err), 0);
	assert_true(json_equal(m, before));
	json_decref(out);
	json_decref(u);
	json_decref(before);
	json_decref(m);
}

/* The snapshot index over many snapshots: each is found after some are
 * removed (the index closes each hole), on a parsed base and on a built
 * one, and a removed id is free again. */
static int64_t many_id(int i)
{
	return ((int64_t)(i + 1) << 32) | (i * 7); /* low bits alike, as ids often are */
}

/* [set-snapshot-ref ref (type) to id] */
static json_t *ref_to(const char *ref, const char *type, int64_t id)
{
	return json_pack("[{sssssssI}]", "action", "set-snapshot-ref", "ref-name", ref, "type",
	                 type, "snapshot-id", (json_int_t)id);
}

/* {add-snapshot} of a PyIceberg-style append: id, sequence number and
 * parent (none when parent < 0). */
static json_t *add_snapshot(int64_t id, int64_t seq, int64_t parent)
{
	json_t *snap =
	        json_pack("{sIsIsssIs{ss}si}", "snapshot-id", (json_int_t)id, "sequence-number",
	                  (json_int_t)seq, "manifest-list",
	                  "s3://bucket/wh/ns/t/metadata/snap.avro", "timestamp-ms",
	                  (json_int_t)TM_NOW, "summary", "operation", "append", "schema-id", 0);

	if (parent >= 0)
		json_object_set_new(snap, "parent-snapshot-id", json_integer(parent));
	return json_pack("{ssso}", "action", "add-snapshot", "snapshot", snap);
}

static void test_many_snapshots(void **state)
{
	enum { N = 600 };
	struct fl_err err = {0};
	json_t *m = tm_table(2), *u = json_array(), *ids = json_array(), *out, *one;
	bool changed;
	size_t k = 0;

	(void)state;
	for (int i = 0; i < N; i++) {
		json_array_append_new(u,
		                      add_snapshot(many_id(i), i + 1, i > 0 ? many_id(i - 1) : -1));
		if (i % 3 == 0)
			json_array_append_new(ids, json_integer(many_id(i)));
	}
	one = ref_to("main", "branch", many_id(N - 1));
	json_array_extend(u, one);
	json_decref(one);
	assert_int_equal(cat_meta_apply(m, "f0", u, TM_NOW + 1, 10000, &out, &changed, &err), 0);
	json_decref(m);
	json_decref(u);
	m = out;
	u = json_pack("[{sssO}]", "action", "remove-snapshots", "snapshot-ids", ids);
	/* parsed, then built: each base indexes its snapshots anew */
	assert_int_equal(cat_meta_apply(m, "f1", u, TM_NOW + 2, 10, &out, &changed, &err), 0);
	json_decref(m);
	json_decref(u);
	m = out;
	assert_int_equal(json_array_size(json_object_get(m, "snapshots")), N - N / 3);
	for (int i = 0; i < N; i++) {
		if (i % 3 == 0)
			continue;
		assert_int_equal(json_integer_value(json_object_get(
		                         json_array_get(json_object_get(m, "snapshots"), k++),
		                         "snapshot-id")),
		                 many_id(i));
		one = ref_to("b", "tag", many_id(i));
		assert_int_equal(
		        cat_meta_apply_built(m, "f2", one, TM_NOW + 3, 10, &out, &changed, &err),
		        0);
		json_decref(out);
		json_decref(one);
	}
	one = ref_to("b", "tag", many_id(3));
	assert_int_equal(cat_meta_apply_built(m, "f2", one, TM_NOW + 3, 10, &out, &changed, &err),
	                 -1);
	tm_err_is(&err, FL_ERR_BAD_REQUEST, "unknown snapshot");
	json_decref(one);
	one = json_pack("[o]", add_snapshot(many_id(3), N + 1, many_id(N - 1)));
	assert_int_equal(cat_meta_apply_built(m, "f2", one, TM_NOW + 3, 10, &out, &changed, &err),
	                 0);
	assert_int_equal(json_array_size(json_object_get(out, "snapshots")), N - N / 3 + 1);
	json_decref(out);
	json_decref(one);
	json_decref(m);
	json_decref(ids);
}

/* A chain of builds, each on the last with its snapshot ids
 * (cat_meta_apply_kept, as a contended table's commits run): appends,
 * removals from the middle of the list, and a tag moved to a carried
 * snapshot (found through the index the ids fill) build what
 * cat_meta_apply_built and cat_meta_apply build on the same base.  Ids
 * that were returned with another document are not used. */
static void test_kept_ids(void **state)
{
	enum { STEPS = 240 };
	struct fl_err err = {0};
	json_t *m = tm_table(2);
	struct cat_meta_ids *ids = NULL, *stale = NULL;
	int64_t live[STEPS], seq = 0;
	int nlive = 0;

	(void)state;
	srand(20261204);
	for (int step = 0; step < STEPS; step++) {
		json_t *u, *outs[3] = {NULL, NULL, NULL};
		struct cat_meta_ids *next = NULL;
		bool changed;

		if (step % 9 == 8 && nlive > 4) {
			/* two from the middle, never the current (last) one */
			int a = 1 + rand() % (nlive - 3), b = a + 1;

			u = json_pack("[{sss[II]}]", "action", "remove-snapshots", "snapshot-ids",
			              (json_int_t)live[a], (json_int_t)live[b]);
			memmove(&live[a], &live[b + 1], (size_t)(nlive - b - 1) * sizeof(live[0]));
			nlive -= 2;
		} else if (step % 5 == 4 && nlive > 1) {
			u = ref_to("t", "tag", live[rand() % nlive]);
		} else {
			json_t *main = ref_to("main", "branch", many_id(step));

			u = json_pack("[o]", add_snapshot(many_id(step), ++seq,
			                                  nlive > 0 ? live[nlive - 1] : -1));
			json_array_extend(u, main);
			json_decref(main);
			live[nlive++] = many_id(step);
		}
		/* every third step with the ids of an older document */
		if (cat_meta_apply_kept(m, step % 3 == 2 && stale != NULL ? stale : ids, "f", u,
		                        TM_NOW + step, 100, &outs[0], &next, &changed, &err) != 0)
			fail_msg("step %d: %s", step, err.msg);
		assert_int_equal(cat_meta_apply_built(m, "f", u, TM_NOW + step, 100, &outs[1],
		                                      &changed, &err),
		                 0);
		assert_int_equal(
		        cat_meta_apply(m, "f", u, TM_NOW + step, 100, &outs[2], &changed, &err), 0);
		if (!json_equal(outs[0], outs[1]) || !json_equal(outs[0], outs[2]))
			fail_msg("step %d: the builds differ", step);
		if (changed)
			assert_true(cat_meta_ids_match(next, outs[0]));
		else
			assert_null(next); /* the next step reads the ids */
		assert_int_equal(json_array_size(json_object_get(outs[0], "snapshots")), nlive);
		json_decref(u);
		json_decref(outs[1]);
		json_decref(outs[2]);
		json_decref(m);
		m = outs[0];
		cat_meta_ids_free(stale);
		stale = ids;
		ids = next;
	}
	cat_meta_ids_free(stale);
	cat_meta_ids_free(ids);
	json_decref(m);
}

/* A snapshot with no parent may take a sequence number at or below the
 * last one, and that lowers last-sequence-number; the snapshots a base
 * carries above it are then refused, on a built base too (whose snapshots
 * are otherwise not checked one by one again). */
static void test_lowered_sequence_number(void **state)
{
	struct fl_err err = {0};
	json_t *m = tm_table(2), *u = json_array(), *out = NULL, *one;
	bool changed;

	(void)state;
	for (int i = 1; i <= 3; i++)
		json_array_append_new(u, add_snapshot(i, i, i > 1 ? i - 1 : -1));
	one = ref_to("main", "branch", 3);
	json_array_extend(u, one);
	json_decref(one);
	assert_int_equal(cat_meta_apply(m, "f0", u, TM_NOW + 1, 100, &out, &changed, &err), 0);
	json_decref(m);
	json_decref(u);
	m = out;
	for (int seq = 2; seq <= 3; seq++) {
		u = json_pack("[o]", add_snapshot(10 + seq, seq, -1));
		for (int built = 0; built < 2; built++) {
			int rc = (built ? cat_meta_apply_built : cat_meta_apply)(
			        m, "f1", u, TM_NOW + 2, 100, &out, &changed, &err);

			print_message("sequence number %d, %s base\n", seq,
			              built ? "built" : "parsed");
			if (seq == 3) {
				assert_int_equal(rc, 0);
				json_decref(out);
				continue;
			}
			assert_int_equal(rc, -1);
			tm_err_is(&err, FL_ERR_BAD_REQUEST,
			          "snapshot 3 has sequence number 3 above last-sequence-number 2");
		}
		json_decref(u);
	}
	json_decref(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_cases),
	        cmocka_unit_test(test_lowered_sequence_number),
	        cmocka_unit_test(test_kept_ids),
	        cmocka_unit_test(test_metadata_log),
	        cmocka_unit_test(test_no_base_location),
	        cmocka_unit_test(test_no_change_is_copy),
	        cmocka_unit_test(test_too_many_updates),
	        cmocka_unit_test(test_bad_base),
	        cmocka_unit_test(test_empty_build_needs_updates),
	        cmocka_unit_test(test_base_untouched),
	        cmocka_unit_test(test_many_snapshots),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
