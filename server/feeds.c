/* feeds.c - the daemon's feed workers: a directory or s3 feed's objects,
 * and the records pushed to a feed, into its table, exactly once.
 *
 * One run of a feed, all inside the transaction that claimed it:
 *   1. list the source's files that match the glob (dot-files and *.tmp are
 *      skipped: writers land files by rename); an s3 prefix is listed
 *      through the warehouse's object-IO handle, and an object taken into a
 *      batch is copied to a temporary file in ranged reads first;
 *   2. drop those already in the ledger (same key, size and mtime; for s3
 *      the LastModified);
 *   3. take the oldest first, up to the batch bounds (objects, bytes; bytes
 *      default to the table's write.target-file-size-bytes); a partial batch
 *      whose oldest object is younger than max-age waits;
 *   4. commit them through the in-process committer inside the same
 *      transaction, add their ledger rows and the batch record, COMMIT.
 * A crash anywhere before the COMMIT leaves neither snapshot nor ledger rows
 * (the next run redoes the batch; orphaned data files are harmless); after
 * it, both.  The batch id is a hash of the feed and its objects, so a redo
 * is recognised in the table history too.
 *
 * Pushes (h_feeds.c spools them) are group-committed the same way at each
 * run: the oldest waiting bodies of one format, up to the batch bounds, land
 * as one batch and are marked landed in the same transaction.
 *
 * Bad input: in dead-letter mode bad rows go to the dead-letter folder (on
 * S3 through the handle: the batch writes them locally, then they are
 * uploaded) and the rest commits.  An object that fails as a whole (cannot be parsed, or
 * any bad row in strict mode) is isolated by running the batch's objects one
 * by one; the one that fails alone is a poison object: copied whole to the
 * dead-letter folder with its reason and never retried.  Other failures
 * (storage, database) roll back and retry with backoff, and past
 * max-retries pause the feed. */
#include "feeds.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "libcrypto.h"
#include "batch.h"
#include "clock.h"
#include "inprocess.h"
#include "feed.h"
#include "io/io.h"
#include "log.h"
#include "whcache.h"

#define SCAN_MAX 100000 /* directory entries looked at per run */
#define DEFAULT_TARGET ((int64_t)512 << 20)

struct obj {
	char *key; /* file name inside the source directory, key under the s3 prefix,
	            * or "push/<id>" for a push */
	char *path; /* full path (a push's body is written to a temporary file; an s3
	             * object is copied to one when its batch lands) */
	char *uri; /* an s3 object's URI; NULL otherwise */
	bool tmp; /* path is a temporary copy, removed with the scan */
	int64_t size;
	int64_t mtime_ns; /* a push: when the worker took it */
	char etag[24];
	int64_t spool_id; /* a push's spool row; 0 for a directory object */
};

struct scan {
	struct obj *v;
	size_t n, cap;
	/* an s3 listing */
	const char *prefix; /* the source location, no trailing '/' */
	const char *glob;
	int64_t listed;
};

static void scan_free(struct scan *s)
{
	for (size_t i = 0; i < s->n; i++) {
		if (s->v[i].tmp && s->v[i].path != NULL)
			unlink(s->v[i].path);
		free(s->v[i].key);
		free(s->v[i].path);
		free(s->v[i].uri);
	}
	free(s->v);
}

/* A new zeroed entry at the end of s, or NULL when out of memory. */
static struct obj *scan_add(struct scan *s)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		struct obj *v = realloc(s->v, cap * sizeof(*v));

		if (v == NULL)
			return NULL;
		s->v = v;
		s->cap = cap;
	}
	memset(&s->v[s->n], 0, sizeof(s->v[s->n]));
	return &s->v[s->n];
}

static int by_age(const void *a, const void *b)
{
	const struct obj *x = a, *y = b;

	if (x->mtime_ns != y->mtime_ns)
		return x->mtime_ns < y->mtime_ns ? -1 : 1;
	return strcmp(x->key, y->key);
}

static bool skipped_name(const char *name)
{
	size_t n = strlen(name);

	return name[0] == '.' || (n >= 4 && strcmp(name + n - 4, ".tmp") == 0);
}

