/* maintain.c - table maintenance run by the catalog itself: snapshot expiry
 * with the deletion of the files it frees, and orphan cleanup.
 *
 * Expiry commits through the commit engine like any client (DESIGN §3):
 * the plan (meta/expire.c) is computed under the table's row lock by
 * cat_table_append, so it is judged on exactly the state it changes and
 * cannot lose a race.  Only after that commit are files deleted, and only
 * files that no snapshot of the committed metadata reaches:
 *   kept     every list, manifest and live file (entries not DELETED) of
 *            the snapshots the new metadata still holds;
 *   freed    the lists of the removed snapshots, their manifests that are
 *            not kept, and every file those manifests name that is not kept.
 * A snapshot committed after ours can only reach files of kept snapshots or
 * new ones, so deleting the freed files is safe.  A freed list or manifest
 * that is already gone (an earlier run stopped half-way) is skipped; any
 * other read failure stops before anything is deleted.  Deletion order is
 * data and delete files, then manifests, then lists, so a run that stops
 * half-way leaves only unreferenced files, which orphan cleanup collects.
 *
 * Orphan cleanup deletes the objects under the table location that no
 * snapshot, metadata file or statistics file references and that are older
 * than the table's floe.orphan-grace (ISO-8601 duration, default P3D), so
 * that the files of a write still in flight are never touched.
 *
 * Compaction (bin-pack): per partition (spec id and partition tuple) of the
 * current spec, the live data files smaller than 75% of the table's
 * write.target-file-size-bytes (default 512 MiB) when there are two or
 * more, and every data file that a delete applies to (whatever its size),
 * are read with the Parquet reader, less their deleted rows, and written
 * again toward the target size.  Deletes apply as the spec's scan planning
 * says: same partition (an equality delete of an unpartitioned spec: every
 * partition), the data file's data sequence number at most a position
 * delete's and below an equality delete's, a deletion vector hiding
 * position delete files (storage/iceberg/deletes.c reads them all; the
 * equality deletes of a partition are held in one set per list of field
 * ids while it is rewritten).  The delete files that apply to no live data
 * file that stays (v2 position delete files whose every named file is
 * rewritten, v3 deletion vectors of rewritten files, the equality deletes
 * of a rewritten partition, and an unpartitioned one of the current spec
 * when no file of an older spec is old enough for it) are removed in the
 * same snapshot.  One `replace` snapshot drops
 * every manifest that held a rewritten or removed file and adds a data
 * manifest (the new files ADDED, the old ones DELETED) and, when delete
 * files go, a delete manifest (DELETED); the other live entries of the
 * dropped manifests are carried into those as EXISTING with their own
 * snapshot ids and sequence numbers (iceberg/entry.c), so any subset of
 * files can be compacted.  v3 rows keep their lineage (spec "Row
 * Lineage"): _row_id and _last_updated_sequence_number are written into
 * the new files, a null one inherited from the source file's first_row_id
 * + position and data sequence number; carried and DELETED entries carry
 * their inherited first_row_id.  With a default sort order over top-level
 * columns (identity, or a transform sorting by its result), each new file
 * holds one sorted run (rows are buffered, at most SORT_BUFFER_BYTES at a
 * time); a field that cannot be applied leaves the order unapplied and the
 * report says so.
 *
 * After partition evolution every data file of an older spec moves into
 * the current one, whatever its size: its rows are routed to the current
 * spec's partitions, with the deletes that apply to them.  A run moves
 * files until it has taken floe.compact-max-move-bytes (default 10 GiB;
 * at least one file) and the rest wait for the next run
 * (files-of-older-specs-left), so a table with a long history converges
 * over several bounded runs: a delete stays while a file it applies to
 * waits, and the files that wait are carried in their spec's manifests.
 * The
 * replace is built under the row lock on the then current state, so a
 * concurrent append is carried; a concurrent commit that removed a dropped
 * manifest or added a delete manifest aborts the run. */
#include "catalog.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "clock.h"
#include "random.h"
#include <strings.h>
#include <time.h>

#include "avro/reader.h"
#include "iceberg/name_mapping.h"
#include "iceberg/snapshot.h"
#include "iceberg/transform.h"
#include "parquet/parquet.h"
#include "parquet/reader.h"
#include "iceberg/data_writer.h"
#include "iceberg/deletes.h"
#include "iceberg/entry.h"
#include "uuid.h"
#include "iceberg/reachable.h"
#include "iceberg/rewrite.h"
#include "maintain_int.h"
#include "tablemeta.h"

static int nomem(struct fl_err *err)
{
	return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
}

/* ---- expiry ------------------------------------------------------------- */

struct expire_run {
	int64_t now_ms;
	json_t *base; /* the state the plan was made on (under the lock) */
	json_t *removed; /* snapshot ids */
	json_t *updates;
};

static int build_expire(void *arg, const json_t *current, json_t **updates, struct fl_err *err)
{
	struct expire_run *x = arg;

	json_decref(x->base);
	json_decref(x->removed);
	json_decref(x->updates);
	x->base = x->removed = x->updates = NULL;
	if (cat_meta_expire_plan(current, x->now_ms, &x->updates, &x->removed, err) != 0)
		return -1;
	x->base = json_deep_copy(current);
	if (x->base == NULL)
		return nomem(err);
	*updates = json_incref(x->updates);
	return 0;
}

static bool is_removed(const json_t *removed, json_int_t id)
{
	size_t i;
	const json_t *v;

	json_array_foreach(removed, i, v)
	{
		if (json_integer_value(v) == id)
			return true;
	}
	return false;
}

/* Counts and bytes of what a run removes, by kind. */
struct tally {
	json_int_t lists, manifests, data, deletes, bytes;
};

/* Appends the keys of set that keep does not hold to uris. */
static int collect(const json_t *set, const json_t *keep, json_t *uris)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)set, k, v)
	{
		if (keep != NULL && json_object_get(keep, k) != NULL)
			continue;
		if (json_array_append_new(uris, json_string(k)) != 0)
			return -1;
	}
	return 0;
}

static int delete_all(struct st_io *io, const json_t *uris, struct fl_err *err)
{
	size_t n = json_array_size(uris);
	const char **v;
	int rc;

	if (n == 0)
		return 0;
	v = calloc(n, sizeof(*v));
	if (v == NULL)
		return nomem(err);
	for (size_t i = 0; i < n; i++)
		v[i] = json_string_value(json_array_get(uris, i));
	rc = st_io_delete_many(io, v, n, err);
	free(v);
	return rc;
}

/* The freed files of the snapshots in `removed` (of `before`) that the
 * snapshots of `after` do not reach; deletes them unless dry_run. */
static int free_files(struct st_io *io, const json_t *before, const json_t *after,
                      const json_t *removed, bool dry_run, struct tally *t, struct fl_err *err)
{
	struct st_reachable kept = {.io = io, .live_only = true};
	struct st_reachable gone = {.io = io, .missing_ok = true};
	json_t *files = json_array(), *manifests = json_array(), *lists = json_array();
	const char *k;
	json_t *v;
	size_t i;
	const json_t *s;
	int rc = -1;

	kept.lists = json_object();
	kept.manifests = json_object();
	kept.files = json_object();
	gone.lists = json_object();
	gone.manifests = json_object();
	gone.files = json_object();
	if (files == NULL || manifests == NULL || lists == NULL || kept.lists == NULL ||
	    kept.manifests == NULL || kept.files == NULL || gone.lists == NULL ||
	    gone.manifests == NULL || gone.files == NULL) {
		nomem(err);
		goto out;
	}
	json_array_foreach(json_object_get(after, "snapshots"), i, s)
	{
		const char *list = json_string_value(json_object_get(s, "manifest-list"));

		if (list != NULL && st_reachable_add(&kept, list, err) != 0)
			goto out;
	}
	gone.skip = kept.manifests;
	json_array_foreach(json_object_get(before, "snapshots"), i, s)
	{
		const char *list = json_string_value(json_object_get(s, "manifest-list"));

		if (list == NULL ||
		    !is_removed(removed, json_integer_value(json_object_get(s, "snapshot-id"))))
			continue;
		if (st_reachable_add(&gone, list, err) != 0)
			goto out;
	}
	if (collect(gone.files, kept.files, files) != 0 ||
	    collect(gone.manifests, kept.manifests, manifests) != 0 ||
	    collect(gone.lists, kept.lists, lists) != 0) {
		nomem(err);
		goto out;
	}
	json_array_foreach(files, i, s)
	{
		json_t *info = json_object_get(gone.files, json_string_value(s));

		if (json_integer_value(json_array_get(info, 1)) == 0)
			t->data++;
		else
			t->deletes++;
		t->bytes += json_integer_value(json_array_get(info, 0));
	}
	json_object_foreach(gone.manifests, k, v)
	{
		if (json_object_get(kept.manifests, k) == NULL)
			t->bytes += json_integer_value(v);
	}
	json_array_foreach(lists, i, s)
	{
		uint64_t size = 0;
		struct fl_err ignored;

		if (st_io_stat(io, json_string_value(s), &size, &ignored) == 0)
			t->bytes += (json_int_t)size;
	}
	t->manifests += (json_int_t)json_array_size(manifests);
	t->lists += (json_int_t)json_array_size(lists);
	if (!dry_run && (delete_all(io, files, err) != 0 || delete_all(io, manifests, err) != 0 ||
	                 delete_all(io, lists, err) != 0))
		goto out;
	rc = 0;
out:
	json_decref(files);
	json_decref(manifests);
	json_decref(lists);
	json_decref(kept.lists);
	json_decref(kept.manifests);
	json_decref(kept.files);
	json_decref(gone.lists);
	json_decref(gone.manifests);
	json_decref(gone.files);
	return rc;
}

/* The metadata as it will be once the plan's updates apply, for a dry run:
 * the snapshots that stay. */
static json_t *without(const json_t *meta, const json_t *removed)
{
	json_t *copy = json_deep_copy(meta), *kept = json_array(), *s;
	size_t i;

	if (copy == NULL || kept == NULL)
		goto fail;
	json_array_foreach(json_object_get(meta, "snapshots"), i, s)
	{
		if (!is_removed(removed, json_integer_value(json_object_get(s, "snapshot-id"))) &&
		    json_array_append(kept, s) != 0)
			goto fail;
	}
	if (json_object_set_new(copy, "snapshots", kept) != 0) {
		kept = NULL;
		goto fail;
	}
	return copy;
fail:
	json_decref(copy);
	json_decref(kept);
	return NULL;
}

static json_t *report_new(const char *action, const char *table, bool dry_run)
{
	return json_pack("{s:s, s:s, s:b}", "action", action, "table", table, "dry-run", dry_run);
}

static int report_tally(json_t *r, const struct tally *t)
{
	int bad = 0;

	bad |= json_object_set_new(r, "data-files-removed", json_integer(t->data));
	bad |= json_object_set_new(r, "delete-files-removed", json_integer(t->deletes));
	bad |= json_object_set_new(r, "manifests-removed", json_integer(t->manifests));
	bad |= json_object_set_new(r, "manifest-lists-removed", json_integer(t->lists));
	bad |= json_object_set_new(r, "files-removed",
	                           json_integer(t->data + t->deletes + t->manifests + t->lists));
	bad |= json_object_set_new(r, "bytes-removed", json_integer(t->bytes));
	bad |= json_object_set_new(r, "files-added", json_integer(0));
	bad |= json_object_set_new(r, "bytes-added", json_integer(0));
	return bad ? -1 : 0;
}

int cat_maintain_expire(struct cat_db *db, const struct cat_warehouse *wh, const struct cat_ns *ns,
                        const char *name, const struct cat_limits *lim, int64_t now_ms,
                        bool dry_run, json_t **report, struct fl_err *err)
{
	struct expire_run x = {.now_ms = now_ms};
	struct cat_change ch = {.ns = *ns, .name = name};
	struct tally t = {0};
	char tbuf[520], nsbuf[520], type[16], *mloc = NULL, *text = NULL;
	json_t *after = NULL, *r = NULL, *refs;
	size_t i;
	const json_t *u;
	int rc = -1;

	snprintf(tbuf, sizeof(tbuf), "%s.%s", cat_ns_str(ns, nsbuf, sizeof(nsbuf)), name);
	if (wh->io == NULL)
		return fl_err_set(err, FL_ERR_INTERNAL, "no storage handle for the warehouse");
	if (dry_run) {
		if (cat_table_load(db, NULL, wh->name, ns, name, &mloc, &text, type, err) != 0)
			goto out;
		x.base = json_loads(text, 0, NULL);
		if (x.base == NULL) {
			fl_err_set(err, FL_ERR_INTERNAL, "stored metadata is not JSON");
			goto out;
		}
		if (cat_meta_expire_plan(x.base, now_ms, &x.updates, &x.removed, err) != 0)
			goto out;
		after = without(x.base, x.removed);
	} else {
		if (cat_table_append(db, wh, &ch, build_expire, &x, lim, NULL, err) != 0)
			goto out;
		after = json_loads(ch.metadata, 0, NULL);
	}
	if (after == NULL) {
		nomem(err);
		goto out;
	}
	if (json_array_size(x.removed) > 0 &&
	    free_files(wh->io, x.base, after, x.removed, dry_run, &t, err) != 0) {
		fl_err_prefix(err, "table %s: expired %zu snapshots, then", tbuf,
		              json_array_size(x.removed));
		goto out;
	}
	r = report_new("expire", tbuf, dry_run);
	refs = json_array();
	if (r == NULL || refs == NULL || json_object_set_new(r, "refs-removed", refs) != 0) {
		json_decref(refs);
		nomem(err);
		goto out;
	}
	json_array_foreach(x.updates, i, u)
	{
		const char *ref = json_string_value(json_object_get(u, "ref-name"));

		if (ref != NULL && json_array_append_new(refs, json_string(ref)) != 0) {
			nomem(err);
			goto out;
		}
	}
	if (json_object_set_new(r, "snapshots-removed",
	                        json_integer((json_int_t)json_array_size(x.removed))) != 0 ||
	    json_object_set(r, "snapshot-ids", x.removed) != 0 || report_tally(r, &t) != 0) {
		nomem(err);
		goto out;
	}
	*report = r;
	r = NULL;
	rc = 0;
out:
	cat_changes_free(&ch, 1);
	json_decref(x.base);
	json_decref(x.removed);
	json_decref(x.updates);
	json_decref(after);
	json_decref(r);
	free(mloc);
	free(text);
	return rc;
}

