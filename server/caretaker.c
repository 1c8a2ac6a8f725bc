/* caretaker.c - the maintenance workers of `floe serve`.
 *
 * Each worker, every maintenance-poll seconds (or at once when it just ran
 * a job): the first worker queues the scheduled runs that are due
 * (cat_maint_schedule_due: table policies, warehouse defaults), then every
 * worker claims queued jobs one at a time until none is left.  A job runs
 * its actions in order through cat_maintain_action, records each outcome in
 * the job's transaction, measures the table for /metrics and ends.  The
 * job row stays locked and the table's advisory lock held while it runs,
 * so replicas never run two jobs of one table at once; a replica that dies
 * or stops mid-job leaves it queued for another.  Failures are logged and
 * recorded; a database outage only delays the work. */
#include "caretaker.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "clock.h"
#include "io/io.h"
#include "log.h"
#include "maintenance.h"
#include "whcache.h"

#define MAX_WORKERS 16

struct srv_caretaker {
	struct srv_ctx *ctx;
	pthread_t threads[MAX_WORKERS];
	int n;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	atomic_bool stop;
};

struct worker_arg {
	struct srv_caretaker *c;
	int index;
};

/* Runs one claimed job and ends it.  On shutdown between two actions the
 * job is rolled back (its outcomes too) and stays queued: every action is
 * safe to run again. */
static void run_job(struct srv_caretaker *c, struct cat_maint_job *job)
{
	struct srv_ctx *ctx = c->ctx;
	struct cat_limits lim = {(size_t)ctx->cfg->max_commit_updates,
	                         (size_t)ctx->cfg->max_metadata_bytes};
	struct cat_ns ns = {(const char *const *)job->levels, job->nlevels};
	json_t *results = json_array(), *a;
	struct fl_err err = {0};
	char nsbuf[520];
	bool ok = results != NULL, io = false, gone = false;
	size_t i;

	cat_ns_str(&ns, nsbuf, sizeof(nsbuf));
	if (ok && srv_whcache_io(ctx->whcache, &job->wh, &err) != 0) {
		ok = false;
		fl_warn(NULL, "maintenance job %lld: %s.%s: %s", (long long)job->id, nsbuf,
		        job->name, err.msg);
	}
	io = ok;
	json_array_foreach(job->actions, i, a)
	{
		const char *action = json_string_value(a);
		const char *label =
		        action != NULL && cat_maintain_known(action) ? action : "policy";
		int64_t t0 = fl_now_ms();
		json_t *report = NULL;
		struct fl_err aerr = {0}, rerr = {0};
		int rc;

		if (!io)
			break;
		if (atomic_load(&c->stop)) {
			/* Shutting down: roll back, the job stays queued. */
			fl_info(NULL, "maintenance job %lld: left for later (shutting down)",
			        (long long)job->id);
			cat_tx_abort(job->tx);
			job->tx = NULL;
			st_io_release(job->wh.io);
			job->wh.io = NULL;
			if (cat_maint_job_end(job, false, NULL, &rerr) != 0)
				rerr.kind = FL_ERR_NONE; /* it was rolled back on purpose */
			json_decref(results);
			return;
		}
		rc = cat_maintain_action(ctx->db, &job->wh, &ns, job->name, &lim,
		                         action != NULL ? action : "(none)", job->dry_run, 0,
		                         &report, &aerr);
		if (rc != 0)
			fl_warn(NULL, "maintenance job %lld: %s.%s: %s: %s", (long long)job->id,
			        nsbuf, job->name, label, aerr.msg);
		else
			fl_info(NULL,
			        "maintenance job %lld: %s.%s: %s: %lld files removed, %lld added%s",
			        (long long)job->id, nsbuf, job->name, label,
			        (long long)json_integer_value(
			                json_object_get(report, "files-removed")),
			        (long long)json_integer_value(
			                json_object_get(report, "files-added")),
			        job->dry_run ? " (dry run)" : "");
		/* A table dropped since the job was queued: nothing to record, or
		 * to run. */
		if (rc != 0 &&
		    (aerr.kind == FL_ERR_NO_SUCH_TABLE || aerr.kind == FL_ERR_NO_SUCH_NAMESPACE)) {
			json_decref(report);
			ok = false;
			gone = true;
			break;
		}
		if (cat_maint_record(ctx->db, job->tx, &job->wh, &ns, job->name, label, job->id,
		                     job->dry_run, t0, report, rc == 0 ? NULL : aerr.msg,
		                     &rerr) != 0)
			fl_warn(NULL, "maintenance job %lld: cannot record the outcome: %s",
			        (long long)job->id, rerr.msg);
		json_array_append_new(results, json_pack("{s:s, s:s, s:s?}", "action", label,
		                                         "outcome", rc == 0 ? "ok" : "failed",
		                                         "error", rc == 0 ? NULL : aerr.msg));
		ok = ok && rc == 0;
		json_decref(report);
	}
	if (io && !gone && cat_maintain_measure(ctx->db, &job->wh, &ns, job->name, &err) != 0)
		fl_warn(NULL, "maintenance job %lld: %s.%s: measuring: %s", (long long)job->id,
		        nsbuf, job->name, err.msg);
	st_io_release(job->wh.io);
	job->wh.io = NULL;
	fl_err_clear(&err);
	if (cat_maint_job_end(job, ok, results, &err) != 0)
		fl_warn(NULL, "maintenance: cannot end a job: %s", err.msg);
	json_decref(results);
}

