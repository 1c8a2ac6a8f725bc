/* fuzz_meta.c - the table and view metadata builders (catalog/meta) on
 * arbitrary request JSON.
 *
 * Every commit body a client sends reaches cat_meta_check_requirements and
 * cat_meta_apply (views: their cat_viewmeta_ twins), every create body
 * cat_meta_create, after fl_json_parse.  The first byte chooses what the
 * rest (parsed as the daemon parses a body) is:
 *   0 TableUpdate array applied to one of the bases (a v1, v2 or v3 table
 *     with snapshots, a branch, a tag and a partition spec: byte 1 picks)
 *   1 TableUpdate array applied from nothing (a stage-create commit)
 *   2 TableRequirement array checked against a base (or none)
 *   3 CreateTableRequest
 *   4 ViewUpdate array applied to a view; 5 its requirements
 *   6 CreateViewRequest
 *   7 a whole table metadata document given to cat_meta_validate
 *     (register-table); when it validates, a PyIceberg append is applied to it
 * (modulo 8), or, from 0xf0 up, not JSON but bytes that choose up to four
 * rounds of updates from templates (structured() below).
 *
 * Invariants: a failure is FL_ERR_BAD_REQUEST, FL_ERR_COMMIT_FAILED or
 * FL_ERR_TOO_LARGE (or out of memory) with a message; whatever a builder
 * returns validates (cat_meta_validate says so of everything the module
 * emits), and unchanged output equals its base; the base is never modified;
 * a result's compact dump parses back to an equal document, and the text a
 * commit stores (fl_json_dump_memo, reusing the last version's snapshots)
 * is jansson's dump byte for byte. */
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "json.h"
#include "tablemeta.h"
#include "viewmeta.h"

#define MAX_DEPTH 32 /* the daemon's default max-json-depth is lower */
#define NOW 1700000000000LL
#define LOCATION "s3://bucket/wh/ns/t"
#define UUID "9c12d441-03fe-4693-9a96-a0705ddf69c1"
#define BASE_FILE LOCATION "/metadata/00003-9c12d441-03fe-4693-9a96-a0705ddf69c2.metadata.json"

#define SNAP(id, parent, seq, extra)                                                            \
	"{\"snapshot-id\":" #id ",\"parent-snapshot-id\":" #parent ",\"sequence-number\":" #seq \
	",\"timestamp-ms\":1700000000500,"                                                      \
	"\"manifest-list\":\"" LOCATION "/metadata/snap-" #id ".avro\","                        \
	"\"summary\":{\"operation\":\"append\",\"added-records\":\"10\"},\"schema-id\":0" extra \
	"}"

static const char create_req[] =
        "{\"name\":\"t\",\"schema\":{\"type\":\"struct\",\"schema-id\":0,"
        "\"identifier-field-ids\":[1],\"fields\":["
        "{\"id\":1,\"name\":\"id\",\"required\":true,\"type\":\"long\"},"
        "{\"id\":2,\"name\":\"data\",\"required\":false,\"type\":\"string\"},"
        "{\"id\":3,\"name\":\"ts\",\"required\":false,\"type\":\"timestamptz\"},"
        "{\"id\":4,\"name\":\"p\",\"required\":false,\"type\":{\"type\":\"struct\",\"fields\":["
        "{\"id\":5,\"name\":\"x\",\"required\":false,\"type\":\"decimal(9,2)\"},"
        "{\"id\":6,\"name\":\"tags\",\"required\":false,\"type\":{\"type\":\"list\","
        "\"element-id\":7,\"element\":\"string\",\"element-required\":false}}]}}]},"
        "\"partition-spec\":{\"spec-id\":0,\"fields\":[{\"source-id\":3,\"field-id\":1000,"
        "\"name\":\"ts_day\",\"transform\":\"day\"},{\"source-id\":1,\"field-id\":1001,"
        "\"name\":\"id_b\",\"transform\":\"bucket[16]\"}]},"
        "\"write-order\":{\"order-id\":1,\"fields\":[{\"source-id\":2,\"transform\":\"identity\","
        "\"direction\":\"asc\",\"null-order\":\"nulls-first\"}]},"
        "\"properties\":{\"format-version\":\"%d\",\"write.metadata.previous-versions-max\":\"2\"}}";

