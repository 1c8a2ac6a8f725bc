/* cmd_maintain.c - `floe maintain --table NS.T [--dry-run] [ACTION...]`:
 * runs table maintenance in process, with the settings of floe serve (its
 * database URL or data directory), through catalog/maintain.c.
 *
 * Actions: expire (snapshot expiry and the files it frees), orphans
 * (unreferenced files past floe.orphan-grace), compact (bin-pack of small
 * files, committed as a replace snapshot) and manifests (small manifests
 * merged per partition spec, committed as a replace snapshot).  Without actions, those the table's
 * policy enables run: the table property floe.maintenance.actions, a comma
 * list (default "expire,orphans").  Each action prints one JSON line with
 * what it did or, with --dry-run, would do: files and bytes removed and
 * added, plus "status" ("ok" or "failed", then "error") and "seconds". */
#include "cmd_maintain.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "maintenance.h"
#include "cli.h"
#include "clock.h"
#include "log.h"
#include "settings.h"
#include "srv.h"

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2, EXIT_BAD_INPUT = 3 };

struct maintain_cfg {
	char *table;
	int dry_run;
};

#define OFF(f) offsetof(struct maintain_cfg, f)

/* clang-format off */
static const struct fl_setting maintain_settings[] = {
	{"table", FL_SET_STR, "", 0, 2048, NULL, "FLOE_MAINTAIN_TABLE", OFF(table),
	 "the table as NAMESPACE.TABLE (nested namespaces: a.b.table)"},
	{"dry-run", FL_SET_BOOL, "false", 0, 0, NULL, "FLOE_MAINTAIN_DRY_RUN", OFF(dry_run),
	 "report what each action would do; commit and delete nothing"},
};
/* clang-format on */
#define NMAINTAIN (sizeof(maintain_settings) / sizeof(maintain_settings[0]))

static const char *const actions[] = {"expire", "orphans", "compact", "manifests"};
#define NACTIONS (sizeof(actions) / sizeof(actions[0]))

void srv_cmd_maintain_help(FILE *f)
{
	fprintf(f, "Runs table maintenance in process, with the catalog of --database-url or\n"
	           "--data-dir.  ACTION: expire (snapshots past the table's retention, then the\n"
	           "files no kept snapshot references), orphans (unreferenced files older than\n"
	           "floe.orphan-grace, default P3D), compact (small files of each partition\n"
	           "rewritten toward write.target-file-size-bytes; not yet for v3 tables or\n"
	           "tables with delete files), manifests (manifests smaller than\n"
	           "commit.manifest.target-size-bytes, default 8 MiB, merged per partition\n"
	           "spec; data and delete manifests apart).\n"
	           "Without ACTION: those in the table property floe.maintenance.actions\n"
	           "(default " CAT_MAINT_DEFAULT_ACTIONS "). One JSON line per action.\n\n"
	           "maintain options (each also an environment variable):\n");
	fl_settings_help(maintain_settings, NMAINTAIN, f);
	fprintf(f,
	        "\ncatalog options: --database-url, --data-dir, --warehouse, --pg-bin-dir\n"
	        "exit status: 0 all actions succeeded, 2 usage, 3 bad input, 1 other failures\n");
}

/* The actions the table's policy enables (floe.maintenance.actions), in
 * the order of `actions`. */
static int policy(const struct srv_cli_catalog *c, const struct cat_ns *ns, const char *name,
                  const char *sel[NACTIONS], size_t *n, struct fl_err *err)
{
	char *mloc = NULL, *text = NULL, type[16];
	const char *list;
	json_t *meta, *arr = NULL;
	size_t i;
	int rc;

	*n = 0;
	if (cat_table_load(c->db, NULL, c->wh.name, ns, name, &mloc, &text, type, err) != 0)
		return -1;
	meta = json_loads(text, 0, NULL);
	free(mloc);
	free(text);
	if (meta == NULL)
		return fl_err_set(err, FL_ERR_INTERNAL, "stored metadata is not JSON");
	list = json_string_value(
	        json_object_get(json_object_get(meta, "properties"), "floe.maintenance.actions"));
	rc = cat_maintain_actions_parse(list != NULL ? list : CAT_MAINT_DEFAULT_ACTIONS, &arr, err);
	for (i = 0; rc == 0 && i < json_array_size(arr); i++) {
		for (size_t k = 0; k < NACTIONS; k++) {
			if (strcmp(json_string_value(json_array_get(arr, i)), actions[k]) == 0)
				sel[(*n)++] = actions[k];
		}
	}
	if (rc != 0)
		fl_err_prefix(err, "floe.maintenance.actions");
	json_decref(arr);
	json_decref(meta);
	return rc;
}

static void print_line(json_t *r, const char *action, const char *table, bool dry_run, int64_t t0,
                       const struct fl_err *err)
{
	char *s;

	if (r == NULL)
		r = json_pack("{s:s, s:s, s:b}", "action", action, "table", table, "dry-run",
		              dry_run);
	if (r == NULL)
		return;
	json_object_set_new(r, "status", json_string(err ? "failed" : "ok"));
	if (err != NULL)
		json_object_set_new(r, "error", json_string(err->msg));
	json_object_set_new(r, "seconds", json_real((double)(fl_mono_ns() - t0) / 1e9));
	s = json_dumps(r, JSON_COMPACT);
	if (s != NULL)
		printf("%s\n", s);
	fflush(stdout);
	free(s);
	json_decref(r);
}

