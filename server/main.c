/* main.c - the floe program: its commands (serve, migrate, status, ingest,
 * version, help) and their dispatch.
 *
 * One table, `commands`, drives both the dispatch and `floe help`, so a
 * command cannot run without being listed; adding one is one line. */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libcrypto.h"
#include "auth.h"
#include "access.h"
#include "catalog.h"
#include "cmd_feed.h"
#include "cmd_ingest.h"
#include "cmd_maintain.h"
#include "embedded_pg.h"
#include "httpd.h"
#include "io/libcurl.h"
#include "libjwt.h"
#include "libmhd.h"
#include "log.h"
#include "path.h"
#include "metrics.h"
#include "router.h"
#include "caretaker.h"
#include "scheduler.h"
#include "serve_lock.h"
#include "srv.h"
#include "vend.h"
#include "whcache.h"

/* Resolves the database: the configured URL, or the embedded cluster. */
static int database(struct srv_config *cfg, char *abs_data, char **conninfo, struct srv_pg **pg,
                    struct fl_err *err)
{
	if (cfg->database_url[0] != '\0') {
		*conninfo = strdup(cfg->database_url);
		return *conninfo ? 0 : fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	}
	return srv_pg_start(abs_data, cfg->pg_bin_dir, conninfo, pg, err);
}

static int prepare_data_dir(struct srv_config *cfg, char *abs, struct fl_err *err)
{
	if (fl_mkdir_p(cfg->data_dir) != 0 || realpath(cfg->data_dir, abs) == NULL)
		return fl_err_set(err, FL_ERR_IO, "setting data-dir: cannot create %s: %s",
		                  cfg->data_dir, strerror(errno));
	return 0;
}

/* The storage of a warehouse whose table metadata is read from its file
 * (cat_db_set_metadata_inline): the handle the requests share. */
static int warehouse_io(void *arg, struct cat_warehouse *wh, struct fl_err *err)
{
	struct srv_ctx *ctx = arg;

	return srv_whcache_io(ctx->whcache, wh, err);
}

static int default_warehouse(struct srv_ctx *ctx, const char *abs_data, struct fl_err *err)
{
	const struct srv_config *cfg = ctx->cfg;
	char loc[PATH_MAX + 32];

	if (cfg->warehouse[0] == '\0')
		return 0;
	if (srv_is_reserved_prefix(cfg->warehouse) || strpbrk(cfg->warehouse, "/\x1f") != NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "setting warehouse: '%s' cannot be a warehouse name",
		                  cfg->warehouse);
	if (cfg->warehouse_location[0] != '\0')
		snprintf(loc, sizeof(loc), "%s", cfg->warehouse_location);
	else
		snprintf(loc, sizeof(loc), "file://%s/warehouse", abs_data);
	if (strncmp(loc, "file://", 7) == 0 && fl_mkdir_p(loc + 7) != 0)
		return fl_err_set(err, FL_ERR_IO, "cannot create warehouse directory %s: %s",
		                  loc + 7, strerror(errno));
	if (cat_warehouse_ensure(ctx->db, cfg->warehouse, loc, err) != 0)
		return -1;
	ctx->default_warehouse = cfg->warehouse;
	return 0;
}

static int cmd_migrate(struct srv_config *cfg)
{
	char abs[PATH_MAX], *conninfo = NULL;
	struct srv_pg *pg = NULL;
	struct fl_err err = {0};
	int applied, rc = 1;

	if (prepare_data_dir(cfg, abs, &err) != 0 ||
	    database(cfg, abs, &conninfo, &pg, &err) != 0 ||
	    cat_db_migrate(conninfo, &applied, &err) != 0) {
		fl_error(NULL, "migrate: %s", err.msg);
		goto out;
	}
	fl_info(NULL, "migrate: applied %d migration(s); schema is at version %d", applied,
	        cat_schema_version());
	rc = 0;
out:
	free(conninfo);
	srv_pg_stop(pg);
	return rc;
}

/* Reports without starting or locking anything (srv_pg_status). */
static int cmd_status(struct srv_config *cfg)
{
	struct fl_err err = {0};
	char abs[PATH_MAX];

	if (realpath(cfg->data_dir, abs) == NULL) {
		fprintf(stderr, "floe: status: no data directory %s: %s\n", cfg->data_dir,
		        strerror(errno));
		return 1;
	}
	printf("data directory: %s\n", abs);
	srv_serve_lock_list(abs, stdout);
	if (cfg->database_url[0] != '\0') {
		printf("database:       the database-url setting (no embedded PostgreSQL)\n");
		return 0;
	}
	printf("database:       embedded PostgreSQL\n");
	if (srv_pg_status(abs, cfg->pg_bin_dir, stdout, &err) != 0) {
		fprintf(stderr, "floe: status: %s\n", err.msg);
		return 1;
	}
	return 0;
}

