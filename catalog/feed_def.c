/* feed_def.c - validating and normalizing feed definitions.
 *
 * Invariant: a definition that passes cat_feed_def_check names every key the
 * workers read, with its default filled in, and nothing else; so the stored
 * jsonb is the whole truth about a feed and GET shows exactly what runs.
 * Every message names the offending key as the request spells it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "feed.h"
#include "ingest/upsert.h"
#include "json.h"
#include "uuid.h"

#define WHAT "CreateFeedRequest"

/* Defaults.  A batch's byte bound of 0 means "the table's
 * write.target-file-size-bytes", so batches are sized toward whole files. */
#define DEF_MAX_OBJECTS 1000
#define DEF_MAX_AGE "PT0S"
#define DEF_MAX_RETRIES 5
#define DEF_SPOOL_MAX ((int64_t)64 << 20)
#define MAX_OBJECTS_MAX 100000
#define MAX_RETRIES_MAX 100
#define SPOOL_MAX_MAX ((int64_t)16 << 30)

static int bad(struct fl_err *err, const char *key, const char *why)
{
	return fl_err_set(err, FL_ERR_BAD_REQUEST, WHAT ": %s %s", key, why);
}

/* Fails on any member of obj not in allowed (NULL-terminated). */
static int only_keys(const json_t *obj, const char *const *allowed, const char *prefix,
                     struct fl_err *err)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)obj, k, v)
	{
		bool ok = false;

		(void)v;
		for (const char *const *a = allowed; *a != NULL && !ok; a++)
			ok = strcmp(*a, k) == 0;
		if (!ok)
			return fl_err_set(err, FL_ERR_BAD_REQUEST, WHAT ": unknown key '%s%.100s'",
			                  prefix, k);
	}
	return 0;
}

/* An optional string member that must be one of choices ("a|b|c"). */
static int get_enum(const json_t *obj, const char *key, const char *choices, const char *def,
                    const char **out, struct fl_err *err)
{
	const char *v = def, *p = choices;
	size_t n;

	if (fl_json_get_str(obj, key, false, WHAT, &v, err) != 0)
		return -1;
	n = strlen(v);
	while (*p != '\0') {
		const char *bar = strchr(p, '|');
		size_t len = bar ? (size_t)(bar - p) : strlen(p);

		if (len == n && strncmp(p, v, n) == 0) {
			*out = v;
			return 0;
		}
		p += len + (bar != NULL);
	}
	return fl_err_set(err, FL_ERR_BAD_REQUEST, WHAT ": %s must be one of %s, got '%.64s'", key,
	                  choices, v);
}

/* An optional ISO-8601 duration member within [lo, hi] seconds; *secs
 * receives the value, *text the canonical form. */
static int get_duration(const json_t *obj, const char *key, const char *label, const char *def,
                        int64_t lo, int64_t hi, json_t **text, struct fl_err *err)
{
	const char *v = def;
	char canon[32];
	int64_t s;

	if (fl_json_get_str(obj, key, false, WHAT, &v, err) != 0)
		return -1;
	s = fl_duration_parse(v);
	if (s < 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  WHAT ": %s must be an ISO-8601 duration like PT5S, got '%.64s'",
		                  label, v);
	if (s < lo || s > hi)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  WHAT ": %s must be between %lld and %lld seconds, got '%.64s'",
		                  label, (long long)lo, (long long)hi, v);
	fl_duration_format(s, canon, sizeof(canon));
	*text = json_string(canon);
	return *text ? 0 : fl_err_set(err, FL_ERR_NOMEM, "out of memory");
}

static int get_bounded_int(const json_t *obj, const char *key, const char *label, int64_t def,
                           int64_t lo, int64_t hi, int64_t *out, struct fl_err *err)
{
	int64_t v = def;

	if (fl_json_get_int(obj, key, false, WHAT, &v, err) != 0)
		return -1;
	if (v < lo || v > hi)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  WHAT ": %s must be between %lld and %lld, got %lld", label,
		                  (long long)lo, (long long)hi, (long long)v);
	*out = v;
	return 0;
}

static bool name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > CAT_FEED_NAME_MAX)
		return false;
	for (const char *p = s; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' || *p == '.'))
			return false;
	return true;
}

