/* cmd_ingest.c - `floe ingest`: CSV / NDJSON files into one table snapshot,
 * exactly once.  A thin command: it reads the options, picks a committer --
 * in process (catalog/inprocess.h: through this catalog's database, the
 * commit under the table's row lock) or REST (storage/rest: --catalog-uri,
 * any Iceberg REST catalog) -- and hands the files to the write path
 * (storage/ingest/batch.h), which the daemon's feed workers use alike.
 *
 * The batch identity is a hash of the inputs (sorted paths, sizes and
 * content hashes): it travels in the snapshot summary (floe.batch-id), so a
 * repeated run is reported as "already-committed" and changes nothing. */
#include "cmd_ingest.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "batch.h"
#include "catalog.h"
#include "cli.h"
#include "clock.h"
#include "inprocess.h"
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
	char *mode;
	char *cdc_field;
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
	int64_t threads;
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
	{"format", FL_SET_ENUM, "auto", 0, 0, "auto|csv|ndjson|parquet", "FLOE_INGEST_FORMAT", OFF(format),
	 "input format; auto = by file extension (.csv, .ndjson/.jsonl/.json, .parquet: added as data files after a schema check)"},
	{"on-error", FL_SET_ENUM, "strict", 0, 0, "strict|dead-letter", "FLOE_INGEST_ON_ERROR", OFF(on_error),
	 "strict: any bad row fails the batch; dead-letter: bad rows are set aside, good rows commit"},
	{"new-columns", FL_SET_ENUM, "reject", 0, 0, "reject|ignore|evolve", "FLOE_INGEST_NEW_COLUMNS", OFF(new_columns),
	 "input columns missing from the table: fail, drop, or add as optional string columns"},
	{"mode", FL_SET_ENUM, "append", 0, 0, "append|upsert", "FLOE_INGEST_MODE", OFF(mode),
	 "upsert: rows replace the table's rows with the same key (its identifier fields), the last row of a key winning"},
	{"cdc-field", FL_SET_STR, "", 0, 256, NULL, "FLOE_INGEST_CDC_FIELD", OFF(cdc_field),
	 "upsert: a row whose value in this string column begins with D or d (or is true, a boolean column) deletes its key"},
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
	{"threads", FL_SET_INT, "1", 1, 64, NULL, "FLOE_INGEST_THREADS", OFF(threads),
	 "threads in all: above 1, one reads and parses while the others compress (same files for any value)"},
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
	struct st_batch_result out; /* what the batch did */
	int64_t t0;
	/* The progress line on a terminal: how long into the run it first shows,
	 * when the data pass began, when the line was last drawn (0 = never) and
	 * how wide it was. */
	bool progress;
	int64_t progress_after;
	int64_t data_t0;
	int64_t drawn_at;
	int drawn_width;
	/* The batch identity, hashed on a thread while the catalog connects. */
	pthread_t id_thread;
	bool id_threaded;
	int id_rc;
	struct fl_err id_err;
};

/* ---- small helpers ---- */

static enum st_ingest_format detect_format(const struct job *j)
{
	const char *f = j->ic.format, *ext;