int srv_cmd_maintain(int argc, char **argv)
{
	struct maintain_cfg mc = {0};
	struct srv_config sc = {0};
	struct srv_cli_table t = {0};
	struct srv_cli_catalog cat = {0};
	struct fl_err err = {0};
	char **oa = calloc((size_t)argc + 2, sizeof(char *)),
	     **sa = calloc((size_t)argc + 2, sizeof(char *));
	const char *sel[NACTIONS];
	size_t n_sel = 0;
	int no, ns, ai = 1, rest = 0, code = EXIT_FAIL;
	bool opened = false;

	if (oa == NULL || sa == NULL) {
		free(oa);
		free(sa);
		return EXIT_FAIL;
	}
	if (srv_cli_split_args("maintain", argc, argv, maintain_settings, NMAINTAIN, oa, &no, sa,
	                       &ns, &rest, &err) != 0 ||
	    fl_settings_load(maintain_settings, NMAINTAIN, &mc, no, oa, &ai, &err) != 0 ||
	    (ai = 1, srv_config_load(&sc, ns, sa, &ai, &err)) != 0 ||
	    srv_cli_table_parse(mc.table, &t, &err) != 0) {
		fprintf(stderr, "floe maintain: %s\n", err.msg);
		code = EXIT_USAGE;
		goto done;
	}
	for (int k = rest; k < argc; k++) {
		if (!cat_maintain_known(argv[k])) {
			fprintf(stderr,
			        "floe maintain: unknown action '%s' (expire, orphans, compact, "
			        "manifests)\n",
			        argv[k]);
			code = EXIT_USAGE;
			goto done;
		}
		if (n_sel == NACTIONS) {
			fprintf(stderr, "floe maintain: too many actions\n");
			code = EXIT_USAGE;
			goto done;
		}
		sel[n_sel++] = argv[k];
	}
	fl_log_set_level((enum fl_log_level)fl_log_level_parse(sc.log_level));
	{
		struct cat_ns cns = {t.levels, t.nlevels};
		struct cat_limits lim = {(size_t)sc.max_commit_updates,
		                         (size_t)sc.max_metadata_bytes};
		char tname[520], nsbuf[520];

		/* The parse split mc.table in place: the name as given, again. */
		snprintf(tname, sizeof(tname), "%s.%s", cat_ns_str(&cns, nsbuf, sizeof(nsbuf)),
		         t.name);

		opened = true;
		if (srv_cli_catalog_open(&sc, true, &cat, &err) != 0 ||
		    (n_sel == 0 && policy(&cat, &cns, t.name, sel, &n_sel, &err) != 0)) {
			print_line(NULL, n_sel ? sel[0] : "maintain", tname, mc.dry_run,
			           fl_mono_ns(), &err);
			fprintf(stderr, "floe maintain: %s\n", err.msg);
			code = err.kind == FL_ERR_BAD_REQUEST ? EXIT_BAD_INPUT : EXIT_FAIL;
			goto done;
		}
		code = EXIT_OK;
		for (size_t i = 0; i < n_sel; i++) {
			int64_t t0 = fl_mono_ns(), wall0 = fl_now_ms();
			json_t *r = NULL;
			struct fl_err rerr = {0};
			int rc;

			fl_err_clear(&err);
			/* FLOE_TEST_COMPACT_PAUSE_MS: tests hold a compaction (or a
			 * manifest rewrite) between its rewrite and its commit, to
			 * race appends against it. */
			rc = cat_maintain_action(
			        cat.db, &cat.wh, &cns, t.name, &lim, sel[i], mc.dry_run,
			        srv_cli_test_pause_ms("FLOE_TEST_COMPACT_PAUSE_MS"), &r, &err);
			/* The outcome is kept where the daemon keeps its own (GET
			 * .../maintenance, /metrics); failing to keep it is only
			 * a warning. */
			if ((rc == 0 || (err.kind != FL_ERR_NO_SUCH_TABLE &&
			                 err.kind != FL_ERR_NO_SUCH_NAMESPACE)) &&
			    cat_maint_record(cat.db, NULL, &cat.wh, &cns, t.name, sel[i], 0,
			                     mc.dry_run, wall0, rc == 0 ? r : NULL,
			                     rc == 0 ? NULL : err.msg, &rerr) != 0)
				fprintf(stderr, "floe maintain: cannot record the outcome: %s\n",
				        rerr.msg);
			print_line(rc == 0 ? r : NULL, sel[i], tname, mc.dry_run, t0,
			           rc == 0 ? NULL : &err);
			if (rc != 0) {
				fprintf(stderr, "floe maintain: %s: %s\n", sel[i], err.msg);
				if (code == EXIT_OK)
					code = err.kind == FL_ERR_BAD_REQUEST ? EXIT_BAD_INPUT
					                                      : EXIT_FAIL;
			}
		}
		if (!mc.dry_run && cat_maintain_measure(cat.db, &cat.wh, &cns, t.name, &err) != 0)
			fprintf(stderr, "floe maintain: measuring the table: %s\n", err.msg);
	}
done:
	if (opened)
		srv_cli_catalog_close(&cat);
	fl_settings_free(maintain_settings, NMAINTAIN, &mc);
	srv_config_free(&sc);
	free(t.levels);
	free(oa);
	free(sa);
	return code;
}
