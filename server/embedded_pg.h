/* embedded_pg.h - a private PostgreSQL cluster inside the data directory, for
 * `floe serve` with no database configured. */
#ifndef SRV_EMBEDDED_PG_H
#define SRV_EMBEDDED_PG_H

#include <stdio.h>

#include "err.h"

struct srv_pg;

/* Creates (first time) and starts the cluster for data_dir (absolute), or
 * shares or adopts one already running there, and registers this process as
 * one of its users (see the rule atop embedded_pg.c).  As root, PostgreSQL
 * runs as the `postgres` user.  *conninfo receives a malloc'd libpq conninfo
 * for the `floe` database (created if missing).  May wait while another floe
 * process starts or stops the cluster.  One srv_pg per process. */
int srv_pg_start(const char *data_dir, const char *bin_dir, char **conninfo, struct srv_pg **out,
                 struct fl_err *err) FL_MUST_CHECK;

/* Unregisters this process as a user of the cluster and stops the cluster
 * when no other live floe process uses it (whoever started it); frees pg.
 * Accepts NULL. */
void srv_pg_stop(struct srv_pg *pg);

/* Writes to out, one "name: value" line each, where the cluster for data_dir
 * (absolute) lives and why, its socket and log, whether it runs, and whether
 * floe processes use it.  Starts nothing and takes no lock.  Fails only when
 * no PostgreSQL is installed or, as root, there is no postgres user. */
int srv_pg_status(const char *data_dir, const char *bin_dir, FILE *out,
                  struct fl_err *err) FL_MUST_CHECK;

#endif