/* Lists the regular files of dir matching glob, oldest first. */
static int scan_dir(const char *dir, const char *glob, struct scan *s, struct fl_err *err)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t seen = 0;

	if (d == NULL)
		return fl_err_set(err, FL_ERR_IO, "source.path %s: %s", dir, strerror(errno));
	while ((e = readdir(d)) != NULL && seen++ < SCAN_MAX) {
		char path[PATH_MAX];
		struct stat st;

		if (skipped_name(e->d_name) || fnmatch(glob, e->d_name, FNM_PERIOD) != 0)
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= (int)sizeof(path) ||
		    stat(path, &st) != 0 || !S_ISREG(st.st_mode))
			continue;
		struct obj *o = scan_add(s);

		if (o == NULL)
			goto nomem;
		o->key = strdup(e->d_name);
		o->path = strdup(path);
		if (o->key == NULL || o->path == NULL) {
			free(o->key);
			free(o->path);
			goto nomem;
		}
		o->size = (int64_t)st.st_size;
		o->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
		snprintf(o->etag, sizeof(o->etag), "%lld", (long long)o->mtime_ns);
		s->n++;
	}
	closedir(d);
	if (s->n > 1) /* an empty scan has no array: qsort(NULL, 0) is undefined */
		qsort(s->v, s->n, sizeof(*s->v), by_age);
	return 0;
nomem:
	closedir(d);
	return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
}

/* One object of an s3 listing: kept when its key (relative to the prefix)
 * matches the glob, '*' not crossing '/', and its last segment is not a
 * dot-file or a *.tmp.  Its etag in the ledger is its LastModified. */
static int s3_listed(void *arg, const char *uri, uint64_t size, int64_t mtime_ms,
                     struct fl_err *err)
{
	struct scan *s = arg;
	size_t plen = strlen(s->prefix);
	const char *key = uri + plen + 1, *base;
	struct obj *o;

	if (strncmp(uri, s->prefix, plen) != 0 || uri[plen] != '/' || key[0] == '\0')
		return 0; /* the object at the prefix itself */
	if (++s->listed > SCAN_MAX)
		return fl_err_set(err, FL_ERR_TOO_LARGE, "listing stopped at %d objects", SCAN_MAX);
	base = strrchr(key, '/');
	base = base ? base + 1 : key;
	if (skipped_name(base) || fnmatch(s->glob, key, FNM_PATHNAME | FNM_PERIOD) != 0)
		return 0;
	o = scan_add(s);
	if (o == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	o->key = strdup(key);
	o->uri = strdup(uri);
	if (o->key == NULL || o->uri == NULL) {
		free(o->key);
		free(o->uri);
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	}
	o->size = (int64_t)size;
	o->mtime_ns = mtime_ms * 1000000;
	snprintf(o->etag, sizeof(o->etag), "%lld", (long long)mtime_ms);
	s->n++;
	return 0;
}

/* Lists the objects under an s3 prefix matching glob through the
 * warehouse's handle (following continuation tokens), oldest first; at most
 * SCAN_MAX objects are looked at per run. */
static int scan_s3(struct st_io *io, const char *prefix, const char *glob, struct scan *s,
                   struct fl_err *err)
{
	s->prefix = prefix;
	s->glob = glob;
	if (st_io_list(io, prefix, s3_listed, s, err) != 0) {
		if (err->kind != FL_ERR_TOO_LARGE || s->listed <= SCAN_MAX)
			return fl_err_prefix(err, "source.location %.200s", prefix);
		fl_err_clear(err);
	}
	if (s->n > 1) /* an empty scan has no array: qsort(NULL, 0) is undefined */
		qsort(s->v, s->n, sizeof(*s->v), by_age);
	return 0;
}

/* Copies an s3 object to a temporary file before its batch reads it. */
static int fetch(struct st_io *io, struct obj *o, struct fl_err *err)
{
	const char *tmp = getenv("TMPDIR"), *base;
	char path[PATH_MAX];
	uint64_t size = 0;
	int fd, n;

	if (o->uri == NULL || o->path != NULL)
		return 0;
	/* The copy keeps the key's last segment, so rejected rows' reasons name it. */
	base = strrchr(o->key, '/');
	base = base ? base + 1 : o->key;
	n = snprintf(path, sizeof(path), "%s/floe-feed-XXXXXX-%.200s", tmp && tmp[0] ? tmp : "/tmp",
	             base);
	fd = n > 0 && n < (int)sizeof(path)
	             ? mkstemps(path, (int)strlen(strrchr(path, '/') + 1) - 16)
	             : -1;
	if (fd < 0)
		return fl_err_set(err, FL_ERR_IO, "cannot create a temporary file: %s",
		                  strerror(errno));
	if (st_io_download(io, o->uri, fd, &size, err) != 0) {
		close(fd);
		unlink(path);
		return -1;
	}
	close(fd);
	o->path = strdup(path);
	if (o->path == NULL) {
		unlink(path);
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	}
	o->tmp = true;
	return 0;
}

/* The batch id: hex SHA-256 over the feed name, a replay salt and the
 * objects (key, size, etag). */
static void batch_id_of(const char *feed, const char *salt, struct obj *const *v, size_t n,
                        char out[65])
{
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	unsigned char h[32] = {0};
	unsigned int hl = 0;

	if (md != NULL && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1) {
		EVP_DigestUpdate(md, feed, strlen(feed) + 1);
		EVP_DigestUpdate(md, salt, strlen(salt) + 1);
		for (size_t i = 0; i < n; i++) {
			char size[24];

			snprintf(size, sizeof(size), "%lld", (long long)v[i]->size);
			EVP_DigestUpdate(md, v[i]->key, strlen(v[i]->key) + 1);
			EVP_DigestUpdate(md, size, strlen(size) + 1);
			EVP_DigestUpdate(md, v[i]->etag, strlen(v[i]->etag) + 1);
		}
		EVP_DigestFinal_ex(md, h, &hl);
	}
	EVP_MD_CTX_free(md);
	for (int i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", h[i]);
}

/* Copies a poison object whole into the dead-letter folder. */
static int copy_whole(const char *src, const char *dst, struct fl_err *err)
{
	char buf[65536];
	int in = open(src, O_RDONLY | O_CLOEXEC), out = -1, rc = -1;
	ssize_t n;

	if (in < 0)
		return fl_err_set(err, FL_ERR_IO, "cannot open %s: %s", src, strerror(errno));
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out < 0) {
		fl_err_set(err, FL_ERR_IO, "cannot create %s: %s", dst, strerror(errno));
		goto out;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n) {
			fl_err_set(err, FL_ERR_IO, "cannot write %s: %s", dst, strerror(errno));
			goto out;
		}
	if (n < 0 || fsync(out) != 0) {
		fl_err_set(err, FL_ERR_IO, "cannot copy %s: %s", src, strerror(errno));
		goto out;
	}
	rc = 0;
out:
	close(in);
	if (out >= 0)
		close(out);
	return rc;
}

static int mkdirs(const char *dir, struct fl_err *err)
{
	char p[PATH_MAX];

	if (snprintf(p, sizeof(p), "%s", dir) >= (int)sizeof(p))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "dead-letter path is too long");
	for (char *s = p + 1; *s; s++)
		if (*s == '/') {
			*s = '\0';
			if (mkdir(p, 0755) != 0 && errno != EEXIST)
				return fl_err_set(err, FL_ERR_IO, "cannot create %s: %s", p,
				                  strerror(errno));
			*s = '/';
		}
	if (mkdir(p, 0755) != 0 && errno != EEXIST)
		return fl_err_set(err, FL_ERR_IO, "cannot create %s: %s", p, strerror(errno));
	return 0;
}

