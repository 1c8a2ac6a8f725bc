/* cmd_ingest.c - `floe ingest`: CSV / NDJSON files into one table snapshot,
 * exactly once, in process (through catalog/, under the table's row lock) or
 * through any Iceberg REST catalog (--catalog-uri).
 *
 * Exactly once: the batch identity is a hash of the inputs (sorted paths,
 * sizes and content hashes).  It travels in the snapshot summary
 * (floe.batch-id) and, over REST, as the commit's Idempotency-Key.  Before
 * writing anything, and again when committing, the table's history is
 * checked for it; a repeat is reported as "already-committed" and changes
 * nothing.  In process the final check happens under the row lock, so two
 * runs of the same batch cannot both commit.  Over REST a 409 means
 * "reload, rebuild the manifest list on the new parent, retry" and a 5xx
 * means "reload and look for the batch before doing anything else". */
#include "cmd_ingest.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "catalog.h"
#include "cli.h"
#include "clock.h"
#include "feed/csv.h"
#include "feed/infer.h"
#include "feed/ndjson.h"
#include "iceberg/snapshot.h"
#include "ingest.h"
#include "io/io.h"
#include "json.h"
#include "log.h"
#include "rest.h"
#include "settings.h"
#include "srv.h"

enum exit_code {
	EXIT_OK = 0,
	EXIT_FAIL = 1,
	EXIT_USAGE = 2,
	EXIT_BAD_INPUT = 3,
	EXIT_CONFLICT = 4,
	EXIT_UNKNOWN = 5
};

struct ingest_cfg {
	char *table;
	char *catalog_uri;
	char *token;
	char *format;
	char *on_error;
	char *new_columns;
	int create;
	char *delimiter;
	char *null_marker;
	char *codec;
	int64_t target_file_bytes;
	int64_t retries;
	char *dead_letter_dir;
	int tz_assume_utc;
	int quiet;
	int64_t credential_refresh;
};

#define OFF(f) offsetof(struct ingest_cfg, f)

/* clang-format off */
static const struct fl_setting ingest_settings[] = {
	{"table", FL_SET_STR, "", 0, 2048, NULL, "FLOE_INGEST_TABLE", OFF(table),
	 "target table as NAMESPACE.TABLE (nested namespaces: a.b.table)"},
	{"catalog-uri", FL_SET_STR, "", 0, 2048, NULL, "FLOE_CATALOG_URI", OFF(catalog_uri),
	 "commit through this Iceberg REST catalog instead of in process"},
	{"token", FL_SET_STR, "", 0, 8192, NULL, "FLOE_CATALOG_TOKEN", OFF(token),
	 "bearer token for --catalog-uri"},
	{"format", FL_SET_ENUM, "auto", 0, 0, "auto|csv|ndjson", "FLOE_INGEST_FORMAT", OFF(format),
	 "input format; auto = by file extension (.csv, .ndjson/.jsonl/.json)"},
	{"on-error", FL_SET_ENUM, "strict", 0, 0, "strict|dead-letter", "FLOE_INGEST_ON_ERROR", OFF(on_error),
	 "strict: any bad row fails the batch; dead-letter: bad rows are set aside, good rows commit"},
	{"new-columns", FL_SET_ENUM, "reject", 0, 0, "reject|ignore|evolve", "FLOE_INGEST_NEW_COLUMNS", OFF(new_columns),
	 "input columns missing from the table: fail, drop, or add as optional string columns"},
	{"create", FL_SET_BOOL, "false", 0, 0, NULL, "FLOE_INGEST_CREATE", OFF(create),
	 "create the table from the inferred schema of the inputs when it does not exist"},
	{"delimiter", FL_SET_STR, ",", 0, 1, NULL, "FLOE_INGEST_DELIMITER", OFF(delimiter),
	 "CSV field delimiter (one byte)"},
	{"null-marker", FL_SET_STR, "", 0, 64, NULL, "FLOE_INGEST_NULL_MARKER", OFF(null_marker),
	 "CSV: an unquoted field equal to this is null (empty fields always are)"},
	{"codec", FL_SET_ENUM, "table", 0, 0, "table|zstd|snappy|gzip|none", "FLOE_INGEST_CODEC", OFF(codec),
	 "Parquet compression; table = write.parquet.compression-codec (default zstd)"},
	{"target-file-bytes", FL_SET_INT, "0", 0, INT64_MAX, NULL, "FLOE_INGEST_TARGET_FILE_BYTES", OFF(target_file_bytes),
	 "roll data files past this size; 0 = write.target-file-size-bytes (default 512 MiB)"},
	{"retries", FL_SET_INT, "8", 0, 100, NULL, "FLOE_INGEST_RETRIES", OFF(retries),
	 "commit attempts after a conflict (REST mode)"},
	{"dead-letter-dir", FL_SET_STR, "", 0, 2048, NULL, "FLOE_INGEST_DEAD_LETTER_DIR", OFF(dead_letter_dir),
	 "where rejected rows go; empty = <table location>/dead-letter"},
	{"tz-assume-utc", FL_SET_BOOL, "false", 0, 0, NULL, "FLOE_INGEST_TZ_ASSUME_UTC", OFF(tz_assume_utc),
	 "timestamptz values without a zone are UTC (default: rejected)"},
	{"quiet", FL_SET_BOOL, "false", 0, 0, NULL, "FLOE_INGEST_QUIET", OFF(quiet),
	 "no progress line on standard error (shown only when it is a terminal, after a second)"},
	{"credential-refresh", FL_SET_SECONDS, "300", 0, 86400, NULL, "FLOE_INGEST_CREDENTIAL_REFRESH", OFF(credential_refresh),
	 "REST mode: fetch fresh vended credentials (GET …/credentials) when they expire within this"},
};
/* clang-format on */
#define NINGEST (sizeof(ingest_settings) / sizeof(ingest_settings[0]))