	if (strcmp(f, "csv") == 0)
		return ST_INGEST_CSV;
	if (strcmp(f, "ndjson") == 0)
		return ST_INGEST_NDJSON;
	if (strcmp(f, "parquet") == 0)
		return ST_INGEST_PARQUET;
	ext = strrchr(j->inputs[0], '.');
	if (ext != NULL && strcmp(ext, ".parquet") == 0)
		return ST_INGEST_PARQUET;
	if (ext != NULL && (strcmp(ext, ".ndjson") == 0 || strcmp(ext, ".jsonl") == 0 ||
	                    strcmp(ext, ".json") == 0))
		return ST_INGEST_NDJSON;
	return ST_INGEST_CSV;
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
	if (!force && (now - j->t0 < j->progress_after ||
	               (j->drawn_at != 0 && now - j->drawn_at < 500000000)))
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

/* ---- the batch identity ---- */

static void *identity_main(void *arg)
{
	struct job *j = arg;

	j->id_rc = st_batch_identity(j->inputs, j->n_inputs, j->batch_id, &j->id_err);
	return NULL;
}

/* Hashing the inputs, and OpenSSL's first use (~1 ms of its own), overlap
 * the catalog's connection, which mostly waits on PostgreSQL, and the read
 * of the first row group (st_batch_opts.await_id).  An input that cannot
 * be read is refused here, before anything connects. */
static int identity_start(struct job *j, struct fl_err *err)
{
	for (size_t k = 0; k < j->n_inputs; k++)
		if (access(j->inputs[k], R_OK) != 0)
			return fl_err_set(err, FL_ERR_BAD_REQUEST, "cannot read %.200s: %s",
			                  j->inputs[k], strerror(errno));
	j->id_threaded = pthread_create(&j->id_thread, NULL, identity_main, j) == 0;
	if (!j->id_threaded)
		identity_main(j);
	return 0;
}

/* rc of what ran beside the hash, or -1 with the hash's own error, which
 * wins: a batch whose inputs cannot be read is reported as such. */
static int identity_wait(struct job *j, int rc, struct fl_err *err)
{
	if (j->id_threaded) {
		pthread_join(j->id_thread, NULL);
		j->id_threaded = false;
	}
	if (j->id_rc != 0) {
		*err = j->id_err;
		return -1;
	}
	return rc;
}

/* st_batch_opts.await_id: the batch reads its first rows beside the hash,
 * and waits for it before it writes. */
static int await_identity(void *ctx, struct fl_err *err)
{
	return identity_wait(ctx, 0, err);
}

/* ---- the two catalogs ---- */

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

/* FLOE_TEST_UPSERT_PAUSE_MS: tests hold an upsert after its first plan,
 * before its commit, to race a commit against it (srv_cli_test_pause). */
static void test_after_plan(void *ctx, int plan)
{
	const unsigned *ms = ctx;

	if (plan == 0)
		srv_cli_test_pause(*ms);
}

/* The batch through c, with the options of the command line. */
static int run_batch(struct job *j, struct st_committer *c, struct fl_err *err)
{
	static unsigned pause_ms;
	struct st_batch_opts o = {
	        .format = detect_format(j),
	        .delimiter = j->ic.delimiter[0],
	        .null_marker = j->ic.null_marker,
	        .on_error = strcmp(j->ic.on_error, "dead-letter") == 0 ? ST_ON_ERROR_DEAD_LETTER
	                                                               : ST_ON_ERROR_STRICT,
	        .new_columns = strcmp(j->ic.new_columns, "evolve") == 0   ? ST_NEW_COLUMNS_EVOLVE
	                       : strcmp(j->ic.new_columns, "ignore") == 0 ? ST_NEW_COLUMNS_IGNORE
	                                                                  : ST_NEW_COLUMNS_REJECT,
	        .create = j->ic.create != 0,
	        .upsert = strcmp(j->ic.mode, "upsert") == 0,
	        .cdc_field = j->ic.cdc_field[0] != '\0' ? j->ic.cdc_field : NULL,
	        .codec = j->ic.codec,
	        .target_file_bytes = (uint64_t)j->ic.target_file_bytes,
	        .dead_letter_dir = j->ic.dead_letter_dir,
	        .tz_assume_utc = j->ic.tz_assume_utc != 0,
	        .retries = (int)j->ic.retries,
	        .threads = (int)j->ic.threads,
	        .progress = j->progress ? progress_cb : NULL,
	        .progress_ctx = j,
	        .await_id = await_identity,
	        .await_ctx = j,
	        .after_plan_ctx = &pause_ms,
	};
	struct st_ingest_progress last = {0};
	int rc;

	pause_ms = srv_cli_test_pause_ms("FLOE_TEST_UPSERT_PAUSE_MS");
	if (pause_ms > 0)
		o.after_plan = test_after_plan;
	j->data_t0 = fl_mono_ns();
	rc = st_batch_run(c, &o, j->inputs, j->n_inputs, j->batch_id, &j->out, err);
	if (j->drawn_at != 0) {
		/* The final count, and the line ends before anything else prints. */
		last.bytes_read = last.bytes_total = j->out.res.bytes_in;
		last.records = j->out.res.rows_ok + j->out.res.rows_bad;
		if (rc == 0)
			progress_draw(j, &last, true);
		fputc('\n', stderr);
	}
	return rc;
}

/* In process: through catalog/, the commit under the table's row lock. */
static int run_in_process(struct job *j, struct fl_err *err)
{
	struct cat_ns ns = {j->levels, j->nlevels};
	struct cat_limits lim = {(size_t)j->sc.max_commit_updates,
	                         (size_t)j->sc.max_metadata_bytes};
	struct srv_cli_catalog cat;
	struct st_committer *c = NULL;
	int rc = -1;

	/* Only a connection is overlapped: an embedded cluster is not started
	 * for inputs that turn out unreadable. */
	if (j->sc.database_url[0] == '\0' && identity_wait(j, 0, err) != 0)
		return -1;
	if (srv_cli_catalog_open(&j->sc, false, &cat, err) == 0 &&
	    cat_committer_open(cat.db, NULL, &cat.wh, &ns, j->name, &lim, NULL, &c, err) == 0)
		rc = 0;
	if (rc == 0)
		rc = run_batch(j, c, err);
	rc = identity_wait(j, rc, err);
	if (c != NULL)
		c->ops->close(c);
	srv_cli_catalog_close(&cat);
	return rc;
}

/* Through any Iceberg REST catalog (--catalog-uri). */
static int run_rest(struct job *j, struct fl_err *err)
{
	struct st_committer *c = NULL;
	int rc;

	rc = st_rest_committer_open(j->ic.catalog_uri, j->sc.warehouse, j->ic.token, j->levels,
	                            j->nlevels, j->name, j->ic.credential_refresh, &c, err);
	if (rc != 0) {
		if (c != NULL)
			c->ops->close(c);
		return identity_wait(j, rc, err);
	}
	rc = run_batch(j, c, err);
	c->ops->close(c);
	return identity_wait(j, rc, err);
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
	        "with two threads: floe ingest --table demo.events --threads 2 /tmp/events.csv\n"
	        "exit status: 0 committed / already committed / nothing to commit, 2 usage, 3 bad input,\n"
	        "4 commit conflicts exhausted, 5 commit state unknown, 1 other failures\n");
}