/* ---- orphan cleanup ------------------------------------------------------ */

#define DEFAULT_ORPHAN_GRACE_S (3 * 86400)
#define MIN_ORPHAN_GRACE_S 3600 /* below this an in-flight write could be hit */
#define MAX_ORPHAN_GRACE_S (100LL * 366 * 86400) /* keeps the cutoff in range */
#define ORPHAN_SAMPLE 20

/* Every file the metadata references: the reachable files of every snapshot
 * (all entries, DELETED ones too: cheap insurance), the metadata files of
 * the log and the current one, statistics files. */
static int referenced(struct st_io *io, const json_t *meta, const char *mloc, json_t *refs,
                      struct fl_err *err)
{
	struct st_reachable r = {.io = io, .lists = refs, .manifests = refs, .files = refs};
	static const char *const stats[] = {"statistics", "partition-statistics"};
	size_t i;
	const json_t *s;

	if (mloc != NULL && json_object_set_new(refs, mloc, json_true()) != 0)
		return nomem(err);
	json_array_foreach(json_object_get(meta, "snapshots"), i, s)
	{
		const char *list = json_string_value(json_object_get(s, "manifest-list"));

		if (list != NULL && st_reachable_add(&r, list, err) != 0)
			return -1;
	}
	json_array_foreach(json_object_get(meta, "metadata-log"), i, s)
	{
		const char *f = json_string_value(json_object_get(s, "metadata-file"));

		if (f != NULL && json_object_set_new(refs, f, json_true()) != 0)
			return nomem(err);
	}
	for (size_t k = 0; k < 2; k++) {
		json_array_foreach(json_object_get(meta, stats[k]), i, s)
		{
			const char *f = json_string_value(json_object_get(s, "statistics-path"));

			if (f != NULL && json_object_set_new(refs, f, json_true()) != 0)
				return nomem(err);
		}
	}
	return 0;
}

struct orphan_walk {
	const json_t *refs;
	int64_t before_ms; /* only objects modified before this */
	int64_t retired_ms; /* ... and after this (INT64_MIN: no retirement) */
	json_t *found; /* uri -> size */
	json_int_t listed, retired;
};

static int orphan_cb(void *arg, const char *uri, uint64_t size, int64_t mtime_ms,
                     struct fl_err *err)
{
	struct orphan_walk *w = arg;

	w->listed++;
	if (json_object_get(w->refs, uri) != NULL || mtime_ms >= w->before_ms)
		return 0;
	if (mtime_ms <= w->retired_ms) { /* a table that left the catalog: its file */
		w->retired++;
		return 0;
	}
	if (json_object_set_new(w->found, uri, json_integer((json_int_t)size)) != 0)
		return nomem(err);
	return 0;
}

/* The table's metadata and its location, loaded fresh. */
static int load_meta(struct cat_db *db, const struct cat_warehouse *wh, const struct cat_ns *ns,
                     const char *name, char **mloc, json_t **meta, struct fl_err *err)
{
	char *text = NULL, type[16];

	*mloc = NULL;
	if (cat_table_load(db, NULL, wh->name, ns, name, mloc, &text, type, err) != 0)
		return -1;
	*meta = json_loads(text, 0, NULL);
	free(text);
	if (*meta == NULL)
		return fl_err_set(err, FL_ERR_INTERNAL, "stored metadata is not JSON");
	return 0;
}

int cat_maintain_orphans(struct cat_db *db, const struct cat_warehouse *wh, const struct cat_ns *ns,
                         const char *name, int64_t now_ms, bool dry_run, json_t **report,
                         struct fl_err *err)
{
	struct orphan_walk w = {0};
	char tbuf[520], nsbuf[520], *mloc = NULL, *mloc2 = NULL;
	json_t *meta = NULL, *meta2 = NULL, *refs = json_object(), *doomed = json_array();
	json_t *sample = json_array(), *r = NULL, *v;
	const char *grace_s, *location, *k;
	int64_t grace = DEFAULT_ORPHAN_GRACE_S;
	json_int_t bytes = 0;
	int rc = -1;

	snprintf(tbuf, sizeof(tbuf), "%s.%s", cat_ns_str(ns, nsbuf, sizeof(nsbuf)), name);
	if (refs == NULL || doomed == NULL || sample == NULL) {
		nomem(err);
		goto out;
	}
	if (wh->io == NULL) {
		fl_err_set(err, FL_ERR_INTERNAL, "no storage handle for the warehouse");
		goto out;
	}
	if (load_meta(db, wh, ns, name, &mloc, &meta, err) != 0)
		goto out;
	grace_s = json_string_value(
	        json_object_get(json_object_get(meta, "properties"), "floe.orphan-grace"));
	if (grace_s != NULL && (grace = fl_duration_parse(grace_s)) < 0) {
		fl_err_set(
		        err, FL_ERR_BAD_REQUEST,
		        "table %s: floe.orphan-grace '%.40s' is not a duration (e.g. P3D, PT12H)",
		        tbuf, grace_s);
		goto out;
	}
	if (grace < MIN_ORPHAN_GRACE_S)
		grace = MIN_ORPHAN_GRACE_S;
	if (grace > MAX_ORPHAN_GRACE_S)
		grace = MAX_ORPHAN_GRACE_S;
	location = json_string_value(json_object_get(meta, "location"));
	if (location == NULL) {
		fl_err_set(err, FL_ERR_INTERNAL, "table %s has no location", tbuf);
		goto out;
	}
	if (referenced(wh->io, meta, mloc, refs, err) != 0)
		goto fail;
	w.refs = refs;
	w.before_ms = now_ms - grace * 1000;
	w.retired_ms = INT64_MIN;
	{
		bool found;
		int64_t at;

		if (cat_location_retired(db, wh->id, location, &at, &found, err) != 0)
			goto fail;
		if (found)
			w.retired_ms = at + CAT_RETIRED_SKEW_MS;
	}
	w.found = json_object();
	if (w.found == NULL) {
		nomem(err);
		goto out;
	}
	if (st_io_list(wh->io, location, orphan_cb, &w, err) != 0)
		goto fail;
	/* A commit may have landed while we listed (add_files can reference
	 * an old file): judge the candidates against the newest metadata too. */
	if (load_meta(db, wh, ns, name, &mloc2, &meta2, err) != 0)
		goto out;
	if (strcmp(mloc, mloc2) != 0 && referenced(wh->io, meta2, mloc2, refs, err) != 0)
		goto fail;
	json_object_foreach(w.found, k, v)
	{
		if (json_object_get(refs, k) != NULL)
			continue;
		bytes += json_integer_value(v);
		if (json_array_append_new(doomed, json_string(k)) != 0 ||
		    (json_array_size(sample) < ORPHAN_SAMPLE &&
		     json_array_append_new(sample, json_string(k)) != 0)) {
			nomem(err);
			goto out;
		}
	}
	if (!dry_run && delete_all(wh->io, doomed, err) != 0)
		goto fail;
	r = report_new("orphans", tbuf, dry_run);
	if (r == NULL ||
	    json_object_set_new(r, "grace-seconds", json_integer((json_int_t)grace)) != 0 ||
	    json_object_set_new(r, "objects-listed", json_integer(w.listed)) != 0 ||
	    (w.retired > 0 && json_object_set_new(r, "files-of-retired-tables-kept",
	                                          json_integer(w.retired)) != 0) ||
	    json_object_set_new(r, "files-removed",
	                        json_integer((json_int_t)json_array_size(doomed))) != 0 ||
	    json_object_set_new(r, "bytes-removed", json_integer(bytes)) != 0 ||
	    json_object_set_new(r, "files-added", json_integer(0)) != 0 ||
	    json_object_set_new(r, "bytes-added", json_integer(0)) != 0 ||
	    json_object_set(r, "sample", sample) != 0) {
		nomem(err);
		goto out;
	}
	*report = r;
	r = NULL;
	rc = 0;
	goto out;
fail:
	fl_err_prefix(err, "table %s: orphan cleanup", tbuf);
out:
	free(mloc);
	free(mloc2);
	json_decref(meta);
	json_decref(meta2);
	json_decref(refs);
	json_decref(doomed);
	json_decref(sample);
	json_decref(w.found);
	json_decref(r);
	return rc;
}

/* ---- compaction ---------------------------------------------------------- */

#define DEFAULT_TARGET_FILE_BYTES ((json_int_t)512 << 20)
#define DEFAULT_MAX_MOVE_BYTES ((json_int_t)10 << 30)
#define MAX_MANIFEST_READ ((size_t)64 << 20)

const json_t *cat_mt_head(const json_t *meta)
{
	const json_t *id = json_object_get(meta, "current-snapshot-id");

	if (!json_is_integer(id) || json_integer_value(id) == -1)
		return NULL;
	return fl_json_find_int(json_object_get(meta, "snapshots"), "snapshot-id",
	                        json_integer_value(id));
}

int cat_mt_int_prop(const json_t *meta, const char *table, const char *key, json_int_t dflt,
                    json_int_t *out, struct fl_err *err)
{
	const char *s =
	        json_string_value(json_object_get(json_object_get(meta, "properties"), key));
	char *end = NULL;
	long long v;

	*out = dflt;
	if (s == NULL)
		return 0;
	v = strtoll(s, &end, 10);
	if (end == s || *end != '\0' || v <= 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "table %s: %s '%.40s' is not a positive integer", table, key, s);
	*out = (json_int_t)v;
	return 0;
}

struct compact {
	const char *table; /* "ns.name", for messages */
	struct st_io *io;
	json_t *meta; /* the state the plan was made on */
	json_int_t target, threshold, spec_id;
	json_t *groups; /* "<spec id>|<partition JSON>" -> {spec-id, partition, files} */
	json_t *dels; /* the same key -> [live position delete file or vector] */
	json_t *eqdels; /* the same key, "" for an unpartitioned spec's (they apply
	                 * to every partition) -> [live equality delete file] */
	json_int_t other_min_seq; /* lowest data sequence number of a live data
	                           * file of another spec that stays; INT64_MAX:
	                           * none */
	/* Moving the files of older specs into the current one (migrate). */
	struct route *route; /* the current spec's fields over the schema's columns */
	size_t nroute;
	bool can_route; /* every field of the current spec can be computed */
	json_t *older; /* spec id (text) -> true (its files move) or false (they stay) */
	struct st_snapshot_table *olds; /* the tables of the older specs that move */
	size_t nolds;
	json_int_t migrated, kept_older; /* files of older specs moved, kept */
	json_int_t move_cap, move_bytes; /* floe.compact-max-move-bytes; taken */
	json_int_t left_older; /* files of older specs left for a later run */
	json_t *mlive; /* manifest path -> [live entries, entries chosen, list record] */
	json_t *listed; /* every manifest path of the planned list */
	json_int_t base_snapshot; /* the snapshot the plan was made on */
	json_t *drop; /* manifest paths the replace leaves out */
	json_t *plan; /* the chosen groups, each {spec-id, partition, files: [entry]} */
	json_t *gone; /* the delete files the replace removes */
	json_t *removed_ids; /* entry_id of every file the replace removes */
	json_int_t removed, bytes_removed, added, bytes_added, parts;
	json_int_t carried, rows_dropped;
	int32_t sort_order_id; /* applied to the new files; 0: none */
	char sort_note[200]; /* why the table's sort order was not applied */
	/* the rewrite and its commit */
	struct st_snapshot_table t;
	char *mdir;
	int64_t snapshot_id;
	int attempt;
	struct st_snapshot_manifest *manifest;
	/* the DELETED entries of the files moved out of each older spec */
	struct st_snapshot_manifest **more;
	size_t n_more;
	struct st_snapshot_manifest *removed_deletes; /* NULL: none */
	json_t *written; /* URIs of the new data files */
	json_t *committed; /* the snapshot committed */
};

/* An entry's long field, else the manifest list's fallback. */
static json_int_t or_else(const json_t *v, const json_t *dflt)
{
	return json_is_integer(v) ? json_integer_value(v) : json_integer_value(dflt);
}