/* Everything one run knows. */
struct job {
	struct ingest_cfg ic;
	struct srv_config sc;
	const char **inputs;
	size_t n_inputs;
	const char **levels;
	int nlevels;
	const char *name;
	char batch_id[65];
	int64_t snapshot_id;
	struct st_io *io; /* the table's storage */
	int64_t creds_expire_ms; /* vended credentials of io expire then; 0 = none */
	struct st_ingest_result res;
	struct st_snapshot_manifest *manifest;
	int attempt;
	bool already;
	int64_t committed_snapshot;
	int64_t t0;
	/* The progress line on a terminal: when the data pass began, when the
	 * line was last drawn (0 = never) and how wide it was. */
	bool progress;
	int64_t data_t0;
	int64_t drawn_at;
	int drawn_width;
};

/* ---- small helpers ---- */

static bool has_batch(const json_t *meta, const char *batch, int64_t *snapshot)
{
	json_t *snaps = json_object_get(meta, "snapshots"), *s;
	size_t i;

	json_array_foreach(snaps, i, s)
	{
		const char *b = json_string_value(
		        json_object_get(json_object_get(s, "summary"), "floe.batch-id"));

		if (b != NULL && strcmp(b, batch) == 0) {
			*snapshot = json_integer_value(json_object_get(s, "snapshot-id"));
			return true;
		}
	}
	return false;
}

static const json_t *find_by_id(const json_t *arr, const char *key, json_int_t id)
{
	json_t *v;
	size_t i;

	json_array_foreach(arr, i, v)
	{
		if (json_integer_value(json_object_get(v, key)) == id)
			return v;
	}
	return NULL;
}

static const json_t *current_schema(const json_t *meta)
{
	return find_by_id(json_object_get(meta, "schemas"), "schema-id",
	                  json_integer_value(json_object_get(meta, "current-schema-id")));
}

static const json_t *default_spec(const json_t *meta)
{
	return find_by_id(json_object_get(meta, "partition-specs"), "spec-id",
	                  json_integer_value(json_object_get(meta, "default-spec-id")));
}

static const char *prop(const json_t *meta, const char *key)
{
	return json_string_value(json_object_get(json_object_get(meta, "properties"), key));
}

/* The Idempotency-Key of one REST commit attempt: a hash of the batch, the
 * table and the attempt number, shaped as a UUIDv7 (version 7, RFC 4122
 * variant; the "time" bits are hash bits) so catalogs that check the shape
 * accept it.  Each attempt has its own key because each attempt's body
 * differs (a new parent): reusing one would replay the stored 409. */
static void attempt_key(struct job *j, int attempt, char out[40])
{
	unsigned char h[32];
	unsigned int hl = 0;
	char a[16];
	EVP_MD_CTX *md = EVP_MD_CTX_new();

	snprintf(a, sizeof(a), "%d", attempt);
	memset(h, 0, sizeof(h));
	if (md != NULL && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1) {
		EVP_DigestUpdate(md, j->batch_id, strlen(j->batch_id) + 1);
		for (int i = 0; i < j->nlevels; i++)
			EVP_DigestUpdate(md, j->levels[i], strlen(j->levels[i]) + 1);
		EVP_DigestUpdate(md, j->name, strlen(j->name) + 1);
		EVP_DigestUpdate(md, a, strlen(a));
		EVP_DigestFinal_ex(md, h, &hl);
	}
	EVP_MD_CTX_free(md);
	h[6] = (unsigned char)(0x70 | (h[6] & 0x0f));
	h[8] = (unsigned char)(0x80 | (h[8] & 0x3f));
	snprintf(out, 40, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
	         h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7], h[8], h[9], h[10], h[11], h[12],
	         h[13], h[14], h[15]);
}

/* Hashes the inputs into the batch identity (hex SHA-256). */
static int batch_identity(struct job *j, struct fl_err *err)
{
	EVP_MD_CTX *all = EVP_MD_CTX_new();
	unsigned char h[32], buf[65536];
	unsigned int hl;
	const char **sorted = malloc(sizeof(char *) * j->n_inputs);
	int rc = -1;

	if (all == NULL || sorted == NULL) {
		fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		goto out;
	}
	memcpy(sorted, j->inputs, sizeof(char *) * j->n_inputs);
	for (size_t a = 1; a < j->n_inputs; a++)
		for (size_t b = a; b > 0 && strcmp(sorted[b - 1], sorted[b]) > 0; b--) {
			const char *t = sorted[b];

			sorted[b] = sorted[b - 1];
			sorted[b - 1] = t;
		}
	EVP_DigestInit_ex(all, EVP_sha256(), NULL);
	for (size_t k = 0; k < j->n_inputs; k++) {
		char real[PATH_MAX], size[32];
		EVP_MD_CTX *one = EVP_MD_CTX_new();
		struct stat st;
		ssize_t n;
		int fd = open(sorted[k], O_RDONLY | O_CLOEXEC);

		if (fd < 0 || fstat(fd, &st) != 0 || realpath(sorted[k], real) == NULL ||
		    one == NULL) {
			fl_err_set(err, FL_ERR_BAD_REQUEST, "cannot read %.200s: %s", sorted[k],
			           strerror(errno));
			if (fd >= 0)
				close(fd);
			EVP_MD_CTX_free(one);
			goto out;
		}
		EVP_DigestInit_ex(one, EVP_sha256(), NULL);
		while ((n = read(fd, buf, sizeof(buf))) > 0)
			EVP_DigestUpdate(one, buf, (size_t)n);
		close(fd);
		EVP_DigestFinal_ex(one, h, &hl);
		EVP_MD_CTX_free(one);
		snprintf(size, sizeof(size), "%lld", (long long)st.st_size);
		EVP_DigestUpdate(all, real, strlen(real) + 1);
		EVP_DigestUpdate(all, size, strlen(size) + 1);
		EVP_DigestUpdate(all, h, sizeof(h));
	}
	EVP_DigestFinal_ex(all, h, &hl);
	for (int i = 0; i < 32; i++)
		snprintf(j->batch_id + 2 * i, 3, "%02x", h[i]);
	rc = 0;
out:
	EVP_MD_CTX_free(all);
	free(sorted);
	return rc;
}

