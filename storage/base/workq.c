/* workq.c - worker threads and a FIFO of tasks (see workq.h).
 *
 * One mutex guards the FIFO, every group's pending count and `stopping`;
 * `more` wakes a worker when a task is queued, `finished` wakes waiters
 * when any task ends (they re-check their own group). */
#include "workq.h"

#include <pthread.h>
#include <stdlib.h>

struct st_workq {
	pthread_mutex_t mu;
	pthread_cond_t more, finished;
	struct st_workq_task *head, *tail;
	bool stopping;
	int n_threads;
	pthread_t *threads;
};

/* Takes the first queued task; NULL when none.  Under q->mu. */
static struct st_workq_task *pop(struct st_workq *q)
{
	struct st_workq_task *t = q->head;

	if (t != NULL) {
		q->head = t->next;
		if (q->head == NULL)
			q->tail = NULL;
	}
	return t;
}

static void *worker(void *arg)
{
	struct st_workq *q = arg;

	pthread_setname_np(pthread_self(), "floe-workq");
	pthread_mutex_lock(&q->mu);
	for (;;) {
		struct st_workq_task *t = pop(q);

		if (t == NULL) {
			if (q->stopping)
				break;
			pthread_cond_wait(&q->more, &q->mu);
			continue;
		}
		pthread_mutex_unlock(&q->mu);
		struct st_workq_group *g = t->group;

		t->run(t); /* may free t: only g is used after this */
		pthread_mutex_lock(&q->mu);
		g->pending--;
		pthread_cond_broadcast(&q->finished);
	}
	pthread_mutex_unlock(&q->mu);
	return NULL;
}

static void stop(struct st_workq *q, int started)
{
	pthread_mutex_lock(&q->mu);
	q->stopping = true;
	pthread_cond_broadcast(&q->more);
	pthread_mutex_unlock(&q->mu);
	for (int i = 0; i < started; i++)
		pthread_join(q->threads[i], NULL);
	pthread_cond_destroy(&q->more);
	pthread_cond_destroy(&q->finished);
	pthread_mutex_destroy(&q->mu);
	free(q->threads);
	free(q);
}

int st_workq_open(int threads, struct st_workq **out, struct fl_err *err)
{
	struct st_workq *q;

	if (threads < 1 || threads > 256)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "threads must be 1-256, not %d",
		                  threads);
	q = calloc(1, sizeof(*q));
	if (q == NULL || (q->threads = calloc((size_t)threads, sizeof(pthread_t))) == NULL) {
		free(q);
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	}
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->more, NULL);
	pthread_cond_init(&q->finished, NULL);
	for (int i = 0; i < threads; i++) {
		if (pthread_create(&q->threads[i], NULL, worker, q) != 0) {
			stop(q, i);
			return fl_err_set(err, FL_ERR_INTERNAL,
			                  "cannot start worker thread %d of %d", i + 1, threads);
		}
	}
	q->n_threads = threads;
	*out = q;
	return 0;
}

int st_workq_threads(const struct st_workq *q)
{
	return q->n_threads;
}

void st_workq_submit(struct st_workq *q, struct st_workq_group *g, struct st_workq_task *t)
{
	t->group = g;
	t->next = NULL;
	pthread_mutex_lock(&q->mu);
	g->pending++;
	if (q->tail != NULL)
		q->tail->next = t;
	else
		q->head = t;
	q->tail = t;
	pthread_cond_signal(&q->more);
	pthread_mutex_unlock(&q->mu);
}

void st_workq_wait(struct st_workq *q, struct st_workq_group *g)
{
	pthread_mutex_lock(&q->mu);
	while (g->pending > 0) {
		struct st_workq_task *t = pop(q);

		if (t == NULL) {
			pthread_cond_wait(&q->finished, &q->mu);
			continue;
		}
		/* Rather than sit idle, run a queued task here. */
		struct st_workq_group *tg = t->group;

		pthread_mutex_unlock(&q->mu);
		t->run(t);
		pthread_mutex_lock(&q->mu);
		tg->pending--;
		pthread_cond_broadcast(&q->finished);
	}
	pthread_mutex_unlock(&q->mu);
}

bool st_workq_done(struct st_workq *q, struct st_workq_group *g)
{
	bool done;

	pthread_mutex_lock(&q->mu);
	done = g->pending == 0;
	pthread_mutex_unlock(&q->mu);
	return done;
}

void st_workq_free(struct st_workq *q)
{
	if (q != NULL)
		stop(q, q->n_threads);
}