static void print_result(struct job *j, int code, const struct fl_err *err)
{
	json_t *o = json_object();
	const struct st_ingest_result *res = &j->out.res;
	bool already = j->out.already;
	const char *status = code != EXIT_OK                        ? "failed"
	                     : already                              ? "already-committed"
	                     : j->out.committed && res->rows_ok > 0 ? "committed"
	                                                            : "nothing-to-commit";
	uint64_t bytes = 0;
	char *s;

	for (size_t i = 0; i < res->n_files; i++)
		bytes += (uint64_t)res->files[i].m.file_size;
	json_object_set_new(o, "status", json_string(status));
	json_object_set_new(o, "table", json_string(j->ic.table[0] ? j->name : ""));
	json_object_set_new(o, "batch-id", json_string(j->batch_id));
	if (code == EXIT_OK && j->out.snapshot_id != 0)
		json_object_set_new(o, "snapshot-id", json_integer(j->out.snapshot_id));
	json_object_set_new(o, "rows-committed",
	                    json_integer(already || code ? 0 : (json_int_t)res->rows_ok));
	json_object_set_new(o, "rows-dead-lettered", json_integer((json_int_t)res->rows_bad));
	json_object_set_new(o, "files-written",
	                    json_integer(already || code ? 0 : (json_int_t)res->n_files));
	json_object_set_new(o, "bytes-written",
	                    json_integer(already || code ? 0 : (json_int_t)bytes));
	json_object_set_new(o, "bytes-read", json_integer((json_int_t)res->bytes_in));
	if (res->dead_letter_errors != NULL)
		json_object_set_new(o, "dead-letter-errors", json_string(res->dead_letter_errors));
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
	const char *after;
	unsigned long after_ms;

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
	if (j.ic.cdc_field[0] != '\0' && strcmp(j.ic.mode, "upsert") != 0) {
		fprintf(stderr, "floe ingest: --cdc-field is for --mode upsert\n");
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
	/* A second, or (a test hook, so that a small input shows the line) the
	 * milliseconds in FLOE_TEST_PROGRESS_AFTER_MS. */
	after = getenv("FLOE_TEST_PROGRESS_AFTER_MS");
	after_ms = after != NULL ? strtoul(after, NULL, 10) : 1000;
	j.progress_after = (int64_t)(after_ms < 60000 ? after_ms : 60000) * 1000000;
	if (identity_start(&j, &err) != 0) {
		code = EXIT_BAD_INPUT;
		goto report;
	}
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
	st_batch_result_free(&j.out);
	fl_settings_free(ingest_settings, NINGEST, &j.ic);
	srv_config_free(&j.sc);
	free(j.levels);
	free(ia);
	free(sa);
	return code;
}