/* Everything one feed run knows. */
struct run {
	struct srv_ctx *ctx;
	struct cat_feed_job *job;
	const json_t *def;
	struct st_committer *c;
	struct st_batch_opts bo;
	const char *key[16]; /* upsert: the definition's key (borrowed from def) */
	char dl_dir[PATH_MAX]; /* where the batch writes rejected rows (local) */
	char dl_uri[PATH_MAX]; /* an s3 dead-letter location ("" = dl_dir is it) */
	int64_t max_objects, max_bytes; /* this run's batch bounds */
	int64_t backlog; /* new source objects left for later runs */
	char salt[64]; /* of batch ids: "" normally, "replay:<id>" for a forced replay */
	int64_t t0_ms;
	/* totals of the run, for the batch record */
	struct cat_feed_batch rec;
	char batch_id[65];
	char error[256];
};

static const char *def_str(const json_t *def, const char *k)
{
	const char *v = json_string_value(json_object_get(def, k));

	return v ? v : "";
}

static int64_t def_int(const json_t *def, const char *k)
{
	return (int64_t)json_integer_value(json_object_get(def, k));
}

/* Records objects as processed by batch, in the claim's transaction: source
 * objects in the ledger, pushes in the spool. */
static int record(struct run *u, struct obj *const *v, const struct cat_feed_object *lo, size_t n,
                  const char *batch, struct fl_err *err)
{
	int64_t *ids;
	int rc;

	if (v[0]->spool_id == 0)
		return cat_feed_ledger_add(u->job, batch, lo, n, err);
	ids = calloc(n, sizeof(*ids));
	if (ids == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < n; i++)
		ids[i] = v[i]->spool_id;
	rc = cat_feed_spool_landed(u->job, batch, ids, n, err);
	free(ids);
	return rc;
}

/* Moves a batch's rejected rows and their reasons (local files) to an s3
 * dead-letter location; res names the uploaded rows after. */
