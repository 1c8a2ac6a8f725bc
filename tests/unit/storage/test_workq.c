/* test_workq.c - the worker threads of storage/base/workq.c: every task
 * runs exactly once, a group's wait returns only when all of its tasks are
 * done (also when the waiting thread runs some of them itself), groups of
 * several producers do not wait for each other, and free runs what is
 * still queued.  Run under ASan/UBSan by tests/run.sh. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/workq.h"

struct item {
	struct st_workq_task task; /* first */
	int runs;
	unsigned spin;
	int *done_counter;
	pthread_mutex_t *mu;
};

static void item_run(struct st_workq_task *t)
{
	struct item *it = (struct item *)t;
	volatile unsigned x = 0;

	for (unsigned i = 0; i < it->spin; i++)
		x += i;
	__atomic_fetch_add(&it->runs, 1, __ATOMIC_SEQ_CST);
	if (it->done_counter != NULL) {
		pthread_mutex_lock(it->mu);
		(*it->done_counter)++;
		pthread_mutex_unlock(it->mu);
	}
}

static void test_groups(void **state)
{
	enum { GROUPS = 20, PER = 37 };
	static struct item items[GROUPS][PER];
	struct st_workq_group g[GROUPS];
	struct st_workq *q;
	struct fl_err err = {0};

	(void)state;
	for (int threads = 1; threads <= 4; threads++) {
		assert_int_equal(st_workq_open(threads, &q, &err), 0);
		assert_int_equal(st_workq_threads(q), threads);
		memset(items, 0, sizeof(items));
		memset(g, 0, sizeof(g));
		for (int k = 0; k < GROUPS; k++) {
			for (int i = 0; i < PER; i++) {
				items[k][i].task.run = item_run;
				items[k][i].spin = (unsigned)((i * 7919) % 5000);
				st_workq_submit(q, &g[k], &items[k][i].task);
			}
			/* Waiting on every other group as it is submitted: the
			 * waiter runs queued tasks too. */
			if (k % 2 == 1) {
				st_workq_wait(q, &g[k]);
				assert_true(st_workq_done(q, &g[k]));
				for (int i = 0; i < PER; i++)
					assert_int_equal(items[k][i].runs, 1);
			}
		}
		for (int k = 0; k < GROUPS; k++) {
			st_workq_wait(q, &g[k]);
			assert_int_equal(g[k].pending, 0);
			for (int i = 0; i < PER; i++)
				assert_int_equal(items[k][i].runs, 1);
		}
		st_workq_free(q);
	}
}

/* Two producer threads sharing one queue, each waiting for its own groups. */
struct producer {
	struct st_workq *q;
	struct item items[64];
	int counter;
	pthread_mutex_t mu;
};

static void *produce(void *arg)
{
	struct producer *p = arg;

	for (int round = 0; round < 8; round++) {
		struct st_workq_group g = {0};

		p->counter = 0;
		for (int i = 0; i < 64; i++) {
			memset(&p->items[i], 0, sizeof(p->items[i]));
			p->items[i].task.run = item_run;
			p->items[i].spin = 2000;
			p->items[i].done_counter = &p->counter;
			p->items[i].mu = &p->mu;
			st_workq_submit(p->q, &g, &p->items[i].task);
		}
		st_workq_wait(p->q, &g);
		pthread_mutex_lock(&p->mu);
		if (p->counter != 64) {
			pthread_mutex_unlock(&p->mu);
			return (void *)1;
		}
		pthread_mutex_unlock(&p->mu);
	}
	return NULL;
}

static void test_two_producers(void **state)
{
	static struct producer p[2];
	struct st_workq *q;
	struct fl_err err = {0};
	pthread_t t[2];
	void *rv;

	(void)state;
	assert_int_equal(st_workq_open(2, &q, &err), 0);
	for (int i = 0; i < 2; i++) {
		p[i].q = q;
		pthread_mutex_init(&p[i].mu, NULL);
		assert_int_equal(pthread_create(&t[i], NULL, produce, &p[i]), 0);
	}
	for (int i = 0; i < 2; i++) {
		assert_int_equal(pthread_join(t[i], &rv), 0);
		assert_null(rv);
		pthread_mutex_destroy(&p[i].mu);
	}
	st_workq_free(q);
}

/* free runs the tasks still queued before it stops the workers. */
static void test_free_drains(void **state)
{
	static struct item items[200];
	struct st_workq_group g = {0};
	struct st_workq *q;
	struct fl_err err = {0};

	(void)state;
	memset(items, 0, sizeof(items));
	assert_int_equal(st_workq_open(1, &q, &err), 0);
	for (int i = 0; i < 200; i++) {
		items[i].task.run = item_run;
		items[i].spin = 10000;
		st_workq_submit(q, &g, &items[i].task);
	}
	st_workq_free(q);
	for (int i = 0; i < 200; i++)
		assert_int_equal(items[i].runs, 1);
}

static void test_bad_counts(void **state)
{
	struct st_workq *q = NULL;
	struct fl_err err = {0};

	(void)state;
	assert_int_equal(st_workq_open(0, &q, &err), -1);
	assert_int_equal(err.kind, FL_ERR_BAD_REQUEST);
	assert_int_equal(st_workq_open(257, &q, &err), -1);
	assert_null(q);
	st_workq_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_groups),
	        cmocka_unit_test(test_two_producers),
	        cmocka_unit_test(test_free_drains),
	        cmocka_unit_test(test_bad_counts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