/* "<spec id>|<partition JSON>": the key of a partition; NULL when out of
 * memory. */
static char *part_key(json_int_t spec_id, const json_t *partition)
{
	char *pj = json_dumps(partition, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY), *key;
	size_t len;

	if (pj == NULL)
		return NULL;
	len = strlen(pj) + 24;
	key = malloc(len);
	if (key != NULL)
		snprintf(key, len, "%" JSON_INTEGER_FORMAT "|%s", spec_id, pj);
	free(pj);
	return key;
}

/* The array under key in obj, created empty when absent. */
static json_t *array_at(json_t *obj, const char *key)
{
	json_t *a = json_object_get(obj, key);

	if (a == NULL && (a = json_array()) != NULL && json_object_set_new(obj, key, a) != 0)
		a = NULL;
	return a;
}

/* dst[dkey] = src[skey] when that is present and not null. */
static int copy_field(json_t *dst, const char *dkey, const json_t *src, const char *skey)
{
	json_t *v = json_object_get(src, skey);

	return v == NULL || json_is_null(v) ? 0 : json_object_set(dst, dkey, v);
}

/* What a delete record needs besides a data file's: the partition (for
 * its DELETED entry), a vector's referenced file and blob, an equality
 * delete's field ids. */
static int delete_fields(json_t *f, const json_t *df)
{
	return copy_field(f, "partition", df, "partition") ||
	       copy_field(f, "ref", df, "referenced_data_file") ||
	       copy_field(f, "off", df, "content_offset") ||
	       copy_field(f, "len", df, "content_size_in_bytes") ||
	       copy_field(f, "ids", df, "equality_ids");
}

/* Whether the partition spec spec_id of the metadata has no fields. */
static bool spec_unpartitioned(const json_t *meta, json_int_t spec_id)
{
	const json_t *spec =
	        fl_json_find_int(json_object_get(meta, "partition-specs"), "spec-id", spec_id);

	return spec != NULL && json_array_size(json_object_get(spec, "fields")) == 0;
}

/* A field of the current partition spec, computed from a row: its source's
 * place among the writer's columns (schema_columns: the schema's fields in
 * order), the transform and the value's type. */
struct route {
	size_t col;
	struct st_transform tr;
	struct st_type type;
};

/* The current spec's fields as routes; c->can_route stays false when one
 * cannot be computed here (a source that is not a top-level primitive
 * column): the files of older specs then stay where they are. */
static int route_setup(struct compact *c, struct fl_err *err)
{
	const json_t *fields = json_object_get(c->t.spec, "fields"), *f;
	const json_t *cols = json_object_get(c->t.schema, "fields");
	size_t i;

	c->route = calloc(json_array_size(fields) + 1, sizeof(*c->route));
	if (c->route == NULL)
		return nomem(err);
	json_array_foreach(fields, i, f)
	{
		json_int_t src = json_integer_value(json_object_get(f, "source-id"));
		const char *tr = json_string_value(json_object_get(f, "transform"));
		struct route *r = &c->route[i];
		struct st_type st;
		struct fl_err why = {0};
		size_t col = 0;
		const char *type = NULL;

		while (col < json_array_size(cols) &&
		       json_integer_value(json_object_get(json_array_get(cols, col), "id")) != src)
			col++;
		type = json_string_value(json_object_get(json_array_get(cols, col), "type"));
		if (tr == NULL || type == NULL || st_type_parse(type, &st, &why) != 0 ||
		    st_transform_parse(tr, &st, &r->tr, &r->type, &why) != 0)
			return 0;
		r->col = col;
	}
	c->nroute = json_array_size(fields);
	c->can_route = true;
	return 0;
}

/* Readies c->olds[c->nolds], the table with older spec id, for the caller
 * to count in: 1, or 0 when the metadata lists no such spec, or -1. */
static int older_table(struct compact *c, json_int_t id, struct fl_err *err)
{
	struct st_snapshot_table *g = realloc(c->olds, sizeof(*g) * (c->nolds + 1));

	if (g == NULL)
		return nomem(err);
	c->olds = g;
	return st_snapshot_table_with_spec(&c->t, c->meta, (int32_t)id, &g[c->nolds]);
}

/* Whether the data files of older spec id move into the current spec: the
 * rows can be routed, and a partition tuple of that spec (rec, the first
 * met) can be read against the current schema (its source columns are
 * still there), which the files' DELETED entries need.  Decided once per
 * spec; the spec's table is kept in c->olds. */
static int older_moves(struct compact *c, json_int_t id, const json_t *rec, bool *moves,
                       struct fl_err *err)
{
	char key[24];
	const json_t *known;
	struct st_value *part = NULL;
	size_t np;
	struct fl_err why = {0};
	int rc;

	snprintf(key, sizeof(key), "%" JSON_INTEGER_FORMAT, id);
	known = json_object_get(c->older, key);
	if (known != NULL) {
		*moves = json_is_true(known);
		return 0;
	}
	*moves = false;
	if (c->can_route && (rc = older_table(c, id, err)) != 0) {
		if (rc < 0)
			return -1;
		*moves =
		        st_snapshot_partition_parse(&c->olds[c->nolds], rec, &part, &np, &why) == 0;
		free(part);
		if (*moves)
			c->nolds++;
	}
	return json_object_set_new(c->older, key, json_boolean(*moves)) != 0 ? nomem(err) : 0;
}

/* The table as the manifests of spec id see it: the current one's, or an
 * older one's that moves. */
static const struct st_snapshot_table *spec_table(const struct compact *c, json_int_t id)
{
	for (size_t i = 0; i < c->nolds; i++) {
		if (c->olds[i].spec_id == id)
			return &c->olds[i];
	}
	return &c->t;
}

/* Adds the live entries of one manifest (a record of the current list):
 * data files to the groups (every one: a file with deletes is rewritten
 * whatever its size), those of an older spec only when they move
 * (older_moves), position delete files and deletion vectors to dels,
 * equality delete files to eqdels. */
static int plan_manifest(struct compact *c, const json_t *mf, struct fl_err *err)
{
	const char *uri = json_string_value(json_object_get(mf, "manifest_path"));
	json_int_t spec_id = json_integer_value(json_object_get(mf, "partition_spec_id"));
	const json_t *mfrid = json_object_get(mf, "first_row_id");
	json_int_t live = 0, frid_next = json_integer_value(mfrid);
	json_t *entries = NULL, *e;
	size_t i;
	int rc = -1;

	if (uri == NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "table %s: a manifest list entry lacks manifest_path", c->table);
	if (json_object_set_new(c->listed, uri, json_true()) != 0)
		return nomem(err);
	if (st_avro_read_all(c->io, uri, MAX_MANIFEST_READ, NULL, &entries, err) != 0)
		return -1;
	json_array_foreach(entries, i, e)
	{
		const json_t *df = json_object_get(e, "data_file");
		const char *path = json_string_value(json_object_get(df, "file_path"));
		json_int_t size = json_integer_value(json_object_get(df, "file_size_in_bytes"));
		json_int_t content = json_integer_value(json_object_get(df, "content"));
		json_int_t records = json_integer_value(json_object_get(df, "record_count"));
		const json_t *frid = json_object_get(df, "first_row_id");
		char *key = NULL;
		json_t *g = NULL, *f = NULL, *list = NULL;
		bool has_frid = false;
		json_int_t my_frid = 0;

		/* Spec "First Row ID Inheritance": a null first_row_id is the
		 * manifest's plus the records of the files before it that had
		 * none. */
		if (content == 0 && json_is_integer(frid)) {
			has_frid = true;
			my_frid = json_integer_value(frid);
		} else if (content == 0 && json_is_integer(mfrid)) {
			has_frid = true;
			my_frid = frid_next;
			frid_next += records;
		}
		if (json_integer_value(json_object_get(e, "status")) == 2)
			continue;
		live++;
		if (path == NULL) {
			fl_err_set(err, FL_ERR_BAD_REQUEST,
			           "manifest %.200s: entry %zu lacks file_path", uri, i);
			goto out;
		}
		/* A delete of an older spec goes to dels or eqdels too: it
		 * applies to the files of its partition that move (and stays,
		 * as its manifest does). */
		if (spec_id != c->spec_id && content == 0) {
			json_int_t seq = or_else(json_object_get(e, "sequence_number"),
			                         json_object_get(mf, "sequence_number"));
			bool moves;

			if (older_moves(c, spec_id, json_object_get(df, "partition"), &moves,
			                err) != 0)
				goto out;
			if (!moves) {
				c->kept_older++;
				if (seq < c->other_min_seq)
					c->other_min_seq = seq;
				continue;
			}
		}
		key = content == 2 && spec_unpartitioned(c->meta, spec_id)
		              ? strdup("")
		              : part_key(spec_id, json_object_get(df, "partition"));
		if (key == NULL) {
			nomem(err);
			goto out;
		}
		if (content == 0) {
			g = json_object_get(c->groups, key);
			if (g == NULL) {
				g = json_pack("{s:I, s:O?, s:[], s:{}}", "spec-id", spec_id,
				              "partition", json_object_get(df, "partition"),
				              "files", "by-path");
				if (g != NULL && spec_id != c->spec_id &&
				    json_object_set_new(g, "moves", json_true()) != 0) {
					json_decref(g);
					g = NULL;
				}
				if (g != NULL && json_object_set_new(c->groups, key, g) != 0)
					g = NULL;
			}
			list = g != NULL ? json_object_get(g, "files") : NULL;
		} else {
			list = array_at(content == 2 ? c->eqdels : c->dels, key);
		}
		free(key);
		f = json_pack("{s:s, s:I, s:I, s:s?, s:I, s:I, s:I, s:s, s:I, s:b}", "path", path,
		              "size", size, "records", records, "format",
		              json_string_value(json_object_get(df, "file_format")), "snapshot",
		              or_else(json_object_get(e, "snapshot_id"),
		                      json_object_get(mf, "added_snapshot_id")),
		              "seq",
		              or_else(json_object_get(e, "sequence_number"),
		                      json_object_get(mf, "sequence_number")),
		              "fseq",
		              or_else(json_object_get(e, "file_sequence_number"),
		                      json_object_get(mf, "sequence_number")),
		              "manifest", uri, "content", content, "small",
		              content == 0 && size < c->threshold);
		if (f != NULL &&
		    ((has_frid && json_object_set_new(f, "frid", json_integer(my_frid)) != 0) ||
		     (content != 0 && delete_fields(f, df) != 0) ||
		     (content != 0 &&
		      json_object_set_new(f, "spec", json_integer(spec_id)) != 0))) {
			json_decref(f);
			f = NULL;
		}
		if (list == NULL || f == NULL || json_array_append(list, f) != 0 ||
		    (g != NULL && json_object_set(json_object_get(g, "by-path"), path, f) != 0)) {
			json_decref(f);
			nomem(err);
			goto out;
		}
		json_decref(f);
	}
	if (json_object_set_new(c->mlive, uri, json_pack("[I,I,O]", live, (json_int_t)0, mf)) !=
	    0) {
		nomem(err);
		goto out;
	}
	rc = 0;
out:
	json_decref(entries);
	return rc;
}

/* Whether a delete record is a deletion vector (a blob of a Puffin file). */
static bool is_dv(const json_t *d)
{
	const char *fmt = json_string_value(json_object_get(d, "format"));

	return json_is_integer(json_object_get(d, "off")) ||
	       (fmt != NULL && strcasecmp(fmt, "puffin") == 0);
}

struct targets {
	json_t *paths;
	json_t *by_path;
	const char *uri;
};

/* Collects the distinct data file paths of a position delete file that are
 * live data files of the group (others cannot be deleted from). */
static int target_row(void *arg, const uint8_t *path, size_t len, int64_t pos, struct fl_err *err)
{
	struct targets *t = arg;
	char buf[4096];

	(void)pos;
	if (len >= sizeof(buf))
		return fl_err_set(err, FL_ERR_TOO_LARGE,
		                  "position delete file %.200s: a file_path of %zu bytes", t->uri,
		                  len);
	memcpy(buf, path, len);
	buf[len] = '\0';
	if (json_object_get(t->paths, buf) == NULL &&
	    json_object_set_new(t->paths, buf, json_true()) != 0)
		return nomem(err);
	return 0;
}

/* The data file paths a delete record names: a vector's or a file's
 * referenced_data_file, else the file_path column of the delete file. */
static int delete_targets(struct compact *c, json_t *d, struct fl_err *err)
{
	struct targets t = {.paths = json_object(),
	                    .uri = json_string_value(json_object_get(d, "path"))};
	const char *ref = json_string_value(json_object_get(d, "ref"));
	struct st_parquet_source src;
	struct st_parquet_io_ctx ictx;

	if (t.paths == NULL || json_object_set_new(d, "targets", t.paths) != 0)
		return nomem(err);
	if (ref != NULL)
		return json_object_set_new(t.paths, ref, json_true()) != 0 ? nomem(err) : 0;
	if (is_dv(d))
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "deletion vector in %.200s lacks referenced_data_file", t.uri);
	if (st_parquet_source_io(&src, &ictx, c->io, t.uri, err) != 0 ||
	    st_pos_deletes_read(&src, NULL, target_row, &t, err) != 0)
		return fl_err_prefix(err, "position delete file %.200s", t.uri);
	return 0;
}

