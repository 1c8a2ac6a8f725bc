/* test_path.c - mkdir -p and lock files.  The lock tests use a real second
 * process (fork): POSIX record locks never conflict within one process. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lock_child.h"
#include "path.h"

static char dir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/floe-test-path-XXXXXX");
	return mkdtemp(dir) == NULL ? -1 : 0;
}

static int teardown(void **state)
{
	char p[128];

	(void)state;
	snprintf(p, sizeof(p), "%s/a/b/c", dir);
	rmdir(p);
	snprintf(p, sizeof(p), "%s/a/b", dir);
	rmdir(p);
	snprintf(p, sizeof(p), "%s/a", dir);
	rmdir(p);
	snprintf(p, sizeof(p), "%s/l.lock", dir);
	unlink(p);
	rmdir(dir);
	return 0;
}

static void test_mkdir_p(void **state)
{
	char p[128];
	struct stat st;

	(void)state;
	snprintf(p, sizeof(p), "%s/a/b/c", dir);
	assert_int_equal(fl_mkdir_p(p), 0);
	assert_int_equal(stat(p, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(fl_mkdir_p(p), 0); /* existing: fine */
}

struct hold {
	const char *path;
	short type;
};

static int take_lock(const void *arg)
{
	const struct hold *h = arg;
	int fd = fl_lockfile_open(h->path);

	return fd >= 0 ? fl_lockfile_set(fd, h->type, false) : -1;
}

static pid_t holder(const char *path, short type)
{
	struct hold h = {path, type};

	return lock_child(take_lock, &h);
}

static void test_lockfile_shared_and_exclusive(void **state)
{
	char p[128];
	int fd;
	pid_t a, b;

	(void)state;
	snprintf(p, sizeof(p), "%s/l.lock", dir);
	fd = fl_lockfile_open(p);
	assert_true(fd >= 0);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	assert_int_equal(fl_lockfile_holder(fd, F_WRLCK), 0);

	/* Two other processes share it: this one can share too, not take it. */
	a = holder(p, F_RDLCK);
	b = holder(p, F_RDLCK);
	assert_int_equal(fl_lockfile_set(fd, F_RDLCK, false), 0);
	errno = 0;
	assert_int_equal(fl_lockfile_set(fd, F_WRLCK, false), -1);
	assert_int_equal(errno, EAGAIN);
	long h = fl_lockfile_holder(fd, F_WRLCK);
	assert_true(h == a || h == b);
	assert_int_equal(fl_lockfile_holder(fd, F_RDLCK), 0);

	/* A killed holder never counts: the kernel drops its lock. */
	lock_child_kill(a);
	assert_int_equal(fl_lockfile_holder(fd, F_WRLCK), b);
	assert_int_equal(fl_lockfile_set(fd, F_WRLCK, false), -1);
	lock_child_kill(b);
	/* The failed upgrade kept the shared lock; now the upgrade succeeds. */
	assert_int_equal(fl_lockfile_holder(fd, F_WRLCK), 0);
	assert_int_equal(fl_lockfile_set(fd, F_WRLCK, false), 0);

	/* An exclusive holder blocks shared lockers elsewhere and is named. */
	assert_int_equal(fl_lockfile_set(fd, F_UNLCK, false), 0);
	a = holder(p, F_WRLCK);
	assert_int_equal(fl_lockfile_holder(fd, F_RDLCK), a);
	assert_int_equal(fl_lockfile_set(fd, F_RDLCK, false), -1);
	assert_int_equal(errno, EAGAIN);
	lock_child_kill(a);
	assert_int_equal(fl_lockfile_set(fd, F_RDLCK, true), 0);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_mkdir_p, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_lockfile_shared_and_exclusive, setup,
	                                        teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
