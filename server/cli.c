/* cli.c - table names and catalog connections for the in-process
 * subcommands (see cli.h). */
#include "cli.h"

#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "embedded_pg.h"
#include "io/io.h"

int srv_cli_table_parse(char *s, struct srv_cli_table *t, struct fl_err *err)
{
	char *dot;
	int n = 1;

	memset(t, 0, sizeof(*t));
	if (s[0] == '\0')
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "--table NAMESPACE.TABLE is required");
	for (char *p = s; *p; p++)
		n += *p == '.';
	if (n < 2)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "--table must be NAMESPACE.TABLE, got '%.200s'", s);
	t->levels = calloc((size_t)n, sizeof(char *));
	if (t->levels == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	while ((dot = strchr(s, '.')) != NULL) {
		*dot = '\0';
		if (s[0] == '\0')
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "--table has an empty namespace level");
		t->levels[t->nlevels++] = s;
		s = dot + 1;
	}
	if (s[0] == '\0')
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "--table has an empty table name");
	t->name = s;
	return 0;
}

int srv_cli_split_args(const char *cmd, int argc, char **argv, const struct fl_setting *own,
                       size_t n_own, char **oa, int *no, char **sa, int *ns, int *rest,
                       struct fl_err *err)
{
	int k = 0;

	*no = *ns = 1;
	oa[0] = sa[0] = "floe";
	while (k < argc && strncmp(argv[k], "--", 2) == 0 && argv[k][2] != '\0') {
		const char *name = argv[k] + 2, *eq = strchr(name, '=');
		size_t len = eq ? (size_t)(eq - name) : strlen(name);
		const struct fl_setting *s = fl_settings_find(own, n_own, name, len);
		bool mine = s != NULL;
		char **dst;
		int *n;

		if (s == NULL)
			s = srv_config_find(name, len);
		if (s == NULL)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "unknown option --%.*s (see floe %s --help)", (int)len,
			                  name, cmd);
		dst = mine ? oa : sa;
		n = mine ? no : ns;
		dst[(*n)++] = argv[k++];
		if (eq == NULL && s->type != FL_SET_BOOL) {
			if (k >= argc)
				return fl_err_set(err, FL_ERR_BAD_REQUEST,
				                  "option --%s needs a value", s->name);
			dst[(*n)++] = argv[k++];
		}
	}
	*rest = k;
	return 0;
}

/* The storage a metadata file is read through (cat_db_set_metadata_inline):
 * the command's own handle for its warehouse, whose connections it keeps. */
static int cli_io(void *arg, struct cat_warehouse *wh, struct fl_err *err)
{
	struct srv_cli_catalog *c = arg;

	if (c->io == NULL || strcmp(wh->id, c->wh.id) != 0)
		return st_io_open(&wh->profile, &wh->io, err);
	st_io_retain(c->io);
	wh->io = c->io;
	return 0;
}

int srv_cli_catalog_open(const struct srv_config *sc, bool page_tokens, struct srv_cli_catalog *c,
                         struct fl_err *err)
{
	char abs[PATH_MAX];
	bool ready = false;
	int applied;

	memset(c, 0, sizeof(*c));
	if (sc->database_url[0] != '\0') {
		c->conninfo = strdup(sc->database_url);
	} else {
		if (realpath(sc->data_dir, abs) == NULL)
			return fl_err_set(err, FL_ERR_UNAVAILABLE,
			                  "no catalog: set --database-url, or run floe serve first "
			                  "in %s",
			                  sc->data_dir);
		if (srv_pg_start(abs, sc->pg_bin_dir, &c->conninfo, &c->pg, err) != 0)
			return -1;
	}
	if (c->conninfo == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	/* One connection; its settings, the schema check and the warehouse in
	 * one round trip; the migrations (their own connection, an advisory
	 * lock, four more round trips) only when that check says the schema is
	 * not this binary's: a short-lived command like floe ingest pays for
	 * its start on every run. */
	if (cat_db_open_oneshot(c->conninfo, &c->db, err) != 0 ||
	    cat_warehouse_get_ready(c->db, sc->warehouse, &c->wh, &ready, err) != 0)
		return -1;
	cat_db_set_metadata_inline(c->db, (size_t)sc->metadata_inline_max_bytes, cli_io, c);
	if (!ready && (cat_db_migrate(c->conninfo, &applied, err) != 0 ||
	               cat_warehouse_get(c->db, NULL, sc->warehouse, &c->wh, err) != 0))
		return -1;
	if ((page_tokens && cat_db_load_secret(c->db, err) != 0) ||
	    st_io_open(&c->wh.profile, &c->io, err) != 0)
		return -1;
	c->wh.io = c->io;
	return 0;
}

void srv_cli_catalog_close(struct srv_cli_catalog *c)
{
	cat_db_close(c->db);
	free(c->conninfo);
	st_io_release(c->io);
	/* The embedded cluster stops here only when no other floe process
	 * (a floe serve, say) still uses it. */
	srv_pg_stop(c->pg);
	memset(c, 0, sizeof(*c));
}

static void test_pause_release(int sig)
{
	(void)sig; /* interrupting the pause's nanosleep is all it does */
}

unsigned srv_cli_test_pause_ms(const char *env)
{
	const char *s = getenv(env);
	unsigned long v = s != NULL ? strtoul(s, NULL, 10) : 0;

	if (v > 0) {
		struct sigaction sa = {.sa_handler = test_pause_release, .sa_flags = SA_RESTART};

		sigemptyset(&sa.sa_mask);
		sigaction(SIGUSR1, &sa, NULL);
	}
	return v > 60000 ? 60000 : (unsigned)v;
}

void srv_cli_test_pause(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	if (ms > 0)
		nanosleep(&ts, NULL);
}
