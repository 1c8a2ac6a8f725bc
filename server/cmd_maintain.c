/* cmd_maintain.c - `floe maintain --table NS.T [--dry-run] [ACTION...]`:
 * runs table maintenance in process, with the settings of floe serve (its
 * database URL or data directory), through catalog/maintain.c.
 *
 * Actions: expire (snapshot expiry and the files it frees), orphans
 * (unreferenced files past floe.orphan-grace), compact (bin-pack of small
 * files, committed as a replace snapshot) and manifests (not in this
 * build: reported as failed).  Without actions, those the table's
 * policy enables run: the table property floe.maintenance.actions, a comma
 * list (default "expire,orphans").  Each action prints one JSON line with
 * what it did or, with --dry-run, would do: files and bytes removed and
 * added, plus "status" ("ok" or "failed", then "error") and "seconds". */
#include "cmd_maintain.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
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
#define DEFAULT_ACTIONS "expire,orphans"

void srv_cmd_maintain_help(FILE *f)
{
	fprintf(f, "Runs table maintenance in process, with the catalog of --database-url or\n"
	           "--data-dir.  ACTION: expire (snapshots past the table's retention, then the\n"
	           "files no kept snapshot references), orphans (unreferenced files older than\n"
	           "floe.orphan-grace, default P3D), compact (small files of each partition\n"
	           "rewritten toward write.target-file-size-bytes; not yet for v3 tables or\n"
	           "tables with delete files), manifests (not in this build).\n"
	           "Without ACTION: those in the table property floe.maintenance.actions\n"
	           "(default " DEFAULT_ACTIONS "). One JSON line per action.\n\n"
	           "maintain options (each also an environment variable):\n");
	fl_settings_help(maintain_settings, NMAINTAIN, f);
	fprintf(f,
	        "\ncatalog options: --database-url, --data-dir, --warehouse, --pg-bin-dir\n"
	        "exit status: 0 all actions succeeded, 2 usage, 3 bad input, 1 other failures\n");
}

/* FLOE_TEST_COMPACT_PAUSE_MS: tests hold a compaction between its rewrite
 * and its commit, to race appends against it (bounded to a minute). */
static unsigned test_pause_ms(void)
{
	const char *s = getenv("FLOE_TEST_COMPACT_PAUSE_MS");
	unsigned long v = s != NULL ? strtoul(s, NULL, 10) : 0;

	return v > 60000 ? 60000 : (unsigned)v;
}

static bool known(const char *a)
{
	for (size_t i = 0; i < NACTIONS; i++) {
		if (strcmp(a, actions[i]) == 0)
			return true;
	}
	return false;
}

/* The actions the table's policy enables, in the order of `actions`. */
static int policy(const struct srv_cli_catalog *c, const struct cat_ns *ns, const char *name,
                  const char *sel[NACTIONS], size_t *n, struct fl_err *err)
{
	char *mloc = NULL, *text = NULL, type[16];
	const char *list;
	json_t *meta;

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
	if (list == NULL)
		list = DEFAULT_ACTIONS;
	for (size_t i = 0; i < NACTIONS; i++) {
		const char *p = strstr(list, actions[i]);
		size_t len = strlen(actions[i]);

		/* A whole item of the comma list, spaces allowed. */
		while (p != NULL && !((p == list || p[-1] == ',' || p[-1] == ' ') &&
		                      (p[len] == '\0' || p[len] == ',' || p[len] == ' ')))
			p = strstr(p + 1, actions[i]);
		if (p != NULL)
			sel[(*n)++] = actions[i];
	}
	json_decref(meta);
	return 0;
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
		if (!known(argv[k])) {
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
			int64_t t0 = fl_mono_ns();
			json_t *r = NULL;
			int rc;

			fl_err_clear(&err);
			if (strcmp(sel[i], "expire") == 0)
				rc = cat_maintain_expire(cat.db, &cat.wh, &cns, t.name, &lim,
				                         fl_now_ms(), mc.dry_run, &r, &err);
			else if (strcmp(sel[i], "orphans") == 0)
				rc = cat_maintain_orphans(cat.db, &cat.wh, &cns, t.name,
				                          fl_now_ms(), mc.dry_run, &r, &err);
			else if (strcmp(sel[i], "compact") == 0)
				rc = cat_maintain_compact(cat.db, &cat.wh, &cns, t.name, &lim,
				                          test_pause_ms(), mc.dry_run, &r, &err);
			else
				rc = fl_err_set(&err, FL_ERR_UNSUPPORTED,
				                "%s is not implemented in this build", sel[i]);
			print_line(rc == 0 ? r : NULL, sel[i], tname, mc.dry_run, t0,
			           rc == 0 ? NULL : &err);
			if (rc != 0) {
				fprintf(stderr, "floe maintain: %s: %s\n", sel[i], err.msg);
				if (code == EXIT_OK)
					code = err.kind == FL_ERR_BAD_REQUEST ? EXIT_BAD_INPUT
					                                      : EXIT_FAIL;
			}
		}
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