/* A directory path: absolute, without "." or ".." segments or doubled
 * slashes, so the ledger's keys (paths relative to it) are unambiguous. */
static bool dir_ok(const char *p)
{
	size_t n = strlen(p);

	if (n < 2 || n > CAT_FEED_PATH_MAX || p[0] != '/')
		return false;
	if (strstr(p, "//") != NULL || strstr(p, "/./") != NULL || strstr(p, "/../") != NULL)
		return false;
	if ((n >= 2 && strcmp(p + n - 2, "/.") == 0) || (n >= 3 && strcmp(p + n - 3, "/..") == 0))
		return false;
	return true;
}

/* An s3 prefix: "s3://bucket[/prefix]", a bucket of 3-63 bytes, a prefix
 * without "." or ".." segments or doubled slashes (the ledger's keys are
 * relative to it); stored without the trailing '/'. */
static bool s3_location_ok(const char *loc)
{
	size_t n = strlen(loc);
	const char *bucket = loc + 5, *slash;

	if (n < 8 || n > CAT_FEED_PATH_MAX || strncmp(loc, "s3://", 5) != 0)
		return false;
	slash = strchr(bucket, '/');
	if ((slash ? (size_t)(slash - bucket) : strlen(bucket)) < 3 ||
	    (slash ? (size_t)(slash - bucket) : strlen(bucket)) > 63)
		return false;
	if (slash == NULL)
		return true;
	return strstr(slash, "//") == NULL && strstr(slash, "/./") == NULL &&
	       strstr(slash, "/../") == NULL && strcmp(slash, "/.") != 0 &&
	       strcmp(slash, "/..") != 0 && (n < 2 || strcmp(loc + n - 2, "/.") != 0) &&
	       (n < 3 || strcmp(loc + n - 3, "/..") != 0);
}

static int check_s3_source(const json_t *src, json_t **out, struct fl_err *err)
{
	static const char *const s3_keys[] = {"type", "location", "glob", NULL};
	const char *loc = NULL, *glob = "*";
	size_t n;

	if (only_keys(src, s3_keys, "source.", err) != 0 ||
	    fl_json_get_str(src, "location", true, WHAT ".source", &loc, err) != 0 ||
	    fl_json_get_str(src, "glob", false, WHAT ".source", &glob, err) != 0)
		return -1;
	if (!s3_location_ok(loc))
		return bad(err, "source.location",
		           "must be s3://bucket/prefix/ with a 3-63 byte bucket and no '.', '..'"
		           " or '//' segments (at most 1024 bytes)");
	if (glob[0] == '\0' || strlen(glob) > CAT_FEED_GLOB_MAX)
		return bad(err, "source.glob",
		           "must be a non-empty key pattern (at most 255 bytes; '*' does not"
		           " cross '/')");
	n = strlen(loc);
	while (n > 5 && loc[n - 1] == '/')
		n--;
	*out = json_pack("{s:s, s:s#, s:s}", "type", "s3", "location", loc, (int)n, "glob", glob);
	return *out ? 0 : fl_err_set(err, FL_ERR_NOMEM, "out of memory");
}

int cat_feed_def_check_warehouse(const json_t *def, const struct cat_warehouse *wh,
                                 struct fl_err *err)
{
	const char *type =
	        json_string_value(json_object_get(json_object_get(def, "source"), "type"));
	const char *dl = json_string_value(json_object_get(def, "dead-letter"));
	bool s3 = strcmp(wh->storage_type, "s3") == 0;

	if (type != NULL && strcmp(type, "s3") == 0 && !s3)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  WHAT ": source.type 's3' needs an S3 warehouse (its credentials"
		                       " read the prefix); warehouse '%.255s' is on local files:"
		                       " use a directory source",
		                  wh->name);
	if (type != NULL && strcmp(type, "directory") == 0 && s3)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  WHAT ": source.type 'directory' needs a warehouse on local files;"
		                       " warehouse '%.255s' is on S3: use an s3 source",
		                  wh->name);
	if (dl != NULL && dl[0] != '\0' && (dl[0] == '/') == s3)
		return bad(err, "dead-letter",
		           s3 ? "must be an s3:// location on an S3 warehouse"
		              : "must be an absolute directory path on a warehouse on local files");
	return 0;
}