/* Appends to f's "eqs" the equality deletes of list that apply to it
 * (st_eq_delete_applies): those of its partition, or global ones. */
static int link_eq(json_t *f, const json_t *list, bool global, struct fl_err *err)
{
	json_int_t seq = json_integer_value(json_object_get(f, "seq"));
	size_t i;
	json_t *d, *at;

	json_array_foreach(list, i, d)
	{
		if (!st_eq_delete_applies(!global, global, seq,
		                          json_integer_value(json_object_get(d, "seq"))))
			continue;
		at = array_at(f, "eqs");
		if (at == NULL || json_array_append(at, d) != 0)
			return nomem(err);
	}
	return 0;
}

/* Links each group's data files to the deletes that apply to them
 * (st_pos_delete_applies and st_eq_delete_applies; the deletes of a group's
 * key are its partition's, those of "" the global equality deletes; a
 * deletion vector hides position delete files): each such file gets "dels"
 * and "eqs", the records to read when it is rewritten. */
static int link_deletes(struct compact *c, struct fl_err *err)
{
	const char *key;
	json_t *list, *d, *f;
	size_t i;

	json_object_foreach(c->dels, key, list)
	{
		json_t *g = json_object_get(c->groups, key), *by_path;

		if (g == NULL)
			continue;
		by_path = json_object_get(g, "by-path");
		json_array_foreach(list, i, d)
		{
			const char *p;
			json_t *v;
			bool dv = is_dv(d);

			if (delete_targets(c, d, err) != 0)
				return fl_err_prefix(err, "table %s", c->table);
			json_object_foreach(json_object_get(d, "targets"), p, v)
			{
				json_t *at;

				f = json_object_get(by_path, p);
				if (f == NULL ||
				    !st_pos_delete_applies(
				            true, json_integer_value(json_object_get(f, "seq")),
				            json_integer_value(json_object_get(d, "seq"))))
					continue;
				at = array_at(f, dv ? "dvs" : "dels");
				if (at == NULL || json_array_append(at, d) != 0)
					return nomem(err);
			}
		}
	}
	json_object_foreach(c->groups, key, f)
	{
		json_t *files = json_object_get(f, "files"), *x;
		const json_t *eq = json_object_get(c->eqdels, key),
		             *global = json_object_get(c->eqdels, "");

		json_array_foreach(files, i, x)
		{
			json_t *dvs = json_object_get(x, "dvs");

			if (dvs != NULL && json_object_set(x, "dels", dvs) != 0)
				return nomem(err);
			json_object_del(x, "dvs");
			if (link_eq(x, eq, false, err) != 0 || link_eq(x, global, true, err) != 0)
				return -1;
		}
	}
	return 0;
}

/* Whether rows of data file f are deleted by position or by equality. */
static bool has_deletes(const json_t *f)
{
	return json_object_get(f, "dels") != NULL || json_object_get(f, "eqs") != NULL;
}

static json_int_t group_bytes(const json_t *files)
{
	json_int_t b = 0;
	size_t i;
	const json_t *f;

	json_array_foreach(files, i, f) b += json_integer_value(json_object_get(f, "size"));
	return b;
}

static void count_chosen(json_t *mlive, const json_t *rec)
{
	json_t *m = json_object_get(mlive, json_string_value(json_object_get(rec, "manifest")));

	json_array_set_new(m, 1, json_integer(json_integer_value(json_array_get(m, 1)) + 1));
}

static bool some_chosen(const json_t *m)
{
	return json_integer_value(json_array_get(m, 1)) > 0;
}

static bool all_chosen(const json_t *m)
{
	return some_chosen(m) &&
	       json_integer_value(json_array_get(m, 1)) == json_integer_value(json_array_get(m, 0));
}

/* What names a live entry among those of its manifest list: its path, and
 * for a deletion vector (many share one Puffin file) its offset. */
static char *entry_id(const char *path, const json_t *off)
{
	size_t len = strlen(path) + 24;
	char *id = malloc(len);

	if (id == NULL)
		return NULL;
	if (json_is_integer(off))
		snprintf(id, len, "%s#%" JSON_INTEGER_FORMAT, path, json_integer_value(off));
	else
		snprintf(id, len, "%s", path);
	return id;
}

static int mark_removed(struct compact *c, const json_t *rec, struct fl_err *err)
{
	char *id = entry_id(json_string_value(json_object_get(rec, "path")),
	                    json_object_get(rec, "off"));
	int rc = id == NULL || json_object_set_new(c->removed_ids, id, json_true()) != 0;

	free(id);
	return rc ? nomem(err) : 0;
}

static int remove_delete(struct compact *c, json_t *d, struct fl_err *err)
{
	count_chosen(c->mlive, d);
	if (json_array_append(c->gone, d) != 0 || mark_removed(c, d, err) != 0)
		return nomem(err);
	return 0;
}

/* The equality delete files the replace removes: every one of a chosen
 * partition (each data file it applies to has it in "eqs", so is
 * rewritten; every file of a partition that moves is, unless some wait for
 * a later run: "partial"), and an
 * unpartitioned one, of any spec, when no data file of an older spec that
 * stays is old enough for it to apply to (those of the current spec it
 * applies to have it in "eqs" too). */
static int choose_eq_deletes(struct compact *c, struct fl_err *err)
{
	const json_t *g;
	json_t *d;
	size_t i, k;

	json_array_foreach(c->plan, i, g)
	{
		char *key;

		if (json_is_true(json_object_get(g, "partial")))
			continue;
		key = part_key(json_integer_value(json_object_get(g, "spec-id")),
		               json_object_get(g, "partition"));
		if (key == NULL)
			return nomem(err);
		json_array_foreach(json_object_get(c->eqdels, key), k, d)
		{
			if (remove_delete(c, d, err) != 0) {
				free(key);
				return -1;
			}
		}
		free(key);
	}
	if (json_array_size(c->plan) == 0)
		return 0;
	json_array_foreach(json_object_get(c->eqdels, ""), k, d)
	{
		json_int_t spec = json_integer_value(json_object_get(d, "spec"));
		int rc;

		if (st_eq_delete_applies(false, true, c->other_min_seq,
		                         json_integer_value(json_object_get(d, "seq"))))
			continue;
		/* One of an older spec needs that spec's table for its manifest. */
		if (spec != c->spec_id && spec_table(c, spec) == &c->t) {
			if ((rc = older_table(c, spec, err)) < 0)
				return -1;
			if (rc == 0)
				continue;
			c->nolds++;
		}
		if (remove_delete(c, d, err) != 0)
			return -1;
	}
	return 0;
}

/* The delete files of a chosen group that the replace removes: those that
 * name no live data file of the partition that stays (every one they apply
 * to is rewritten). */
static int choose_deletes(struct compact *c, const char *key, const json_t *g,
                          const json_t *rewritten, struct fl_err *err)
{
	const json_t *by_path = json_object_get(g, "by-path");
	json_t *d;
	size_t i;

	json_array_foreach(json_object_get(c->dels, key), i, d)
	{
		const char *p;
		json_t *v;
		bool keep = false;

		json_object_foreach(json_object_get(d, "targets"), p, v)
		{
			if (json_object_get(by_path, p) != NULL &&
			    json_object_get(rewritten, p) == NULL)
				keep = true;
		}
		if (!keep && remove_delete(c, d, err) != 0)
			return -1;
	}
	return 0;
}

/* Chooses, per partition of the current spec, the files to rewrite: every
 * file with deletes, and the small files when there are two or more or
 * when a file with deletes is rewritten anyway; then the delete files that
 * go with them.  Every manifest holding a chosen file is
 * dropped; one that also holds files that stay is written again with those
 * as EXISTING (rewrite_all), so any subset can be compacted. */
static int choose(struct compact *c, struct fl_err *err)
{
	const char *k;
	json_t *g, *f, *m, *rewritten = json_object();
	size_t i;
	int rc = -1;

	if (rewritten == NULL)
		goto nomem;
	json_object_foreach(c->groups, k, g)
	{
		json_t *files = json_object_get(g, "files"), *cand;
		size_t nsmall = 0, ndel = 0;
		bool moves = json_is_true(json_object_get(g, "moves"));

		json_array_foreach(files, i, f)
		{
			nsmall += json_is_true(json_object_get(f, "small"));
			ndel += has_deletes(f);
		}
		if (!moves && nsmall < 2 && ndel == 0)
			continue;
		cand = json_array();
		if (cand == NULL)
			goto nomem;
		bool partial = false;

		json_array_foreach(files, i, f)
		{
			if (!moves && !json_is_true(json_object_get(f, "small")) && !has_deletes(f))
				continue;
			if (moves && c->move_bytes > 0 && c->move_bytes >= c->move_cap) {
				/* The run has taken its share: this file waits, and
				 * the unpartitioned equality deletes that apply to it
				 * stay. */
				json_int_t seq = json_integer_value(json_object_get(f, "seq"));

				c->left_older++;
				if (seq < c->other_min_seq)
					c->other_min_seq = seq;
				partial = true;
				continue;
			}
			if (moves)
				c->move_bytes += json_integer_value(json_object_get(f, "size"));
			count_chosen(c->mlive, f);
			if (json_array_append(cand, f) != 0 ||
			    json_object_set_new(rewritten,
			                        json_string_value(json_object_get(f, "path")),
			                        json_true()) != 0 ||
			    mark_removed(c, f, err) != 0) {
				json_decref(cand);
				goto nomem;
			}
		}
		if (json_array_size(cand) == 0) {
			json_decref(cand);
			continue;
		}
		if (partial && json_object_set_new(g, "partial", json_true()) != 0) {
			json_decref(cand);
			goto nomem;
		}
		c->parts++;
		c->removed += (json_int_t)json_array_size(cand);
		if (moves)
			c->migrated += (json_int_t)json_array_size(cand);
		c->bytes_removed += group_bytes(cand);
		if (json_object_set_new(g, "files", cand) != 0 ||
		    json_array_append(c->plan, g) != 0)
			goto nomem;
	}
	json_array_foreach(c->plan, i, g)
	{
		char *key = part_key(json_integer_value(json_object_get(g, "spec-id")),
		                     json_object_get(g, "partition"));

		if (key == NULL)
			goto nomem;
		rc = choose_deletes(c, key, g, rewritten, err);
		free(key);
		if (rc != 0)
			goto out;
		rc = -1;
	}
	if (choose_eq_deletes(c, err) != 0)
		goto out;
	json_object_foreach(c->mlive, k, m)
	{
		if (!some_chosen(m))
			continue;
		if (json_array_append_new(c->drop, json_string(k)) != 0)
			goto nomem;
		if (!all_chosen(m))
			c->carried++;
	}
	rc = 0;
	goto out;
nomem:
	nomem(err);
out:
	json_decref(rewritten);
	return rc;
}

/* The live entries of the dropped manifests of one content that the
 * replace keeps, as EXISTING entries with their own snapshot id, sequence
 * numbers and (v3 data files) inherited first_row_id. */
struct carry {
	struct st_entry_copy *v;
	struct st_value **parts;
	size_t n, cap;
	json_t *hold; /* the decoded manifests the copies borrow strings from */
};

static void carry_free(struct carry *k)
{
	for (size_t i = 0; i < k->n; i++) {
		st_entry_copy_free(&k->v[i]);
		free(k->parts[i]);
	}
	free(k->v);
	free(k->parts);
	json_decref(k->hold);
	memset(k, 0, sizeof(*k));
}

static int carry_one(const struct st_snapshot_table *t, struct carry *k, const json_t *e,
                     const json_t *mf, bool has_frid, json_int_t frid, struct fl_err *err)
{
	struct st_entry_copy *e2;
	size_t np;

	if (k->n == k->cap) {
		size_t cap = k->cap ? k->cap * 2 : 16;
		void *v = realloc(k->v, cap * sizeof(*k->v)), *p;

		if (v == NULL)
			return nomem(err);
		k->v = v;
		p = realloc(k->parts, cap * sizeof(*k->parts));
		if (p == NULL)
			return nomem(err);
		k->parts = p;
		k->cap = cap;
	}
	e2 = &k->v[k->n];
	if (st_entry_copy_from_json(e, mf, NULL, e2, err) != 0)
		return -1;
	if (st_snapshot_partition_parse(
	            t, json_object_get(json_object_get(e, "data_file"), "partition"),
	            &k->parts[k->n], &np, err) != 0) {
		st_entry_copy_free(e2);
		return -1;
	}
	e2->file.partition = k->parts[k->n];
	if (e2->file.content == ST_CONTENT_DATA && !e2->file.has_first_row_id && has_frid) {
		e2->file.has_first_row_id = true;
		e2->file.first_row_id = frid;
	}
	k->n++;
	return 0;
}

/* The entries of a carry for the manifest writer (each pointing at its
 * copy's file: the array moved while it grew). */
static int kept_entries(const struct carry *k, struct st_manifest_entry **out, struct fl_err *err)
{
	*out = calloc(k->n ? k->n : 1, sizeof(**out));
	if (*out == NULL)
		return nomem(err);
	for (size_t i = 0; i < k->n; i++) {
		(*out)[i] = k->v[i].entry;
		(*out)[i].file = &k->v[i].file;
	}
	return 0;
}

