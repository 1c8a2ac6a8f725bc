/* meta_build.c - what a commit's builder and writer cost as a table grows.
 *
 * A commit on a table rebuilds the table's whole metadata document and
 * serializes it again (commit.c: cat_meta_apply, then fl_json_dump), so on
 * a contended table, where commits pass one at a time, both are part of
 * the time each commit holds the table.  This program grows one table by
 * PyIceberg-style appends (add-snapshot + set-snapshot-ref main, one
 * snapshot each) and prints, at each size, the mean time of the build (as
 * a contended table's commit runs it, on the base it built last with that
 * build's snapshot ids: cat_meta_apply_kept; and checking the base as a
 * parsed one is,
 * cat_meta_apply) and of the serialization, of the serialization as a
 * contended table's commit runs it (fl_json_dump_memo with the last
 * version's memo; the two texts must be equal), and of jansson's own
 * json_dumps and json_loads of the same document for scale.  No database,
 * no files: the document alone.
 *
 * Usage: meta_build_bench [snapshots (default 1000)] [rounds per size (50)] */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "json.h"
#include "tablemeta.h"

static json_t *append_updates(const json_t *meta, int64_t id, int64_t now_ms)
{
	json_t *cur = json_object_get(meta, "current-snapshot-id");
	int64_t seq = json_integer_value(json_object_get(meta, "last-sequence-number"));
	char list[160];
	json_t *snap;

	snprintf(list, sizeof(list),
	         "s3://bench/t/metadata/snap-%" PRId64
	         "-0-6f76c9c9-7ef3-4ecf-929c-7f3754d2299c.avro",
	         id);
	snap = json_pack("{sIsIsIsss{ssssssss}si}", "snapshot-id", (json_int_t)id,
	                 "sequence-number", (json_int_t)(seq + 1), "timestamp-ms",
	                 (json_int_t)now_ms, "manifest-list", list, "summary", "operation",
	                 "append", "added-data-files", "1", "added-records", "1",
	                 "added-files-size", "1024", "schema-id", 0);
	if (snap != NULL && json_integer_value(cur) > 0)
		json_object_set(snap, "parent-snapshot-id", cur);
	return json_pack("[{ssso},{sssssIss}]", "action", "add-snapshot", "snapshot", snap,
	                 "action", "set-snapshot-ref", "ref-name", "main", "snapshot-id",
	                 (json_int_t)id, "type", "branch");
}

static int step(json_t **meta, struct fl_json_memo **memo, int64_t id, int64_t now_ms,
                int64_t *checked_ns, int64_t *apply_ns, int64_t *dump_ns, int64_t *memo_ns,
                size_t *len)
{
	static const char loc[] = "s3://bench/t/metadata/00001.metadata.json";
	json_t *up = append_updates(*meta, id, now_ms), *out = NULL, *checked = NULL;
	struct fl_json_memo *next = NULL;
	struct cat_meta_ids *ids = NULL;
	struct fl_err err = {0};
	bool changed = false;
	int64_t tc = fl_mono_ns(), t0, t1, t2, t3;
	char *text, *fast, *again = NULL;

	if (up == NULL ||
	    cat_meta_apply(*meta, loc, up, now_ms, 100, &checked, &changed, &err) != 0 ||
	    (t0 = fl_mono_ns(),
	     cat_meta_apply_kept(*meta, fl_json_memo_attached(*memo), loc, up, now_ms, 100, &out,
	                         &ids, &changed, &err) != 0)) {
		fprintf(stderr, "meta_build: apply failed: %s\n", up ? err.msg : "out of memory");
		json_decref(checked);
		json_decref(up);
		return -1;
	}
	t1 = fl_mono_ns();
	text = fl_json_dump(out, len);
	t2 = fl_mono_ns();
	/* As a contended table's commit dumps it: copying what the base shares. */
	fast = fl_json_dump_memo(out, cat_meta_shared_arrays, *memo, &next, NULL);
	t3 = fl_mono_ns();
	json_decref(up);
	/* Both builders make the same document. */
	again = fl_json_dump(checked, NULL);
	json_decref(checked);
	if (text == NULL || fast == NULL || again == NULL || strcmp(text, fast) != 0 ||
	    strcmp(text, again) != 0) {
		fprintf(stderr, "meta_build: %s\n",
		        text && fast && again ? "the dumps differ" : "out of memory");
		free(text);
		free(fast);
		free(again);
		fl_json_memo_unref(next);
		cat_meta_ids_free(ids);
		json_decref(out);
		return -1;
	}
	free(text);
	free(fast);
	free(again);
	if (next != NULL)
		fl_json_memo_attach(next, ids, cat_meta_ids_free);
	else
		cat_meta_ids_free(ids);
	fl_json_memo_unref(*memo);
	*memo = next;
	json_decref(*meta);
	*meta = out;
	*checked_ns += t0 - tc;
	*apply_ns += t1 - t0;
	*dump_ns += t2 - t1;
	*memo_ns += t3 - t2;
	return 0;
}