static int move_rejected(struct run *u, struct st_batch_result *res, struct fl_err *err)
{
	const char *local = res->dead_letter_path, *base = strrchr(local, '/');
	char uri[sizeof(res->dead_letter_path)], euri[PATH_MAX];

	if (u->dl_uri[0] == '\0' || local[0] == '\0')
		return 0;
	base = base ? base + 1 : local;
	if (snprintf(uri, sizeof(uri), "%s/%s", u->dl_uri, base) >= (int)sizeof(uri) ||
	    snprintf(euri, sizeof(euri), "%s.errors.ndjson", uri) >= (int)sizeof(euri))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "dead-letter location is too long");
	if (st_io_upload(u->job->wh.io, local, uri, err) != 0 ||
	    (res->res.dead_letter_errors != NULL &&
	     st_io_upload(u->job->wh.io, res->res.dead_letter_errors, euri, err) != 0))
		return -1;
	unlink(local);
	if (res->res.dead_letter_errors != NULL)
		unlink(res->res.dead_letter_errors);
	memcpy(res->dead_letter_path, uri, sizeof(uri));
	return 0;
}

/* Lands n objects as one batch; -1 with err on failure (the caller decides
 * whether that is poison). */
static int land(struct run *u, struct obj *const *v, size_t n, struct fl_err *err)
{
	const char **inputs = calloc(n, sizeof(char *));
	struct cat_feed_object *lo = calloc(n, sizeof(*lo));
	struct st_batch_result res = {0};
	char batch[65], watermark[64];
	int64_t newest = 0;
	int rc = -1;

	if (inputs == NULL || lo == NULL) {
		fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if (fetch(u->job->wh.io, v[i], err) != 0)
			goto out;
		inputs[i] = v[i]->path;
		if (v[i]->mtime_ns > newest)
			newest = v[i]->mtime_ns;
	}
	{
		time_t secs = (time_t)(newest / 1000000000);
		struct tm tm;

		gmtime_r(&secs, &tm);
		snprintf(watermark, sizeof(watermark), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
		         tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
		         tm.tm_sec, (int)(newest % 1000000000 / 1000000));
	}
	batch_id_of(u->job->name, u->salt, v, n, batch);
	u->bo.watermark = watermark;
	if (st_batch_run(u->c, &u->bo, inputs, n, batch, &res, err) != 0)
		goto out;
	for (size_t i = 0; i < n; i++) {
		lo[i].key = v[i]->key;
		lo[i].size = v[i]->size;
		lo[i].etag = v[i]->etag;
		lo[i].outcome = res.res.rows_ok > 0 || res.already ? "committed" : "empty";
		/* Per-object counts are known only for a batch of one. */
		lo[i].rows_ok = n == 1 ? (int64_t)res.res.rows_ok : 0;
		lo[i].rows_bad = n == 1 ? (int64_t)res.res.rows_bad : 0;
	}
	if (record(u, v, lo, n, batch, err) != 0)
		goto out;
	if (res.res.rows_bad > 0 && move_rejected(u, &res, err) != 0)
		goto out;
	if (res.res.rows_bad > 0) {
		char reason[160];

		snprintf(reason, sizeof(reason),
		         "%llu rows rejected; reasons per row in the .errors.ndjson beside it",
		         (unsigned long long)res.res.rows_bad);
		if (cat_feed_dead_letter_add(u->job, batch, n == 1 ? v[0]->key : "*", false,
		                             (int64_t)res.res.rows_bad, res.dead_letter_path,
		                             reason, err) != 0)
			goto out;
	}
	memcpy(u->batch_id, batch, sizeof(batch));
	u->rec.objects += (int)n;
	u->rec.rows_ok += (int64_t)res.res.rows_ok;
	u->rec.rows_bad += (int64_t)res.res.rows_bad;
	u->rec.bytes_in += (int64_t)res.res.bytes_in;
	u->rec.bytes_out += (int64_t)res.res.bytes_out;
	if (res.committed || res.already)
		u->rec.snapshot_id = res.snapshot_id;
	u->rec.snapshots += res.committed;
	rc = 0;
out:
	st_batch_result_free(&res);
	free(inputs);
	free(lo);
	return rc;
}