static int carry_manifests(struct compact *c, json_int_t content, const struct st_snapshot_table *t,
                           struct carry *k, struct fl_err *err)
{
	size_t i, j;
	const json_t *p, *e;

	k->hold = json_array();
	if (k->hold == NULL)
		return nomem(err);
	json_array_foreach(c->drop, i, p)
	{
		const char *uri = json_string_value(p);
		const json_t *m = json_object_get(c->mlive, uri), *mf = json_array_get(m, 2);
		const json_t *mfrid = json_object_get(mf, "first_row_id");
		json_int_t next = json_integer_value(mfrid);
		json_t *entries = NULL;

		if (all_chosen(m) ||
		    json_integer_value(json_object_get(mf, "content")) != content ||
		    json_integer_value(json_object_get(mf, "partition_spec_id")) != t->spec_id)
			continue;
		if (st_avro_read_all(c->io, uri, MAX_MANIFEST_READ, NULL, &entries, err) != 0 ||
		    json_array_append_new(k->hold, entries) != 0)
			return entries == NULL ? -1 : nomem(err);
		json_array_foreach(entries, j, e)
		{
			const json_t *df = json_object_get(e, "data_file");
			const char *path = json_string_value(json_object_get(df, "file_path"));
			bool has_frid = false;
			json_int_t frid = 0;
			char *id;
			bool gone;

			if (json_integer_value(json_object_get(df, "content")) == 0 &&
			    !json_is_integer(json_object_get(df, "first_row_id")) &&
			    json_is_integer(mfrid)) {
				has_frid = true;
				frid = next;
				next += json_integer_value(json_object_get(df, "record_count"));
			}
			if (json_integer_value(json_object_get(e, "status")) == 2 || path == NULL)
				continue;
			id = entry_id(path, json_object_get(df, "content_offset"));
			if (id == NULL)
				return nomem(err);
			gone = json_object_get(c->removed_ids, id) != NULL;
			free(id);
			if (!gone && carry_one(t, k, e, mf, has_frid, frid, err) != 0)
				return fl_err_prefix(err, "table %s: manifest %.200s", c->table,
				                     uri);
		}
	}
	return 0;
}

/* The writer's columns and the reader's projection from the schema (flat,
 * primitive fields); for v3 then _row_id and _last_updated_sequence_number
 * (spec "Row Lineage"), which a moved row keeps. */
static int schema_columns(const struct compact *c, struct st_parquet_column **cols,
                          struct st_parquet_want **want, size_t *n, struct fl_err *err)
{
	const json_t *fields = json_object_get(c->t.schema, "fields"), *f;
	size_t i, nf = json_array_size(fields);

	*n = nf + (c->t.format_version >= 3 ? 2 : 0);
	*cols = calloc(*n ? *n : 1, sizeof(**cols));
	*want = calloc(*n ? *n : 1, sizeof(**want));
	if (*cols == NULL || *want == NULL)
		return nomem(err);
	for (i = nf; i < *n; i++) {
		(*cols)[i].name = i == nf ? "_row_id" : "_last_updated_sequence_number";
		(*cols)[i].field_id = i == nf ? ST_FIELD_ROW_ID : ST_FIELD_LAST_UPDATED;
		(*cols)[i].type.id = ST_TYPE_LONG;
		(*want)[i].field_id = (*cols)[i].field_id;
		(*want)[i].type = (*cols)[i].type;
	}
	json_array_foreach(fields, i, f)
	{
		const char *type = json_string_value(json_object_get(f, "type"));

		(*cols)[i].name = json_string_value(json_object_get(f, "name"));
		(*cols)[i].field_id = (int32_t)json_integer_value(json_object_get(f, "id"));
		(*cols)[i].required = json_is_true(json_object_get(f, "required"));
		if (type == NULL || (*cols)[i].name == NULL)
			return fl_err_set(err, FL_ERR_UNSUPPORTED,
			                  "table %s: column %zu has a nested type; compaction of "
			                  "nested columns is not yet supported",
			                  c->table, i);
		if (st_type_parse(type, &(*cols)[i].type, err) != 0)
			return fl_err_prefix(err, "table %s: column %s", c->table, (*cols)[i].name);
		(*want)[i].field_id = (*cols)[i].field_id;
		(*want)[i].type = (*cols)[i].type;
		(*want)[i].required = (*cols)[i].required;
	}
	return 0;
}

/* The new files of one partition, written with the schema's columns. */
struct rewrite {
	struct compact *c;
	const struct st_parquet_column *cols;
	size_t ncols; /* with the two lineage columns of v3 last */
	bool lineage; /* v3 */
	char *schema_json;
	char *data_uri; /* <location>/data: where the new files go */
	enum st_parquet_codec codec;
	const struct st_name_mapping *mapping; /* schema.name-mapping.default; may be NULL */
	/* The table's default sort order when it can be applied (nkeys > 0):
	 * rows are buffered (copies in arena), sorted, then written. */
	struct sort_key *keys;
	size_t nkeys;
	int32_t sort_order_id;
	struct fl_arena *arena;
	struct st_value **buf;
	size_t nbuf, capbuf, buf_bytes;
	int compression_level; /* write.parquet.compression-level; 0 = the codec's default */
	/* The group in progress moves from an older spec (c->route): its rows
	 * are buffered with their partition in the current spec after the
	 * sort keys, sorted by it first, and each new file holds one. */
	bool moves;
	const struct st_value *file_part; /* the open file's, one of owned */
	struct st_value **owned; /* the moved files' partitions */
	size_t nowned;
	struct st_data_writer dw; /* the open file, if any */
	struct st_eqdeletes eq; /* the group's equality deletes */
	struct st_parquet_reader_opts eq_ro; /* how they are read */
	/* what was written: parallel arrays */
	struct st_data_file *files;
	struct st_parquet_metrics *ms;
	size_t n;
	json_int_t group_added, group_bytes;
};

static int rewrite_open(struct rewrite *rw, struct fl_err *err)
{
	const struct st_data_writer_opts o = {.io = rw->c->io,
	                                      .dir_uri = rw->data_uri,
	                                      .tag = "compact",
	                                      .columns = rw->cols,
	                                      .n_columns = rw->ncols,
	                                      .schema_json = rw->schema_json,
	                                      .codec = rw->codec,
	                                      .compression_level = rw->compression_level};

	return st_data_writer_open(&o, &rw->dw, err);
}

/* Finishes the open file and records it with the partition values. */
static int rewrite_close(struct rewrite *rw, const struct st_value *part, struct fl_err *err)
{
	struct st_parquet_metrics m;
	void *grown;
	char *uri = NULL;
	int rc = st_data_writer_close(&rw->dw, &uri, &m, err);

	if (rc == 0 && json_array_append_new(rw->c->written, json_string(uri)) != 0)
		rc = nomem(err);
	free(uri);
	if (rc != 0) {
		st_parquet_metrics_free(&m);
		return -1;
	}
	grown = realloc(rw->ms, sizeof(*rw->ms) * (rw->n + 1));
	if (grown != NULL)
		rw->ms = grown;
	grown = grown != NULL ? realloc(rw->files, sizeof(*rw->files) * (rw->n + 1)) : NULL;
	if (grown == NULL) {
		st_parquet_metrics_free(&m);
		return nomem(err);
	}
	rw->files = grown;
	rw->ms[rw->n] = m;
	memset(&rw->files[rw->n], 0, sizeof(rw->files[rw->n]));
	st_parquet_metrics_to_data_file(&rw->ms[rw->n], &rw->files[rw->n]);
	rw->files[rw->n].file_path = json_string_value(
	        json_array_get(rw->c->written, json_array_size(rw->c->written) - 1));
	rw->files[rw->n].partition = part;
	if (rw->nkeys > 0) {
		rw->files[rw->n].has_sort_order_id = true;
		rw->files[rw->n].sort_order_id = rw->sort_order_id;
	}
	rw->group_added++;
	rw->group_bytes += m.file_size;
	rw->n++;
	return 0;
}

/* Writes one row to the open file (opened when none is), rolling it at the
 * target size. */
static int write_one(struct rewrite *rw, const struct st_value *part, const struct st_value *row,
                     struct fl_err *err)
{
	if (rw->dw.w == NULL && rewrite_open(rw, err) != 0)
		return -1;
	if (st_parquet_writer_write_row(rw->dw.w, row, err) != 0)
		return -1;
	if (st_parquet_writer_size(rw->dw.w) >= (uint64_t)rw->c->target &&
	    rewrite_close(rw, part, err) != 0)
		return -1;
	return 0;
}

/* ---- the sort order ---- */

#define SORT_BUFFER_BYTES ((size_t)256 << 20) /* rows sorted at once, at most */

struct sort_key {
	size_t col; /* the source column */
	size_t at; /* where a buffered row holds the key: col, or past the columns */
	bool identity;
	struct st_transform tr;
	struct st_type type; /* the key's (the transform's result) */
	bool desc, nulls_first;
};

/* The keys of the table's default sort order over the writer's columns;
 * none for an unsorted table.  A transform other than identity sorts by
 * its result (spec "Sorting": bucket[N], truncate[W], year, month, day,
 * hour), computed once per buffered row; a void field sorts nothing.  A
 * field this build cannot sort by (a source that is not a top-level column,
 * a transform that does not apply to it) leaves the order unapplied, and
 * *note says why (for the report). */
static int sort_keys(const struct compact *c, const struct st_parquet_column *cols, size_t ncols,
                     struct sort_key **out, size_t *n, int32_t *order_id, char *note, size_t cap,
                     struct fl_err *err)
{
	json_int_t id = json_integer_value(json_object_get(c->meta, "default-sort-order-id"));
	const json_t *order =
	        fl_json_find_int(json_object_get(c->meta, "sort-orders"), "order-id", id);
	const json_t *fields = json_object_get(order, "fields"), *f;
	size_t i, k = 0;

	*out = NULL;
	*n = 0;
	note[0] = '\0';
	if (id == 0 || json_array_size(fields) == 0)
		return 0;
	*out = calloc(json_array_size(fields), sizeof(**out));
	if (*out == NULL)
		return nomem(err);
	json_array_foreach(fields, i, f)
	{
		const char *tr = json_string_value(json_object_get(f, "transform"));
		json_int_t src = json_integer_value(json_object_get(f, "source-id"));
		const char *dir = json_string_value(json_object_get(f, "direction"));
		const char *nulls = json_string_value(json_object_get(f, "null-order"));
		struct sort_key *key = &(*out)[k];
		struct fl_err why = {0};
		size_t col = 0;

		while (col < ncols && cols[col].field_id != src)
			col++;
		if (tr == NULL || col == ncols ||
		    st_transform_parse(tr, &cols[col].type, &key->tr, &key->type, &why) != 0) {
			snprintf(note, cap,
			         "sort order %" JSON_INTEGER_FORMAT
			         " not applied: field %zu (%.40s of "
			         "source %" JSON_INTEGER_FORMAT ") %.80s",
			         id, i, tr != NULL ? tr : "?", src,
			         col == ncols ? "is not a top-level column" : why.msg);
			free(*out);
			*out = NULL;
			return 0;
		}
		if (key->tr.kind == ST_TR_VOID)
			continue;
		key->col = col;
		key->identity = key->tr.kind == ST_TR_IDENTITY;
		key->at = key->identity ? col : ncols + k;
		key->desc = dir != NULL && strcmp(dir, "desc") == 0;
		/* Spec: nulls-first is the default for ascending, nulls-last
		 * for descending, when a writer leaves it out. */
		key->nulls_first = nulls != NULL ? strcmp(nulls, "nulls-first") == 0 : !key->desc;
		k++;
	}
	*n = k;
	*order_id = (int32_t)id;
	return 0;
}

/* Types whose values point at bytes (st_value.v.bin). */
static bool is_bytes(const struct st_type *t)
{
	return t->id == ST_TYPE_STRING || t->id == ST_TYPE_UUID || t->id == ST_TYPE_FIXED ||
	       t->id == ST_TYPE_BINARY;
}

static bool is_nan(const struct st_type *t, const struct st_value *v)
{
	return (t->id == ST_TYPE_DOUBLE && v->v.d != v->v.d) ||
	       (t->id == ST_TYPE_FLOAT && v->v.f != v->v.f);
}

/* Orders two values of type t: nulls first or last whatever the
 * direction, NaN after numbers ascending. */
static int cmp_value(const struct st_type *t, const struct st_value *x, const struct st_value *y,
                     bool nulls_first, bool desc)
{
	int c;

	if (x->null || y->null) {
		if (x->null && y->null)
			return 0;
		return x->null == nulls_first ? -1 : 1;
	}
	if (is_nan(t, x) || is_nan(t, y))
		c = is_nan(t, x) - is_nan(t, y);
	else
		c = st_value_compare(t, x, y);
	return desc ? -c : c;
}

/* Orders two buffered rows' partitions in the current spec (moves). */
static int cmp_parts(const struct rewrite *rw, const struct st_value *a, const struct st_value *b)
{
	for (size_t j = 0; j < rw->c->nroute; j++) {
		int c = cmp_value(&rw->c->route[j].type, &a[j], &b[j], true, false);

		if (c != 0)
			return c;
	}
	return 0;
}