/* Two appends on main, a branch and a tag: the shapes commits meet. */
static const char grow[] = "[{\"action\":\"add-snapshot\",\"snapshot\":" SNAP(
        11, null, 1,
        "%s") "},"
              "{\"action\":\"set-snapshot-ref\",\"ref-name\":\"main\",\"type\":\"branch\","
              "\"snapshot-id\":11},"
              "{\"action\":\"add-snapshot\",\"snapshot\":" SNAP(
                      12, 11, 2,
                      "%s") "},"
                            "{\"action\":\"set-snapshot-ref\",\"ref-name\":\"main\",\"type\":\"branch\","
                            "\"snapshot-id\":12},"
                            "{\"action\":\"set-snapshot-ref\",\"ref-name\":\"audit\",\"type\":\"branch\","
                            "\"snapshot-id\":11,\"max-ref-age-ms\":86400000},"
                            "{\"action\":\"set-snapshot-ref\",\"ref-name\":\"v1\",\"type\":\"tag\","
                            "\"snapshot-id\":12},"
                            "{\"action\":\"set-properties\",\"updates\":{\"owner\":\"fuzz\"}}]";

static const char view_req[] =
        "{\"name\":\"v\",\"schema\":{\"type\":\"struct\",\"schema-id\":0,\"fields\":["
        "{\"id\":1,\"name\":\"id\",\"required\":false,\"type\":\"long\"}]},"
        "\"view-version\":{\"version-id\":1,\"timestamp-ms\":1700000000000,\"schema-id\":0,"
        "\"summary\":{\"engine-name\":\"fuzz\"},\"default-namespace\":[\"ns\"],"
        "\"representations\":[{\"type\":\"sql\",\"sql\":\"select 1 as id\","
        "\"dialect\":\"spark\"}]},\"properties\":{\"k\":\"v\"}}";

static const char append[] =
        "[{\"action\":\"add-snapshot\",\"snapshot\":{\"snapshot-id\":99,"
        "\"sequence-number\":1000000,\"timestamp-ms\":1700000009999,"
        "\"manifest-list\":\"" LOCATION "/metadata/snap-99.avro\","
        "\"summary\":{\"operation\":\"append\"},\"first-row-id\":1000000,\"added-rows\":1}},"
        "{\"action\":\"set-snapshot-ref\",\"ref-name\":\"main\",\"type\":\"branch\","
        "\"snapshot-id\":99}]";

static json_t *tables[3], *view;

static json_t *parse(const char *text)
{
	struct fl_err err = {0};
	json_t *v = NULL;

	FUZZ_CHECK(fl_json_parse(text, strlen(text), MAX_DEPTH, &v, &err) == 0);
	return v;
}

static void setup(void)
{
	struct fl_err err = {0};
	char text[4096];
	bool changed = false;
	json_t *req, *base = NULL, *ups;

	for (int fv = 1; fv <= 3; fv++) {
		const char *v3 = fv == 3 ? ",\"first-row-id\":0,\"added-rows\":10" : "";

		snprintf(text, sizeof(text), create_req, fv);
		req = parse(text);
		FUZZ_CHECK(cat_meta_create(req, LOCATION, UUID, NOW, &base, &err) == 0);
		json_decref(req);
		snprintf(text, sizeof(text), grow, v3,
		         fv == 3 ? ",\"first-row-id\":10,\"added-rows\":10" : "");
		ups = parse(text);
		FUZZ_CHECK(cat_meta_apply(base, BASE_FILE, ups, NOW + 1, 1000, &tables[fv - 1],
		                          &changed, &err) == 0);
		FUZZ_CHECK(cat_meta_validate(tables[fv - 1], &err) == 0);
		json_decref(ups);
		json_decref(base);
		base = NULL;
	}
	req = parse(view_req);
	FUZZ_CHECK(cat_viewmeta_create(req, LOCATION, UUID, &view, &err) == 0);
	json_decref(req);
}

static void check_error(const struct fl_err *err)
{
	if (err->kind != FL_ERR_BAD_REQUEST && err->kind != FL_ERR_COMMIT_FAILED &&
	    err->kind != FL_ERR_TOO_LARGE)
		fprintf(stderr, "error %s: %s\n", fl_err_kind_name(err->kind), err->msg);
	FUZZ_CHECK(err->kind == FL_ERR_BAD_REQUEST || err->kind == FL_ERR_COMMIT_FAILED ||
	           err->kind == FL_ERR_TOO_LARGE || err->kind == FL_ERR_NOMEM);
	FUZZ_CHECK(err->msg[0] != '\0');
}