/* Sets a poison object aside whole, with its reason, in the ledger too. */
static int set_aside(struct run *u, struct obj *o, const char *reason, struct fl_err *err)
{
	struct cat_feed_object lo = {o->key, o->size, o->etag, "dead-letter", 0, 0};
	char dst[PATH_MAX], batch[65];
	struct obj *one[1] = {o};

	batch_id_of(u->job->name, u->salt, one, 1, batch);
	if (u->dl_uri[0] == '\0' && mkdirs(u->dl_dir, err) != 0)
		return -1;
	if (snprintf(dst, sizeof(dst), "%s/%.16s-%s", u->dl_uri[0] ? u->dl_uri : u->dl_dir, batch,
	             o->spool_id ? "push" : o->key) >= (int)sizeof(dst))
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "dead-letter path for %.100s is too long", o->key);
	/* An s3 key may hold '/': a local dead letter keeps one flat folder. */
	for (char *p = dst + strlen(u->dl_dir) + 1; u->dl_uri[0] == '\0' && *p; p++)
		*p = *p == '/' ? '_' : *p;
	if (fetch(u->job->wh.io, o, err) != 0 ||
	    (u->dl_uri[0] ? st_io_upload(u->job->wh.io, o->path, dst, err)
	                  : copy_whole(o->path, dst, err)) != 0 ||
	    record(u, one, &lo, 1, batch, err) != 0 ||
	    cat_feed_dead_letter_add(u->job, batch, o->key, true, 0, dst, reason, err) != 0)
		return -1;
	fl_warn(NULL, "feed %s: object %s set aside in %s: %s", u->job->name, o->key, dst, reason);
	u->rec.objects++;
	u->rec.dead_objects++;
	return 0;
}

/* Lands the objects as one batch; when that fails on bad input, lands them
 * one by one and sets aside the ones that fail alone. */
static int land_all(struct run *u, struct obj **take, size_t n, struct fl_err *err)
{
	if (land(u, take, n, err) == 0)
		return 0;
	if (err->kind != FL_ERR_BAD_REQUEST)
		return -1;
	if (n > 1)
		fl_info(NULL, "feed %s: batch of %zu failed (%s); landing its objects one by one",
		        u->job->name, n, err->msg);
	for (size_t i = 0; i < n; i++) {
		struct fl_err one = {0};

		if (n > 1 && land(u, &take[i], 1, &one) == 0)
			continue;
		if (n > 1 && one.kind != FL_ERR_BAD_REQUEST) {
			*err = one;
			return -1;
		}
		if (set_aside(u, take[i], n > 1 ? one.msg : err->msg, &one) != 0) {
			*err = one;
			return -1;
		}
	}
	fl_err_clear(err);
	return 0;
}

/* What every run needs first: the table (if it exists yet) sizes batches by
 * its write.target-file-size-bytes and places the dead letters. */
static int prepare(struct run *u, struct fl_err *err)
{
	const json_t *batch = json_object_get(u->def, "batch");
	json_t *meta = NULL;
	int rc = -1;

	u->max_objects = def_int(batch, "max-objects");
	u->max_bytes = def_int(batch, "max-bytes");
	if (u->c->ops->load(u->c, &meta, err) != 0) {
		if (err->kind != FL_ERR_NO_SUCH_TABLE)
			return -1;
		fl_err_clear(err);
	}
	if (u->max_bytes == 0) {
		const char *t = json_string_value(json_object_get(
		        json_object_get(meta, "properties"), "write.target-file-size-bytes"));

		u->max_bytes = t != NULL ? strtoll(t, NULL, 10) : DEFAULT_TARGET;
	}
	/* The dead-letter location: the definition's, or <table>/dead-letter, or
	 * <warehouse>/dead-letter/<feed> before the table exists. */
	if (def_str(u->def, "dead-letter")[0] != '\0')
		snprintf(u->dl_dir, sizeof(u->dl_dir), "%s", def_str(u->def, "dead-letter"));
	else if (meta != NULL && def_str(meta, "location")[0] != '\0')
		snprintf(u->dl_dir, sizeof(u->dl_dir), "%s/dead-letter", def_str(meta, "location"));
	else
		snprintf(u->dl_dir, sizeof(u->dl_dir), "%s/dead-letter/%s", u->job->wh.location,
		         u->job->name);
	if (strncmp(u->dl_dir, "file://", 7) == 0)
		memmove(u->dl_dir, u->dl_dir + 7, strlen(u->dl_dir + 7) + 1);
	else if (strncmp(u->dl_dir, "s3://", 5) == 0) {
		/* Object storage: the batch writes rejected rows to a local folder
		 * of its own, and they are moved through the warehouse's handle. */
		const char *tmp = getenv("TMPDIR");

		memcpy(u->dl_uri, u->dl_dir, sizeof(u->dl_uri));
		snprintf(u->dl_dir, sizeof(u->dl_dir), "%s/floe-dl-XXXXXX",
		         tmp && tmp[0] ? tmp : "/tmp");
		if (mkdtemp(u->dl_dir) == NULL) {
			fl_err_set(err, FL_ERR_IO, "cannot create a temporary folder: %s",
			           strerror(errno));
			u->dl_dir[0] = '\0';
			goto out;
		}
	}
	u->bo.dead_letter_dir = u->dl_dir;
	if (u->bo.on_error == ST_ON_ERROR_DEAD_LETTER && u->dl_uri[0] == '\0' &&
	    mkdirs(u->dl_dir, err) != 0)
		goto out;
	rc = 0;
out:
	json_decref(meta);
	return rc;
}