static void *loop(void *arg)
{
	struct worker_arg *wa = arg;
	struct srv_caretaker *c = wa->c;
	int index = wa->index;

	pthread_setname_np(pthread_self(), "floe-maint");
	free(wa);
	while (!atomic_load(&c->stop)) {
		struct fl_err err = {0};
		bool did = false;
		int added = 0;

		if (index == 0 && cat_maint_schedule_due(c->ctx->db, 100, &added, &err) != 0)
			fl_warn(NULL, "maintenance: scheduling: %s", err.msg);
		else if (added > 0)
			fl_debug(NULL, "maintenance: queued %d scheduled run(s)", added);
		while (!atomic_load(&c->stop)) {
			struct cat_maint_job job;

			fl_err_clear(&err);
			if (cat_maint_claim(c->ctx->db, &job, &did, &err) != 0) {
				fl_warn(NULL, "maintenance: claiming a job: %s", err.msg);
				break;
			}
			if (!did)
				break;
			run_job(c, &job);
		}
		pthread_mutex_lock(&c->mu);
		if (!atomic_load(&c->stop)) {
			struct timespec until;

			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_sec += (time_t)c->ctx->cfg->maintenance_poll;
			pthread_cond_timedwait(&c->cv, &c->mu, &until);
		}
		pthread_mutex_unlock(&c->mu);
	}
	return NULL;
}

int srv_caretaker_start(struct srv_ctx *ctx, struct srv_caretaker **out, struct fl_err *err)
{
	struct srv_caretaker *c;
	int want = (int)ctx->cfg->maintenance_workers;

	*out = NULL;
	if (want <= 0)
		return 0;
	if (want > MAX_WORKERS)
		want = MAX_WORKERS;
	/* A running job holds one pooled connection (its claim) and its
	 * commits take another: leave the pool room for requests. */
	if (want > (ctx->cfg->db_pool_size - 1) / 2) {
		int fit = (int)((ctx->cfg->db_pool_size - 1) / 2);

		fl_warn(NULL,
		        "maintenance: %d worker(s) need a db-pool-size of %d or more; running %d",
		        want, 2 * want + 1, fit);
		want = fit;
		if (want <= 0)
			return 0;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	c->ctx = ctx;
	atomic_init(&c->stop, false);
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	for (int i = 0; i < want; i++) {
		struct worker_arg *wa = malloc(sizeof(*wa));

		if (wa == NULL || (wa->c = c, wa->index = i,
		                   pthread_create(&c->threads[i], NULL, loop, wa) != 0)) {
			free(wa);
			srv_caretaker_stop(c);
			return fl_err_set(err, FL_ERR_INTERNAL,
			                  "cannot start the maintenance worker threads");
		}
		c->n++;
	}
	*out = c;
	return 0;
}

void srv_caretaker_stop(struct srv_caretaker *c)
{
	if (c == NULL)
		return;
	pthread_mutex_lock(&c->mu);
	atomic_store(&c->stop, true);
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	for (int i = 0; i < c->n; i++)
		pthread_join(c->threads[i], NULL);
	pthread_mutex_destroy(&c->mu);
	pthread_cond_destroy(&c->cv);
	free(c);
}
