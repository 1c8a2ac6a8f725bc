/* path.c - `mkdir -p` and lock files, the one copy every layer uses.
 *
 * Lock files use POSIX record locks (fcntl) rather than flock: F_GETLK names
 * the pid holding a lock, so a refusal or `floe status` can say who holds it
 * without disturbing anyone. */
#include "path.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>

int fl_mkdir_p(const char *path)
{
	char tmp[PATH_MAX];

	if (snprintf(tmp, sizeof(tmp), "%s", path) >= (int)sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (char *p = tmp + 1; *p; p++) {
		if (*p == '/') {
			*p = '\0';
			if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
				return -1;
			*p = '/';
		}
	}
	return mkdir(tmp, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

int fl_lockfile_open(const char *path)
{
	return open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
}

int fl_lockfile_set(int fd, short type, bool wait)
{
	struct flock fl = {.l_type = type, .l_whence = SEEK_SET};
	int rc;

	while ((rc = fcntl(fd, wait ? F_SETLKW : F_SETLK, &fl)) != 0 && errno == EINTR)
		;
	if (rc != 0 && errno == EACCES)
		errno = EAGAIN; /* POSIX allows either for "held by another process" */
	return rc;
}

long fl_lockfile_holder(int fd, short type)
{
	struct flock fl = {.l_type = type, .l_whence = SEEK_SET};

	if (fcntl(fd, F_GETLK, &fl) != 0)
		return -1;
	return fl.l_type == F_UNLCK ? 0 : (long)fl.l_pid;
}