static int by_key(const void *a, const void *b)
{
	return strcmp(((const struct obj *)a)->key, ((const struct obj *)b)->key);
}

/* One step of a pending replay: the objects in its key and time range, in
 * key order, after the last one an earlier step landed, at most max-objects.
 * Without force only those missing from the ledger land (under their usual
 * batch ids); with force they all land again under batch ids salted with the
 * replay's id, and the batch record says "forced".  The replay is cleared
 * when nothing in its range is left. */
static int run_replay(struct run *u, struct scan *s, bool *seen, struct obj **take,
                      struct fl_err *err)
{
	json_t *rp = u->job->replay;
	const char *from = json_string_value(json_object_get(rp, "from"));
	const char *to = json_string_value(json_object_get(rp, "to"));
	const char *after = json_string_value(json_object_get(rp, "after"));
	int64_t since = json_integer_value(json_object_get(rp, "since-ms"));
	int64_t until = json_integer_value(json_object_get(rp, "until-ms"));
	bool force = json_is_true(json_object_get(rp, "force")), more = false;
	json_t *next = NULL;
	size_t n = 0;
	int rc;

	/* Sort a copy of the flags along with the objects. */
	for (size_t i = 0; i < s->n; i++)
		s->v[i].spool_id = seen[i] ? -1 : 0;
	if (s->n > 1)
		qsort(s->v, s->n, sizeof(*s->v), by_key);
	for (size_t i = 0; i < s->n; i++) {
		struct obj *o = &s->v[i];
		int64_t ms = o->mtime_ns / 1000000;
		bool was_seen = o->spool_id == -1;

		o->spool_id = 0;
		if ((from && strcmp(o->key, from) < 0) || (to && strcmp(o->key, to) > 0) ||
		    (after && strcmp(o->key, after) <= 0) || (since >= 0 && ms < since) ||
		    (until >= 0 && ms > until) || (!force && was_seen))
			continue;
		if ((int64_t)n == u->max_objects) {
			more = true;
			break;
		}
		take[n++] = o;
	}
	if (force)
		snprintf(u->salt, sizeof(u->salt), "replay:%.40s",
		         json_string_value(json_object_get(rp, "id")));
	u->rec.forced = force;
	rc = n > 0 ? land_all(u, take, n, err) : 0;
	u->salt[0] = '\0';
	if (rc != 0)
		return -1;
	if (more) {
		next = json_deep_copy(rp);
		if (next == NULL ||
		    json_object_set_new(next, "after", json_string(take[n - 1]->key)) != 0) {
			json_decref(next);
			return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		}
	}
	if (n > 0)
		fl_info(NULL, "feed %s: replay %s: %zu objects%s%s", u->job->name,
		        json_string_value(json_object_get(rp, "id")), n,
		        force ? " again (forced)" : "", more ? "; more to come" : "; done");
	rc = cat_feed_replay_progress(u->job, next, err);
	json_decref(next);
	return rc;
}

/* One batch of a directory or s3 feed's new objects. */
static int run_source(struct run *u, struct fl_err *err)
{
	const json_t *src = json_object_get(u->def, "source"),
	             *batch = json_object_get(u->def, "batch");
	int64_t max_age_s = fl_duration_parse(def_str(batch, "max-age")), total = 0;
	struct scan s = {0};
	struct obj **take = NULL;
	bool *seen = NULL;
	struct cat_feed_object *lo = NULL;
	size_t n = 0;
	int rc = -1;

	if ((strcmp(def_str(src, "type"), "s3") == 0
	             ? scan_s3(u->job->wh.io, def_str(src, "location"), def_str(src, "glob"), &s,
	                       err)
	             : scan_dir(def_str(src, "path"), def_str(src, "glob"), &s, err)) != 0)
		goto out;
	lo = calloc(s.n ? s.n : 1, sizeof(*lo));
	seen = calloc(s.n ? s.n : 1, sizeof(bool));
	take = calloc(s.n ? s.n : 1, sizeof(*take));
	if (lo == NULL || seen == NULL || take == NULL) {
		fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < s.n; i++) {
		lo[i].key = s.v[i].key;
		lo[i].size = s.v[i].size;
		lo[i].etag = s.v[i].etag;
	}
	if (cat_feed_ledger_seen(u->job, lo, s.n, seen, err) != 0)
		goto out;
	for (size_t i = 0; i < s.n; i++)
		u->backlog += !seen[i];
	if (u->job->replay != NULL) {
		rc = run_replay(u, &s, seen, take, err);
		goto out;
	}
	for (size_t i = 0; i < s.n && (int64_t)n < u->max_objects; i++) {
		if (seen[i])
			continue;
		if (n > 0 && total + s.v[i].size > u->max_bytes)
			break;
		take[n++] = &s.v[i];
		total += s.v[i].size;
	}
	if (n == 0 || ((int64_t)n < u->max_objects && total < u->max_bytes && max_age_s > 0 &&
	               fl_now_ms() - take[0]->mtime_ns / 1000000 < max_age_s * 1000)) {
		rc = 0; /* nothing new, or a partial batch that waits for more */
		goto out;
	}
	rc = land_all(u, take, n, err);
	if (rc == 0)
		u->backlog -= (int64_t)n;
out:
	scan_free(&s);
	free(lo);
	free(seen);
	free(take);
	return rc;
}

