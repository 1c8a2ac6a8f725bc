/* expire.c - which snapshots and refs a snapshot expiry removes, from the
 * table's own retention settings, as Java's RemoveSnapshots computes them
 * (apache/iceberg core RemoveSnapshots; spec "Snapshot Retention Policy").
 *
 *   refs       main is never removed; another ref goes when its snapshot is
 *              older than its max-ref-age-ms (else the table property
 *              history.expire.max-ref-age-ms; default: never)
 *   branches   keep, walking back from the branch head through
 *              parent-snapshot-id, every ancestor while fewer than
 *              min-snapshots-to-keep are kept or the ancestor is younger than
 *              max-snapshot-age-ms (the ref's own values, else
 *              history.expire.min-snapshots-to-keep, default 1, and
 *              history.expire.max-snapshot-age-ms, default 5 days); the walk
 *              stops at the first ancestor that satisfies neither
 *   tags       keep their snapshot
 *   the rest   snapshots that no kept ref reaches (not an ancestor of a kept
 *              branch, not a kept tag) stay while younger than the table's
 *              max-snapshot-age-ms
 *
 * Invariant: every snapshot a kept ref points to is kept, so the
 * remove-snapshots update never leaves a ref dangling. */
#include "json.h"
#include "tablemeta.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_MAX_SNAPSHOT_AGE_MS 432000000LL /* 5 days, as Java */
#define DEFAULT_MIN_SNAPSHOTS 1

static int nomem(struct fl_err *err)
{
	return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
}

/* A retention setting: the ref's own value, else the table property, else
 * dflt.  Properties are strings; a malformed one is an error that names it. */
static int setting(const json_t *ref, const char *ref_key, const json_t *props,
                   const char *prop_key, int64_t dflt, int64_t *out, struct fl_err *err)
{
	const json_t *v = ref ? json_object_get(ref, ref_key) : NULL;
	const char *s;
	char *end;
	long long x;

	if (json_is_integer(v)) {
		*out = json_integer_value(v);
		return 0;
	}
	s = json_string_value(json_object_get(props, prop_key));
	if (s == NULL) {
		*out = dflt;
		return 0;
	}
	x = strtoll(s, &end, 10);
	if (s[0] == '\0' || *end != '\0' || x < 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "table property %s is '%.40s', not a non-negative integer",
		                  prop_key, s);
	*out = x;
	return 0;
}

static int64_t ts(const json_t *snap)
{
	return json_integer_value(json_object_get(snap, "timestamp-ms"));
}

static int mark(json_t *set, json_int_t id)
{
	char key[24];

	snprintf(key, sizeof(key), "%" JSON_INTEGER_FORMAT, id);
	return json_object_set_new(set, key, json_true());
}

static bool marked(const json_t *set, json_int_t id)
{
	char key[24];

	snprintf(key, sizeof(key), "%" JSON_INTEGER_FORMAT, id);
	return json_object_get(set, key) != NULL;
}

int cat_meta_expire_plan(const json_t *meta, int64_t now_ms, json_t **updates, json_t **removed,
                         struct fl_err *err)
{
	const json_t *snaps = json_object_get(meta, "snapshots");
	const json_t *refs = json_object_get(meta, "refs");
	const json_t *props = json_object_get(meta, "properties");
	json_t *keep = json_object(), *reached = json_object(), *ups = json_array();
	json_t *gone = json_array(), *ids = json_array(), *ref;
	int64_t max_age = 0, min_keep = 0, max_ref_age = 0;
	const char *name;
	size_t i;
	const json_t *s;
	int rc = -1;

	if (keep == NULL || reached == NULL || ups == NULL || gone == NULL || ids == NULL) {
		nomem(err);
		goto out;
	}
	if (setting(NULL, NULL, props, "history.expire.max-snapshot-age-ms",
	            DEFAULT_MAX_SNAPSHOT_AGE_MS, &max_age, err) != 0 ||
	    setting(NULL, NULL, props, "history.expire.min-snapshots-to-keep",
	            DEFAULT_MIN_SNAPSHOTS, &min_keep, err) != 0 ||
	    setting(NULL, NULL, props, "history.expire.max-ref-age-ms", INT64_MAX, &max_ref_age,
	            err) != 0)
		goto out;
	json_object_foreach((json_t *)refs, name, ref)
	{
		json_int_t head = json_integer_value(json_object_get(ref, "snapshot-id"));
		const json_t *hs = fl_json_find_int(snaps, "snapshot-id", head);
		const char *type = json_string_value(json_object_get(ref, "type"));
		int64_t ref_age, age, min_n, kept = 0;

		if (setting(ref, "max-ref-age-ms", props, "history.expire.max-ref-age-ms",
		            max_ref_age, &ref_age, err) != 0 ||
		    setting(ref, "max-snapshot-age-ms", props, "history.expire.max-snapshot-age-ms",
		            max_age, &age, err) != 0 ||
		    setting(ref, "min-snapshots-to-keep", props,
		            "history.expire.min-snapshots-to-keep", min_keep, &min_n, err) != 0)
			goto out;
		if (hs == NULL)
			continue; /* the builder never leaves a ref dangling; be safe */
		if (strcmp(name, "main") != 0 && now_ms - ts(hs) > ref_age) {
			if (json_array_append_new(gone, json_string(name)) != 0) {
				nomem(err);
				goto out;
			}
			continue;
		}
		if (type == NULL || strcmp(type, "branch") != 0) {
			if (mark(keep, head) != 0 || mark(reached, head) != 0) {
				nomem(err);
				goto out;
			}
			continue;
		}
		/* The branch's ancestry: retained while the count or the age
		 * allows, reached all the way (bounded by the snapshot count). */
		bool retaining = true;
		size_t steps = 0;

		for (const json_t *a = hs; a != NULL && steps <= json_array_size(snaps); steps++) {
			json_int_t id = json_integer_value(json_object_get(a, "snapshot-id"));
			const json_t *parent = json_object_get(a, "parent-snapshot-id");

			if (retaining && (kept < min_n || ts(a) >= now_ms - age)) {
				if (mark(keep, id) != 0) {
					nomem(err);
					goto out;
				}
				kept++;
			} else {
				retaining = false;
			}
			if (mark(reached, id) != 0) {
				nomem(err);
				goto out;
			}
			a = json_is_integer(parent) ? fl_json_find_int(snaps, "snapshot-id",
			                                               json_integer_value(parent))
			                            : NULL;
		}
	}
	json_array_foreach(snaps, i, s)
	{
		json_int_t id = json_integer_value(json_object_get(s, "snapshot-id"));

		if (marked(keep, id))
			continue;
		if (!marked(reached, id) && ts(s) >= now_ms - max_age)
			continue;
		if (json_array_append_new(ids, json_integer(id)) != 0) {
			nomem(err);
			goto out;
		}
	}
	json_array_foreach(gone, i, s)
	{
		if (json_array_append_new(ups, json_pack("{s:s, s:O}", "action",
		                                         "remove-snapshot-ref", "ref-name", s)) !=
		    0) {
			nomem(err);
			goto out;
		}
	}
	if (json_array_size(ids) > 0 &&
	    json_array_append_new(ups, json_pack("{s:s, s:O}", "action", "remove-snapshots",
	                                         "snapshot-ids", ids)) != 0) {
		nomem(err);
		goto out;
	}
	*updates = ups;
	*removed = ids;
	ups = ids = NULL;
	rc = 0;
out:
	json_decref(keep);
	json_decref(reached);
	json_decref(ups);
	json_decref(gone);
	json_decref(ids);
	return rc;
}
