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
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int fl_sync_parent(const char *path)
{
	char dir[PATH_MAX];
	char *slash;
	int fd, rc;

	if (snprintf(dir, sizeof(dir), "%s", path) >= (int)sizeof(dir)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	slash = strrchr(dir, '/');
	if (slash == NULL)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	rc = fsync(fd);
	close(fd);
	return rc;
}

/* Creates one level; a directory it creates is made durable in its parent. */
static int mkdir_one(const char *path)
{
	if (mkdir(path, 0755) == 0)
		return fl_sync_parent(path);
	return errno == EEXIST ? 0 : -1;
}

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
			if (mkdir_one(tmp) != 0)
				return -1;
			*p = '/';
		}
	}
	return mkdir_one(tmp);
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