/* A compact dump of doc parses back to an equal document. */
static void check_round_trip(const json_t *doc)
{
	char *s = json_dumps(doc, JSON_COMPACT | JSON_ENCODE_ANY);
	json_t *back = NULL;
	struct fl_err err = {0};

	FUZZ_CHECK(s != NULL);
	FUZZ_CHECK(fl_json_parse(s, strlen(s), 64, &back, &err) == 0);
	FUZZ_CHECK(json_equal(doc, back));
	json_decref(back);
	free(s);
}

/* What a builder returned validates and survives a dump and parse. */
static void check_built(const json_t *out, int (*validate)(const json_t *, struct fl_err *),
                        const char *what)
{
	struct fl_err err = {0};

	if (validate(out, &err) != 0) {
		fprintf(stderr, "%s emitted metadata that does not validate: %s\n", what, err.msg);
		FUZZ_CHECK(!"the builder's output validates");
	}
	check_round_trip(out);
}

/* Equal documents, but for a table-uuid that neither base had (an upgrade
 * to v2 draws one at random). */
static bool same_table(const json_t *base, const json_t *a, const json_t *b)
{
	json_t *x, *y;
	bool same;

	if (json_object_get(base, "table-uuid") != NULL)
		return json_equal(a, b);
	x = json_copy((json_t *)a);
	y = json_copy((json_t *)b);
	FUZZ_CHECK(x != NULL && y != NULL);
	json_object_del(x, "table-uuid");
	json_object_del(y, "table-uuid");
	same = json_equal(x, y);
	json_decref(x);
	json_decref(y);
	return same;
}

/* cat_meta_apply_built, which takes a base's snapshots and logs unchecked,
 * and cat_meta_apply_kept with the snapshot ids the last build returned
 * with base (ids, possibly NULL) answer exactly as cat_meta_apply for
 * every base that validates (every document the builder returns does;
 * check_built).  *ids_out (when not NULL) receives the ids of the kept
 * build's document, which must be exactly its snapshots' ids. */
static void check_apply_built(const json_t *base, const json_t *updates, int64_t now_ms, int rc,
                              const json_t *out, const struct fl_err *err,
                              const struct cat_meta_ids *ids, struct cat_meta_ids **ids_out)
{
	struct cat_meta_ids *kept_ids = NULL;
	struct fl_err e2 = {0};
	json_t *out2 = NULL;
	bool changed = false;
	int rc2;

	if (base == NULL || cat_meta_validate(base, &e2) != 0)
		return;
	for (int kept = 0; kept < 2; kept++) {
		rc2 = kept ? cat_meta_apply_kept(base, ids, BASE_FILE, updates, now_ms, 100, &out2,
		                                 &kept_ids, &changed, &e2)
		           : cat_meta_apply_built(base, BASE_FILE, updates, now_ms, 100, &out2,
		                                  &changed, &e2);
		if (rc == 0 && rc2 == 0) {
			FUZZ_CHECK(same_table(base, out, out2));
			FUZZ_CHECK(!kept || !changed || kept_ids == NULL ||
			           cat_meta_ids_match(kept_ids, out2));
		} else if (rc2 != rc || (err->kind != FL_ERR_NOMEM && e2.kind != FL_ERR_NOMEM &&
		                         (e2.kind != err->kind || strcmp(e2.msg, err->msg) != 0))) {
			fprintf(stderr, "apply: %s / apply_%s: %s\n", rc == 0 ? "ok" : err->msg,
			        kept ? "kept" : "built", rc2 == 0 ? "ok" : e2.msg);
			FUZZ_CHECK(!"apply_built and apply_kept answer as apply");
		}
		json_decref(out2);
		out2 = NULL;
	}
	if (ids_out != NULL)
		*ids_out = kept_ids;
	else
		cat_meta_ids_free(kept_ids);
}

/* Applies updates to base (NULL: from nothing) and checks the result, which
 * it returns (NULL on failure). */
static json_t *table_apply(const json_t *base, const json_t *updates, int64_t now_ms,
                           const struct cat_meta_ids *ids, struct cat_meta_ids **ids_out)
{
	struct fl_err err = {0};
	json_t *pristine = base ? json_deep_copy(base) : NULL, *out = NULL;
	bool changed = false;
	int rc = cat_meta_apply(base, base ? BASE_FILE : NULL, updates, now_ms, 100, &out, &changed,
	                        &err);

	if (rc == 0) {
		FUZZ_CHECK(out != NULL);
		check_built(out, cat_meta_validate, "apply");
		FUZZ_CHECK(changed || base == NULL || json_equal(out, base));
	} else {
		FUZZ_CHECK(out == NULL);
		check_error(&err);
	}
	check_apply_built(base, updates, now_ms, rc, out, &err, ids, ids_out);
	FUZZ_CHECK(base == NULL || json_equal(base, pristine));
	json_decref(pristine);
	return out;
}