/* One group commit of a feed's spooled pushes: the oldest ones of one
 * format, up to the batch bounds, each body through a temporary file. */
static int run_spool(struct run *u, struct fl_err *err)
{
	struct cat_spooled *sp = NULL;
	struct scan s = {0};
	struct obj **take = NULL;
	size_t n = 0;
	enum st_ingest_format keep = u->bo.format;
	int rc = -1;

	if (cat_feed_spool_take(u->job, u->max_objects, u->max_bytes, &sp, &n, err) != 0)
		return -1;
	if (n == 0) {
		cat_feed_spooled_free(sp, n);
		return 0;
	}
	s.v = calloc(n, sizeof(*s.v));
	take = calloc(n, sizeof(*take));
	if (s.v == NULL || take == NULL) {
		fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const char *tmp = getenv("TMPDIR");
		char path[PATH_MAX], key[40];
		int fd;

		snprintf(path, sizeof(path), "%s/floe-push-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
		fd = mkstemp(path);
		if (fd < 0) {
			fl_err_set(err, FL_ERR_IO, "cannot create a temporary file: %s",
			           strerror(errno));
			goto out;
		}
		size_t len = strlen(sp[i].body);
		ssize_t w = write(fd, sp[i].body, len);
		close(fd);
		snprintf(key, sizeof(key), "push/%lld", (long long)sp[i].id);
		s.v[s.n].path = strdup(path);
		s.v[s.n].key = strdup(key);
		if (s.v[s.n].path == NULL || s.v[s.n].key == NULL || w != (ssize_t)len) {
			unlink(path);
			free(s.v[s.n].path);
			free(s.v[s.n].key);
			fl_err_set(err, FL_ERR_IO, "cannot write a temporary file");
			goto out;
		}
		s.v[s.n].size = sp[i].bytes;
		s.v[s.n].mtime_ns = fl_now_ms() * 1000000;
		s.v[s.n].spool_id = sp[i].id;
		snprintf(s.v[s.n].etag, sizeof(s.v[s.n].etag), "%lld", (long long)sp[i].id);
		take[s.n] = &s.v[s.n];
		s.n++;
	}
	u->bo.format =
	        strcmp(sp[0].content_type, "text/csv") == 0 ? ST_INGEST_CSV : ST_INGEST_NDJSON;
	rc = land_all(u, take, n, err);
	u->bo.format = keep;
out:
	for (size_t i = 0; i < s.n; i++)
		unlink(s.v[i].path);
	scan_free(&s);
	free(take);
	cat_feed_spooled_free(sp, n);
	return rc;
}

/* Claims and runs one due feed; *did = whether one was due. */
static int run_one(struct srv_ctx *ctx, bool *did, struct fl_err *err)
{
	struct cat_feed_job job;
	struct run u = {.ctx = ctx, .job = &job};
	struct cat_limits lim = {(size_t)ctx->cfg->max_commit_updates,
	                         (size_t)ctx->cfg->max_metadata_bytes};
	char **levels = NULL, actor[CAT_FEED_NAME_MAX + 8];
	const char *tname, *fmt, *on_error, *new_cols;
	int64_t max_retries, interval;
	int nlevels, rc;
	bool ok;

	if (cat_feed_claim(ctx->db, &job, did, err) != 0)
		return -1;
	if (!*did)
		return 0;
	u.def = job.def;
	max_retries = def_int(u.def, "max-retries");
	interval = fl_duration_parse(def_str(u.def, "interval"));
	u.t0_ms = fl_now_ms();
	fmt = def_str(u.def, "format");
	on_error = def_str(u.def, "on-error");
	new_cols = def_str(u.def, "new-columns");
	u.bo = (struct st_batch_opts){
	        .format = strcmp(fmt, "ndjson") == 0    ? ST_INGEST_NDJSON
	                  : strcmp(fmt, "parquet") == 0 ? ST_INGEST_PARQUET
	                                                : ST_INGEST_CSV,
	        .on_error = strcmp(on_error, "dead-letter") == 0 ? ST_ON_ERROR_DEAD_LETTER
	                                                         : ST_ON_ERROR_STRICT,
	        .new_columns = strcmp(new_cols, "evolve") == 0   ? ST_NEW_COLUMNS_EVOLVE
	                       : strcmp(new_cols, "ignore") == 0 ? ST_NEW_COLUMNS_IGNORE
	                                                         : ST_NEW_COLUMNS_REJECT,
	        .create = json_is_true(json_object_get(u.def, "create-table")),
	        .upsert = strcmp(def_str(u.def, "mode"), "upsert") == 0,
	        .cdc_field = json_string_value(json_object_get(u.def, "cdc-field")),
	        .codec = "table",
	};
	{
		const json_t *key = json_object_get(u.def, "key");

		u.bo.n_key = json_array_size(key) < 16 ? json_array_size(key) : 16;
		for (size_t i = 0; i < u.bo.n_key; i++)
			u.key[i] = json_string_value(json_array_get(key, i));
		u.bo.key = u.key;
	}
	snprintf(actor, sizeof(actor), "feed:%s", job.name);
	ok = srv_whcache_io(ctx->whcache, &job.wh, err) == 0;
	ok = ok &&
	     cat_feed_table_split(def_str(u.def, "table"), &levels, &nlevels, &tname, err) == 0;
	if (ok) {
		struct cat_ns ns = {(const char *const *)levels, nlevels};

		ok = cat_committer_open(ctx->db, job.tx, &job.wh, &ns, tname, &lim, actor, &u.c,
		                        err) == 0;
	}
	if (ok)
		ok = prepare(&u, err) == 0;
	if (ok && strcmp(def_str(json_object_get(u.def, "source"), "type"), "push") != 0)
		ok = run_source(&u, err) == 0;
	/* Pushes group-commit on every feed (a directory feed may take them too). */
	if (ok)
		ok = run_spool(&u, err) == 0;
	u.rec.batch_id = u.batch_id;
	u.rec.started_ms = u.t0_ms;
	u.rec.outcome = u.rec.snapshot_id != 0 ? "committed" : "nothing";
	if (ok)
		ok = cat_feed_batch_done(&job, u.rec.objects > 0 ? &u.rec : NULL, u.backlog,
		                         interval, err) == 0;
	if (u.c != NULL)
		u.c->ops->close(u.c);
	if (u.dl_uri[0] != '\0' && u.dl_dir[0] != '\0')
		rmdir(u.dl_dir); /* empty unless an upload failed; then kept for a look */
	st_io_release(job.wh.io);
	job.wh.io = NULL;
	free(levels);
	rc = cat_feed_job_end(&job, ok, ok ? err : &(struct fl_err){0});
	if (ok && rc == 0) {
		if (u.rec.objects > 0)
			fl_info(NULL,
			        "feed %s: batch %.16s: %d objects, %lld rows committed, %lld dead-lettered",
			        job.name, u.batch_id, u.rec.objects, (long long)u.rec.rows_ok,
			        (long long)u.rec.rows_bad);
		return 0;
	}
	/* Rolled back (or the COMMIT failed): count the failure, back off. */
	struct cat_feed_batch failed = {.batch_id = u.batch_id[0] ? u.batch_id : "-",
	                                .outcome = "failed",
	                                .error = err->msg,
	                                .started_ms = u.t0_ms};
	struct fl_err ferr = {0};
	bool paused = false;

	if (cat_feed_failed(ctx->db, job.id, &failed, max_retries, &paused, &ferr) != 0)
		fl_warn(NULL, "feed %s: cannot record a failure: %s", job.name, ferr.msg);
	fl_warn(NULL, "feed %s: run failed%s: %s", job.name,
	        paused ? " too often; the feed is paused" : "", err->msg);
	return 0;
}

int srv_feeds_run_due(struct srv_ctx *ctx, int max, int *ran, struct fl_err *err)
{
	*ran = 0;
	for (int i = 0; i < max; i++) {
		bool did = false;

		if (run_one(ctx, &did, err) != 0)
			return -1;
		if (!did)
			break;
		(*ran)++;
	}
	return 0;
}