int main(int argc, char **argv)
{
	static const char create[] =
	        "{\"name\":\"t\",\"schema\":{\"type\":\"struct\",\"schema-id\":0,\"fields\":["
	        "{\"id\":1,\"name\":\"id\",\"type\":\"long\",\"required\":true},"
	        "{\"id\":2,\"name\":\"ts\",\"type\":\"timestamptz\",\"required\":false},"
	        "{\"id\":3,\"name\":\"payload\",\"type\":\"string\",\"required\":false}]},"
	        "\"properties\":{\"format-version\":\"2\"}}";
	int target = argc > 1 ? atoi(argv[1]) : 1000, rounds = argc > 2 ? atoi(argv[2]) : 50;
	struct fl_err err = {0};
	json_t *req = json_loads(create, 0, NULL), *meta = NULL;
	int64_t id = 1, now_ms = 1767225600000;
	int size = 0;

	if (target < 1 || rounds < 1 || req == NULL ||
	    cat_meta_create(req, "s3://bench/t", "6f76c9c9-7ef3-4ecf-929c-7f3754d2299c", now_ms,
	                    &meta, &err) != 0) {
		fprintf(stderr, "usage: meta_build_bench [snapshots] [rounds] (%s)\n", err.msg);
		return 2;
	}
	json_decref(req);
	struct fl_json_memo *memo = NULL;

	printf("snapshots  bytes     build_ms  checked_build_ms  dump_ms  memo_dump_ms  "
	       "jansson_dumps_ms  jansson_loads_ms\n");
	/* Each size is reached by untimed appends, then timed ones up to it. */
	for (int next = 100; size < target; next *= 2) {
		int64_t c = 0, a = 0, d = 0, m = 0, jd, jl;
		int stop = next < target ? next : target,
		    from = stop - rounds > size ? stop - rounds : size;
		size_t len = 0;
		char *text;

		for (; size < stop; size++) {
			if (size == from)
				c = a = d = m = 0;
			if (step(&meta, &memo, id++, now_ms++, &c, &a, &d, &m, &len) != 0)
				return 1;
		}
		jd = fl_mono_ns();
		text = json_dumps(meta, JSON_COMPACT);
		jd = fl_mono_ns() - jd;
		jl = fl_mono_ns();
		json_decref(text ? json_loads(text, 0, NULL) : NULL);
		jl = fl_mono_ns() - jl;
		free(text);
		printf("%9d  %8zu  %8.3f  %16.3f  %7.3f  %12.3f  %16.3f  %16.3f\n", size, len,
		       a / 1e6 / (stop - from), c / 1e6 / (stop - from), d / 1e6 / (stop - from),
		       m / 1e6 / (stop - from), jd / 1e6, jl / 1e6);
	}
	fl_json_memo_unref(memo);
	json_decref(meta);
	return 0;
}
