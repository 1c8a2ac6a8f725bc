/* scheduler.h - the background thread: purge jobs, feeds and idempotency-key GC. */
#ifndef SRV_SCHEDULER_H
#define SRV_SCHEDULER_H

#include "srv.h"

struct srv_scheduler;

/* Starts the thread; it works until srv_scheduler_stop. */
int srv_scheduler_start(struct srv_ctx *ctx, struct srv_scheduler **out,
                        struct fl_err *err) FL_MUST_CHECK;

/* Asks the thread to finish its current step, joins it and frees it.
 * Accepts NULL. */
void srv_scheduler_stop(struct srv_scheduler *s);

#endif
