/* pending.c - syncs left for later and made together (io.h:
 * st_io_pending).
 *
 * A set holds file descriptors whose bytes still need a sync (fdatasync:
 * the data files, written in place) and directory paths whose entries do
 * (fsync, each directory once).  st_io_pending_sync runs the files' syncs
 * concurrently, then the directories', concurrently: when it returns, every
 * byte and every name the set was given is durable.  On the machine
 * BENCHMARKS.md describes an fsync costs 0.5-0.8 ms of waiting on the disk;
 * a cold ingest made six of them one after the other. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io_int.h"

/* The most syncs in flight at once. */
#define MAX_PARALLEL 8

struct pend_item {
	int fd; /* -1 for a directory, opened when synced */
	char *path;
};

struct st_io_pending {
	pthread_mutex_t mu;
	struct pend_item *items;
	size_t n, cap;
};

int st_io_pending_new(struct st_io_pending **out, struct fl_err *err)
{
	struct st_io_pending *p = calloc(1, sizeof(*p));

	if (p == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	pthread_mutex_init(&p->mu, NULL);
	*out = p;
	return 0;
}

static void items_drop(struct st_io_pending *p)
{
	for (size_t i = 0; i < p->n; i++) {
		if (p->items[i].fd >= 0)
			close(p->items[i].fd);
		free(p->items[i].path);
	}
	p->n = 0;
}

void st_io_pending_free(struct st_io_pending *p)
{
	if (p == NULL)
		return;
	items_drop(p);
	free(p->items);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

/* Appends (fd, a copy of path); the caller holds mu.  Closes fd on failure. */
static int item_add(struct st_io_pending *p, int fd, const char *path, struct fl_err *err)
{
	char *copy = strdup(path);

	if (copy != NULL && p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 8;
		struct pend_item *grown = realloc(p->items, cap * sizeof(*grown));

		if (grown == NULL) {
			free(copy);
			copy = NULL;
		} else {
			p->items = grown;
			p->cap = cap;
		}
	}
	if (copy == NULL) {
		if (fd >= 0)
			close(fd);
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	}
	p->items[p->n].fd = fd;
	p->items[p->n].path = copy;
	p->n++;
	return 0;
}

int st_io_pending_add_file(struct st_io_pending *p, int fd, const char *path, struct fl_err *err)
{
	int rc;

	pthread_mutex_lock(&p->mu);
	rc = item_add(p, fd, path, err);
	pthread_mutex_unlock(&p->mu);
	return rc;
}

int st_io_pending_add_dir(struct st_io_pending *p, const char *dir, struct fl_err *err)
{
	int rc = 0;
	bool known = false;

	pthread_mutex_lock(&p->mu);
	for (size_t i = 0; i < p->n && !known; i++)
		known = p->items[i].fd < 0 && strcmp(p->items[i].path, dir) == 0;
	if (!known)
		rc = item_add(p, -1, dir, err);
	pthread_mutex_unlock(&p->mu);
	return rc;
}

/* One round: the syncs of one kind (the files', or the directories'),
 * dealt out to k threads, this one included: share t takes the t-th, the
 * (t+k)-th, ... of them. */
struct share {
	struct pend_item *items;
	size_t n;
	bool dirs;
	size_t t, k;
	int *errs; /* errno of each item's sync, 0 when it succeeded */
};

static void *share_run(void *arg)
{
	const struct share *sh = arg;
	size_t seen = 0;

	for (size_t i = 0; i < sh->n; i++) {
		struct pend_item *it = &sh->items[i];
		int fd = it->fd, rc;

		if (sh->dirs != (fd < 0) || seen++ % sh->k != sh->t)
			continue;
		if (sh->dirs)
			fd = open(it->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		rc = fd < 0 ? -1 : sh->dirs ? fsync(fd) : fdatasync(fd);
		sh->errs[i] = rc == 0 ? 0 : errno;
		if (sh->dirs && fd >= 0)
			close(fd);
	}
	return NULL;
}

/* count syncs of a kind: a thread each up to MAX_PARALLEL; a share whose
 * thread cannot start is run here after this thread's own. */
static void round_run(struct st_io_pending *p, bool dirs, size_t count, int *errs)
{
	struct share sh[MAX_PARALLEL];
	pthread_t t[MAX_PARALLEL];
	bool started[MAX_PARALLEL] = {false};
	size_t k = count < MAX_PARALLEL ? count : MAX_PARALLEL;
	pthread_attr_t attr;

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 << 10);
	for (size_t i = 0; i < k; i++) {
		sh[i] = (struct share){
		        .items = p->items, .n = p->n, .dirs = dirs, .t = i, .k = k, .errs = errs};
		if (i > 0)
			started[i] = pthread_create(&t[i], &attr, share_run, &sh[i]) == 0;
	}
	pthread_attr_destroy(&attr);
	for (size_t i = 0; i < k; i++) {
		if (!started[i])
			share_run(&sh[i]);
	}
	for (size_t i = 1; i < k; i++) {
		if (started[i])
			pthread_join(t[i], NULL);
	}
}

int st_io_pending_sync(struct st_io_pending *p, struct fl_err *err)
{
	size_t files = 0, dirs = 0;
	int *errs;
	int rc = 0;

	pthread_mutex_lock(&p->mu);
	for (size_t i = 0; i < p->n; i++) {
		if (p->items[i].fd >= 0)
			files++;
		else
			dirs++;
	}
	errs = calloc(p->n ? p->n : 1, sizeof(*errs));
	if (errs == NULL) {
		rc = fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		goto out;
	}
	for (int pass = 0; pass < 2 && rc == 0; pass++) {
		if ((pass == 0 ? files : dirs) > 0)
			round_run(p, pass == 1, pass == 0 ? files : dirs, errs);
		for (size_t i = 0; i < p->n && rc == 0; i++) {
			if (errs[i] != 0)
				rc = fl_err_set(err, FL_ERR_IO, "cannot sync %.200s: %s",
				                p->items[i].path, strerror(errs[i]));
		}
	}
out:
	free(errs);
	items_drop(p);
	pthread_mutex_unlock(&p->mu);
	return rc;
}