static enum st_ingest_format detect_format(const struct job *j)
{
	const char *f = j->ic.format, *ext;

	if (strcmp(f, "csv") == 0)
		return ST_INGEST_CSV;
	if (strcmp(f, "ndjson") == 0)
		return ST_INGEST_NDJSON;
	ext = strrchr(j->inputs[0], '.');
	if (ext != NULL && (strcmp(ext, ".ndjson") == 0 || strcmp(ext, ".jsonl") == 0 ||
	                    strcmp(ext, ".json") == 0))
		return ST_INGEST_NDJSON;
	return ST_INGEST_CSV;
}

static enum st_parquet_codec codec_of(const struct job *j, const json_t *meta)
{
	const char *c = strcmp(j->ic.codec, "table") == 0
	                        ? prop(meta, "write.parquet.compression-codec")
	                        : j->ic.codec;

	if (c == NULL || strcmp(c, "zstd") == 0)
		return ST_PARQUET_ZSTD;
	if (strcmp(c, "snappy") == 0)
		return ST_PARQUET_SNAPPY;
	if (strcmp(c, "gzip") == 0)
		return ST_PARQUET_GZIP;
	return ST_PARQUET_UNCOMPRESSED;
}

/* write.parquet.compression-level, as Iceberg's writers honour it: unset
 * means the codec's default (zstd 3, as parquet-mr and DuckDB; gzip 6); a
 * set value must be a level the codec has (zstd 1-22, gzip 1-9); snappy and
 * none have no level and ignore it. */
static int level_of(enum st_parquet_codec codec, const json_t *meta, int *level, struct fl_err *err)
{
	const char *v = prop(meta, "write.parquet.compression-level");
	int max = codec == ST_PARQUET_ZSTD ? 22 : codec == ST_PARQUET_GZIP ? 9 : 0;
	char *end;
	long l;

	*level = 0;
	if (v == NULL || max == 0)
		return 0;
	errno = 0;
	l = strtol(v, &end, 10);
	if (errno != 0 || end == v || *end != '\0' || l < 1 || l > max)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "table property write.parquet.compression-level is '%.40s': "
		                  "expected an integer from 1 to %d for %s",
		                  v, max, codec == ST_PARQUET_ZSTD ? "zstd" : "gzip");
	*level = (int)l;
	return 0;
}

/* Infers a schema from the first input for --create. */
static int infer_schema(struct job *j, json_t **schema, struct fl_err *err)
{
	struct st_infer *inf = NULL;
	struct st_fd_source src;
	int fd = open(j->inputs[0], O_RDONLY | O_CLOEXEC), rc = -1, got;

	if (fd < 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "cannot open %.200s: %s", j->inputs[0],
		                  strerror(errno));
	st_fd_source_init(&src, fd, j->inputs[0]);
	if (st_infer_open(NULL, 0, &inf, err) != 0)
		goto out;
	if (detect_format(j) == ST_INGEST_CSV) {
		struct st_csv_opts co = {
		        .source = &src.source, .delimiter = j->ic.delimiter[0], .header = true};
		struct st_csv_reader *r = NULL;
		const struct st_csv_record *rec;

		if (st_csv_reader_open(&co, &r, err) != 0)
			goto out;
		got = 0;
		if (st_csv_reader_header(r) == NULL ||
		    st_infer_csv_header(inf, st_csv_reader_header(r), err) != 0)
			got = -1;
		for (int k = 0; got == 0 && k < 10000; k++) {
			if (st_csv_reader_next(r, &rec, err) != 0)
				got = -1;
			else if (rec == NULL)
				break;
			else if (rec->error == NULL && st_infer_csv_row(inf, rec, err) != 0)
				got = -1;
		}
		st_csv_reader_free(r);
	} else {
		struct st_ndjson_opts no = {.source = &src.source};
		struct st_ndjson_reader *r = NULL;
		const struct st_ndjson_record *rec;

		if (st_ndjson_reader_open(&no, &r, err) != 0)
			goto out;
		got = 0;
		for (int k = 0; k < 10000 && got == 0; k++) {
			if (st_ndjson_reader_next(r, &rec, err) != 0)
				got = -1;
			else if (rec == NULL)
				break;
			else if (rec->obj != NULL && st_infer_json_object(inf, rec->obj, err) != 0)
				got = -1;
		}
		st_ndjson_reader_free(r);
	}
	if (got < 0)
		goto out;
	rc = st_infer_schema(inf, schema, err);
out:
	st_infer_free(inf);
	close(fd);
	return rc;
}

/* ---- progress on a terminal ---- */

/* Formats n bytes as "12.3 MiB" (binary units, one decimal). */
static void put_bytes(char *out, size_t cap, uint64_t n)
{
	static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)n;
	size_t u = 0;

	while (v >= 1024 && u + 1 < sizeof(unit) / sizeof(unit[0])) {
		v /= 1024;
		u++;
	}
	snprintf(out, cap, u == 0 ? "%.0f %s" : "%.1f %s", v, unit[u]);
}

/* Draws "read 12.3 MiB of 40.0 MiB (30%), 81234 rows, 40617 rows/s, 2.0 s"
 * over the previous line; force = draw now (the last line). */