/* FLOE_BOOTSTRAP_CLIENT_ID/_SECRET: the first admin, on a start that finds none. */
static int bootstrap_env(struct srv_ctx *ctx, struct fl_err *err)
{
	const struct srv_config *cfg = ctx->cfg;
	bool created = false;

	if (cfg->bootstrap_client_id[0] == '\0' && cfg->bootstrap_client_secret[0] == '\0')
		return 0;
	if (srv_auth_bootstrap(ctx->db, cfg->bootstrap_client_id, cfg->bootstrap_client_secret,
	                       &created, err) != 0)
		return fl_err_prefix(err, "bootstrap");
	if (created)
		fl_info(NULL, "bootstrap: created admin principal '%s'", cfg->bootstrap_client_id);
	else
		fl_info(NULL,
		        "bootstrap: an admin principal exists already; bootstrap settings ignored");
	return 0;
}

/* floe admin bootstrap: the first admin, its secret printed once on stdout. */
static int cmd_bootstrap(struct srv_config *cfg)
{
	char abs[PATH_MAX], *conninfo = NULL, secret[64];
	const char *id = cfg->bootstrap_client_id[0] ? cfg->bootstrap_client_id : "admin";
	struct srv_pg *pg = NULL;
	struct cat_db *db = NULL;
	struct fl_err err = {0};
	bool created = false;
	int applied, rc = 1;

	if (cfg->bootstrap_client_secret[0] != '\0')
		snprintf(secret, sizeof(secret), "%s", cfg->bootstrap_client_secret);
	else if (cat_secret_new(secret, &err) != 0)
		goto fail;
	if (prepare_data_dir(cfg, abs, &err) != 0 ||
	    database(cfg, abs, &conninfo, &pg, &err) != 0 ||
	    cat_db_migrate(conninfo, &applied, &err) != 0 ||
	    cat_db_open(conninfo, 1, &db, &err) != 0 ||
	    srv_auth_bootstrap(db, id, secret, &created, &err) != 0)
		goto fail;
	/* A secret the operator gave is theirs already: it is not printed (the
	 * output often lands in a CI log). */
	if (created && cfg->bootstrap_client_secret[0] != '\0')
		printf("created admin principal\nclient_id: %s\nclient_secret: the one given "
		       "(--bootstrap-client-secret)\n",
		       id);
	else if (created)
		printf("created admin principal (shown once; store the secret now)\n"
		       "client_id: %s\nclient_secret: %s\n",
		       id, secret);
	else
		printf("an admin principal exists already; nothing changed\n");
	rc = 0;
	goto out;
fail:
	fl_error(NULL, "admin bootstrap: %s", err.msg);
out:
	OPENSSL_cleanse(secret, sizeof(secret));
	cat_db_close(db);
	free(conninfo);
	srv_pg_stop(pg);
	return rc;
}

