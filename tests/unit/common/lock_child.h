/* lock_child.h - a second process for lock tests.  POSIX record locks never
 * conflict within one process, so a test that a lock excludes someone needs a
 * real other process. */
#ifndef TEST_LOCK_CHILD_H
#define TEST_LOCK_CHILD_H

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

/* Forks a child that runs take(arg), reports whether it returned 0 and then
 * waits, holding whatever it took, until lock_child_kill.  Returns the
 * child's pid once it has reported; the calling test fails when take did not
 * return 0. */
static inline pid_t lock_child(int (*take)(const void *arg), const void *arg)
{
	int p[2];
	pid_t pid;
	char c = 0;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		c = take(arg) == 0 ? 'y' : 'n';
		(void)!write(p[1], &c, 1);
		pause();
		_exit(0);
	}
	close(p[1]);
	assert_int_equal(read(p[0], &c, 1), 1);
	close(p[0]);
	assert_int_equal(c, 'y');
	return pid;
}

/* Kills the child with SIGKILL, as a crash would, and reaps it. */
static inline void lock_child_kill(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

#endif