static void progress_draw(struct job *j, const struct st_ingest_progress *p, bool force)
{
	int64_t now = fl_mono_ns();
	double run = (double)(now - j->data_t0) / 1e9;
	char done[24], total[24], line[160];
	int w;

	/* Quick runs show nothing; long ones at most twice a second. */
	if (!force &&
	    (now - j->t0 < 1000000000 || (j->drawn_at != 0 && now - j->drawn_at < 500000000)))
		return;
	if (force && j->drawn_at == 0)
		return;
	put_bytes(done, sizeof(done), p->bytes_read);
	put_bytes(total, sizeof(total), p->bytes_total);
	w = snprintf(
	        line, sizeof(line),
	        "floe ingest: read %s of %s (%.0f%%), %llu rows, %.0f rows/s, %.1f s", done, total,
	        p->bytes_total ? 100.0 * (double)p->bytes_read / (double)p->bytes_total : 100.0,
	        (unsigned long long)p->records, run > 0 ? (double)p->records / run : 0.0,
	        (double)(now - j->t0) / 1e9);
	/* Spaces blank what a longer previous line left behind. */
	fprintf(stderr, "\r%s%*s", line, j->drawn_width > w ? j->drawn_width - w : 0, "");
	fflush(stderr);
	j->drawn_at = now;
	j->drawn_width = w;
}

static void progress_cb(void *ctx, const struct st_ingest_progress *p)
{
	progress_draw(ctx, p, false);
}

/* ---- building the commit ---- */

/* Writes the Parquet files for this table's current schema. */
static int write_data(struct job *j, const json_t *meta, struct fl_err *err)
{
	const char *location = json_string_value(json_object_get(meta, "location"));
	char data_uri[PATH_MAX], dl[PATH_MAX];
	const json_t *schema = current_schema(meta);
	const json_t *spec = default_spec(meta);
	const char *tfs = prop(meta, "write.target-file-size-bytes");
	const char *rgs = prop(meta, "write.parquet.row-group-size-bytes");
	enum st_parquet_codec codec = codec_of(j, meta);
	int level;

	if (location == NULL || schema == NULL)
		return fl_err_set(err, FL_ERR_INTERNAL,
		                  "table metadata has no location or current schema");
	if (level_of(codec, meta, &level, err) != 0)
		return -1;
	snprintf(data_uri, sizeof(data_uri), "%s/data", location);
	if (j->ic.dead_letter_dir[0] != '\0')
		snprintf(dl, sizeof(dl), "%s/%.16s.rejected", j->ic.dead_letter_dir, j->batch_id);
	else if (strncmp(location, "file://", 7) == 0)
		snprintf(dl, sizeof(dl), "%s/dead-letter/%.16s.rejected", location + 7,
		         j->batch_id);
	else if (strcmp(j->ic.on_error, "dead-letter") == 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "--dead-letter-dir is required for a table on object storage");
	else
		dl[0] = '\0';
	if (strcmp(j->ic.on_error, "dead-letter") == 0) {
		char dir[PATH_MAX];

		snprintf(dir, sizeof(dir), "%s", dl);
		*strrchr(dir, '/') = '\0';
		if (mkdir(dir, 0755) != 0 && errno != EEXIST)
			return fl_err_set(err, FL_ERR_IO, "cannot create %s: %s", dir,
			                  strerror(errno));
	}
	struct st_ingest_opts o = {
	        .schema = schema,
	        .spec = spec,
	        .last_column_id = json_integer_value(json_object_get(meta, "last-column-id")),
	        .format = detect_format(j),
	        .delimiter = j->ic.delimiter[0],
	        .null_marker = j->ic.null_marker,
	        .on_error = strcmp(j->ic.on_error, "dead-letter") == 0 ? ST_ON_ERROR_DEAD_LETTER
	                                                               : ST_ON_ERROR_STRICT,
	        .new_columns = strcmp(j->ic.new_columns, "evolve") == 0   ? ST_NEW_COLUMNS_EVOLVE
	                       : strcmp(j->ic.new_columns, "ignore") == 0 ? ST_NEW_COLUMNS_IGNORE
	                                                                  : ST_NEW_COLUMNS_REJECT,
	        .io = j->io,
	        .data_uri = data_uri,
	        .dead_letter_path = dl,
	        .codec = codec,
	        .compression_level = level,
	        .target_file_bytes = j->ic.target_file_bytes > 0 ? (uint64_t)j->ic.target_file_bytes
	                             : tfs != NULL               ? strtoull(tfs, NULL, 10)
	                                                         : 0,
	        /* Memory is bounded by the open row groups; 64 MiB keeps a run
	         * well under 256 MB of RSS unless the table asks for more. */
	        .row_group_bytes = rgs != NULL ? (size_t)strtoull(rgs, NULL, 10) : (size_t)64 << 20,
	        .tz_assume_utc = j->ic.tz_assume_utc != 0,
	        .progress = j->progress ? progress_cb : NULL,
	        .progress_ctx = j,
	};
	struct st_ingest_progress last = {0};
	int rc;

	j->data_t0 = fl_mono_ns();
	rc = st_ingest_run(&o, j->inputs, j->n_inputs, &j->res, err);
	if (j->drawn_at != 0) {
		/* The final count, and the line ends before anything else prints. */
		last.bytes_read = last.bytes_total = j->res.bytes_in;
		last.records = j->res.rows_ok + j->res.rows_bad;
		if (rc == 0)
			progress_draw(j, &last, true);
		fputc('\n', stderr);
	}
	return rc;
}

/* The schema id the evolved schema will get (the builder reuses an identical
 * schema, which cannot exist: it has a column the current one lacks). */
static int64_t next_schema_id(const json_t *meta)
{
	json_t *s;
	size_t i;
	int64_t max = -1;

	json_array_foreach(json_object_get(meta, "schemas"), i, s)
	{
		int64_t id = json_integer_value(json_object_get(s, "schema-id"));

		if (id > max)
			max = id;
	}
	return max + 1;
}

