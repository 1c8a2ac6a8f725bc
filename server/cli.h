/* cli.h - what the in-process subcommands (`floe ingest`, `floe maintain`)
 * share: naming a table on the command line and opening the catalog the
 * way `floe serve` does (its database URL, or the embedded PostgreSQL of
 * its data directory). */
#ifndef SRV_CLI_H
#define SRV_CLI_H

#include <stdbool.h>

#include "catalog.h"
#include "err.h"
#include "settings.h"
#include "srv.h"

/* A table named NAMESPACE.TABLE (nested namespaces: a.b.table).  spec is
 * split in place; levels is malloc'd (free it), names point into spec.
 * FL_ERR_BAD_REQUEST names what is wrong. */
struct srv_cli_table {
	const char **levels;
	int nlevels;
	const char *name;
};
int srv_cli_table_parse(char *spec, struct srv_cli_table *t, struct fl_err *err) FL_MUST_CHECK;

/* Splits argv (the arguments after the subcommand) into the subcommand's
 * own options (those in own[0..n_own)), the catalog options of floe serve
 * (srv_config_find) and the positional arguments after them.  oa and sa
 * (each room for argc + 1 pointers) receive a program name then the
 * options with their values, ready for fl_settings_load / srv_config_load;
 * *rest is the index of the first positional argument.  Returns 0, or -1
 * with FL_ERR_BAD_REQUEST for an unknown option or a missing value (naming
 * the command; main.c answers --help before a command runs). */
int srv_cli_split_args(const char *cmd, int argc, char **argv, const struct fl_setting *own,
                       size_t n_own, char **oa, int *no, char **sa, int *ns, int *rest,
                       struct fl_err *err);

/* The catalog of one run: the database, the warehouse and its storage. */
struct srv_cli_catalog {
	struct srv_pg *pg; /* the embedded cluster, when this process started it */
	char *conninfo;
	struct cat_db *db;
	struct cat_warehouse wh; /* wh.io is io */
	struct st_io *io;
};

/* Connects with sc's settings (migrating the schema as serve does), loads
 * sc->warehouse and opens its storage; page_tokens: also the secret that
 * signs list page tokens (a command that lists; one more round trip).
 * FL_ERR_UNAVAILABLE when there is no catalog to connect to; release c with
 * srv_cli_catalog_close either way. */
int srv_cli_catalog_open(const struct srv_config *sc, bool page_tokens, struct srv_cli_catalog *c,
                         struct fl_err *err) FL_MUST_CHECK;
void srv_cli_catalog_close(struct srv_cli_catalog *c);

/* Test hooks that hold a run where a test races a commit against it: the
 * milliseconds in the environment variable env (at most a minute; 0 when
 * unset), and a pause of that long that SIGUSR1 ends early (the handler is
 * installed when the variable is set; a signal before the pause does
 * nothing, so tests repeat it). */
unsigned srv_cli_test_pause_ms(const char *env);
void srv_cli_test_pause(unsigned ms);

#endif