static int cmp_rows(const void *pa, const void *pb, void *arg)
{
	const struct st_value *a = *(struct st_value *const *)pa;
	const struct st_value *b = *(struct st_value *const *)pb;
	const struct rewrite *rw = arg;
	size_t at = rw->ncols + rw->nkeys;
	int c = rw->moves ? cmp_parts(rw, a + at, b + at) : 0;

	for (size_t k = 0; c == 0 && k < rw->nkeys; k++) {
		const struct sort_key *key = &rw->keys[k];

		c = cmp_value(&key->type, &a[key->at], &b[key->at], key->nulls_first, key->desc);
	}
	return c;
}

/* Keeps a copy of a moved row's partition (its values' bytes too) as the
 * open file's. */
static int own_part(struct rewrite *rw, const struct st_value *p, struct fl_err *err)
{
	size_t n = rw->c->nroute, bytes = n * sizeof(*p);
	struct st_value *copy, **grown;
	uint8_t *at;

	for (size_t j = 0; j < n; j++)
		if (!p[j].null && is_bytes(&rw->c->route[j].type))
			bytes += p[j].v.bin.len;
	grown = realloc(rw->owned, sizeof(*grown) * (rw->nowned + 1));
	if (grown == NULL)
		return nomem(err);
	rw->owned = grown;
	copy = malloc(bytes ? bytes : 1);
	if (copy == NULL)
		return nomem(err);
	rw->owned[rw->nowned++] = copy;
	at = (uint8_t *)(copy + n);
	for (size_t j = 0; j < n; j++) {
		copy[j] = p[j];
		if (!p[j].null && is_bytes(&rw->c->route[j].type)) {
			if (p[j].v.bin.len > 0)
				memcpy(at, p[j].v.bin.p, p[j].v.bin.len);
			copy[j].v.bin.p = at;
			at += p[j].v.bin.len;
		}
	}
	rw->file_part = copy;
	return 0;
}

/* Sorts the buffered rows and writes them; the last file is closed so that
 * each file holds one sorted run. */
static int flush_sorted(struct rewrite *rw, const struct st_value *part, struct fl_err *err)
{
	size_t at = rw->ncols + rw->nkeys;
	int rc = 0;

	if (rw->nbuf == 0)
		return 0;
	qsort_r(rw->buf, rw->nbuf, sizeof(*rw->buf), cmp_rows, rw);
	for (size_t i = 0; i < rw->nbuf && rc == 0; i++) {
		if (rw->moves &&
		    (rw->file_part == NULL || cmp_parts(rw, rw->file_part, rw->buf[i] + at) != 0)) {
			if (rw->dw.w != NULL)
				rc = rewrite_close(rw, rw->file_part, err);
			if (rc == 0)
				rc = own_part(rw, rw->buf[i] + at, err);
		}
		if (rc == 0)
			rc = write_one(rw, rw->moves ? rw->file_part : part, rw->buf[i], err);
	}
	if (rc == 0 && rw->dw.w != NULL)
		rc = rewrite_close(rw, rw->moves ? rw->file_part : part, err);
	rw->file_part = NULL;
	fl_arena_free(rw->arena);
	rw->arena = NULL;
	rw->nbuf = 0;
	rw->buf_bytes = 0;
	return rc;
}

/* Copies a row (byte values too: they live in the reader's buffers) into
 * the sort buffer, flushing it when full. */
static int buffer_row(struct rewrite *rw, const struct st_value *part, const struct st_value *row,
                      struct fl_err *err)
{
	struct st_value *copy;
	size_t width;

	if (rw->buf_bytes >= SORT_BUFFER_BYTES && flush_sorted(rw, part, err) != 0)
		return -1;
	if (rw->arena == NULL && (rw->arena = fl_arena_new()) == NULL)
		return nomem(err);
	if (rw->nbuf == rw->capbuf) {
		size_t cap = rw->capbuf ? rw->capbuf * 2 : 1024;
		void *grown = realloc(rw->buf, cap * sizeof(*rw->buf));

		if (grown == NULL)
			return nomem(err);
		rw->buf = grown;
		rw->capbuf = cap;
	}
	/* the columns, the transformed keys, then (moves) the partition */
	width = rw->ncols + rw->nkeys + (rw->moves ? rw->c->nroute : 0);
	copy = fl_arena_alloc(rw->arena, width * sizeof(*copy));
	if (copy == NULL)
		return nomem(err);
	rw->buf_bytes += width * sizeof(*copy);
	for (size_t j = 0; j < rw->ncols; j++) {
		copy[j] = row[j];
		if (!row[j].null && is_bytes(&rw->cols[j].type)) {
			uint8_t *p = fl_arena_alloc(rw->arena, row[j].v.bin.len + 1);

			if (p == NULL)
				return nomem(err);
			memcpy(p, row[j].v.bin.p, row[j].v.bin.len);
			copy[j].v.bin.p = p;
			rw->buf_bytes += row[j].v.bin.len;
		}
	}
	/* a truncated string points into its column's copy, in the arena too */
	for (size_t k = 0; k < rw->nkeys; k++) {
		const struct sort_key *key = &rw->keys[k];

		if (!key->identity)
			st_transform_apply(&key->tr, &rw->cols[key->col].type, &copy[key->col],
			                   &copy[key->at]);
	}
	for (size_t j = 0; rw->moves && j < rw->c->nroute; j++) {
		const struct route *r = &rw->c->route[j];

		st_transform_apply(&r->tr, &rw->cols[r->col].type, &copy[r->col],
		                   &copy[rw->ncols + rw->nkeys + j]);
	}
	rw->buf[rw->nbuf++] = copy;
	return 0;
}

/* The positions deleted from data file f: the union of the vectors or
 * position delete files link_deletes found for it, into set (initialised
 * here). */
static int read_deletes(struct rewrite *rw, const json_t *f, struct st_posset *set,
                        struct fl_err *err)
{
	const char *path = json_string_value(json_object_get(f, "path"));
	size_t i;
	const json_t *d;

	st_posset_init(set, json_integer_value(json_object_get(f, "records")), NULL);
	json_array_foreach(json_object_get(f, "dels"), i, d)
	{
		const char *uri = json_string_value(json_object_get(d, "path"));
		struct st_parquet_source src;
		struct st_parquet_io_ctx ictx;

		if (is_dv(d)) {
			if (st_dv_read(rw->c->io, uri,
			               json_integer_value(json_object_get(d, "off")),
			               json_integer_value(json_object_get(d, "len")), 0, set,
			               err) != 0)
				return -1;
		} else if (st_parquet_source_io(&src, &ictx, rw->c->io, uri, err) != 0 ||
		           st_pos_deletes_for(&src, NULL, path, set, err) != 0) {
			return fl_err_prefix(err, "position delete file %.200s", uri);
		}
	}
	st_posset_finish(set);
	return 0;
}

/* Fills in the lineage of a moved row (spec "Row Lineage"): a null _row_id
 * is the file's first_row_id plus the row's position, a null
 * _last_updated_sequence_number the file's data sequence number; both stay
 * null when the file has no first_row_id (written before an upgrade). */
static void inherit_lineage(struct st_value *id, struct st_value *seq, const json_t *f, int64_t pos)
{
	const json_t *frid = json_object_get(f, "frid");

	if (!json_is_integer(frid))
		return;
	if (id->null) {
		id->null = false;
		id->v.l = json_integer_value(frid) + pos;
	}
	if (seq->null) {
		seq->null = false;
		seq->v.l = json_integer_value(json_object_get(f, "seq"));
	}
}

/* Reads the equality delete files that apply to the files of group g,
 * each once (st_eqdeletes). */
static int eq_load(struct rewrite *rw, const json_t *g, struct fl_err *err)
{
	const json_t *f, *d, *v;
	size_t i, k, j;

	json_array_foreach(json_object_get(g, "files"), i, f)
	{
		json_array_foreach(json_object_get(f, "eqs"), k, d)
		{
			const char *uri = json_string_value(json_object_get(d, "path"));
			const json_t *ids = json_object_get(d, "ids");
			int32_t id[ST_EQSET_MAX_FIELDS];
			size_t n = json_array_size(ids);

			json_array_foreach(ids, j, v)
			{
				if (!json_is_integer(v) || json_integer_value(v) < 0 ||
				    json_integer_value(v) > INT32_MAX)
					return fl_err_set(
					        err, FL_ERR_BAD_REQUEST,
					        "equality delete file %.200s: equality_ids "
					        "holds a value that is not a field id",
					        uri);
				if (j < ST_EQSET_MAX_FIELDS)
					id[j] = (int32_t)json_integer_value(v);
			}
			if (st_eqdeletes_add(&rw->eq, rw->c->io, uri, id, n,
			                     json_integer_value(json_object_get(d, "seq")),
			                     err) != 0)
				return -1;
		}
	}
	return 0;
}

/* Streams the rows of every file of group g, less the deleted ones, into
 * new files rolled at the target size. */
static int rewrite_files(struct rewrite *rw, const json_t *g, const struct st_value *part,
                         const struct st_parquet_want *want, struct st_value *row,
                         struct fl_err *err)
{
	size_t i;
	const json_t *f;

	json_array_foreach(json_object_get(g, "files"), i, f)
	{
		const char *uri = json_string_value(json_object_get(f, "path"));
		struct st_parquet_source src;
		struct st_parquet_io_ctx ictx;
		struct st_parquet_reader *r = NULL;
		const struct st_parquet_batch *b;
		struct st_parquet_reader_opts ro = {.name_mapping = rw->mapping};
		struct st_posset gone = {0};
		size_t next_gone = 0;
		int64_t pos = 0;
		bool eqs = json_object_get(f, "eqs") != NULL;
		json_int_t seq = json_integer_value(json_object_get(f, "seq"));

		if (read_deletes(rw, f, &gone, err) != 0 ||
		    st_parquet_source_io(&src, &ictx, rw->c->io, uri, err) != 0 ||
		    st_parquet_reader_open(&src, &ro, &r, err) != 0)
			goto bad;
		/* A column without a field id would read as nulls: never rewrite
		 * such a file (its values would be lost). */
		for (size_t l = 0; l < st_parquet_reader_n_leaves(r); l++) {
			if (st_parquet_reader_leaf(r, l)->field_id < 0) {
				fl_err_set(
				        err, FL_ERR_UNSUPPORTED,
				        "column %.100s has no field id and the table's name mapping "
				        "does not name it; compacting such files is not yet supported",
				        st_parquet_reader_leaf(r, l)->path);
				goto bad;
			}
		}
		if (st_parquet_reader_project(r, want, rw->ncols, err) != 0)
			goto bad;
		for (;;) {
			if (st_parquet_reader_next(r, &b, err) != 0)
				goto bad;
			if (b == NULL)
				break;
			for (size_t k = 0; k < b->n_rows; k++, pos++) {
				while (next_gone < gone.n && gone.v[next_gone] < pos)
					next_gone++;
				if (next_gone < gone.n && gone.v[next_gone] == pos) {
					rw->c->rows_dropped++;
					continue;
				}
				st_parquet_batch_row(b, k, row);
				if (eqs && st_eqdeletes_match(&rw->eq, row, seq)) {
					rw->c->rows_dropped++;
					continue;
				}
				if (rw->lineage)
					inherit_lineage(&row[rw->ncols - 2], &row[rw->ncols - 1], f,
					                pos);
				if (rw->nkeys > 0 || rw->moves ? buffer_row(rw, part, row, err) != 0
				                               : write_one(rw, part, row, err) != 0)
					goto bad;
			}
		}
		st_parquet_reader_free(r);
		st_posset_free(&gone);
		if (pos != json_integer_value(json_object_get(f, "records")))
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "%.200s holds %" PRId64
			                  " rows, its manifest entry says %" JSON_INTEGER_FORMAT,
			                  uri, pos,
			                  json_integer_value(json_object_get(f, "records")));
		continue;
	bad:
		st_parquet_reader_free(r);
		st_posset_free(&gone);
		return fl_err_prefix(err, "%.200s", uri);
	}
	/* Moved rows wait for every group that moves (rewrite_all): the files
	 * of all the older partitions are cut by the current spec's. */
	if (rw->moves)
		return 0;
	if (rw->nkeys > 0 && flush_sorted(rw, part, err) != 0)
		return -1;
	if (rw->dw.w != NULL && rewrite_close(rw, part, err) != 0)
		return -1;
	return 0;
}

/* Rewrites group g: its equality deletes read, then its files. */
static int rewrite_group(struct rewrite *rw, const json_t *g, const struct st_value *part,
                         const struct st_parquet_want *want, struct st_value *row,
                         struct fl_err *err)
{
	int rc = eq_load(rw, g, err) == 0 ? rewrite_files(rw, g, part, want, row, err) : -1;

	st_eqdeletes_free(&rw->eq);
	return rc;
}

/* A delete manifest in the current list that the plan did not see: its
 * deletes may apply to files the run rewrote, whose new copies would bring
 * the deleted rows back.  FL_ERR_CONFLICT then. */
