/* test_pending.c - syncs left to a pending set (io.h, storage/io/pending.c)
 * on the file:// backend: what is written with a set is readable under its
 * name at once, st_io_pending_sync reports the first sync that failed by
 * its path, and a set freed without syncing keeps no descriptor open; an
 * object written whole leaves the page cache once synced (file.c).
 * tests/integration/ingest/durability.test.mjs checks, on a real ingest,
 * that the syncs happen, concurrently and before the commit; io_check runs
 * the same calls against S3. */
#include <dirent.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cmocka.h>

#include "io/io.h"

struct fx {
	char dir[64];
	char uri[128];
	struct st_io *io;
};

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	assert_non_null(d);
	while (readdir(d) != NULL)
		n++;
	closedir(d);
	return n;
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct st_profile p = {.type = ST_STORAGE_FILE};
	struct fl_err err = {0};

	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "/tmp/floe-pending-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->uri, sizeof(f->uri), "file://%s", f->dir);
	snprintf(p.location, sizeof(p.location), "%s", f->uri);
	assert_int_equal(st_io_open(&p, &f->io, &err), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	struct fl_err err = {0};

	assert_int_equal(st_io_delete_tree(f->io, f->uri, &err), 0);
	st_io_release(f->io);
	free(f);
	return 0;
}

/* A streamed file and a new object, both under their names at once, the
 * create-only rule kept; the sync then succeeds and empties the set. */
static void test_written_then_synced(void **state)
{
	struct fx *f = *state;
	struct st_io_pending *pend = NULL;
	struct st_io_writer *w = NULL;
	struct st_sink *s;
	struct fl_err err = {0};
	char data[256], meta[256], *back = NULL;
	size_t n = 0;
	uint64_t size = 0;

	snprintf(data, sizeof(data), "%s/data/a.parquet", f->uri);
	snprintf(meta, sizeof(meta), "%s/metadata/m0.avro", f->uri);
	assert_int_equal(st_io_pending_new(&pend, &err), 0);
	assert_int_equal(st_io_writer_open(f->io, data, &w, &err), 0);
	s = st_io_writer_sink(w);
	assert_int_equal(s->write(s->ctx, "PAR1....PAR1", 12, &err), 0);
	assert_int_equal(st_io_writer_close_pending(w, &size, pend, &err), 0);
	assert_int_equal(size, 12);
	assert_int_equal(st_io_write_new_pending(f->io, meta, "Obj\1", 4, pend, &err), 0);
	assert_int_equal(st_io_write_new_pending(f->io, meta, "Obj\2", 4, pend, &err), -1);
	assert_int_equal(err.kind, FL_ERR_ALREADY_EXISTS);
	assert_int_equal(st_io_read(f->io, data, 100, &back, &n, &err), 0);
	assert_int_equal(n, 12);
	free(back);
	assert_int_equal(st_io_read(f->io, meta, 100, &back, &n, &err), 0);
	assert_memory_equal(back, "Obj\1", 4);
	free(back);
	assert_int_equal(st_io_pending_sync(pend, &err), 0);
	/* Empty now: a second sync has nothing to do. */
	assert_int_equal(st_io_pending_sync(pend, &err), 0);
	st_io_pending_free(pend);
}

/* A directory gone before the sync: the error names it, and the set is
 * empty afterwards. */
static void test_failure_names_the_path(void **state)
{
	struct fx *f = *state;
	struct st_io_pending *pend = NULL;
	struct fl_err err = {0};
	char uri[256], path[256];

	snprintf(uri, sizeof(uri), "%s/gone/x.avro", f->uri);
	assert_int_equal(st_io_pending_new(&pend, &err), 0);
	assert_int_equal(st_io_write_new_pending(f->io, uri, "x", 1, pend, &err), 0);
	snprintf(path, sizeof(path), "%s/gone/x.avro", f->dir);
	assert_int_equal(unlink(path), 0);
	snprintf(path, sizeof(path), "%s/gone", f->dir);
	assert_int_equal(rmdir(path), 0);
	assert_int_equal(st_io_pending_sync(pend, &err), -1);
	assert_int_equal(err.kind, FL_ERR_IO);
	assert_non_null(strstr(err.msg, path));
	assert_non_null(strstr(err.msg, "No such file"));
	fl_err_clear(&err);
	assert_int_equal(st_io_pending_sync(pend, &err), 0);
	st_io_pending_free(pend);
}

