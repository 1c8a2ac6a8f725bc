/* gate.c - one optimistic commit per table at a time in this process.
 *
 * An optimistic try (commit.c) builds and writes its metadata file before
 * it takes the row lock.  When several requests of this process commit to
 * the same table at once, all but one of those files lose the race at the
 * pointer move and are deleted again: on a hot table most of the daemon's
 * work, and most of the disk's fsyncs, went into files nobody referenced.
 * The gate lets one try per table run at a time; the next one starts from
 * the version the first committed (basecache.c holds it), so a stale client
 * gets its 409 before anything is built, and a compatible change is built
 * once, on the right base.
 *
 * The gate decides nothing: PostgreSQL's compare-and-swap still does, for
 * other processes and for commits that do not pass here.  So a wait is
 * bounded (GATE_WAIT_MS) and a try that waited that long goes on without
 * the gate, as every try did before; that also bounds the one case where a
 * holder could wait on its waiters (a holder without its own transaction
 * asking the pool for a connection while the waiters hold them all).
 *
 * Only tables with a waiter or a holder have an entry; a process has at
 * most as many as it has request threads, so a list serves. */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "db_int.h"

#define GATE_WAIT_MS 1000

struct cat_gate {
	struct cat_gate *next;
	struct cat_gates *all;
	pthread_cond_t cv;
	int waiters;
	bool held;
	size_t key_len;
	char key[];
};

struct cat_gates {
	pthread_mutex_t mu;
	struct cat_gate *list;
};

struct cat_gates *cat_gates_new(void)
{
	struct cat_gates *g = calloc(1, sizeof(*g));

	if (g != NULL)
		pthread_mutex_init(&g->mu, NULL);
	return g;
}

void cat_gates_free(struct cat_gates *g)
{
	if (g == NULL)
		return;
	/* Holders release before the pool closes: nothing is left. */
	pthread_mutex_destroy(&g->mu);
	free(g);
}

static struct cat_gate *gate_new(struct cat_gates *g, const char *key, size_t key_len)
{
	struct cat_gate *e = malloc(sizeof(*e) + key_len);
	pthread_condattr_t ca;

	if (e == NULL)
		return NULL;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&e->cv, &ca);
	pthread_condattr_destroy(&ca);
	e->all = g;
	e->waiters = 0;
	e->held = true;
	e->key_len = key_len;
	memcpy(e->key, key, key_len);
	e->next = g->list;
	g->list = e;
	return e;
}

static void gate_unlink(struct cat_gates *g, struct cat_gate *e)
{
	struct cat_gate **p = &g->list;

	while (*p != e)
		p = &(*p)->next;
	*p = e->next;
	pthread_cond_destroy(&e->cv);
	free(e);
}

struct cat_gate *cat_gate_enter(struct cat_gates *g, const char *key, size_t key_len)
{
	struct cat_gate *e;
	struct timespec until;
	int rc = 0;

	if (g == NULL || key == NULL)
		return NULL;
	pthread_mutex_lock(&g->mu);
	for (e = g->list; e != NULL; e = e->next)
		if (e->key_len == key_len && memcmp(e->key, key, key_len) == 0)
			break;
	if (e == NULL) {
		e = gate_new(g, key, key_len); /* NULL: no gate, as before */
		pthread_mutex_unlock(&g->mu);
		return e;
	}
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += GATE_WAIT_MS / 1000;
	until.tv_nsec += (long)(GATE_WAIT_MS % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	e->waiters++;
	while (e->held && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&e->cv, &g->mu, &until);
	e->waiters--;
	if (e->held) { /* waited long enough: go on without the gate */
		pthread_mutex_unlock(&g->mu);
		return NULL;
	}
	e->held = true;
	pthread_mutex_unlock(&g->mu);
	return e;
}

void cat_gate_leave(struct cat_gate *e)
{
	struct cat_gates *g;

	if (e == NULL)
		return;
	g = e->all;
	pthread_mutex_lock(&g->mu);
	e->held = false;
	if (e->waiters > 0)
		pthread_cond_signal(&e->cv);
	else
		gate_unlink(g, e);
	pthread_mutex_unlock(&g->mu);
}
