/* io_check.c - exercises every operation of the object-IO handle (io.h)
 * against a real store; tests/integration/s3/io.test.mjs runs it against
 * moto and the local disk.  Not a unit test (it needs the store), so it is
 * built but not registered with meson test.
 *
 * Usage: io_check PROFILE_JSON ROOT_URI
 *   PROFILE_JSON  a storage profile (the keys come from the environment
 *                 variables it names)
 *   ROOT_URI      an empty location under the profile's, used as scratch
 * With IO_CHECK_KEYS=ACCESS_KEY_ID:SECRET in the environment the handle is
 * opened with those keys (st_io_open_creds) instead of the profile's.
 * IO_CHECK_OBJECTS=N (1..5000, default 1005) sets how many objects the
 * listing and batch-delete checks write: past 1000 they cover continuation
 * tokens and a second delete batch; a run that checks something else (the
 * keys, the addressing) can take a few.
 * Prints one line per check ("ok NAME" / "FAIL NAME: why") and exits 0 when
 * all pass. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/io.h"

static int failures;

static void check(int ok, const char *name, const struct fl_err *err)
{
	if (ok) {
		printf("ok %s\n", name);
	} else {
		printf("FAIL %s: %s\n", name, err != NULL ? err->msg : "");
		failures++;
	}
}

struct count {
	size_t n;
	uint64_t bytes;
};

static int count_one(void *arg, const char *uri, uint64_t size, int64_t mtime_ms,
                     struct fl_err *err)
{
	struct count *c = arg;

	(void)uri;
	(void)mtime_ms;
	(void)err;
	c->n++;
	c->bytes += size;
	return 0;
}

int main(int argc, char **argv)
{
	struct st_profile p;
	struct st_io *io = NULL;
	struct st_io_writer *w = NULL;
	struct fl_err err = {0};
	char uri[2048], *data = NULL, buf[64];
	size_t n = 0, got = 0;
	uint64_t size = 0;
	json_t *j;

	if (argc != 3) {
		fprintf(stderr, "usage: io_check PROFILE_JSON ROOT_URI\n");
		return 2;
	}
	j = json_loads(argv[1], 0, NULL);
	const char *keys = getenv("IO_CHECK_KEYS");
	static struct st_creds creds;

	if (keys != NULL && strchr(keys, ':') != NULL) {
		snprintf(creds.access_key_id, sizeof(creds.access_key_id), "%.*s",
		         (int)(strchr(keys, ':') - keys), keys);
		snprintf(creds.secret_access_key, sizeof(creds.secret_access_key), "%s",
		         strchr(keys, ':') + 1);
	}
	if (j == NULL || st_profile_parse(j, &p, NULL, &err) != 0 ||
	    (keys != NULL ? st_io_open_creds(&p, &creds, &io, &err) : st_io_open(&p, &io, &err)) !=
	            0) {
		fprintf(stderr, "io_check: %s\n", err.msg);
		return 2;
	}
	json_decref(j);
	const char *root = argv[2];

	check(st_io_probe(io, &err) == 0, "probe", &err);
	/* Create-only writes: the second one loses. */
	snprintf(uri, sizeof(uri), "%s/meta/00000-a.metadata.json", root);
	check(st_io_write_new(io, uri, "{\"v\":1}", 7, &err) == 0, "write_new", &err);
	fl_err_clear(&err);
	check(st_io_write_new(io, uri, "{\"v\":2}", 7, &err) == -1 &&
	              err.kind == FL_ERR_ALREADY_EXISTS,
	      "write_new refuses an existing object", &err);
	check(st_io_read(io, uri, 100, &data, &n, &err) == 0 && n == 7 &&
	              memcmp(data, "{\"v\":1}", 7) == 0,
	      "read returns the first write", &err);
	free(data);
	data = NULL;
	fl_err_clear(&err);
	check(st_io_read(io, uri, 3, &data, &n, &err) == -1 && err.kind == FL_ERR_TOO_LARGE,
	      "read is bounded", &err);
	check(st_io_read_range(io, uri, 2, 3, buf, &got, &err) == 0 && got == 3 &&
	              memcmp(buf, "v\":", 3) == 0,
	      "read_range", &err);
	check(st_io_read_range(io, uri, 5, 10, buf, &got, &err) == 0 && got == 2 &&
	              memcmp(buf, "1}", 2) == 0,
	      "read_range past the end is short", &err);
	check(st_io_stat(io, uri, &size, &err) == 0 && size == 7, "stat", &err);
	snprintf(uri, sizeof(uri), "%s/meta/missing.json", root);
	fl_err_clear(&err);
	check(st_io_stat(io, uri, &size, &err) == -1 && err.kind == FL_ERR_NOT_FOUND,
	      "stat of a missing object", &err);
	fl_err_clear(&err);
	check(st_io_read(io, uri, 100, &data, &n, &err) == -1 && err.kind == FL_ERR_NOT_FOUND,
	      "read of a missing object", &err);
	check(st_io_delete(io, uri, &err) == 0, "delete of a missing object succeeds", &err);

	/* By default more objects than one listing page or one batch delete (1000). */
	{
		const char *objects = getenv("IO_CHECK_OBJECTS");
		char *end = NULL;
		long nl = objects != NULL ? strtol(objects, &end, 10) : 1005;

		if (objects != NULL && (end == objects || *end != '\0' || nl < 1 || nl > 5000)) {
			fprintf(stderr, "io_check: IO_CHECK_OBJECTS must be 1..5000\n");
			st_io_release(io);
			return 2;
		}
		const int N = (int)nl;
		const int paged = N > 1000;
		char **uris = calloc((size_t)N, sizeof(char *));
		struct count c = {0};
		char name[128];
		int ok = 1;

		if (uris == NULL) {
			fprintf(stderr, "io_check: out of memory\n");
			st_io_release(io);
			return 2;
		}

		for (int i = 0; i < N && ok; i++) {
			char u[2048];

			snprintf(u, sizeof(u), "%s/many/f %04d+x.bin", root, i);
			uris[i] = strdup(u);
			ok = st_io_write_new(io, u, "ab", 2, &err) == 0;
		}
		snprintf(name, sizeof(name), "write %d objects (names with spaces and '+')", N);
		check(ok, name, &err);
		check(st_io_list(io, root, count_one, &c, &err) == 0 && c.n == (size_t)N + 1 &&
		              c.bytes == 2 * (uint64_t)N + 7,
		      paged ? "list follows continuation tokens" : "list (one page)", &err);
		snprintf(uri, sizeof(uri), "%s/man", root);
		c = (struct count){0};
		check(st_io_list(io, uri, count_one, &c, &err) == 0 && c.n == 0,
		      "list of a prefix that is only a name prefix ('man' vs 'many/') is empty",
		      &err);
		snprintf(name, sizeof(name), "delete_many of %d objects (%s)", N,
		         paged ? "two batches" : "one batch");
		check(st_io_delete_many(io, (const char *const *)uris, (size_t)N, &err) == 0, name,
		      &err);
		snprintf(uri, sizeof(uri), "%s/many", root);
		c = (struct count){0};
		check(st_io_list(io, uri, count_one, &c, &err) == 0 && c.n == 0,
		      "the deleted objects are gone", &err);
		for (int i = 0; i < N; i++)
			free(uris[i]);
		free(uris);
	}

	/* Streaming writes: small (one PUT), large (parts), aborted. */
	{
		static const size_t sizes[2] = {1000, (size_t)20 << 20};
		char *big = malloc(sizes[1]);

		for (size_t i = 0; i < sizes[1]; i++)
			big[i] = (char)(i * 2654435761u >> 13);
		for (int k = 0; k < 2; k++) {
			uint64_t wrote = 0;
			int ok;

			snprintf(uri, sizeof(uri), "%s/data/w%d.bin", root, k);
			ok = st_io_writer_open(io, uri, &w, &err) == 0;
			/* Odd chunk sizes cross part boundaries. */
			for (size_t off = 0; ok && off < sizes[k]; off += 777777) {
				size_t len = sizes[k] - off < 777777 ? sizes[k] - off : 777777;
				struct st_sink *s = st_io_writer_sink(w);

				ok = s->write(s->ctx, big + off, len, &err) == 0;
			}
			if (ok)
				ok = st_io_writer_close(w, &wrote, &err) == 0 && wrote == sizes[k];
			else
				st_io_writer_abort(w);
			w = NULL;
			check(ok,
			      k == 0 ? "writer: a small object"
			             : "writer: a 20 MiB object in parts",
			      &err);
			ok = st_io_read(io, uri, sizes[1], &data, &n, &err) == 0 && n == sizes[k] &&
			     memcmp(data, big, n) == 0;
			free(data);
			data = NULL;
			check(ok,
			      k == 0 ? "the small object reads back"
			             : "the 20 MiB object reads back",
			      &err);
		}
		snprintf(uri, sizeof(uri), "%s/data/aborted.bin", root);
		int ok = st_io_writer_open(io, uri, &w, &err) == 0;
		struct st_sink *s = ok ? st_io_writer_sink(w) : NULL;

		ok = ok && s->write(s->ctx, big, (size_t)12 << 20, &err) == 0;
		st_io_writer_abort(w);
		w = NULL;
		fl_err_clear(&err);
		check(ok && st_io_stat(io, uri, &size, &err) == -1 && err.kind == FL_ERR_NOT_FOUND,
		      "an aborted writer leaves no object", &err);
		free(big);
	}

	/* Syncs left to a pending set (a batch's files): readable under their
	 * names at once; on S3 nothing is pending and the sync has nothing to
	 * do. */
	{
		struct st_io_pending *pend = NULL;
		int ok = st_io_pending_new(&pend, &err) == 0;
		struct st_sink *s;

		snprintf(uri, sizeof(uri), "%s/pend/d.parquet", root);
		ok = ok && st_io_writer_open(io, uri, &w, &err) == 0;
		s = ok ? st_io_writer_sink(w) : NULL;
		ok = ok && s->write(s->ctx, "PAR1", 4, &err) == 0 &&
		     st_io_writer_close_pending(w, &size, pend, &err) == 0 && size == 4;
		w = NULL;
		ok = ok && st_io_read(io, uri, 100, &data, &n, &err) == 0 && n == 4;
		free(data);
		data = NULL;
		check(ok, "writer closed with a pending set: readable at once", &err);
		snprintf(uri, sizeof(uri), "%s/pend/m.avro", root);
		ok = st_io_write_new_pending(io, uri, "Obj", 3, pend, &err) == 0 &&
		     st_io_stat(io, uri, &size, &err) == 0 && size == 3;
		check(ok, "write_new with a pending set: readable at once", &err);
		fl_err_clear(&err);
		check(st_io_write_new_pending(io, uri, "Obj", 3, pend, &err) == -1 &&
		              err.kind == FL_ERR_ALREADY_EXISTS,
		      "write_new with a pending set refuses an existing object", &err);
		check(st_io_pending_sync(pend, &err) == 0, "pending syncs", &err);
		st_io_pending_free(pend);
	}

	check(st_io_delete_tree(io, root, &err) == 0, "delete_tree", &err);
	{
		struct count c = {0};

		check(st_io_list(io, root, count_one, &c, &err) == 0 && c.n == 0,
		      "nothing is left under the root", &err);
	}
	st_io_release(io);
	printf("%d failure(s)\n", failures);
	return failures == 0 ? 0 : 1;
}
