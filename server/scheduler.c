/* scheduler.c - background work on a single thread per replica.
 *
 * Every second it runs due jobs and due feeds (several replicas share them
 * through SKIP LOCKED; feeds.c) and every minute it deletes expired idempotency records.  Failures
 * are logged and retried on the next tick; a database outage only delays
 * the work. */
#include "scheduler.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "feeds.h"
#include "log.h"

struct srv_scheduler {
	struct srv_ctx *ctx;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop;
};

static void *loop(void *arg)
{
	struct srv_scheduler *s = arg;
	int tick = 0;

	pthread_setname_np(pthread_self(), "floe-sched");

	pthread_mutex_lock(&s->mu);
	while (!s->stop) {
		struct timespec until;

		pthread_mutex_unlock(&s->mu);
		for (int i = 0; i < 16; i++) {
			struct fl_err err = {0};
			bool did = false;

			if (cat_jobs_run_one(s->ctx->db, &did, &err) != 0) {
				fl_warn(NULL, "scheduler: jobs: %s", err.msg);
				break;
			}
			if (!did)
				break;
			fl_info(NULL, "scheduler: finished a purge job");
		}
		{
			struct fl_err err = {0};
			int ran = 0;

			if (srv_feeds_run_due(s->ctx, 16, &ran, &err) != 0)
				fl_warn(NULL, "scheduler: feeds: %s", err.msg);
		}
		if (tick++ % 60 == 0) {
			struct fl_err err = {0};
			long n = 0;

			if (cat_idem_gc(s->ctx->db, &n, &err) != 0)
				fl_warn(NULL, "scheduler: idempotency gc: %s", err.msg);
			else if (n > 0)
				fl_debug(NULL, "scheduler: deleted %ld expired idempotency records",
				         n);
		}
		pthread_mutex_lock(&s->mu);
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 1;
		if (!s->stop)
			pthread_cond_timedwait(&s->cv, &s->mu, &until);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

int srv_scheduler_start(struct srv_ctx *ctx, struct srv_scheduler **out, struct fl_err *err)
{
	struct srv_scheduler *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	s->ctx = ctx;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	if (pthread_create(&s->thread, NULL, loop, s) != 0) {
		free(s);
		return fl_err_set(err, FL_ERR_INTERNAL, "cannot start the scheduler thread");
	}
	*out = s;
	return 0;
}

void srv_scheduler_stop(struct srv_scheduler *s)
{
	if (s == NULL)
		return;
	pthread_mutex_lock(&s->mu);
	s->stop = true;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->thread, NULL);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	free(s);
}
