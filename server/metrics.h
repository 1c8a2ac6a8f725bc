/* metrics.h - Prometheus counters and histograms, lock-free on the hot path. */
#ifndef SRV_METRICS_H
#define SRV_METRICS_H

#include "buf.h"
#include "srv.h"

/* Allocates zeroed metrics for the route table; NULL when out of memory. */
struct srv_metrics *srv_metrics_new(void);
void srv_metrics_free(struct srv_metrics *m);

/* Records one finished request: route index (srv_route_count = unmatched),
 * method, status and latency.  Thread-safe (atomics). */
void srv_metrics_request(struct srv_metrics *m, int route, const char *method, unsigned status,
                         int64_t ns);

/* Records one commit outcome ("ok", "conflict", "rejected", "unknown") and
 * its latency. */
void srv_metrics_commit(struct srv_metrics *m, const char *result, int64_t ns);

/* A cat_stage_fn: records one commit stage's duration (arg = the metrics). */
void srv_metrics_stage(void *arg, enum cat_stage stage, int64_t ns);

enum srv_vend_event {
	SRV_VEND_UNAVAILABLE, /* vended-credentials asked of a warehouse without STS */
	SRV_VEND_VENDED, /* credentials returned */
	SRV_VEND_STS_CALL, /* an AssumeRole call */
	SRV_VEND_SIGNED, /* a remote-signing request signed */
	SRV_VEND_REFUSED, /* a remote-signing request refused */
};

/* Counts one credential-vending or remote-signing event. */
void srv_metrics_vend(struct srv_metrics *m, enum srv_vend_event e);

/* Counts a response sent coded with c: its body's bytes before coding, and as sent. */
void srv_metrics_coded(struct srv_metrics *m, enum fl_coding c, size_t plain, size_t sent);

/* Counts a response replayed from an idempotency record. */
void srv_metrics_replay(struct srv_metrics *m);

/* Appends the Prometheus text exposition of everything to out. */
int srv_metrics_render(struct srv_metrics *m, struct srv_ctx *ctx,
                       struct fl_buf *out) FL_MUST_CHECK;

#endif