static int check_source(const json_t *req, json_t **out, struct fl_err *err)
{
	static const char *const dir_keys[] = {"type", "path", "glob", NULL};
	static const char *const push_keys[] = {"type", NULL};
	json_t *src = NULL;
	const char *type = NULL, *path = NULL, *glob = "*";
	size_t plen;

	if (fl_json_get_obj(req, "source", true, WHAT, &src, err) != 0 ||
	    fl_json_get_str(src, "type", true, WHAT ".source", &type, err) != 0)
		return -1;
	if (strcmp(type, "push") == 0) {
		if (only_keys(src, push_keys, "source.", err) != 0)
			return -1;
		*out = json_pack("{s:s}", "type", "push");
		return *out ? 0 : fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	}
	if (strcmp(type, "s3") == 0)
		return check_s3_source(src, out, err);
	if (strcmp(type, "directory") != 0)
		return fl_err_set(
		        err, FL_ERR_BAD_REQUEST,
		        WHAT ": source.type must be one of directory|s3|push, got '%.64s'", type);
	if (only_keys(src, dir_keys, "source.", err) != 0 ||
	    fl_json_get_str(src, "path", true, WHAT ".source", &path, err) != 0 ||
	    fl_json_get_str(src, "glob", false, WHAT ".source", &glob, err) != 0)
		return -1;
	if (!dir_ok(path))
		return bad(err, "source.path",
		           "must be an absolute directory path without '.', '..' or '//' segments"
		           " (at most 1024 bytes)");
	if (glob[0] == '\0' || strlen(glob) > CAT_FEED_GLOB_MAX || strchr(glob, '/') != NULL)
		return bad(err, "source.glob",
		           "must be a non-empty file-name pattern without '/' (at most 255 bytes)");
	plen = strlen(path);
	while (plen > 1 && path[plen - 1] == '/')
		plen--;
	*out = json_pack("{s:s, s:s#, s:s}", "type", "directory", "path", path, (int)plen, "glob",
	                 glob);
	return *out ? 0 : fl_err_set(err, FL_ERR_NOMEM, "out of memory");
}

int cat_feed_table_split(const char *table, char ***levels, int *nlevels, const char **name,
                         struct fl_err *err)
{
	size_t len = strlen(table);
	int n = 1;
	char **block, *s, *dot;

	for (const char *p = table; *p; p++)
		n += *p == '.';
	if (n < 2)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  WHAT ": table must be NAMESPACE.TABLE, got '%.200s'", table);
	block = malloc(sizeof(char *) * (size_t)n + len + 1);
	if (block == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	s = (char *)(block + n);
	memcpy(s, table, len + 1);
	n = 0;
	while ((dot = strchr(s, '.')) != NULL) {
		*dot = '\0';
		block[n++] = s;
		s = dot + 1;
	}
	block[n] = s;
	for (int i = 0; i <= n; i++)
		if (block[i][0] == '\0' || strlen(block[i]) > 255) {
			size_t plen = strlen(block[i]);

			free(block);
			if (plen == 0)
				return fl_err_set(err, FL_ERR_BAD_REQUEST,
				                  WHAT ": table '%.200s': part %d is empty", table,
				                  i + 1);
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  WHAT ": table '%.60s...': part %d is %zu bytes, over 255",
			                  table, i + 1, plen);
		}
	*levels = block;
	*nlevels = n;
	*name = block[n];
	return 0;
}