/* The updates of one commit attempt on top of meta. */
static int make_updates(struct job *j, const json_t *meta, json_t **out, struct fl_err *err)
{
	const json_t *schema = j->res.evolved ? j->res.schema : current_schema(meta);
	int64_t schema_id =
	        j->res.evolved ? next_schema_id(meta)
	                       : json_integer_value(json_object_get(meta, "current-schema-id"));
	const json_t *spec = default_spec(meta);
	const char *location = json_string_value(json_object_get(meta, "location"));
	char mdir[PATH_MAX];
	json_t *schema_copy = NULL, *snapshot = NULL, *updates = NULL, *extra = NULL;
	int64_t cur = json_integer_value(json_object_get(meta, "current-snapshot-id"));
	int rc = -1;

	snprintf(mdir, sizeof(mdir), "%s/metadata", location);
	if (j->res.evolved) {
		schema_copy = json_deep_copy(schema);
		if (schema_copy == NULL)
			goto nomem;
		json_object_set_new(schema_copy, "schema-id", json_integer(schema_id));
		schema = schema_copy;
	}
	struct st_snapshot_table t = {
	        .format_version = (int)json_integer_value(json_object_get(meta, "format-version")),
	        .schema = schema,
	        .schema_id = (int32_t)schema_id,
	        .spec = spec,
	        .spec_id = (int32_t)json_integer_value(json_object_get(meta, "default-spec-id")),
	        .metadata_dir = mdir,
	        .io = j->io,
	        .codec = ST_AVRO_CODEC_DEFLATE,
	};
	if (j->manifest == NULL) {
		struct st_data_file *files = calloc(j->res.n_files, sizeof(*files));

		if (files == NULL)
			goto nomem;
		for (size_t i = 0; i < j->res.n_files; i++) {
			st_parquet_metrics_to_data_file(&j->res.files[i].m, &files[i]);
			files[i].file_path = j->res.files[i].uri;
			files[i].partition = j->res.files[i].partition;
		}
		rc = st_snapshot_manifest_write(&t, j->snapshot_id, files, j->res.n_files,
		                                &j->manifest, err);
		free(files);
		if (rc != 0)
			goto out;
		rc = -1;
	}
	const json_t *psnap =
	        cur > 0 || (cur == 0 && json_object_get(meta, "current-snapshot-id") != NULL)
	                ? find_by_id(json_object_get(meta, "snapshots"), "snapshot-id", cur)
	                : NULL;
	struct st_snapshot_parent parent = {0};
	if (psnap != NULL) {
		parent.snapshot_id = cur;
		parent.manifest_list = json_string_value(json_object_get(psnap, "manifest-list"));
		parent.summary = json_object_get(psnap, "summary");
	}
	extra = json_pack("{s:s, s:s}", "floe.batch-id", j->batch_id, "floe.rows-dead-lettered",
	                  "0");
	if (extra == NULL)
		goto nomem;
	{
		char n[24];

		snprintf(n, sizeof(n), "%llu", (unsigned long long)j->res.rows_bad);
		json_object_set_new(extra, "floe.rows-dead-lettered", json_string(n));
	}
	struct st_snapshot_opts so = {
	        .table = &t,
	        .parent = psnap ? &parent : NULL,
	        .snapshot_id = j->snapshot_id,
	        .sequence_number =
	                json_integer_value(json_object_get(meta, "last-sequence-number")) + 1,
	        .timestamp_ms = fl_now_ms(),
	        .first_row_id = json_integer_value(json_object_get(meta, "next-row-id")),
	        .attempt = ++j->attempt,
	        .manifest = j->manifest,
	        .extra_summary = extra,
	};
	if (st_snapshot_build(&so, &snapshot, err) != 0)
		goto out;
	updates = json_array();
	if (updates == NULL)
		goto nomem;
	if (j->res.evolved) {
		json_array_append_new(
		        updates, json_pack("{s:s, s:O}", "action", "add-schema", "schema", schema));
		json_array_append_new(updates, json_pack("{s:s, s:i}", "action",
		                                         "set-current-schema", "schema-id", -1));
	}
	json_array_append_new(
	        updates, json_pack("{s:s, s:O}", "action", "add-snapshot", "snapshot", snapshot));
	json_array_append_new(updates,
	                      json_pack("{s:s, s:s, s:s, s:I}", "action", "set-snapshot-ref",
	                                "ref-name", "main", "type", "branch", "snapshot-id",
	                                (json_int_t)j->snapshot_id));
	*out = updates;
	updates = NULL;
	rc = 0;
	goto out;
nomem:
	fl_err_set(err, FL_ERR_NOMEM, "out of memory");
out:
	json_decref(schema_copy);
	json_decref(snapshot);
	json_decref(updates);
	json_decref(extra);
	return rc;
}

/* Before any commit attempt: a batch already in the history is done; else
 * the data files are written, and a batch with no good rows is done too. */
static int prepare_batch(struct job *j, const json_t *meta, bool *done, struct fl_err *err)
{
	*done = true;
	if (has_batch(meta, j->batch_id, &j->committed_snapshot)) {
		j->already = true;
		return 0;
	}
	if (write_data(j, meta, err) != 0)
		return -1;
	*done = j->res.rows_ok == 0;
	return 0;
}

/* Called by the catalog under the row lock (in-process mode). */
static int build_locked(void *arg, const json_t *current, json_t **updates, struct fl_err *err)
{
	struct job *j = arg;

	if (has_batch(current, j->batch_id, &j->committed_snapshot)) {
		j->already = true;
		*updates = json_array();
		return *updates ? 0 : fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	}
	return make_updates(j, current, updates, err);
}

/* Deletes the manifest this run wrote (it was never committed). */
static void discard_manifest(struct job *j)
{
	struct fl_err ignored;

	if (j->manifest != NULL && st_io_delete(j->io, j->manifest->path, &ignored) != 0)
		ignored.kind = FL_ERR_NONE;
}

/* ---- the two commit modes ---- */

static int parse_table(struct job *j, struct fl_err *err)
{
	struct srv_cli_table t;

	if (srv_cli_table_parse(j->ic.table, &t, err) != 0) {
		free(t.levels);
		return -1;
	}
	j->levels = t.levels;
	j->nlevels = t.nlevels;
	j->name = t.name;
	return 0;
}

