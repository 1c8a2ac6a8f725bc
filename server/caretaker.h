/* caretaker.h - the daemon's maintenance workers (maintenance-workers
 * threads per replica): they queue the runs that table policies make due
 * and run queued jobs, one caretaker per table across all replicas
 * (catalog/maintenance.h). */
#ifndef SRV_CARETAKER_H
#define SRV_CARETAKER_H

#include "srv.h"

struct srv_caretaker;

/* Starts cfg->maintenance_workers threads (none when 0: *out is NULL), at
 * most (db-pool-size - 1) / 2 of them, since a running job holds two pooled
 * connections (a warning says so when fewer start).  They poll every
 * cfg->maintenance_poll seconds until srv_caretaker_stop. */
int srv_caretaker_start(struct srv_ctx *ctx, struct srv_caretaker **out,
                        struct fl_err *err) FL_MUST_CHECK;

/* Asks the threads to stop after the action under way (a job left half
 * done rolls back to queued and runs again later), joins them and frees
 * everything.  Accepts NULL. */
void srv_caretaker_stop(struct srv_caretaker *c);

#endif