static int check_batch(const json_t *req, json_t **out, struct fl_err *err)
{
	static const char *const keys[] = {"max-bytes", "max-objects", "max-age", NULL};
	json_t *b = NULL, *age = NULL;
	int64_t bytes = 0, objects = DEF_MAX_OBJECTS;

	if (fl_json_get_obj(req, "batch", false, WHAT, &b, err) != 0)
		return -1;
	if (b == NULL)
		b = json_object();
	else
		json_incref(b);
	if (b == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	if (only_keys(b, keys, "batch.", err) != 0 ||
	    get_bounded_int(b, "max-bytes", "batch.max-bytes", 0, 0, (int64_t)64 << 30, &bytes,
	                    err) != 0 ||
	    get_bounded_int(b, "max-objects", "batch.max-objects", DEF_MAX_OBJECTS, 1,
	                    MAX_OBJECTS_MAX, &objects, err) != 0 ||
	    get_duration(b, "max-age", "batch.max-age", DEF_MAX_AGE, 0, CAT_FEED_INTERVAL_MAX, &age,
	                 err) != 0) {
		json_decref(b);
		return -1;
	}
	json_decref(b);
	*out = json_pack("{s:I, s:I, s:o}", "max-bytes", (json_int_t)bytes, "max-objects",
	                 (json_int_t)objects, "max-age", age);
	return *out ? 0 : fl_err_set(err, FL_ERR_NOMEM, "out of memory");
}

/* "key": the key columns of a table the feed creates (upsert only). */
static int check_key(const json_t *req, const char *mode, bool create, json_t **out,
                     struct fl_err *err)
{
	json_t *key = NULL, *v, *w;
	size_t i, k;

	if (fl_json_get_arr(req, "key", false, WHAT, &key, err) != 0)
		return -1;
	if (key == NULL) {
		if (strcmp(mode, "upsert") == 0 && create)
			return bad(err, "key",
			           "is required with mode upsert and create-table: the columns "
			           "that become the new table's identifier fields");
		return 0;
	}
	if (strcmp(mode, "upsert") != 0)
		return bad(err, "key", "is only for mode upsert");
	if (json_array_size(key) == 0 || json_array_size(key) > 16)
		return bad(err, "key", "must name 1 to 16 columns");
	json_array_foreach(key, i, v)
	{
		if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) > 255)
			return bad(err, "key", "must be an array of column names");
		json_array_foreach(key, k, w)
		{
			if (k < i && json_equal(v, w))
				return bad(err, "key", "names a column twice");
		}
	}
	*out = json_incref(key);
	return 0;
}