static int run_in_process(struct job *j, struct fl_err *err)
{
	struct cat_ns ns = {j->levels, j->nlevels};
	struct cat_change ch = {.ns = ns, .name = j->name};
	struct cat_limits lim = {(size_t)j->sc.max_commit_updates,
	                         (size_t)j->sc.max_metadata_bytes};
	struct srv_cli_catalog cat;
	char *mloc = NULL, *text = NULL, type[16];
	json_t *meta = NULL;
	bool done;
	int rc = -1;

	if (srv_cli_catalog_open(&j->sc, &cat, err) != 0)
		goto out;
	st_io_retain(cat.io);
	j->io = cat.io;
	if (cat_table_load(cat.db, NULL, j->sc.warehouse, &ns, j->name, &mloc, &text, type, err) !=
	    0) {
		json_t *schema = NULL, *req;

		if (err->kind != FL_ERR_NO_SUCH_TABLE || !j->ic.create)
			goto out;
		if (infer_schema(j, &schema, err) != 0)
			goto out;
		req = json_pack("{s:s, s:o}", "name", j->name, "schema", schema);
		if (req == NULL || cat_table_create(cat.db, NULL, &cat.wh, &ns, req, false, &mloc,
		                                    &text, NULL, err) != 0) {
			json_decref(req);
			goto out;
		}
		json_decref(req);
	}
	meta = json_loads(text, 0, NULL);
	if (meta == NULL) {
		fl_err_set(err, FL_ERR_INTERNAL, "stored metadata is not JSON");
		goto out;
	}
	if (prepare_batch(j, meta, &done, err) != 0)
		goto out;
	if (done) {
		rc = 0;
		goto out;
	}
	if (cat_table_append(cat.db, &cat.wh, &ch, build_locked, j, &lim, NULL, err) != 0) {
		if (err->kind != FL_ERR_COMMIT_STATE_UNKNOWN)
			st_ingest_result_discard(j->io, &j->res);
		goto out;
	}
	if (j->already)
		st_ingest_result_discard(j->io, &j->res);
	else
		j->committed_snapshot = j->snapshot_id;
	cat_changes_free(&ch, 1);
	rc = 0;
out:
	json_decref(meta);
	free(mloc);
	free(text);
	srv_cli_catalog_close(&cat);
	return rc;
}

/* Over REST, the files go where the table's location says.  A local
 * location needs no credentials; an s3:// one is written with the
 * credentials the catalog vends for the table (storage-credentials, or
 * config: s3.access-key-id, s3.secret-access-key, s3.session-token,
 * s3.endpoint, s3.region / client.region, s3.path-style-access,
 * s3.session-token-expires-at-ms). */
static int open_rest_io(struct job *j, const json_t *meta, const json_t *cfg, struct fl_err *err)
{
	const char *location = json_string_value(json_object_get(meta, "location"));
	const char *ak, *sk, *tok, *ep, *region, *ps, *exp, *key;
	struct st_profile p = {0};
	struct st_creds *c = NULL;
	struct st_io *io = NULL;
	int rc = -1;

	if (location != NULL && strncmp(location, "file:///", 8) == 0) {
		p.type = ST_STORAGE_FILE;
		snprintf(p.location, sizeof(p.location), "%s", location);
		return st_io_open(&p, &j->io, err);
	}
	if (location == NULL || strncmp(location, "s3://", 5) != 0)
		return fl_err_set(
		        err, FL_ERR_UNSUPPORTED,
		        "--catalog-uri: table location %.200s is neither file:// nor s3://",
		        location ? location : "(none)");
	ak = json_string_value(json_object_get(cfg, "s3.access-key-id"));
	sk = json_string_value(json_object_get(cfg, "s3.secret-access-key"));
	tok = json_string_value(json_object_get(cfg, "s3.session-token"));
	ep = json_string_value(json_object_get(cfg, "s3.endpoint"));
	region = json_string_value(json_object_get(cfg, "s3.region"));
	if (region == NULL)
		region = json_string_value(json_object_get(cfg, "client.region"));
	ps = json_string_value(json_object_get(cfg, "s3.path-style-access"));
	exp = json_string_value(json_object_get(cfg, "s3.session-token-expires-at-ms"));
	if (ak == NULL || sk == NULL)
		return fl_err_set(err, FL_ERR_UNSUPPORTED,
		                  "--catalog-uri: the catalog vended no credentials for %.200s "
		                  "(asked with X-Iceberg-Access-Delegation: vended-credentials)",
		                  location);
	if (strlen(ak) >= sizeof(c->access_key_id) || strlen(sk) >= sizeof(c->secret_access_key) ||
	    (tok != NULL && strlen(tok) >= sizeof(c->session_token)) ||
	    (ep != NULL && strlen(ep) >= sizeof(p.endpoint)) ||
	    (region != NULL && strlen(region) >= sizeof(p.region)) ||
	    strlen(location) >= sizeof(p.location))
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "--catalog-uri: a vended credential value is too long");
	p.type = ST_STORAGE_S3;
	snprintf(p.location, sizeof(p.location), "%s", location);
	if (st_s3_uri_split(location, p.bucket, sizeof(p.bucket), &key, err) != 0)
		return -1;
	snprintf(p.prefix, sizeof(p.prefix), "%s", key);
	snprintf(p.endpoint, sizeof(p.endpoint), "%s", ep ? ep : "");
	snprintf(p.region, sizeof(p.region), "%s", region ? region : "us-east-1");
	p.path_style = ps != NULL && strcmp(ps, "true") == 0;
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	snprintf(c->access_key_id, sizeof(c->access_key_id), "%s", ak);
	snprintf(c->secret_access_key, sizeof(c->secret_access_key), "%s", sk);
	snprintf(c->session_token, sizeof(c->session_token), "%s", tok ? tok : "");
	if (st_io_open_creds(&p, c, &io, err) != 0)
		goto out;
	/* Swap: files written so far keep their handle through j->res. */
	st_io_release(j->io);
	j->io = io;
	j->creds_expire_ms = exp != NULL ? strtoll(exp, NULL, 10) : 0;
	rc = 0;
