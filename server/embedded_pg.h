/* embedded_pg.h - a private PostgreSQL cluster inside the data directory, for
 * `floe serve` with no database configured. */
#ifndef SRV_EMBEDDED_PG_H
#define SRV_EMBEDDED_PG_H

#include "err.h"

struct srv_pg;

/* Creates (first time) and starts the cluster under data_dir (absolute), or
 * reuses one already running there.  As root, PostgreSQL runs as the
 * `postgres` user.  *conninfo receives a malloc'd libpq conninfo for the
 * `floe` database (created if missing). */
int srv_pg_start(const char *data_dir, const char *bin_dir, char **conninfo, struct srv_pg **out,
                 struct fl_err *err) FL_MUST_CHECK;

/* Stops the cluster if this process started it, and frees pg.  Accepts NULL. */
void srv_pg_stop(struct srv_pg *pg);

#endif
