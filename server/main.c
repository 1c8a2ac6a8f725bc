/* main.c - the floe program: serve, migrate, version, help. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog.h"
#include "cmd_ingest.h"
#include "cmd_maintain.h"
#include "embedded_pg.h"
#include "httpd.h"
#include "log.h"
#include "path.h"
#include "metrics.h"
#include "router.h"
#include "scheduler.h"
#include "srv.h"
#include "whcache.h"

static void usage(FILE *f)
{
	fprintf(f,
	        "floe %s - an Apache Iceberg REST catalog\n\n"
	        "usage: floe serve [options]    run the catalog server\n"
	        "       floe migrate [options]  apply database migrations and exit\n"
	        "       floe version            print the version\n"
	        "       floe help               this text\n\n"
	        "options (each also an environment variable):\n",
	        FLOE_VERSION);
	srv_config_help(f);
}

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

static int cmd_serve(struct srv_config *cfg)
{
	struct srv_ctx ctx = {.cfg = cfg};
	struct srv_httpd *httpd = NULL;
	struct srv_scheduler *sched = NULL;
	struct srv_pg *pg = NULL;
	struct fl_err err = {0};
	char abs[PATH_MAX], *conninfo = NULL;
	sigset_t sigs;
	unsigned port;
	int applied, sig, rc = 1;

	/* Signals are taken synchronously by this thread only; workers never see them. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (prepare_data_dir(cfg, abs, &err) != 0 || database(cfg, abs, &conninfo, &pg, &err) != 0)
		goto fail;
	if (cat_db_migrate(conninfo, &applied, &err) != 0)
		goto fail;
	if (applied > 0)
		fl_info(NULL, "applied %d migration(s); schema is at version %d", applied,
		        cat_schema_version());
	if (cat_db_open(conninfo, (int)cfg->db_pool_size, &ctx.db, &err) != 0 ||
	    cat_db_load_secret(ctx.db, &err) != 0 || cat_db_enable_cache(ctx.db, &err) != 0 ||
	    default_warehouse(&ctx, abs, &err) != 0)
		goto fail;
	ctx.metrics = srv_metrics_new();
	ctx.whcache = srv_whcache_new();
	if (ctx.metrics == NULL || ctx.whcache == NULL) {
		fl_err_set(&err, FL_ERR_NOMEM, "out of memory");
		goto fail;
	}
	if (srv_httpd_start(&ctx, &httpd, &port, &err) != 0 ||
	    srv_scheduler_start(&ctx, &sched, &err) != 0)
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
	cat_db_close(ctx.db);
	srv_metrics_free(ctx.metrics);
	srv_whcache_free(ctx.whcache);
	free(conninfo);
	srv_pg_stop(pg);
	if (rc == 0)
		fl_info(NULL, "stopped");
	return rc;
}

int main(int argc, char **argv)
{
	struct srv_config cfg = {0};
	struct fl_err err = {0};
	const char *cmd = argc > 1 ? argv[1] : "help";
	int argi = 2, rc;

	if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
		printf("floe %s (schema %d)\n", FLOE_VERSION, cat_schema_version());
		return 0;
	}
	if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(cmd, "ingest") == 0)
		return srv_cmd_ingest(argc - 2, argv + 2);
	if (strcmp(cmd, "maintain") == 0)
		return srv_cmd_maintain(argc - 2, argv + 2);
	if (strcmp(cmd, "serve") != 0 && strcmp(cmd, "migrate") != 0) {
		fprintf(stderr, "floe: unknown command '%s'\n\n", cmd);
		usage(stderr);
		return 2;
	}
	if (srv_config_load(&cfg, argc, argv, &argi, &err) != 0) {
		fprintf(stderr, "floe: %s\n", err.msg);
		srv_config_free(&cfg);
		return 2;
	}
	if (argi < argc) {
		fprintf(stderr, "floe: unexpected argument '%s'\n", argv[argi]);
		srv_config_free(&cfg);
		return 2;
	}
	fl_log_set_level((enum fl_log_level)fl_log_level_parse(cfg.log_level));
	rc = strcmp(cmd, "serve") == 0 ? cmd_serve(&cfg) : cmd_migrate(&cfg);
	srv_config_free(&cfg);
	return rc;
}