static int check_new_deletes(struct compact *c, const json_t *snap, struct fl_err *err)
{
	const char *luri = json_string_value(json_object_get(snap, "manifest-list"));
	json_t *list = NULL, *mf;
	size_t i;
	int rc = 0;

	if (json_integer_value(json_object_get(snap, "snapshot-id")) == c->base_snapshot)
		return 0;
	if (luri == NULL || st_avro_read_all(c->io, luri, MAX_MANIFEST_READ, NULL, &list, err) != 0)
		return luri == NULL
		               ? fl_err_set(err, FL_ERR_BAD_REQUEST,
		                            "table %s: the current snapshot has no manifest-list",
		                            c->table)
		               : -1;
	json_array_foreach(list, i, mf)
	{
		const char *m = json_string_value(json_object_get(mf, "manifest_path"));

		if (json_integer_value(json_object_get(mf, "content")) != 0 && m != NULL &&
		    json_object_get(c->listed, m) == NULL) {
			rc = fl_err_set(err, FL_ERR_CONFLICT,
			                "table %s: compaction aborted: a concurrent commit added "
			                "delete files (manifest %.200s)",
			                c->table, m);
			break;
		}
	}
	json_decref(list);
	return rc;
}

/* Under the row lock: the replace on top of the current state.  A commit
 * since the plan that left the dropped manifests in place (an append) is
 * simply carried; one that removed or rewrote them, or added deletes,
 * aborts the run. */
static int build_compact(void *arg, const json_t *current, json_t **updates, struct fl_err *err)
{
	struct compact *c = arg;
	const json_t *snap = cat_mt_head(current);
	const char **drop = NULL;
	json_t *snapshot = NULL;
	struct st_snapshot_parent parent = {0};
	size_t nd = json_array_size(c->drop);
	int rc = -1;

	if (snap == NULL)
		return fl_err_set(err, FL_ERR_CONFLICT,
		                  "table %s: compaction aborted: the table has no current snapshot "
		                  "any more",
		                  c->table);
	if (json_integer_value(json_object_get(current, "format-version")) != c->t.format_version)
		return fl_err_set(err, FL_ERR_CONFLICT,
		                  "table %s: compaction aborted: the table was upgraded meanwhile",
		                  c->table);
	if (check_new_deletes(c, snap, err) != 0)
		return -1;
	drop = calloc(nd, sizeof(*drop));
	if (drop == NULL)
		return nomem(err);
	for (size_t i = 0; i < nd; i++)
		drop[i] = json_string_value(json_array_get(c->drop, i));
	parent.snapshot_id = json_integer_value(json_object_get(snap, "snapshot-id"));
	parent.manifest_list = json_string_value(json_object_get(snap, "manifest-list"));
	parent.summary = json_object_get(snap, "summary");
	struct st_snapshot_opts so = {
	        .table = &c->t,
	        .parent = &parent,
	        .snapshot_id = c->snapshot_id,
	        .sequence_number =
	                json_integer_value(json_object_get(current, "last-sequence-number")) + 1,
	        .timestamp_ms = fl_now_ms(),
	        .attempt = ++c->attempt,
	        .first_row_id = json_integer_value(json_object_get(current, "next-row-id")),
	        .manifest = c->manifest,
	        .more = (const struct st_snapshot_manifest *const *)c->more,
	        .n_more = c->n_more,
	        .drop_manifests = drop,
	        .n_drop = nd,
	        .removed_deletes = c->removed_deletes,
	};
	if (st_snapshot_build(&so, &snapshot, err) != 0) {
		if (err->kind == FL_ERR_CONFLICT)
			fl_err_prefix(err,
			              "table %s: compaction aborted, a concurrent commit removed "
			              "files it rewrote",
			              c->table);
		goto out;
	}
	*updates = json_pack("[{s:s, s:O}, {s:s, s:s, s:s, s:I}]", "action", "add-snapshot",
	                     "snapshot", snapshot, "action", "set-snapshot-ref", "ref-name", "main",
	                     "type", "branch", "snapshot-id", (json_int_t)c->snapshot_id);
	if (*updates == NULL) {
		nomem(err);
		goto out;
	}
	json_decref(c->committed);
	c->committed = json_incref(snapshot);
	rc = 0;
out:
	json_decref(snapshot);
	free(drop);
	return rc;
}

/* The data file and DELETED entry of a file the replace removes, from its
 * plan record (plan_manifest); the spec wants a removed entry to carry the
 * snapshot id, sequence numbers and first_row_id it had.  ids: room for an
 * equality delete's field ids. */
static void removed_entry(const json_t *rec, const struct st_value *part, struct st_data_file *df,
                          struct st_manifest_entry *e, int32_t *ids)
{
	const json_t *eq = json_object_get(rec, "ids"), *v;
	size_t i;

	memset(df, 0, sizeof(*df));
	memset(e, 0, sizeof(*e));
	df->content = (enum st_file_content)json_integer_value(json_object_get(rec, "content"));
	df->file_path = json_string_value(json_object_get(rec, "path"));
	df->file_format = json_string_value(json_object_get(rec, "format"));
	if (df->file_format == NULL)
		df->file_format = "PARQUET";
	df->partition = part;
	df->record_count = json_integer_value(json_object_get(rec, "records"));
	df->file_size_in_bytes = json_integer_value(json_object_get(rec, "size"));
	df->referenced_data_file = json_string_value(json_object_get(rec, "ref"));
	df->has_content_offset = json_is_integer(json_object_get(rec, "off"));
	df->content_offset = json_integer_value(json_object_get(rec, "off"));
	df->content_size_in_bytes = json_integer_value(json_object_get(rec, "len"));
	df->has_first_row_id = json_is_integer(json_object_get(rec, "frid"));
	df->first_row_id = json_integer_value(json_object_get(rec, "frid"));
	json_array_foreach(eq, i, v) ids[i] = (int32_t)json_integer_value(v);
	df->equality_ids = ids;
	df->n_equality_ids = json_array_size(eq);
	e->status = ST_ENTRY_DELETED;
	e->file = df;
	e->has_snapshot_id = true;
	e->snapshot_id = json_integer_value(json_object_get(rec, "snapshot"));
	e->has_sequence_number = true;
	e->sequence_number = json_integer_value(json_object_get(rec, "seq"));
	e->has_file_sequence_number = true;
	e->file_sequence_number = json_integer_value(json_object_get(rec, "fseq"));
}

/* The delete manifest of spec t for the delete files of that spec the
 * replace removes (c->gone), DELETED, and those of the same manifests that
 * stay, EXISTING; *out stays NULL when the replace removes none of t. */
static int write_removed_of(struct compact *c, const struct st_snapshot_table *t,
                            struct st_snapshot_manifest **out, struct fl_err *err)
{
	size_t n = json_array_size(c->gone), i, nt = 0;
	struct st_data_file *dfs = calloc(n, sizeof(*dfs));
	struct st_manifest_entry *del = calloc(n, sizeof(*del));
	struct st_value **parts = calloc(n, sizeof(*parts));
	int32_t **ids = calloc(n, sizeof(*ids));
	struct st_manifest_entry *kept_e = NULL;
	struct carry kept = {0};
	const json_t *d;
	int rc = -1;

	if (dfs == NULL || del == NULL || parts == NULL || ids == NULL) {
		nomem(err);
		goto out;
	}
	json_array_foreach(c->gone, i, d)
	{
		size_t np, nids = json_array_size(json_object_get(d, "ids"));

		if (json_integer_value(json_object_get(d, "spec")) != t->spec_id)
			continue;
		ids[nt] = malloc((nids ? nids : 1) * sizeof(**ids));
		if (ids[nt] == NULL) {
			nomem(err);
			goto out;
		}
		if (st_snapshot_partition_parse(t, json_object_get(d, "partition"), &parts[nt], &np,
		                                err) != 0) {
			fl_err_prefix(err, "table %s", c->table);
			goto out;
		}
		removed_entry(d, parts[nt], &dfs[nt], &del[nt], ids[nt]);
		nt++;
	}
	if (nt == 0) {
		rc = 0;
		goto out;
	}
	if (carry_manifests(c, 1, t, &kept, err) != 0 || kept_entries(&kept, &kept_e, err) != 0)
		goto out;
	if (st_snapshot_manifest_write_rewrite(t, c->snapshot_id, ST_MANIFEST_DELETES, NULL, 0,
	                                       kept_e, kept.n, del, nt, out, err) != 0) {
		fl_err_prefix(err, "table %s: compaction delete manifest", c->table);
		goto out;
	}
	rc = 0;
out:
	carry_free(&kept);
	free(kept_e);
	for (i = 0; parts != NULL && i < n; i++)
		free(parts[i]);
	for (i = 0; ids != NULL && i < n; i++)
		free(ids[i]);
	free(ids);
	free(parts);
	free(dfs);
	free(del);
	return rc;
}

/* The delete manifests of the delete files the replace removes, one per
 * spec: the first is c->removed_deletes, the others go to c->more. */
static int write_removed_deletes(struct compact *c, struct fl_err *err)
{
	for (size_t s = 0; s <= c->nolds; s++) {
		struct st_snapshot_manifest *m = NULL;

		if (write_removed_of(c, s == 0 ? &c->t : &c->olds[s - 1], &m, err) != 0)
			return -1;
		if (m == NULL)
			continue;
		if (c->removed_deletes == NULL)
			c->removed_deletes = m;
		else
			c->more[c->n_more++] = m;
	}
	return 0;
}

/* Rewrites the plan's files and writes the replace manifest (once). */
static int rewrite_all(struct compact *c, struct fl_err *err)
{
	struct st_parquet_column *cols = NULL;
	struct st_parquet_want *want = NULL;
	struct st_value *row = NULL, **parts = NULL;
	struct st_data_file *dfs = NULL;
	struct st_manifest_entry *del = NULL, *kept_e = NULL;
	struct carry kept = {0};
	struct rewrite rw = {.c = c,
	                     .codec = st_data_codec(json_string_value(
	                             json_object_get(json_object_get(c->meta, "properties"),
	                                             "write.parquet.compression-codec")))};
	struct st_name_mapping *mapping = NULL;
	const char *mapping_text = json_string_value(json_object_get(
	        json_object_get(c->meta, "properties"), "schema.name-mapping.default"));
	size_t ncols = 0, np = json_array_size(c->plan), nd = 0, i, data_len;
	json_t *g;
	int rc = -1;

	/* Before any file is written: a level the codec does not have fails
	 * the compaction as it fails an ingest. */
	if (st_data_level(rw.codec, c->meta, &rw.compression_level, err) != 0) {
		fl_err_prefix(err, "table %s", c->table);
		goto out;
	}
	if (schema_columns(c, &cols, &want, &ncols, err) != 0)
		goto out;
	if (mapping_text != NULL &&
	    st_name_mapping_parse(mapping_text, strlen(mapping_text), &mapping, err) != 0) {
		fl_err_prefix(err, "table %s: schema.name-mapping.default", c->table);
		goto out;
	}
	rw.mapping = mapping;
	rw.cols = cols;
	rw.ncols = ncols;
	rw.lineage = c->t.format_version >= 3;
	rw.eq_ro.name_mapping = mapping;
	st_eqdeletes_init(&rw.eq, cols, ncols - (rw.lineage ? 2 : 0), &rw.eq_ro);
	if (sort_keys(c, cols, ncols, &rw.keys, &rw.nkeys, &rw.sort_order_id, c->sort_note,
	              sizeof(c->sort_note), err) != 0)
		goto out;
	if (rw.nkeys > 0)
		c->sort_order_id = rw.sort_order_id;
	rw.schema_json = json_dumps(c->t.schema, JSON_COMPACT);
	data_len =
	        strlen(json_string_value(json_object_get(c->meta, "location"))) + sizeof("/data");
	rw.data_uri = malloc(data_len);
	if (rw.data_uri != NULL)
		snprintf(rw.data_uri, data_len, "%s/data",
		         json_string_value(json_object_get(c->meta, "location")));
	row = calloc(ncols ? ncols : 1, sizeof(*row));
	parts = calloc(np ? np : 1, sizeof(*parts));
	dfs = calloc((size_t)c->removed, sizeof(*dfs));
	del = calloc((size_t)c->removed, sizeof(*del));
	if (rw.schema_json == NULL || rw.data_uri == NULL || row == NULL || parts == NULL ||
	    dfs == NULL || del == NULL) {
		nomem(err);
		goto out;
	}
	/* The groups of the current spec, then those that move, whose rows
	 * are written together at the end (their files are counted in all, not
	 * per group). */
	for (int pass = 0; pass < 2; pass++) {
		json_array_foreach(c->plan, i, g)
		{
			json_int_t spec = json_integer_value(json_object_get(g, "spec-id"));
			size_t nparts;

			rw.moves = json_is_true(json_object_get(g, "moves"));
			if (rw.moves != (pass == 1))
				continue;
			if (st_snapshot_partition_parse(spec_table(c, spec),
			                                json_object_get(g, "partition"), &parts[i],
			                                &nparts, err) != 0) {
				fl_err_prefix(err, "table %s", c->table);
				goto out;
			}
			rw.group_added = rw.group_bytes = 0;
			if (rewrite_group(&rw, g, parts[i], want, row, err) != 0) {
				fl_err_prefix(err, "table %s: rewriting", c->table);
				goto out;
			}
			if (!rw.moves && (json_object_set_new(g, "files-added",
			                                      json_integer(rw.group_added)) != 0 ||
			                  json_object_set_new(g, "bytes-added",
			                                      json_integer(rw.group_bytes)) != 0)) {
				nomem(err);
				goto out;
			}
		}
	}
	rw.moves = c->migrated > 0;
	if (rw.moves && flush_sorted(&rw, NULL, err) != 0) {
		fl_err_prefix(err, "table %s: rewriting", c->table);
		goto out;
	}
	c->added = (json_int_t)rw.n;
	for (i = 0; i < rw.n; i++)
		c->bytes_added += rw.files[i].file_size_in_bytes;
	/* One manifest per spec: the current one's with every new file, then
	 * each older one's with the DELETED entries of the files it moved;
	 * each with the live files of its dropped manifests that stay (of an
	 * older spec: those that wait for a later run), EXISTING. */
	/* at most a data and a delete manifest per spec */
	c->more = calloc(2 * (c->nolds + 1), sizeof(*c->more));
	if (c->more == NULL) {
		nomem(err);
		goto out;
	}
	for (size_t s = 0; s <= c->nolds; s++) {
		const struct st_snapshot_table *t = s == 0 ? &c->t : &c->olds[s - 1];
		struct st_snapshot_manifest *m = NULL;
		size_t from = nd;

		json_array_foreach(c->plan, i, g)
		{
			size_t k;
			const json_t *f;

			if (json_integer_value(json_object_get(g, "spec-id")) != t->spec_id)
				continue;
			json_array_foreach(json_object_get(g, "files"), k, f)
			{
				removed_entry(f, parts[i], &dfs[nd], &del[nd], NULL);
				nd++;
			}
		}
		if (s > 0 && nd == from)
			continue;
		carry_free(&kept);
		free(kept_e);
		kept_e = NULL;
		if (carry_manifests(c, 0, t, &kept, err) != 0 ||
		    kept_entries(&kept, &kept_e, err) != 0)
			goto out;
		if (s == 0 && rw.n + kept.n + nd == 0)
			continue; /* every row moved was deleted, and nothing else changed */
		if (st_snapshot_manifest_write_rewrite(t, c->snapshot_id, ST_MANIFEST_DATA,
		                                       s == 0 ? rw.files : NULL, s == 0 ? rw.n : 0,
		                                       kept_e, kept.n, del + from, nd - from, &m,
		                                       err) != 0) {
			fl_err_prefix(err, "table %s: compaction manifest", c->table);
			goto out;
		}
		if (c->manifest == NULL)
			c->manifest = m;
		else
			c->more[c->n_more++] = m;
	}
	if (json_array_size(c->gone) > 0 && write_removed_deletes(c, err) != 0)
		goto out;
	rc = 0;
out:
	st_data_writer_abort(&rw.dw);
	free(rw.data_uri);
	for (i = 0; i < rw.n; i++)
		st_parquet_metrics_free(&rw.ms[i]);
	free(rw.ms);
	free(rw.files);
	for (i = 0; parts != NULL && i < np; i++)
		free(parts[i]);
	free(parts);
	free(dfs);
	free(del);
	free(row);
	free(cols);
	free(want);
	free(rw.schema_json);
	free(rw.keys);
	free(rw.buf);
	fl_arena_free(rw.arena);
	for (i = 0; i < rw.nowned; i++)
		free(rw.owned[i]);
	free(rw.owned);
	carry_free(&kept);
	free(kept_e);
	st_name_mapping_free(mapping);
	return rc;
}

