/* feeds.h - the daemon's feed workers (DESIGN §5b), run by the scheduler. */
#ifndef SRV_FEEDS_H
#define SRV_FEEDS_H

#include "srv.h"

/* Runs the feeds that are due, one batch each, until none is due or `max`
 * ran.  Any number of replicas may call this at once: a feed is claimed with
 * FOR UPDATE SKIP LOCKED and its table with an advisory lock, so one table
 * has one feed committer at a time.  Failures are recorded on the feed
 * (backoff, then pause) and logged; *ran = batches attempted. */
int srv_feeds_run_due(struct srv_ctx *ctx, int max, int *ran, struct fl_err *err) FL_MUST_CHECK;

#endif
