/* file.c - the file:// backend of io.h.
 *
 * New objects are written whole to an unnamed file in their directory
 * (O_TMPFILE; a temporary name where the filesystem has none), linked into
 * place, which fails if the name exists, then fsynced with their link: a
 * reader never sees a partial metadata file, two writers can never both
 * "create" the same file, and once the directory is synced the name and the
 * inode it names are both on disk.
 * Once synced, an object written whole leaves the page cache: see
 * drop_cached.
 * Streamed data files are written in place, fdatasynced with their
 * directory when closed, and unlinked when aborted.  Given a pending set
 * (io.h), the directory syncs and a data file's fdatasync are left to it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io_int.h"
#include "path.h"

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

static int file_mkdirs(struct st_io *io, const char *uri, struct fl_err *err)
{
	char path[PATH_MAX];

	if (local_path(uri, path, sizeof(path), err) != 0)
		return -1;
	if (fl_mkdir_p(path) != 0)
		return fl_err_set(err, FL_ERR_IO, "cannot create directory %.200s: %s", path,
		                  strerror(errno));
	return 0;
}

/* Writes all n bytes; -1 with errno. */
static int write_all(int fd, const char *b, size_t n)
{
	size_t off = 0;

	while (off < n) {
		ssize_t w = write(fd, b + off, n - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (w == 0)
				errno = EIO;
			return -1;
		}
		off += (size_t)w;
	}
	return 0;
}

/* Names the unnamed file fd in dfd; -1 with errno.  /proc is the portable
 * way; AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH, so it is the second. */
static int link_unnamed(int fd, int dfd, const char *name)
{
	char proc[40];

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (linkat(AT_FDCWD, proc, dfd, name, AT_SYMLINK_FOLLOW) == 0)
		return 0;
	if (errno == EEXIST)
		return -1;
	return linkat(fd, "", dfd, name, AT_EMPTY_PATH);
}

/* Drops the synced file's pages from the page cache.  An object written
 * whole (a table's metadata, a manifest, a manifest list) is never
 * rewritten, and Floe does not read a metadata file it just wrote: the
 * loadTable cache holds the text, and the table's row does up to the
 * inline limit.  Kept, the pages would stay until memory pressure evicts
 * them, charged to the process's memory cgroup, while every commit takes
 * fresh pages for its next file.  Freed now, they are the pages the next
 * write gets.  Where a virtual machine hands free memory back to its host,
 * a fresh page costs a fault in the host: ~9 us a page, 2.6 ms against
 * 0.17 ms to write 1.1 MB (BENCHMARKS.md, twenty-first pass).  Advice
 * only: a failure changes nothing that was written. */
