/* Unit tests of catalog/db/gate.c: one optimistic commit per table at a
 * time.  A key has one holder; other keys pass at once; the next caller
 * enters when the holder leaves; a caller that waited a second goes on
 * without the gate (NULL), and the entry of a key nobody holds is gone. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "db/db_int.h"

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct waiter {
	struct cat_gates *g;
	const char *key;
	atomic_int state; /* 0 waiting, 1 entered, 2 went on without */
	struct cat_gate *held;
	int64_t waited_ms;
	int64_t entered_ms; /* when cat_gate_enter returned */
};

static void *wait_for(void *arg)
{
	struct waiter *w = arg;
	int64_t t0 = now_ms();

	w->held = cat_gate_enter(w->g, w->key, 1);
	w->entered_ms = now_ms();
	w->waited_ms = w->entered_ms - t0;
	atomic_store(&w->state, w->held != NULL ? 1 : 2);
	return NULL;
}

static void test_one_holder_per_key(void **state)
{
	struct cat_gates *g = cat_gates_new();
	struct cat_gate *a = cat_gate_enter(g, "a", 1), *b;
	struct waiter w = {.g = g, .key = "a"};
	int64_t left;
	pthread_t t;

	(void)state;
	assert_non_null(a);
	b = cat_gate_enter(g, "b", 1); /* another table passes at once */
	assert_non_null(b);
	assert_int_equal(pthread_create(&t, NULL, wait_for, &w), 0);
	usleep(100 * 1000);
	assert_int_equal(atomic_load(&w.state), 0); /* not through while a is held */
	left = now_ms();
	cat_gate_leave(a);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(atomic_load(&w.state), 1);
	/* through only once the holder left (however late the thread began) */
	assert_true(w.entered_ms >= left);
	cat_gate_leave(w.held);
	cat_gate_leave(b);
	/* nobody holds either key: they pass at once again */
	a = cat_gate_enter(g, "a", 1);
	b = cat_gate_enter(g, "b", 1);
	assert_non_null(a);
	assert_non_null(b);
	cat_gate_leave(a);
	cat_gate_leave(b);
	cat_gate_leave(NULL);
	cat_gates_free(g);
}

static void test_wait_is_bounded(void **state)
{
	struct cat_gates *g = cat_gates_new();
	struct cat_gate *a = cat_gate_enter(g, "a", 1);
	struct waiter w = {.g = g, .key = "a"};
	pthread_t t;

	(void)state;
	assert_int_equal(pthread_create(&t, NULL, wait_for, &w), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(atomic_load(&w.state), 2); /* went on without the gate */
	assert_true(w.waited_ms >= 900);
	assert_true(w.waited_ms < 5000);
	cat_gate_leave(a);
	a = cat_gate_enter(g, "a", 1); /* the holder left: free again */
	assert_non_null(a);
	cat_gate_leave(a);
	cat_gates_free(g);
}

static void test_without_gates(void **state)
{
	(void)state;
	assert_null(cat_gate_enter(NULL, "a", 1));
	cat_gates_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_one_holder_per_key),
	        cmocka_unit_test(test_wait_is_bounded),
	        cmocka_unit_test(test_without_gates),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
