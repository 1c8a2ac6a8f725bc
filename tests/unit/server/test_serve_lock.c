/* test_serve_lock.c - one floe serve per data directory and port.  The
 * competing server is a real second process (fork): the claim is a POSIX
 * record lock, which never conflicts within one process. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <unistd.h>

#include "lock_child.h"
#include "serve_lock.h"

static char dir[64];

static int take_port(const void *arg)
{
	struct fl_err err = {0};
	int fd;

	return srv_serve_lock_take(dir, *(const unsigned *)arg, &fd, &err);
}

static pid_t other_server(unsigned port)
{
	return lock_child(take_port, &port);
}

static void test_same_port_refused_other_port_allowed(void **state)
{
	struct fl_err err = {0};
	char want[256], listing[512] = "", line[128];
	int fd = -1, fd2 = -1;
	pid_t pid;
	FILE *f;

	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/floe-test-serve-lock-XXXXXX");
	assert_non_null(mkdtemp(dir));
	pid = other_server(18181);

	assert_int_equal(srv_serve_lock_take(dir, 18181, &fd, &err), -1);
	assert_int_equal(err.kind, FL_ERR_CONFLICT);
	snprintf(want, sizeof(want),
	         "floe process %ld already serves data directory %s on port 18181", (long)pid, dir);
	assert_non_null(strstr(err.msg, want));
	assert_int_equal(fd, -1);

	/* Another port shares the data directory. */
	assert_int_equal(srv_serve_lock_take(dir, 18182, &fd2, &err), 0);

	/* The listing names the other process's claim (this process's own claims
	 * do not conflict with its query, so they are not shown). */
	f = tmpfile();
	assert_non_null(f);
	srv_serve_lock_list(dir, f);
	rewind(f);
	while (fgets(line, sizeof(line), f) != NULL)
		strncat(listing, line, sizeof(listing) - strlen(listing) - 1);
	fclose(f);
	snprintf(want, sizeof(want), "floe serve:     port 18181, pid %ld\n", (long)pid);
	assert_string_equal(listing, want);

	/* A server that died (kill -9) no longer holds its port. */
	lock_child_kill(pid);
	assert_int_equal(srv_serve_lock_take(dir, 18181, &fd, &err), 0);
	srv_serve_lock_release(fd);
	srv_serve_lock_release(fd2);

	snprintf(want, sizeof(want), "%s/serve-18181.lock", dir);
	unlink(want);
	snprintf(want, sizeof(want), "%s/serve-18182.lock", dir);
	unlink(want);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_same_port_refused_other_port_allowed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
