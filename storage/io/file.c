/* file.c - the file:// implementation of io.h.
 *
 * New objects are written to a temporary name in the same directory, fsynced,
 * then linked into place with link(2), which fails if the name exists: a
 * reader never sees a partial metadata file and two writers can never both
 * "create" the same file. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io.h"
#include "path.h"

int st_io_supported(const char *uri)
{
	return strncmp(uri, "file:///", 8) == 0;
}

static int local_path(const char *uri, char *out, size_t cap, struct fl_err *err)
{
	if (strncmp(uri, "file://", 7) != 0)
		return fl_err_set(
		        err, FL_ERR_UNSUPPORTED,
		        "storage location %.200s is not supported by this build (file:// only)",
		        uri);
	if (snprintf(out, cap, "%s", uri + 7) >= (int)cap)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "storage path too long");
	if (out[0] != '/' || strstr(out, "/../") != NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "storage path %.200s must be absolute",
		                  out);
	return 0;
}

int st_io_mkdirs(const char *uri, struct fl_err *err)
{
	char path[PATH_MAX];

	if (strncmp(uri, "s3://", 5) == 0)
		return 0;
	if (local_path(uri, path, sizeof(path), err) != 0)
		return -1;
	if (fl_mkdir_p(path) != 0)
		return fl_err_set(err, FL_ERR_IO, "cannot create directory %.200s: %s", path,
		                  strerror(errno));
	return 0;
}

int st_io_write_new(const char *uri, const void *p, size_t n, struct fl_err *err)
{
	char path[PATH_MAX], dir[PATH_MAX], tmp[PATH_MAX + 32];
	const char *b = p;
	char *slash;
	int fd = -1, dfd;
	size_t off = 0;

	if (local_path(uri, path, sizeof(path), err) != 0)
		return -1;
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	*slash = '\0';
	if (dir[0] != '\0' && fl_mkdir_p(dir) != 0)
		return fl_err_set(err, FL_ERR_IO, "cannot create directory %.200s: %s", dir,
		                  strerror(errno));
	snprintf(tmp, sizeof(tmp), "%s.tmp-%ld", path, (long)getpid() ^ (long)(size_t)&fd);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return fl_err_set(err, FL_ERR_IO, "cannot create %.200s: %s", tmp, strerror(errno));
	while (off < n) {
		ssize_t w = write(fd, b + off, n - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			goto fail;
		off += (size_t)w;
	}
	if (fsync(fd) != 0 || close(fd) != 0) {
		fd = -1;
		goto fail;
	}
	fd = -1;
	if (link(tmp, path) != 0) {
		int e = errno;

		unlink(tmp);
		if (e == EEXIST)
			return fl_err_set(err, FL_ERR_ALREADY_EXISTS, "%.200s already exists",
			                  path);
		return fl_err_set(err, FL_ERR_IO, "cannot create %.200s: %s", path, strerror(e));
	}
	unlink(tmp);
	dfd = open(dir[0] ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		(void)fsync(dfd);
		close(dfd);
	}
	return 0;
fail:
	fl_err_set(err, FL_ERR_IO, "cannot write %.200s: %s", path, strerror(errno));
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	return -1;
}

int st_io_read(const char *uri, size_t max, char **out, size_t *n, struct fl_err *err)
{
	char path[PATH_MAX];
	struct stat st;
	char *buf;
	size_t off = 0;
	int fd;

	if (local_path(uri, path, sizeof(path), err) != 0)
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fl_err_set(err, errno == ENOENT ? FL_ERR_NOT_FOUND : FL_ERR_IO,
		                  "cannot open %.200s: %s", path, strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return fl_err_set(err, FL_ERR_IO, "%.200s is not a regular file", path);
	}
	if ((size_t)st.st_size > max) {
		close(fd);
		return fl_err_set(err, FL_ERR_TOO_LARGE, "%.200s is larger than %zu bytes", path,
		                  max);
	}
	buf = malloc((size_t)st.st_size + 1);
	if (buf == NULL) {
		close(fd);
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	}
	while (off < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + off, (size_t)st.st_size - off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		off += (size_t)r;
	}
	close(fd);
	buf[off] = '\0';
	*out = buf;
	*n = off;
	return 0;
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return (flag == FTW_DP ? rmdir(p) : unlink(p)) != 0 && errno != ENOENT ? -1 : 0;
}

int st_io_delete_tree(const char *uri, struct fl_err *err)
{
	char path[PATH_MAX];

	if (local_path(uri, path, sizeof(path), err) != 0)
		return -1;
	if (strcmp(path, "/") == 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "refusing to delete /");
	if (nftw(path, rm_one, 32, FTW_DEPTH | FTW_PHYS) != 0 && errno != ENOENT)
		return fl_err_set(err, FL_ERR_IO, "cannot delete %.200s: %s", path,
		                  strerror(errno));
	return 0;
}