static void table_requirements(const json_t *base, const json_t *reqs)
{
	struct fl_err err = {0};
	json_t *pristine = base ? json_deep_copy(base) : NULL;

	if (cat_meta_check_requirements(base, reqs, &err) != 0) {
		check_error(&err);
		FUZZ_CHECK(err.kind != FL_ERR_TOO_LARGE);
	}
	FUZZ_CHECK(base == NULL || json_equal(base, pristine));
	json_decref(pristine);
}

static void table_create(const json_t *req)
{
	struct fl_err err = {0};
	json_t *out = NULL;

	if (cat_meta_create(req, LOCATION, UUID, NOW, &out, &err) == 0) {
		check_built(out, cat_meta_validate, "create");
		json_decref(out);
	} else {
		FUZZ_CHECK(out == NULL);
		check_error(&err);
	}
}

static void view_apply(const json_t *updates)
{
	struct fl_err err = {0};
	json_t *pristine = json_deep_copy(view), *out = NULL;

	if (cat_viewmeta_apply(view, updates, &out, &err) == 0) {
		check_built(out, cat_viewmeta_validate, "view apply");
		json_decref(out);
	} else {
		check_error(&err);
	}
	FUZZ_CHECK(json_equal(view, pristine));
	json_decref(pristine);
}

static void view_create(const json_t *req)
{
	struct fl_err err = {0};
	json_t *out = NULL;

	if (cat_viewmeta_create(req, LOCATION, UUID, &out, &err) == 0) {
		check_built(out, cat_viewmeta_validate, "view create");
		json_decref(out);
	} else {
		check_error(&err);
	}
}

/* register-table: a document that validates takes a commit like any other. */
static void table_register(const json_t *doc)
{
	struct fl_err err = {0};
	json_t *ups;

	if (cat_meta_validate(doc, &err) != 0) {
		if (err.kind != FL_ERR_BAD_REQUEST)
			fprintf(stderr, "error %s: %s\n", fl_err_kind_name(err.kind), err.msg);
		FUZZ_CHECK(err.kind == FL_ERR_BAD_REQUEST && err.msg[0] != '\0');
		return;
	}
	ups = parse(append);
	json_decref(table_apply(doc, ups, NOW + 5000, NULL, NULL));
	json_decref(ups);
}

/* ---- structured mode: the bytes choose updates from templates ----
 *
 * Raw JSON mutation rarely produces a well-formed update that refers to
 * what the base holds; here each update is a template (every action the
 * builder knows) whose ids come from the input, mostly small (the bases'
 * ids are 0-12, and -1 means "last added"), so the builder meets removed
 * schemas in use, refs to removed snapshots, specs bound to dropped
 * columns and the like.  Rounds chain: each commit's result is the next
 * one's base, as on a live table. */

struct cursor {
	const uint8_t *p;
	size_t n;
};

static int byte_at(struct cursor *c)
{
	if (c->n == 0)
		return 0;
	c->n--;
	return *c->p++;
}

static json_int_t id_at(struct cursor *c)
{
	int b = byte_at(c);

	if (b >= 250)
		return b == 250 ? INT64_MAX : b == 251 ? INT64_MIN : b == 252 ? 1LL << 31 : -2;
	return b % 17 - 1; /* -1 .. 15 */
}

static const char *const schema_fields[] = {
        "[{\"id\":1,\"name\":\"id\",\"required\":true,\"type\":\"long\"}]",
        "[{\"id\":1,\"name\":\"id\",\"required\":true,\"type\":\"long\"},"
        "{\"id\":2,\"name\":\"data\",\"required\":false,\"type\":\"string\"},"
        "{\"id\":3,\"name\":\"ts\",\"required\":false,\"type\":\"timestamptz\"}]",
        "[{\"id\":1,\"name\":\"id\",\"required\":true,\"type\":\"int\"},"
        "{\"id\":8,\"name\":\"v\",\"required\":false,\"type\":\"variant\"},"
        "{\"id\":9,\"name\":\"g\",\"required\":false,\"type\":\"geometry(srid:4326)\"}]",
        "[{\"id\":12,\"name\":\"ns\",\"required\":true,\"type\":\"timestamp_ns\","
        "\"initial-default\":\"2024-01-01T00:00:00.000000001\",\"write-default\":null}]",
};