out:
	memset(c, 0, sizeof(*c));
	free(c);
	return rc;
}

/* Fetches fresh vended credentials when the current ones expire within
 * --credential-refresh. */
static int refresh_rest_io(struct job *j, struct st_rest *c, const json_t *meta, struct fl_err *err)
{
	const char *location = json_string_value(json_object_get(meta, "location"));
	json_t *cfg = NULL;
	int rc;

	if (j->creds_expire_ms <= 0 ||
	    fl_now_ms() < j->creds_expire_ms - j->ic.credential_refresh * 1000)
		return 0;
	if (st_rest_load_credentials(c, j->levels, j->nlevels, j->name, location ? location : "",
	                             &cfg, err) != 0)
		return fl_err_prefix(err, "refreshing vended credentials");
	rc = open_rest_io(j, meta, cfg, err);
	json_decref(cfg);
	return rc;
}

static int run_rest(struct job *j, struct fl_err *err)
{
	struct st_rest *c = NULL;
	json_t *meta = NULL, *updates = NULL, *reqs = NULL, *out = NULL, *storage = NULL;
	char *mloc = NULL, *oloc = NULL;
	bool done;
	int rc = -1;

	if (st_rest_open(j->ic.catalog_uri, j->sc.warehouse, j->ic.token, &c, err) != 0)
		goto out;
	if (st_rest_load_table(c, j->levels, j->nlevels, j->name, &meta, &mloc, err) != 0) {
		json_t *schema = NULL;

		if (err->kind != FL_ERR_NO_SUCH_TABLE || !j->ic.create ||
		    infer_schema(j, &schema, err) != 0)
			goto out;
		rc = st_rest_create_table(c, j->levels, j->nlevels, j->name, schema, NULL, &meta,
		                          &mloc, err);
		json_decref(schema);
		if (rc != 0)
			goto out;
		rc = -1;
	}
	storage = st_rest_storage(c);
	if (storage == NULL) {
		fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		goto out;
	}
	if (open_rest_io(j, meta, storage, err) != 0 || prepare_batch(j, meta, &done, err) != 0)
		goto out;
	if (done) {
		rc = 0;
		goto out;
	}
	for (int attempt = 0;; attempt++) {
		int64_t cur = json_integer_value(json_object_get(meta, "current-snapshot-id"));
		bool has_cur =
		        cur >= 0 && json_is_integer(json_object_get(meta, "current-snapshot-id"));

		json_decref(updates);
		json_decref(reqs);
		updates = NULL;
		if (refresh_rest_io(j, c, meta, err) != 0 ||
		    make_updates(j, meta, &updates, err) != 0)
			goto out;
		reqs = json_pack("[{s:s, s:s, s:o}, {s:s, s:O}]", "type", "assert-ref-snapshot-id",
		                 "ref", "main", "snapshot-id",
		                 has_cur ? json_integer(cur) : json_null(), "type",
		                 "assert-table-uuid", "uuid", json_object_get(meta, "table-uuid"));
		if (reqs == NULL) {
			fl_err_set(err, FL_ERR_NOMEM, "out of memory");
			goto out;
		}
		if (j->res.evolved &&
		    json_array_append_new(
		            reqs, json_pack("{s:s, s:O}", "type", "assert-current-schema-id",
		                            "current-schema-id",
		                            json_object_get(meta, "current-schema-id"))) != 0)
			goto out;
		char key[40];

		attempt_key(j, attempt, key);
		if (st_rest_commit(c, j->levels, j->nlevels, j->name, reqs, updates, key, &out,
		                   &oloc, err) == 0) {
			j->committed_snapshot = j->snapshot_id;
			rc = 0;
			goto out;
		}
		if (err->kind == FL_ERR_COMMIT_STATE_UNKNOWN) {
			/* Maybe applied: look before doing anything else. */
			struct fl_err lerr = {0};

			json_decref(meta);
			meta = NULL;
			free(mloc);
			mloc = NULL;
			if (st_rest_load_table(c, j->levels, j->nlevels, j->name, &meta, &mloc,
			                       &lerr) == 0 &&
			    has_batch(meta, j->batch_id, &j->committed_snapshot)) {
				rc = 0;
				goto out;
			}
			goto out; /* still unknown: keep the files, report it */
		}
		/* 422: this attempt's key was used with another body, which only a
		 * concurrent run of the same batch does: look at the table, like
		 * after a conflict. */
		bool retryable =
		        err->kind == FL_ERR_COMMIT_FAILED || err->kind == FL_ERR_UNPROCESSABLE;

		if (!retryable || attempt >= j->ic.retries) {
			if (retryable) {
				err->kind = FL_ERR_COMMIT_FAILED;
				fl_err_prefix(err, "gave up after %d attempts", attempt + 1);
			} else {
				st_ingest_result_discard(j->io, &j->res);
			}
			goto out;
		}
		/* A conflict: reload, and retry on the new parent after a backoff. */
		{
			struct timespec ts = {
			        0, (long)((50L << (attempt < 6 ? attempt : 6)) * 1000000L)};

			nanosleep(&ts, NULL);
		}
		json_decref(meta);
		meta = NULL;
		free(mloc);
		mloc = NULL;
		if (st_rest_load_table(c, j->levels, j->nlevels, j->name, &meta, &mloc, err) != 0)
			goto out;
		if (has_batch(meta, j->batch_id, &j->committed_snapshot)) {
			/* A concurrent run of the same batch won: ours is not needed. */
			j->already = true;
			st_ingest_result_discard(j->io, &j->res);
			discard_manifest(j);
			rc = 0;
			goto out;
		}
	}
out:
	json_decref(storage);
	json_decref(meta);
	json_decref(updates);
	json_decref(reqs);
	json_decref(out);
	free(mloc);
	free(oloc);
	st_rest_close(c);
	return rc;
}