int cat_feed_def_check(const json_t *req, const char *default_wh, json_t **out, struct fl_err *err)
{
	static const char *const keys[] = {
	        "name",      "warehouse",   "table",       "source",          "format",
	        "mode",      "interval",    "on-error",    "new-columns",     "create-table",
	        "batch",     "max-retries", "dead-letter", "spool-max-bytes", "key",
	        "cdc-field", NULL};
	const char *name = NULL, *wh = default_wh, *table = NULL, *format = NULL, *mode = NULL,
	           *on_error = NULL, *new_cols = NULL, *dl = "", *cdc = NULL, *tname;
	json_t *source = NULL, *interval = NULL, *batch = NULL, *o = NULL, *key = NULL;
	bool create = false;
	int64_t retries = DEF_MAX_RETRIES, spool = DEF_SPOOL_MAX;
	char **levels = NULL;
	int nlevels, rc = -1;

	if (!json_is_object(req))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, WHAT " must be a JSON object");
	if (only_keys(req, keys, "", err) != 0 ||
	    fl_json_get_str(req, "name", true, WHAT, &name, err) != 0)
		return -1;
	if (!name_ok(name))
		return bad(err, "name", "must be 1-128 bytes of letters, digits, '-', '_' and '.'");
	if (fl_json_get_str(req, "warehouse", false, WHAT, &wh, err) != 0)
		return -1;
	if (wh == NULL || wh[0] == '\0')
		return bad(err, "warehouse", "is required (the server has no default warehouse)");
	if (strlen(wh) > 255)
		return bad(err, "warehouse", "is longer than 255 bytes");
	if (fl_json_get_str(req, "table", true, WHAT, &table, err) != 0)
		return -1;
	/* Checked here, not by cat_feed_table_split: a feed stored before the
	 * bound still runs. */
	if (strlen(table) > CAT_FEED_TABLE_MAX)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  WHAT ": table '%.60s...' is %zu bytes, over %d", table,
		                  strlen(table), CAT_FEED_TABLE_MAX);
	if (cat_feed_table_split(table, &levels, &nlevels, &tname, err) != 0)
		return -1;
	free(levels);
	if (json_object_get(req, "format") == NULL)
		return bad(err, "format", "is required (csv, ndjson, parquet)");
	if (get_enum(req, "format", "csv|ndjson|parquet", "", &format, err) != 0)
		return -1;
	if (get_enum(req, "mode", "append|upsert", "append", &mode, err) != 0)
		return -1;
	if (strcmp(format, "parquet") == 0 && strcmp(mode, "upsert") == 0)
		return bad(err, "mode",
		           "upsert takes csv or ndjson; parquet objects are added as they are");
	if (get_enum(req, "on-error", "strict|dead-letter", "strict", &on_error, err) != 0 ||
	    get_enum(req, "new-columns", "reject|ignore|evolve", "reject", &new_cols, err) != 0 ||
	    fl_json_get_bool(req, "create-table", false, WHAT, &create, err) != 0 ||
	    fl_json_get_str(req, "dead-letter", false, WHAT, &dl, err) != 0 ||
	    fl_json_get_str(req, "cdc-field", false, WHAT, &cdc, err) != 0 ||
	    get_bounded_int(req, "max-retries", "max-retries", DEF_MAX_RETRIES, 0, MAX_RETRIES_MAX,
	                    &retries, err) != 0 ||
	    get_bounded_int(req, "spool-max-bytes", "spool-max-bytes", DEF_SPOOL_MAX, 1 << 16,
	                    SPOOL_MAX_MAX, &spool, err) != 0)
		return -1;
	if (dl[0] != '\0' && !dir_ok(dl) && !(strncmp(dl, "s3://", 5) == 0 && s3_location_ok(dl)))
		return bad(err, "dead-letter",
		           "must be an absolute directory path, or an s3:// location on an S3"
		           " warehouse, without '.', '..' or '//' segments");
	if (cdc != NULL && strcmp(mode, "upsert") != 0)
		return bad(err, "cdc-field", "is only for mode upsert");
	if (cdc != NULL && (cdc[0] == '\0' || strlen(cdc) > 255))
		return bad(err, "cdc-field", "must be a column name of 1 to 255 bytes");
	if (check_key(req, mode, create, &key, err) != 0 || check_source(req, &source, err) != 0)
		goto out;
	if (get_duration(req, "interval", "interval", "PT10S", CAT_FEED_INTERVAL_MIN,
	                 CAT_FEED_INTERVAL_MAX, &interval, err) != 0 ||
	    check_batch(req, &batch, err) != 0)
		goto out;
	o = json_pack("{s:s, s:s, s:s, s:O, s:s, s:s, s:O, s:s, s:s, s:b, s:O, s:I, s:s, s:I}",
	              "name", name, "warehouse", wh, "table", table, "source", source, "format",
	              format, "mode", mode, "interval", interval, "on-error", on_error,
	              "new-columns", new_cols, "create-table", create, "batch", batch,
	              "max-retries", (json_int_t)retries, "dead-letter", dl, "spool-max-bytes",
	              (json_int_t)spool);
	if (o == NULL || (key != NULL && json_object_set(o, "key", key) != 0) ||
	    (cdc != NULL && json_object_set_new(o, "cdc-field", json_string(cdc)) != 0)) {
		json_decref(o);
		fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		goto out;
	}
	*out = o;
	rc = 0;
out:
	json_decref(source);
	json_decref(interval);
	json_decref(batch);
	json_decref(key);
	return rc;
}

int cat_feed_def_check_table(const json_t *def, const json_t *meta, struct fl_err *err)
{
	const json_t *schema = NULL, *s, *ids, *id, *f;
	json_int_t cur = json_integer_value(json_object_get(meta, "current-schema-id"));
	const json_t *key = json_object_get(def, "key");
	const char *cdc = json_string_value(json_object_get(def, "cdc-field"));
	size_t i, k;

	if (strcmp(json_string_value(json_object_get(def, "mode")), "upsert") != 0)
		return 0;
	json_array_foreach(json_object_get(meta, "schemas"), i, s)
	{
		if (json_integer_value(json_object_get(s, "schema-id")) == cur)
			schema = s;
	}
	ids = json_object_get(schema, "identifier-field-ids");
	if (json_array_size(ids) == 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  WHAT
		                  ": mode upsert needs a key, and table %.200s has no identifier "
		                  "fields (schema identifier-field-ids); set them with an "
		                  "update-schema, or let the feed create the table with \"key\"",
		                  json_string_value(json_object_get(def, "table")));
	if (cdc != NULL && st_upsert_cdc_field(schema, cdc, &f, err) != 0)
		return fl_err_prefix(err, "%s", WHAT);
	if (key == NULL)
		return 0;
	/* A key given for an existing table must be its identifier fields. */
	bool same = json_array_size(key) == json_array_size(ids);
	json_array_foreach(ids, i, id)
	{
		const char *name = NULL;

		json_array_foreach(json_object_get(schema, "fields"), k, f)
		{
			if (json_equal(json_object_get(f, "id"), (json_t *)id))
				name = json_string_value(json_object_get(f, "name"));
		}
		bool found = false;
		json_array_foreach(key, k, f) found =
		        found || (name != NULL && strcmp(json_string_value(f), name) == 0);
		same = same && found;
	}
	if (!same)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  WHAT ": key does not match the identifier fields of table %.200s",
		                  json_string_value(json_object_get(def, "table")));
	return 0;
}