static const char *const spec_fields[] = {
        "[]",
        "[{\"source-id\":3,\"field-id\":1000,\"name\":\"ts_day\",\"transform\":\"day\"}]",
        "[{\"source-id\":2,\"name\":\"d\",\"transform\":\"truncate[2]\"},"
        "{\"source-id\":1,\"name\":\"b\",\"transform\":\"bucket[4]\"}]",
        "[{\"source-ids\":[1,2],\"name\":\"multi\",\"transform\":\"bucket[4]\"}]",
        "[{\"source-id\":12,\"name\":\"h\",\"transform\":\"hour\"}]",
};

static json_t *snapshot_of(struct cursor *c)
{
	json_int_t id = id_at(c), parent = id_at(c), seq = id_at(c);
	int flags = byte_at(c);
	json_t *s = json_pack("{sIsIsssIs{ss}}", "snapshot-id", id, "sequence-number", seq,
	                      "manifest-list", LOCATION "/metadata/snap.avro", "timestamp-ms",
	                      (json_int_t)NOW + byte_at(c), "summary", "operation",
	                      flags & 1 ? "overwrite" : "append");

	if (s == NULL)
		return NULL;
	if (flags & 2)
		json_object_set_new(s, "parent-snapshot-id", json_integer(parent));
	if (flags & 4)
		json_object_set_new(s, "schema-id", json_integer(id_at(c)));
	if (flags & 8) {
		json_int_t first = id_at(c);

		/* row ids step by ten rows: the bases' snapshots added ten each */
		json_object_set_new(s, "first-row-id",
		                    json_integer(first > -100 && first < 100 ? first * 10 : first));
	}
	if (flags & 16)
		json_object_set_new(s, "added-rows", json_integer(id_at(c)));
	return s;
}

static json_t *update_of(struct cursor *c)
{
	static const char *const names[] = {"main", "audit", "v1", "b"};
	int op = byte_at(c) % 20;
	const char *name = names[byte_at(c) % 4];
	char text[1024];

	switch (op) {
	case 0: return json_pack("{ssso}", "action", "add-snapshot", "snapshot", snapshot_of(c));
	case 1:
		return json_pack("{sssssssI}", "action", "set-snapshot-ref", "ref-name", name,
		                 "type", byte_at(c) & 1 ? "tag" : "branch", "snapshot-id",
		                 id_at(c));
	case 2:
		return json_pack("{ss s[I]}", "action", "remove-snapshots", "snapshot-ids",
		                 id_at(c));
	case 3: return json_pack("{ssss}", "action", "remove-snapshot-ref", "ref-name", name);
	case 4:
		snprintf(text, sizeof(text),
		         "{\"action\":\"add-schema\",\"schema\":{\"type\":\"struct\","
		         "\"schema-id\":%d,\"fields\":%s},\"last-column-id\":%d}",
		         (int)id_at(c), schema_fields[byte_at(c) % 4], (int)id_at(c));
		return parse(text);
	case 5: return json_pack("{sssI}", "action", "set-current-schema", "schema-id", id_at(c));
	case 6:
		snprintf(text, sizeof(text),
		         "{\"action\":\"add-spec\",\"spec\":{\"spec-id\":%d,\"fields\":%s}}",
		         (int)id_at(c), spec_fields[byte_at(c) % 5]);
		return parse(text);
	case 7: return json_pack("{sssI}", "action", "set-default-spec", "spec-id", id_at(c));
	case 8:
		snprintf(text, sizeof(text),
		         "{\"action\":\"add-sort-order\",\"sort-order\":{\"order-id\":%d,"
		         "\"fields\":[{\"source-id\":%d,\"transform\":\"%s\",\"direction\":\"asc\","
		         "\"null-order\":\"nulls-first\"}]}}",
		         (int)id_at(c), (int)id_at(c), byte_at(c) & 1 ? "identity" : "bucket[3]");
		return parse(text);
	case 9:
		return json_pack("{sssI}", "action", "set-default-sort-order", "sort-order-id",
		                 id_at(c));
	case 10:
		return json_pack("{ss s[I]}", "action", "remove-partition-specs", "spec-ids",
		                 id_at(c));
	case 11: return json_pack("{ss s[I]}", "action", "remove-schemas", "schema-ids", id_at(c));
	case 12:
		return json_pack("{sssI}", "action", "upgrade-format-version", "format-version",
		                 id_at(c) % 5);
	case 13:
		snprintf(text, sizeof(text), "%d", byte_at(c) % 4);
		return json_pack("{sss{ssss}}", "action", "set-properties", "updates",
		                 "write.metadata.previous-versions-max", text, "format-version",
		                 byte_at(c) & 1 ? "3" : "2");
	case 14:
		return json_pack("{sss[ss]}", "action", "remove-properties", "removals", "owner",
		                 "format-version");
	case 15:
		return json_pack("{sss{sIsssIsIs[]}}", "action", "set-statistics", "statistics",
		                 "snapshot-id", id_at(c), "statistics-path", LOCATION "/s.puffin",
		                 "file-size-in-bytes", (json_int_t)100, "file-footer-size-in-bytes",
		                 (json_int_t)10, "blob-metadata");
	case 16: return json_pack("{sssI}", "action", "remove-statistics", "snapshot-id", id_at(c));
	case 17:
		return json_pack("{ssss}", "action", "set-location", "location",
		                 byte_at(c) & 1 ? LOCATION : LOCATION "/");
	case 18:
		return json_pack("{ssss}", "action", "assign-uuid", "uuid",
		                 byte_at(c) & 1 ? UUID : "00000000-0000-4000-8000-000000000000");
	default:
		return byte_at(c) & 1 ? json_pack("{sss{ssss}}", "action", "add-encryption-key",
		                                  "encryption-key", "key-id", name,
		                                  "encrypted-key-metadata", "AAEC")
		                      : json_pack("{ssss}", "action", "remove-encryption-key",
		                                  "key-id", name);
	}
}