/* ---- the command ---- */

void srv_cmd_ingest_help(FILE *f)
{
	fprintf(f,
	        "Commits the rows of CSV or NDJSON files to an Iceberg table as one snapshot, once.\n"
	        "In process by default (the catalog database of --database-url or --data-dir);\n"
	        "with --catalog-uri through any Iceberg REST catalog.\n\n"
	        "ingest options (each also an environment variable):\n");
	fl_settings_help(ingest_settings, NINGEST, f);
	fprintf(f,
	        "\ncatalog options (in-process mode): --database-url, --data-dir, --warehouse, --pg-bin-dir\n"
	        "exit status: 0 committed / already committed / nothing to commit, 2 usage, 3 bad input,\n"
	        "4 commit conflicts exhausted, 5 commit state unknown, 1 other failures\n");
}

static void print_result(struct job *j, int code, const struct fl_err *err)
{
	json_t *o = json_object();
	const char *status = code != EXIT_OK ? "failed"
	                     : j->already    ? "already-committed"
	                     : j->committed_snapshot != 0 && j->res.rows_ok > 0
	                             ? "committed"
	                             : "nothing-to-commit";
	uint64_t bytes = 0;
	char *s;

	for (size_t i = 0; i < j->res.n_files; i++)
		bytes += (uint64_t)j->res.files[i].m.file_size;
	json_object_set_new(o, "status", json_string(status));
	json_object_set_new(o, "table", json_string(j->ic.table[0] ? j->name : ""));
	json_object_set_new(o, "batch-id", json_string(j->batch_id));
	if (j->committed_snapshot != 0)
		json_object_set_new(o, "snapshot-id", json_integer(j->committed_snapshot));
	json_object_set_new(o, "rows-committed",
	                    json_integer(j->already || code ? 0 : (json_int_t)j->res.rows_ok));
	json_object_set_new(o, "rows-dead-lettered", json_integer((json_int_t)j->res.rows_bad));
	json_object_set_new(o, "files-written",
	                    json_integer(j->already || code ? 0 : (json_int_t)j->res.n_files));
	json_object_set_new(o, "bytes-written",
	                    json_integer(j->already || code ? 0 : (json_int_t)bytes));
	json_object_set_new(o, "bytes-read", json_integer((json_int_t)j->res.bytes_in));
	if (j->res.dead_letter_errors != NULL)
		json_object_set_new(o, "dead-letter-errors",
		                    json_string(j->res.dead_letter_errors));
	/* Milliseconds are the precision that means something; printed with
	 * JSON_REAL_PRECISION below so 0.022 does not become 0.0219999…. */
	json_object_set_new(o, "seconds",
	                    json_real((double)((fl_mono_ns() - j->t0 + 500000) / 1000000) / 1e3));
	if (code != EXIT_OK)
		json_object_set_new(o, "error", json_string(err->msg));
	s = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(15));
	if (s != NULL)
		printf("%s\n", s);
	fflush(stdout);
	free(s);
	json_decref(o);
}

int srv_cmd_ingest(int argc, char **argv)
{
	struct job j = {0};
	struct fl_err err = {0};
	char **ia = calloc((size_t)argc + 2, sizeof(char *)),
	     **sa = calloc((size_t)argc + 2, sizeof(char *));
	int ni, ns, ai = 1, code = EXIT_FAIL, rest = 0;

	j.t0 = fl_mono_ns();
	if (ia == NULL || sa == NULL) {
		free(ia);
		free(sa);
		return EXIT_FAIL;
	}
	if (srv_cli_split_args("ingest", argc, argv, ingest_settings, NINGEST, ia, &ni, sa, &ns,
	                       &rest, &err) != 0 ||
	    fl_settings_load(ingest_settings, NINGEST, &j.ic, ni, ia, &ai, &err) != 0 ||
	    (ai = 1, srv_config_load(&j.sc, ns, sa, &ai, &err)) != 0 ||
	    parse_table(&j, &err) != 0) {
		fprintf(stderr, "floe ingest: %s\n", err.msg);
		code = EXIT_USAGE;
		goto done;
	}
	j.inputs = (const char **)(argv + rest);
	j.n_inputs = (size_t)(argc - rest);
	if (j.n_inputs == 0) {
		fprintf(stderr, "floe ingest: no input files\n");
		code = EXIT_USAGE;
		goto done;
	}
	fl_log_set_level((enum fl_log_level)fl_log_level_parse(j.sc.log_level));
	j.progress = !j.ic.quiet && isatty(STDERR_FILENO);
	if (batch_identity(&j, &err) != 0) {
		code = EXIT_BAD_INPUT;
		goto report;
	}
	do {
		if (RAND_bytes((unsigned char *)&j.snapshot_id, sizeof(j.snapshot_id)) != 1)
			j.snapshot_id = fl_now_ms();
		j.snapshot_id &= INT64_MAX;
	} while (j.snapshot_id == 0);
	if ((j.ic.catalog_uri[0] != '\0' ? run_rest(&j, &err) : run_in_process(&j, &err)) == 0)
		code = EXIT_OK;
	else if (err.kind == FL_ERR_COMMIT_STATE_UNKNOWN)
		code = EXIT_UNKNOWN;
	else if (err.kind == FL_ERR_COMMIT_FAILED)
		code = EXIT_CONFLICT;
	else if (err.kind == FL_ERR_BAD_REQUEST)
		code = EXIT_BAD_INPUT;
	else
		code = EXIT_FAIL;
report:
	print_result(&j, code, &err);
	if (code != EXIT_OK)
		fprintf(stderr, "floe ingest: %s\n", err.msg);
done:
	st_snapshot_manifest_free(j.manifest);
	st_ingest_result_free(&j.res);
	st_io_release(j.io);
	fl_settings_free(ingest_settings, NINGEST, &j.ic);
	srv_config_free(&j.sc);
	free(j.levels);
	free(ia);
	free(sa);
	return code;
}
