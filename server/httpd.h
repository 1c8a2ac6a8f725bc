/* httpd.h - the libmicrohttpd daemon: accept, read bodies, route, answer. */
#ifndef SRV_HTTPD_H
#define SRV_HTTPD_H

#include "srv.h"

struct srv_httpd;

/* Starts listening on cfg->host:cfg->port with cfg->http_threads epoll
 * threads (0 = one per CPU) and cfg->threads worker threads (0 = derived
 * from cfg->db_pool_size).  *port receives the bound port (useful with port 0). */
int srv_httpd_start(struct srv_ctx *ctx, struct srv_httpd **out, unsigned *port,
                    struct fl_err *err) FL_MUST_CHECK;

/* The workers: how many, how many are running a request, and how many
 * requests wait for one (for /metrics). */
void srv_httpd_workers(struct srv_httpd *h, unsigned *threads, unsigned *busy, unsigned *queued);

/* Stops accepting, waits up to grace_s for in-flight requests, then stops
 * the daemon and frees it.  Accepts NULL. */
void srv_httpd_stop(struct srv_httpd *h, int64_t grace_s);

#endif