/* "2026-12-01T15:04:05Z" or with .fff: milliseconds since the epoch; -1
 * when malformed. */
static int64_t rfc3339_ms(const char *s)
{
	struct tm tm = {0};
	int ms = 0, used = 0;
	char z = 0;

	if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
	           &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &used) != 6)
		return -1;
	s += used;
	if (*s == '.') {
		int digits = 0;

		for (s++; *s >= '0' && *s <= '9'; s++, digits++)
			if (digits < 3)
				ms = ms * 10 + (*s - '0');
		for (; digits > 0 && digits < 3; digits++)
			ms *= 10;
	}
	z = *s;
	if (z != 'Z' || s[1] != '\0' || tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 ||
	    tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
		return -1;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	return (int64_t)timegm(&tm) * 1000 + ms;
}

int cat_feed_replay_check(const json_t *req, json_t **out, struct fl_err *err)
{
	static const char *const keys[] = {"from", "to", "since", "until", "force", NULL};
	const char *from = NULL, *to = NULL, *since = NULL, *until = NULL;
	int64_t since_ms = -1, until_ms = -1;
	bool force = false;
	char id[FL_UUID_STR];

	if (!json_is_object(req))
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "ReplayFeedRequest must be a JSON object");
	if (only_keys(req, keys, "", err) != 0 ||
	    fl_json_get_str(req, "from", false, "ReplayFeedRequest", &from, err) != 0 ||
	    fl_json_get_str(req, "to", false, "ReplayFeedRequest", &to, err) != 0 ||
	    fl_json_get_str(req, "since", false, "ReplayFeedRequest", &since, err) != 0 ||
	    fl_json_get_str(req, "until", false, "ReplayFeedRequest", &until, err) != 0 ||
	    fl_json_get_bool(req, "force", false, "ReplayFeedRequest", &force, err) != 0)
		return -1;
	if ((since != NULL && (since_ms = rfc3339_ms(since)) < 0) ||
	    (until != NULL && (until_ms = rfc3339_ms(until)) < 0))
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "ReplayFeedRequest: %s must be an RFC 3339 UTC time like "
		                  "2026-12-01T15:04:05Z",
		                  since != NULL && since_ms < 0 ? "since" : "until");
	for (int k = 0; k < 2; k++) {
		const char *v = k == 0 ? from : to;

		if (v != NULL && strlen(v) > CAT_FEED_PATH_MAX)
			return fl_err_set(
			        err, FL_ERR_BAD_REQUEST,
			        "ReplayFeedRequest: %s is %zu bytes, over %d (an object's "
			        "path)",
			        k == 0 ? "from" : "to", strlen(v), CAT_FEED_PATH_MAX);
	}
	if (from != NULL && to != NULL && strcmp(from, to) > 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "ReplayFeedRequest: from '%.100s' sorts after to '%.100s'", from,
		                  to);
	fl_uuid_v4(id);
	*out = json_pack("{s:s, s:o, s:o, s:I, s:I, s:b, s:n}", "id", id, "from",
	                 from ? json_string(from) : json_null(), "to",
	                 to ? json_string(to) : json_null(), "since-ms", (json_int_t)since_ms,
	                 "until-ms", (json_int_t)until_ms, "force", force, "after");
	return *out ? 0 : fl_err_set(err, FL_ERR_NOMEM, "out of memory");
}
