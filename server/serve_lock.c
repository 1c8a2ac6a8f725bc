/* serve_lock.c - at most one floe serve per data directory and port.
 *
 * The claim is a POSIX record lock (fl_lockfile_set) on
 * <data-dir>/serve-<port>.lock: the kernel drops it when the server exits,
 * however it exits, so a crashed server never blocks its successor.  The
 * files are never removed: removing a lock file races with a process that
 * has just opened it, and there is one small file per port ever used. */
#include "serve_lock.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "path.h"

int srv_serve_lock_take(const char *data_dir, unsigned port, int *fd, struct fl_err *err)
{
	char path[PATH_MAX + 32];
	long other;
	int f;

	snprintf(path, sizeof(path), "%s/serve-%u.lock", data_dir, port);
	f = fl_lockfile_open(path);
	if (f < 0)
		return fl_err_set(err, FL_ERR_IO, "cannot open %s: %s", path, strerror(errno));
	if (fl_lockfile_set(f, F_WRLCK, false) != 0) {
		int e = errno;

		other = fl_lockfile_holder(f, F_WRLCK);
		close(f);
		if (e != EAGAIN)
			return fl_err_set(err, FL_ERR_IO, "cannot lock %s: %s", path, strerror(e));
		return fl_err_set(err, FL_ERR_CONFLICT,
		                  "floe process %ld already serves data directory %s on port %u; "
		                  "stop it first, or choose another --port to share the catalog",
		                  other, data_dir, port);
	}
	*fd = f;
	return 0;
}

void srv_serve_lock_release(int fd)
{
	if (fd >= 0)
		close(fd);
}

void srv_serve_lock_list(const char *data_dir, FILE *out)
{
	DIR *d = opendir(data_dir);
	struct dirent *e;
	bool any = false;

	while (d != NULL && (e = readdir(d)) != NULL) {
		char path[PATH_MAX + 300], tail[8];
		unsigned port;
		long pid;
		int fd;

		if (sscanf(e->d_name, "serve-%u.lo%7s", &port, tail) != 2 ||
		    strcmp(tail, "ck") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", data_dir, e->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		pid = fl_lockfile_holder(fd, F_RDLCK);
		close(fd);
		if (pid > 0) {
			fprintf(out, "floe serve:     port %u, pid %ld\n", port, pid);
			any = true;
		}
	}
	if (d != NULL)
		closedir(d);
	if (!any)
		fprintf(out,
		        "floe serve:     none on a fixed port (--port 0 servers are not listed)\n");
}