static void drop_cached(int fd)
{
	(void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
}

/* Set once an unnamed file could not be made or named: later writes go
 * straight to a temporary name rather than writing and syncing every
 * object twice. */
static atomic_bool unnamed_unusable;

/* The bytes in an unnamed file (O_TMPFILE), given their name, then synced:
 * nothing half-written ever has a name while the process runs, and the
 * sync comes after the link so that it writes the inode with its new link
 * count.  Synced before the link, as it once was, the inode went to disk
 * with no links; where the file system has no journal (ext2, ext4 without
 * one) the directory's sync then wrote the name but not the count, and a
 * crash before writeback left a committed table pointing at a name whose
 * inode the kernel refuses to read until fsck.  A crash between the link
 * and the sync can leave a name with partial bytes, but nothing refers to
 * it: the commit that would needs this function to have returned.
 * 1 = done, 0 = not possible here (no O_TMPFILE on this filesystem, no way
 * to name the file; remembered), -1 = failed (errno). */
static int write_unnamed(int dfd, const char *name, const void *p, size_t n)
{
	int fd, e;

	if (atomic_load_explicit(&unnamed_unusable, memory_order_relaxed))
		return 0;
	fd = openat(dfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
	if (fd < 0) {
		if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
			return -1;
		atomic_store_explicit(&unnamed_unusable, true, memory_order_relaxed);
		return 0;
	}
	if (write_all(fd, p, n) != 0) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	if (link_unnamed(fd, dfd, name) != 0) {
		e = errno;
		close(fd);
		errno = e;
		if (e == EEXIST)
			return -1;
		atomic_store_explicit(&unnamed_unusable, true, memory_order_relaxed);
		return 0;
	}
	/* close releases fd even when it fails: never closed twice. */
	e = fsync(fd) != 0 ? errno : 0;
	if (e == 0)
		drop_cached(fd);
	if (close(fd) != 0 && e == 0)
		e = errno;
	if (e != 0) {
		unlinkat(dfd, name, 0); /* ours, and referenced by nothing */
		errno = e;
		return -1;
	}
	return 1;
}

/* The same through a temporary name in the directory, linked into place. */
static int write_named(int dfd, const char *name, const void *p, size_t n)
{
	char tmp[NAME_MAX + 32];
	int fd, e;

	snprintf(tmp, sizeof(tmp), "%s.tmp-%ld", name, (long)getpid() ^ (long)(size_t)&fd);
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	if (write_all(fd, p, n) != 0 || fsync(fd) != 0) {
		e = errno;
		close(fd);
		unlinkat(dfd, tmp, 0);
		errno = e;
		return -1;
	}
	drop_cached(fd);
	if (close(fd) != 0 || linkat(dfd, tmp, dfd, name, 0) != 0) {
		e = errno;
		unlinkat(dfd, tmp, 0);
		errno = e;
		return -1;
	}
	unlinkat(dfd, tmp, 0);
	return 0;
}

/* Fills dir (PATH_MAX bytes) with the directory of the absolute path ("/"
 * at the root) and returns the name within it. */
static const char *split_dir(const char *path, char *dir)
{
	const char *slash = strrchr(path, '/');

	snprintf(dir, PATH_MAX, "%.*s", slash == path ? 1 : (int)(slash - path), path);
	return slash + 1;
}

static int write_new(const char *uri, const void *p, size_t n, struct st_io_pending *pend,
                     struct fl_err *err)
{
	char path[PATH_MAX], dir[PATH_MAX];
	const char *name;
	int dfd, rc;

	if (local_path(uri, path, sizeof(path), err) != 0)
		return -1;
	name = split_dir(path, dir);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	/* The directory is made (durably) only when missing: most writes go
	 * to a table's existing data/ or metadata/ directory. */
	if (dfd < 0 && errno == ENOENT) {
		if (fl_mkdir_p(dir) != 0)
			return fl_err_set(err, FL_ERR_IO, "cannot create directory %.200s: %s", dir,
			                  strerror(errno));
		dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	if (dfd < 0)
		return fl_err_set(err, FL_ERR_IO, "cannot open directory %.200s: %s", dir,
		                  strerror(errno));
	rc = write_unnamed(dfd, name, p, n);
	if (rc == 0)
		rc = write_named(dfd, name, p, n);
	/* The new name is durable in its directory before anything refers to
	 * it: now, or when pend is synced. */
	if (rc >= 0 && pend == NULL && fsync(dfd) != 0)
		rc = -1;
	if (rc < 0) {
		int e = errno;

		close(dfd);
		if (e == EEXIST)
			return fl_err_set(err, FL_ERR_ALREADY_EXISTS, "%.200s already exists",
			                  path);
		return fl_err_set(err, FL_ERR_IO, "cannot write %.200s: %s", path, strerror(e));
	}
	close(dfd);
	return pend != NULL ? st_io_pending_add_dir(pend, dir, err) : 0;
}

static int file_write_new(struct st_io *io, const char *uri, const void *p, size_t n,
                          struct fl_err *err)
{
	return write_new(uri, p, n, NULL, err);
}

static int file_write_new_pending(struct st_io *io, const char *uri, const void *p, size_t n,
                                  struct st_io_pending *pend, struct fl_err *err)
{
	return write_new(uri, p, n, pend, err);
}

/* Opens uri for reading; path (PATH_MAX bytes) receives the local path.
 * -1 with FL_ERR_NOT_FOUND when absent. */
static int open_read(const char *uri, char *path, struct fl_err *err)
{
	int fd;

	if (local_path(uri, path, PATH_MAX, err) != 0)
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		fl_err_set(err, errno == ENOENT ? FL_ERR_NOT_FOUND : FL_ERR_IO,
		           "cannot open %.200s: %s", path, strerror(errno));
	return fd;
}

static int file_read(struct st_io *io, const char *uri, size_t max, char **out, size_t *n,
                     struct fl_err *err)
{
	char path[PATH_MAX];
	struct stat st;
	char *buf;
	size_t off = 0;
	int fd;

	fd = open_read(uri, path, err);
	if (fd < 0)
		return -1;
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

static int file_delete_tree(struct st_io *io, const char *uri, struct fl_err *err)
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

static int file_read_range(struct st_io *io, const char *uri, uint64_t off, size_t len, void *buf,
                           size_t *got, struct fl_err *err)
{
	char path[PATH_MAX];
	size_t done = 0;
	int fd;

	fd = open_read(uri, path, err);
	if (fd < 0)
		return -1;
	while (done < len) {
		ssize_t r = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			fl_err_set(err, FL_ERR_IO, "cannot read %.200s: %s", path, strerror(errno));
			close(fd);
			return -1;
		}
		if (r == 0)
			break;
		done += (size_t)r;
	}
	close(fd);
	*got = done;
	return 0;
}

static int file_stat(struct st_io *io, const char *uri, uint64_t *size, struct fl_err *err)
{
	char path[PATH_MAX];
	struct stat st;

	if (local_path(uri, path, sizeof(path), err) != 0)
		return -1;
	if (stat(path, &st) != 0)
		return fl_err_set(err, errno == ENOENT ? FL_ERR_NOT_FOUND : FL_ERR_IO,
		                  "cannot stat %.200s: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return fl_err_set(err, FL_ERR_NOT_FOUND, "%.200s is not a regular file", path);
	*size = (uint64_t)st.st_size;
	return 0;
}

static int file_delete_many(struct st_io *io, const char *const *uris, size_t n, struct fl_err *err)
{
	char path[PATH_MAX];

	for (size_t i = 0; i < n; i++) {
		if (local_path(uris[i], path, sizeof(path), err) != 0)
			return -1;
		if (unlink(path) != 0 && errno != ENOENT)
			return fl_err_set(err, FL_ERR_IO, "cannot delete %.200s: %s", path,
			                  strerror(errno));
	}
	return 0;
}

static int64_t mtime_ms(const struct stat *st)
{
	return (int64_t)st->st_mtim.tv_sec * 1000 + st->st_mtim.tv_nsec / 1000000;
}

/* Walks dir (a path of len bytes in buf, which has room for PATH_MAX)
 * depth first, calling fn with file:// URIs of regular files. */
static int walk(char *buf, size_t len, st_io_list_fn fn, void *arg, struct fl_err *err)
{
	DIR *d = opendir(buf + 7);
	struct dirent *e;
	int rc = 0;

	if (d == NULL)
		return errno == ENOENT || errno == ENOTDIR
		               ? 0
		               : fl_err_set(err, FL_ERR_IO, "cannot list %.200s: %s", buf + 7,
		                            strerror(errno));
	while (rc == 0 && (e = readdir(d)) != NULL) {
		struct stat st;
		size_t n = strlen(e->d_name);

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (len + 1 + n >= PATH_MAX + 7) {
			rc = fl_err_set(err, FL_ERR_IO, "path under %.200s is too long", buf + 7);
			break;
		}
		buf[len] = '/';
		memcpy(buf + len + 1, e->d_name, n + 1);
		if (lstat(buf + 7, &st) != 0)
			continue;
		if (S_ISDIR(st.st_mode))
			rc = walk(buf, len + 1 + n, fn, arg, err);
		else if (S_ISREG(st.st_mode))
			rc = fn(arg, buf, (uint64_t)st.st_size, mtime_ms(&st), err);
		buf[len] = '\0';
	}
	closedir(d);
	return rc;
}

static int file_list(struct st_io *io, const char *prefix_uri, st_io_list_fn fn, void *arg,
                     struct fl_err *err)
{
	char path[PATH_MAX], *buf;
	struct stat st;
	int rc;

	if (local_path(prefix_uri, path, sizeof(path), err) != 0)
		return -1;
	if (stat(path, &st) != 0)
		return errno == ENOENT ? 0
		                       : fl_err_set(err, FL_ERR_IO, "cannot list %.200s: %s", path,
		                                    strerror(errno));
	if (S_ISREG(st.st_mode))
		return fn(arg, prefix_uri, (uint64_t)st.st_size, mtime_ms(&st), err);
	buf = malloc(PATH_MAX + 8);
	if (buf == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	rc = snprintf(buf, PATH_MAX + 8, "file://%s", path);
	while (rc > 8 && buf[rc - 1] == '/')
		buf[--rc] = '\0';
	rc = walk(buf, strlen(buf), fn, arg, err);
	free(buf);
	return rc;
}

struct file_writer {
	struct st_io_writer w; /* first */
	int fd;
	char path[PATH_MAX];
};

static int fw_write(void *ctx, const void *p, size_t n, struct fl_err *err)
{
	struct file_writer *f = ctx;

	f->w.bytes += n;
	if (write_all(f->fd, p, n) != 0)
		return fl_err_set(err, FL_ERR_IO, "cannot write %.200s: %s", f->path,
		                  strerror(errno));
	return 0;
}

static void fw_abort(struct st_io_writer *w)
{
	struct file_writer *f = (struct file_writer *)w;

	close(f->fd);
	unlink(f->path);
	free(f);
}

static int fw_close(struct st_io_writer *w, struct fl_err *err)
{
	struct file_writer *f = (struct file_writer *)w;

	/* A data file is durable (its bytes and its name) before close returns,
	 * as the metadata file that will reference it is: a commit acknowledged
	 * before a power loss must not point at a file the page cache lost.  A
	 * crash before the commit makes the file an orphan, never table state. */
	if (fdatasync(f->fd) != 0 || fl_sync_parent(f->path) != 0) {
		fl_err_set(err, FL_ERR_IO, "cannot sync %.200s: %s", f->path, strerror(errno));
		fw_abort(w);
		return -1;
	}
	if (close(f->fd) != 0) {
		fl_err_set(err, FL_ERR_IO, "cannot write %.200s: %s", f->path, strerror(errno));
		unlink(f->path);
		free(f);
		return -1;
	}
	free(f);
	return 0;
}

/* The bytes and the name are left to pend; a failure to hand them over
 * removes the file (it is then not part of the batch). */
static int fw_close_pending(struct st_io_writer *w, struct st_io_pending *pend, struct fl_err *err)
{
	struct file_writer *f = (struct file_writer *)w;
	char dir[PATH_MAX];
	int rc;

	split_dir(f->path, dir);
	rc = st_io_pending_add_file(pend, f->fd, f->path, err);
	if (rc == 0)
		rc = st_io_pending_add_dir(pend, dir, err);
	if (rc != 0)
		unlink(f->path);
	free(f);
	return rc;
}

static int file_writer_open(struct st_io *io, const char *uri, struct st_io_writer **out,
                            struct fl_err *err)
{
	struct file_writer *f = calloc(1, sizeof(*f));
	char *slash;

	if (f == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	if (local_path(uri, f->path, sizeof(f->path), err) != 0)
		goto fail;
	f->fd = open(f->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (f->fd < 0 && errno == ENOENT) {
		slash = strrchr(f->path, '/');
		*slash = '\0';
		if (fl_mkdir_p(f->path) != 0) {
			fl_err_set(err, FL_ERR_IO, "cannot create directory %.200s: %s", f->path,
			           strerror(errno));
			goto fail;
		}
		*slash = '/';
		f->fd = open(f->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	}
	if (f->fd < 0) {
		fl_err_set(err, FL_ERR_IO, "cannot create %.200s: %s", f->path, strerror(errno));
		goto fail;
	}
	f->w.sink.write = fw_write;
	f->w.sink.ctx = f;
	f->w.close = fw_close;
	f->w.close_pending = fw_close_pending;
	f->w.abort = fw_abort;
	*out = &f->w;
	return 0;
fail:
	free(f);
	return -1;
}

static void file_free(struct st_io *io)
{
}

static const struct st_io_ops file_ops = {
        .write_new = file_write_new,
        .read = file_read,
        .read_range = file_read_range,
        .stat = file_stat,
        .delete_many = file_delete_many,
        .list = file_list,
        .delete_tree = file_delete_tree,
        .mkdirs = file_mkdirs,
        .writer_open = file_writer_open,
        .free = file_free,
        .write_new_pending = file_write_new_pending,
};

int st_io_file_init(struct st_io *io, struct fl_err *err)
{
	io->ops = &file_ops;
	return 0;
}