/* The text a commit stores: dumped as commit.c dumps it, reusing the last
 * version's text of every snapshot the two share, which must be byte for
 * byte jansson's own dump. */
static void check_stored_text(const json_t *doc, struct fl_json_memo **memo)
{
	struct fl_json_memo *next = NULL;
	char *plain = json_dumps(doc, JSON_COMPACT | JSON_ENCODE_ANY), *text;
	size_t len = 0;

	text = fl_json_dump_memo(doc, cat_meta_shared_arrays, *memo, &next, &len);
	FUZZ_CHECK(plain != NULL && text != NULL);
	FUZZ_CHECK(len == strlen(plain) && memcmp(text, plain, len) == 0);
	fl_json_memo_unref(*memo);
	*memo = next;
	free(text);
	free(plain);
}

static void structured(const json_t *base, const uint8_t *data, size_t size)
{
	struct cursor c = {data, size};
	struct fl_json_memo *memo = NULL;
	struct cat_meta_ids *ids = NULL;
	json_t *cur = json_incref((json_t *)base);

	check_stored_text(cur, &memo);
	for (int round = 0; round < 4 && c.n > 0; round++) {
		int n = byte_at(&c) % 6 + 1;
		json_t *ups = json_array(), *out;

		for (int k = 0; k < n; k++)
			json_array_append_new(ups, update_of(&c));
		struct cat_meta_ids *next = NULL;

		out = table_apply(cur, ups, NOW + 9000 + round, ids, &next);
		if (out != NULL) {
			check_stored_text(out, &memo);
			json_decref(cur);
			cur = out;
			/* The kept build's document is cur's twin: its ids are cur's. */
			cat_meta_ids_free(ids);
			ids = next;
		} else {
			cat_meta_ids_free(next);
		}
		json_decref(ups);
	}
	fl_json_memo_unref(memo);
	cat_meta_ids_free(ids);
	json_decref(cur);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fl_err err = {0};
	json_t *in = NULL;
	const json_t *base;

	if (view == NULL)
		setup();
	if (size < 2)
		return 0;
	base = tables[data[1] % 3];
	if (data[0] >= 0xf0) {
		structured(base, data + 2, size - 2);
		return 0;
	}
	if (fl_json_parse((const char *)data + 2, size - 2, MAX_DEPTH, &in, &err) != 0)
		return 0; /* the JSON parser has its own target */
	switch (data[0] % 8) {
	case 0: json_decref(table_apply(base, in, NOW + 5000, NULL, NULL)); break;
	case 1: json_decref(table_apply(NULL, in, NOW + 5000, NULL, NULL)); break;
	case 2: table_requirements(data[1] & 0x80 ? NULL : base, in); break;
	case 3: table_create(in); break;
	case 4: view_apply(in); break;
	case 5:
		if (cat_viewmeta_check_requirements(view, in, &err) != 0)
			check_error(&err);
		break;
	case 6: view_create(in); break;
	default: table_register(in); break;
	}
	json_decref(in);
	return 0;
}