static int cmd_serve(struct srv_config *cfg)
{
	struct srv_ctx ctx = {.cfg = cfg};
	struct srv_httpd *httpd = NULL;
	struct srv_scheduler *sched = NULL;
	struct srv_caretaker *care = NULL;
	struct srv_pg *pg = NULL;
	struct fl_err err = {0};
	char abs[PATH_MAX], *conninfo = NULL;
	sigset_t sigs;
	unsigned port;
	int applied, sig, port_lock = -1, rc = 1;

	/* Signals are taken synchronously by this thread only; workers never see them. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	/* The daemon needs every library it loads on first use (dl.h): load
	 * them now, so that a missing one stops it here, not in a request. */
	if (fl_libcrypto_load(&err) != 0 || srv_libmhd_load(&err) == NULL ||
	    srv_libjwt_load(&err) == NULL || st_libcurl_load(&err) == NULL)
		goto fail;
	if (prepare_data_dir(cfg, abs, &err) != 0 ||
	    (cfg->port != 0 &&
	     srv_serve_lock_take(abs, (unsigned)cfg->port, &port_lock, &err) != 0) ||
	    database(cfg, abs, &conninfo, &pg, &err) != 0)
		goto fail;
	if (cat_db_migrate(conninfo, &applied, &err) != 0)
		goto fail;
	if (applied > 0)
		fl_info(NULL, "applied %d migration(s); schema is at version %d", applied,
		        cat_schema_version());
	if (cat_db_open(conninfo, (int)cfg->db_pool_size, &ctx.db, &err) != 0 ||
	    cat_db_load_secret(ctx.db, &err) != 0 ||
	    cat_db_enable_cache(ctx.db, (size_t)cfg->table_cache_bytes, &err) != 0 ||
	    default_warehouse(&ctx, abs, &err) != 0 ||
	    srv_auth_start(cfg, ctx.db, &ctx.auth, &err) != 0 || bootstrap_env(&ctx, &err) != 0)
		goto fail;
	ctx.metrics = srv_metrics_new();
	ctx.whcache = srv_whcache_new();
	ctx.vend = srv_vend_new(256);
	if (ctx.metrics == NULL || ctx.whcache == NULL || ctx.vend == NULL) {
		fl_err_set(&err, FL_ERR_NOMEM, "out of memory");
		goto fail;
	}
	cat_db_on_stage(ctx.db, srv_metrics_stage, ctx.metrics);
	cat_db_set_metadata_inline(ctx.db, (size_t)cfg->metadata_inline_max_bytes, warehouse_io,
	                           &ctx);
	if (cat_db_notify_all(ctx.db) != 0)
		fl_warn(NULL, "could not tell other replicas to drop their cached tables");
	if (srv_httpd_start(&ctx, &httpd, &port, &err) != 0 ||
	    srv_scheduler_start(&ctx, &sched, &err) != 0 ||
	    srv_caretaker_start(&ctx, &care, &err) != 0)
		goto fail;
	fl_info(NULL, "listening on http://%s:%u", cfg->host, port);

	while (sigwait(&sigs, &sig) != 0)
		;
	fl_info(NULL, "received %s; draining requests (up to %llds)",
	        sig == SIGTERM ? "SIGTERM" : "SIGINT", (long long)cfg->shutdown_grace);
	srv_httpd_stop(httpd, cfg->shutdown_grace);
	httpd = NULL;
	rc = 0;
	goto out;
fail:
	fl_error(NULL, "serve: %s", err.msg);
out:
	srv_httpd_stop(httpd, 0);
	srv_scheduler_stop(sched);
	srv_caretaker_stop(care);
	cat_db_close(ctx.db);
	srv_metrics_free(ctx.metrics);
	srv_whcache_free(ctx.whcache);
	srv_auth_free(ctx.auth);
	srv_vend_free(ctx.vend);
	free(conninfo);
	srv_pg_stop(pg);
	srv_serve_lock_release(port_lock);
	if (rc == 0)
		fl_info(NULL, "stopped");
	return rc;
}

/* Loads the server settings from argv (after the command name), then runs fn. */
static int with_config(int argc, char **argv, int (*fn)(struct srv_config *))
{
	struct srv_config cfg = {0};
	struct fl_err err = {0};
	int argi = 0, rc = 2;

	if (srv_config_load(&cfg, argc, argv, &argi, &err) != 0) {
		fprintf(stderr, "floe: %s\n", err.msg);
		goto out;
	}
	if (argi < argc) {
		/* Up to an '=': what follows may be a secret given the wrong way. */
		fprintf(stderr, "floe: unexpected argument '%.*s'\n", (int)strcspn(argv[argi], "="),
		        argv[argi]);
		goto out;
	}
	fl_log_set_level((enum fl_log_level)fl_log_level_parse(cfg.log_level));
	rc = fn(&cfg);
out:
	srv_config_free(&cfg);
	return rc;
}

static int run_serve(int argc, char **argv)
{
	return with_config(argc, argv, cmd_serve);
}

static int run_migrate(int argc, char **argv)
{
	return with_config(argc, argv, cmd_migrate);
}

static int run_status(int argc, char **argv)
{
	return with_config(argc, argv, cmd_status);
}

static int run_admin(int argc, char **argv)
{
	if (argc < 1 || strcmp(argv[0], "bootstrap") != 0) {
		fprintf(stderr, "floe: usage: floe admin bootstrap [options]\n");
		return 2;
	}
	return with_config(argc - 1, argv + 1, cmd_bootstrap);
}

static int run_routes(int argc, char **argv)
{
	if (argc != 1 || strcmp(argv[0], "--json") != 0) {
		fprintf(stderr, "floe: usage: floe routes --json\n");
		return 2;
	}
	srv_routes_json(stdout);
	return 0;
}

static int run_version(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	printf("floe %s (schema %d)\n", FLOE_VERSION, cat_schema_version());
	return 0;
}

static int run_help(int argc, char **argv);

static void server_options(FILE *f)
{
	fprintf(f, "options (each also an environment variable):\n");
	srv_config_help(f);
}

struct command {
	const char *name;
	const char *args; /* what follows the name in the usage line */
	const char *summary;
	const char *example; /* a complete command line that works as shown */
	/* Runs the command on the arguments after its name; returns the exit status. */
	int (*run)(int argc, char **argv);
	void (*options)(FILE *f); /* prints the command's options; NULL = none */
};

