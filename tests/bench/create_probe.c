/* create_probe.c - what creating a file costs on the filesystem of a run.
 *
 *   create_probe DIR [files]
 *
 * Every Floe commit creates a file (its new metadata.json); the PostgreSQL
 * ceilings create none.  So a benchmark is fair only if creating a file costs
 * what it normally costs on the machine, and it does not always: ext4 mounted
 * without a journal (as the disks of these VMs are) skips, when it looks for a
 * free inode, every inode deleted in the last 1-6 minutes, and checks each one
 * in the buffer cache.  A run started minutes after another run's cleanup
 * (rm -rf of tens of thousands of metadata files) pays that search in every
 * commit: 27 % of the machine's CPU in one profile, the 1,000-table ratio 0.14
 * instead of 0.23.
 *
 * In DIR (created; on the filesystem under test), [files] times (default
 * 2000): an unnamed file (O_TMPFILE) given a name, as Floe's file warehouse
 * creates each metadata file, without writing or syncing; where the
 * filesystem has no O_TMPFILE, a named file (O_CREAT | O_EXCL), Floe's
 * fallback.  Prints one line:
 *   create_probe: N creates, X us each[ (named files: no O_TMPFILE here)]
 * The files stay: deleting them would tax the next run.  Exits 1 when it
 * cannot create a file. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
	char proc[64], name[32];
	int dfd, fd, i, n;
	bool named = false;
	double t0;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: create_probe DIR [files]\n");
		return 2;
	}
	n = argc == 3 ? atoi(argv[2]) : 2000;
	if (n < 1 || n > 1000000) {
		fprintf(stderr, "create_probe: files must be 1..1000000\n");
		return 2;
	}
	if (mkdir(argv[1], 0755) != 0 ||
	    (dfd = open(argv[1], O_DIRECTORY | O_RDONLY | O_CLOEXEC)) < 0) {
		perror(argv[1]);
		return 1;
	}
	t0 = now_us();
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "p%07d", i);
		fd = named ? -1 : openat(dfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
		if (fd < 0 && !named && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL))
			named = true;
		if (named)
			fd = openat(dfd, name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
		if (fd < 0) {
			perror(named ? "create_probe: O_CREAT" : "create_probe: O_TMPFILE");
			return 1;
		}
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		if (!named && linkat(AT_FDCWD, proc, dfd, name, AT_SYMLINK_FOLLOW) != 0) {
			perror("create_probe: linkat");
			return 1;
		}
		close(fd);
	}
	printf("create_probe: %d creates, %.1f us each%s\n", n, (now_us() - t0) / n,
	       named ? " (named files: no O_TMPFILE here)" : "");
	close(dfd);
	return 0;
}