/* Deletes what an uncommitted run wrote, best effort. */
static void compact_discard(struct compact *c)
{
	struct fl_err ignored;

	if (c->manifest != NULL && st_io_delete(c->io, c->manifest->path, &ignored) != 0)
		ignored.kind = FL_ERR_NONE;
	for (size_t i = 0; i < c->n_more; i++) {
		if (st_io_delete(c->io, c->more[i]->path, &ignored) != 0)
			ignored.kind = FL_ERR_NONE;
	}
	if (c->removed_deletes != NULL &&
	    st_io_delete(c->io, c->removed_deletes->path, &ignored) != 0)
		ignored.kind = FL_ERR_NONE;
	if (delete_all(c->io, c->written, &ignored) != 0)
		ignored.kind = FL_ERR_NONE;
}

static int compact_setup(struct compact *c, struct fl_err *err)
{
	const char *loc = json_string_value(json_object_get(c->meta, "location"));
	json_int_t sid = json_integer_value(json_object_get(c->meta, "current-schema-id"));
	size_t len;

	if (loc == NULL)
		return fl_err_set(err, FL_ERR_INTERNAL, "table %s has no location", c->table);
	len = strlen(loc) + 16;
	c->mdir = malloc(len);
	if (c->mdir == NULL)
		return nomem(err);
	snprintf(c->mdir, len, "%s/metadata", loc);
	c->spec_id = json_integer_value(json_object_get(c->meta, "default-spec-id"));
	c->t.format_version = (int)json_integer_value(json_object_get(c->meta, "format-version"));
	c->t.schema = fl_json_find_int(json_object_get(c->meta, "schemas"), "schema-id", sid);
	c->t.schema_id = (int32_t)sid;
	c->t.spec = fl_json_find_int(json_object_get(c->meta, "partition-specs"), "spec-id",
	                             c->spec_id);
	c->t.spec_id = (int32_t)c->spec_id;
	c->t.metadata_dir = c->mdir;
	c->t.io = c->io;
	c->t.codec = ST_AVRO_CODEC_DEFLATE;
	if (c->t.schema == NULL)
		return fl_err_set(err, FL_ERR_INTERNAL, "table %s: the current schema is missing",
		                  c->table);
	c->snapshot_id = fl_random_id();
	return route_setup(c, err);
}

static void compact_free(struct compact *c)
{
	json_decref(c->meta);
	json_decref(c->groups);
	json_decref(c->dels);
	json_decref(c->eqdels);
	json_decref(c->listed);
	json_decref(c->gone);
	json_decref(c->removed_ids);
	json_decref(c->mlive);
	json_decref(c->drop);
	json_decref(c->plan);
	json_decref(c->written);
	json_decref(c->committed);
	st_snapshot_manifest_free(c->manifest);
	for (size_t i = 0; i < c->n_more; i++)
		st_snapshot_manifest_free(c->more[i]);
	free(c->more);
	st_snapshot_manifest_free(c->removed_deletes);
	free(c->mdir);
	free(c->route);
	free(c->olds);
	json_decref(c->older);
}

/* The report's numbers, per partition and in all. */
static json_t *compact_report(struct compact *c, bool dry_run)
{
	json_t *r = report_new("compact", c->table, dry_run), *g;
	size_t i;
	int bad = r == NULL;

	json_array_foreach(c->plan, i, g)
	{
		json_int_t b = group_bytes(json_object_get(g, "files"));

		if (dry_run) {
			json_int_t est = (b + c->target - 1) / c->target;

			c->added += est;
			c->bytes_added += b;
			bad |= json_object_set_new(g, "files-added", json_integer(est));
			bad |= json_object_set_new(g, "bytes-added", json_integer(b));
		}
		bad |= json_object_set_new(
		        g, "files-removed",
		        json_integer((json_int_t)json_array_size(json_object_get(g, "files"))));
		bad |= json_object_set_new(g, "bytes-removed", json_integer(b));
		bad |= json_object_del(g, "files");
		json_object_del(g, "cand");
		json_object_del(g, "by-path");
	}
	if (!bad) {
		bad |= json_object_set_new(r, "target-file-size-bytes", json_integer(c->target));
		bad |= json_object_set_new(r, "files-removed", json_integer(c->removed));
		bad |= json_object_set_new(r, "files-added", json_integer(c->added));
		bad |= json_object_set_new(r, "bytes-removed", json_integer(c->bytes_removed));
		bad |= json_object_set_new(r, "bytes-added", json_integer(c->bytes_added));
		bad |= json_object_set_new(r, "partitions", json_integer(c->parts));
		bad |= json_object_set_new(r, "delete-files-removed",
		                           json_integer((json_int_t)json_array_size(c->gone)));
		bad |= json_object_set_new(r, "manifests-rewritten", json_integer(c->carried));
		bad |= json_object_set_new(r, "files-moved-to-current-spec",
		                           json_integer(c->migrated));
		if (c->kept_older > 0)
			bad |= json_object_set_new(r, "files-of-older-specs-kept",
			                           json_integer(c->kept_older));
		if (c->left_older > 0)
			bad |= json_object_set_new(r, "files-of-older-specs-left",
			                           json_integer(c->left_older));
		if (c->sort_order_id != 0)
			bad |= json_object_set_new(r, "sort-order-id",
			                           json_integer(c->sort_order_id));
		if (c->sort_note[0] != '\0')
			bad |= json_object_set_new(r, "sort-order-not-applied",
			                           json_string(c->sort_note));
		bad |= json_object_set_new(r, "deleted-rows-dropped",
		                           json_integer(c->rows_dropped));
		bad |= json_object_set(r, "plan", c->plan);
		if (c->committed != NULL)
			bad |= json_object_set(r, "snapshot-id",
			                       json_object_get(c->committed, "snapshot-id"));
	}
	if (bad) {
		json_decref(r);
		return NULL;
	}
	return r;
}

int cat_maintain_compact(struct cat_db *db, const struct cat_warehouse *wh, const struct cat_ns *ns,
                         const char *name, const struct cat_limits *lim, unsigned pause_ms,
                         bool dry_run, json_t **report, struct fl_err *err)
{
	struct compact c = {.io = wh->io};
	struct cat_change ch = {.ns = *ns, .name = name};
	char tbuf[520], nsbuf[520], *mloc = NULL;
	json_t *list = NULL, *mf, *r;
	const json_t *snap;
	size_t i;
	int rc = -1;

	snprintf(tbuf, sizeof(tbuf), "%s.%s", cat_ns_str(ns, nsbuf, sizeof(nsbuf)), name);
	c.table = tbuf;
	c.groups = json_object();
	c.dels = json_object();
	c.eqdels = json_object();
	c.other_min_seq = INT64_MAX;
	c.older = json_object();
	c.listed = json_object();
	c.gone = json_array();
	c.removed_ids = json_object();
	c.mlive = json_object();
	c.drop = json_array();
	c.plan = json_array();
	c.written = json_array();
	if (c.groups == NULL || c.dels == NULL || c.eqdels == NULL || c.listed == NULL ||
	    c.gone == NULL || c.removed_ids == NULL || c.mlive == NULL || c.drop == NULL ||
	    c.plan == NULL || c.written == NULL || c.older == NULL) {
		nomem(err);
		goto out;
	}
	if (wh->io == NULL) {
		fl_err_set(err, FL_ERR_INTERNAL, "no storage handle for the warehouse");
		goto out;
	}
	if (load_meta(db, wh, ns, name, &mloc, &c.meta, err) != 0 ||
	    cat_mt_int_prop(c.meta, tbuf, "write.target-file-size-bytes", DEFAULT_TARGET_FILE_BYTES,
	                    &c.target, err) != 0 ||
	    cat_mt_int_prop(c.meta, tbuf, "floe.compact-max-move-bytes", DEFAULT_MAX_MOVE_BYTES,
	                    &c.move_cap, err) != 0)
		goto out;
	c.threshold = c.target / 4 * 3;
	if (compact_setup(&c, err) != 0)
		goto out;
	snap = cat_mt_head(c.meta);
	if (snap != NULL) {
		const char *luri = json_string_value(json_object_get(snap, "manifest-list"));

		if (luri == NULL) {
			fl_err_set(err, FL_ERR_BAD_REQUEST,
			           "table %s: the current snapshot has no manifest-list", tbuf);
			goto out;
		}
		if (st_avro_read_all(wh->io, luri, MAX_MANIFEST_READ, NULL, &list, err) != 0)
			goto fail;
		c.base_snapshot = json_integer_value(json_object_get(snap, "snapshot-id"));
		json_array_foreach(list, i, mf)
		{
			if (plan_manifest(&c, mf, err) != 0)
				goto fail;
		}
		if (link_deletes(&c, err) != 0)
			goto out;
	}
	if (choose(&c, err) != 0)
		goto out;
	if (!dry_run && c.removed > 0) {
		if (rewrite_all(&c, err) != 0) {
			compact_discard(&c);
			goto out;
		}
		if (pause_ms > 0) {
			struct timespec ts = {pause_ms / 1000, (long)(pause_ms % 1000) * 1000000L};

			nanosleep(&ts, NULL);
		}
		if (cat_table_append(db, wh, &ch, build_compact, &c, lim, NULL, err) != 0) {
			if (err->kind != FL_ERR_COMMIT_STATE_UNKNOWN)
				compact_discard(&c);
			goto out;
		}
	}
	r = compact_report(&c, dry_run);
	if (r == NULL) {
		nomem(err);
		goto out;
	}
	*report = r;
	rc = 0;
	goto out;
fail:
	fl_err_prefix(err, "table %s: compaction plan", tbuf);
out:
	cat_changes_free(&ch, 1);
	free(mloc);
	json_decref(list);
	compact_free(&c);
	return rc;
}