/* Many files and directories: every descriptor the set held is closed,
 * whether it was synced or freed unsynced. */
static void test_no_descriptor_kept(void **state)
{
	struct fx *f = *state;
	struct fl_err err = {0};
	int before = open_fds();

	for (int synced = 0; synced < 2; synced++) {
		struct st_io_pending *pend = NULL;

		assert_int_equal(st_io_pending_new(&pend, &err), 0);
		for (int i = 0; i < 40; i++) {
			struct st_io_writer *w = NULL;
			struct st_sink *s;
			char uri[256];

			snprintf(uri, sizeof(uri), "%s/d%d/f%d-%d.bin", f->uri, i % 5, synced, i);
			assert_int_equal(st_io_writer_open(f->io, uri, &w, &err), 0);
			s = st_io_writer_sink(w);
			assert_int_equal(s->write(s->ctx, "abc", 3, &err), 0);
			assert_int_equal(st_io_writer_close_pending(w, NULL, pend, &err), 0);
		}
		assert_true(open_fds() >= before + 40);
		if (synced)
			assert_int_equal(st_io_pending_sync(pend, &err), 0);
		st_io_pending_free(pend);
		assert_int_equal(open_fds(), before);
	}
}

/* Without a set the calls are the plain ones. */
static void test_null_set(void **state)
{
	struct fx *f = *state;
	struct st_io_writer *w = NULL;
	struct fl_err err = {0};
	char uri[256];
	int before = open_fds();

	snprintf(uri, sizeof(uri), "%s/plain/m.avro", f->uri);
	assert_int_equal(st_io_write_new_pending(f->io, uri, "m", 1, NULL, &err), 0);
	snprintf(uri, sizeof(uri), "%s/plain/d.parquet", f->uri);
	assert_int_equal(st_io_writer_open(f->io, uri, &w, &err), 0);
	assert_int_equal(st_io_writer_close_pending(w, NULL, NULL, &err), 0);
	assert_int_equal(open_fds(), before);
}

/* A new object's pages are dropped from the page cache after its sync,
 * with and without a set: mincore finds none of them resident.  tmpfs has
 * nothing behind its pages and keeps them; the check is skipped there. */
static void test_object_leaves_page_cache(void **state)
{
	struct fx *f = *state;
	struct st_io_pending *pend = NULL;
	struct fl_err err = {0};
	struct statfs sf;
	static char body[256 * 1024];
	unsigned char vec[sizeof(body) / 4096];
	char uri[256];

	assert_int_equal(statfs(f->dir, &sf), 0);
	if (sf.f_type == 0x01021994) /* TMPFS_MAGIC */
		skip();
	memset(body, 'x', sizeof(body));
	assert_int_equal(st_io_pending_new(&pend, &err), 0);
	for (int k = 0; k < 2; k++) {
		char path[256];
		size_t resident = 0;
		void *map;
		int fd;

		snprintf(uri, sizeof(uri), "%s/meta/%d.metadata.json", f->uri, k);
		assert_int_equal(st_io_write_new_pending(f->io, uri, body, sizeof(body),
		                                         k == 0 ? NULL : pend, &err),
		                 0);
		snprintf(path, sizeof(path), "%s/meta/%d.metadata.json", f->dir, k);
		fd = open(path, O_RDONLY);
		assert_true(fd >= 0);
		map = mmap(NULL, sizeof(body), PROT_READ, MAP_SHARED, fd, 0);
		assert_true(map != MAP_FAILED);
		assert_int_equal(mincore(map, sizeof(body), vec), 0);
		for (size_t i = 0; i < sizeof(vec); i++)
			resident += vec[i] & 1;
		munmap(map, sizeof(body));
		close(fd);
		assert_int_equal(resident, 0);
	}
	assert_int_equal(st_io_pending_sync(pend, &err), 0);
	st_io_pending_free(pend);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_written_then_synced, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_failure_names_the_path, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_no_descriptor_kept, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_null_set, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_object_leaves_page_cache, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