/* clang-format off */
static const struct command commands[] = {
	{"serve", "[options]", "run the catalog server",
	 "floe serve --port 8181 --data-dir ./.floe", run_serve, server_options},
	{"migrate", "[options]", "apply database migrations and exit",
	 "floe migrate --database-url postgresql://floe@127.0.0.1/floe", run_migrate, server_options},
	{"status", "[options]", "where the data and the embedded PostgreSQL live, and who uses them",
	 "floe status --data-dir ./.floe", run_status, server_options},
	{"ingest", "--table NS.TABLE [options] FILE...", "commit CSV or NDJSON files to a table as one snapshot",
	 "floe ingest --table demo.events /tmp/events.csv", srv_cmd_ingest, srv_cmd_ingest_help},
	{"feed", "create|list|show|pause|resume|delete|replay [NAME|DEFINITION] [options]",
	 "manage the feeds of a running floe (the management API)",
	 "floe feed list --url http://127.0.0.1:8181", srv_cmd_feed, srv_cmd_feed_help},
	{"maintain", "--table NS.TABLE [--dry-run] [options] [ACTION...]", "expire snapshots, delete orphans, compact, merge manifests",
	 "floe maintain --table demo.events --dry-run expire orphans", srv_cmd_maintain, srv_cmd_maintain_help},
	{"admin", "bootstrap [options]", "create the first admin principal once and print its credentials",
	 "floe admin bootstrap --data-dir ./.floe", run_admin, server_options},
	{"routes", "--json", "print the route table (method, path, privilege) as JSON",
	 "floe routes --json", run_routes, NULL},
	{"version", "", "print the version", "floe version", run_version, NULL},
	{"help", "[COMMAND]", "list the commands, or show one command's options",
	 "floe help ingest", run_help, NULL},
};
/* clang-format on */
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static const struct command *command_find(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

/* One line per command, from the table the dispatch uses. */
static void command_list(FILE *f)
{
	fprintf(f, "commands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++) {
		char line[96];

		snprintf(line, sizeof(line), "floe %s%s%s", commands[i].name,
		         commands[i].args[0] ? " " : "", commands[i].args);
		fprintf(f, "  %-48s %s\n", line, commands[i].summary);
	}
}

static void usage(FILE *f)
{
	fprintf(f, "floe %s - an Apache Iceberg REST catalog\n\n", FLOE_VERSION);
	command_list(f);
	fprintf(f, "\n`floe COMMAND --help` shows a command's options and an example.\n"
	           "serve, migrate and status take these ");
	server_options(f);
}

static void command_help(const struct command *c, FILE *f)
{
	fprintf(f, "usage: floe %s%s%s\n  %s\n\nexample:\n  %s\n", c->name, c->args[0] ? " " : "",
	        c->args, c->summary, c->example);
	if (c->options != NULL) {
		fprintf(f, "\n");
		c->options(f);
	}
}

static int run_help(int argc, char **argv)
{
	const struct command *c;

	if (argc == 0) {
		usage(stdout);
		return 0;
	}
	c = command_find(argv[0]);
	if (c == NULL) {
		fprintf(stderr, "floe help: unknown command '%s'\n\n", argv[0]);
		command_list(stderr);
		return 2;
	}
	command_help(c, stdout);
	return 0;
}

static bool asks_help(int argc, char **argv)
{
	for (int i = 0; i < argc; i++)
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
			return true;
	return false;
}

int main(int argc, char **argv)
{
	const char *name = argc > 1 ? argv[1] : "help";
	const struct command *c;

	/* Memory freed stays in the process for the next allocation.  By
	 * default glibc gives the top of a heap back once 128 KiB of it are
	 * free, and serves blocks of 128 KiB and more (growing with use) with
	 * mmap of their own: the daemon's churn (loadTable misses, each a
	 * ~20 KB row read and cached, the cache evicting as it goes) then
	 * faulted pages in again for ~2 of every miss, and a fault is the
	 * dearest thing on a virtual machine (~25 µs each on the one
	 * BENCHMARKS.md describes).  The price is that RSS stays at its
	 * high-water mark. */
	mallopt(M_TRIM_THRESHOLD, 512 << 20);
	mallopt(M_MMAP_THRESHOLD, 64 << 20);
	if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0)
		name = "help";
	else if (strcmp(name, "--version") == 0)
		name = "version";
	c = command_find(name);
	if (c == NULL) {
		fprintf(stderr, "floe: unknown command '%s'\n\n", name);
		command_list(stderr);
		return 2;
	}
	if (asks_help(argc - 2, argv + 2)) {
		command_help(c, stdout);
		return 0;
	}
	return c->run(argc > 1 ? argc - 2 : 0, argv + 2);
}
