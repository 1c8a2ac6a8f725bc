/* serve_lock.h - at most one floe serve per data directory and port.
 *
 * Several servers may share a data directory (and its embedded PostgreSQL) on
 * different ports; a second one on the same port is refused before it touches
 * the database, with a message naming the server already there. */
#ifndef SRV_SERVE_LOCK_H
#define SRV_SERVE_LOCK_H

#include <stdio.h>

#include "err.h"

/* Claims port (not 0: a port the system picks is unique anyway) for this
 * process on data_dir (absolute): an exclusive lock on
 * data_dir/serve-<port>.lock that lasts until srv_serve_lock_release or the
 * process's exit, however it exits.  *fd receives the lock's descriptor.
 * Fails with FL_ERR_CONFLICT naming the data directory, the port and the pid
 * of the floe serve holding it. */
int srv_serve_lock_take(const char *data_dir, unsigned port, int *fd,
                        struct fl_err *err) FL_MUST_CHECK;

/* Gives the claim up.  Accepts -1. */
void srv_serve_lock_release(int fd);

/* Writes one "floe serve: port P, pid N" line to out per live claim on
 * data_dir, or a line saying there is none.  Takes no lock. */
void srv_serve_lock_list(const char *data_dir, FILE *out);

#endif
