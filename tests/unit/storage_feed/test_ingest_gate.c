/* test_ingest_gate.c - st_ingest_opts.gate: nothing is written before it
 * passes, rows are read before it is called, and a gate that fails leaves
 * nothing behind.
 *
 * "Nothing written" is checked at the moment the gate runs: no descriptor
 * of this process refers to the data directory (a data file is created
 * unnamed and linked at its close, so a directory listing alone would miss
 * one being written) and no dead-letter file exists. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ingest.h"
#include "io/io.h"

#define ROWS 60000

struct fixture {
	char dir[64]; /* a fresh temporary directory */
	char csv[PATH_MAX];
	char data[PATH_MAX]; /* <dir>/data */
	char data_uri[PATH_MAX + 8];
	char dead[PATH_MAX];
	struct st_io *io;
	json_t *schema;
	/* what the callbacks saw */
	int gate_calls;
	int gate_rc; /* what the gate returns */
	uint64_t records_before_gate;
	uint64_t records;
	bool open_at_gate; /* a descriptor referred to the data directory */
	bool dead_at_gate; /* the dead-letter file existed */
};

/* Whether a descriptor of this process refers to something under dir. */
static bool fd_under(const char *dir)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	bool found = false;
	size_t n = strlen(dir);

	assert_non_null(d);
	while ((e = readdir(d)) != NULL && !found) {
		char link[PATH_MAX + 32], target[PATH_MAX];
		ssize_t len;

		if (e->d_name[0] == '.')
			continue;
		snprintf(link, sizeof(link), "/proc/self/fd/%s", e->d_name);
		len = readlink(link, target, sizeof(target) - 1);
		if (len <= 0)
			continue;
		target[len] = '\0';
		/* the directory itself (an open of it is not a file in it) */
		found = strncmp(target, dir, n) == 0 && target[n] == '/';
	}
	closedir(d);
	return found;
}

static int gate(void *ctx, struct fl_err *err)
{
	struct fixture *f = ctx;
	struct stat st;

	f->gate_calls++;
	f->records_before_gate = f->records;
	f->open_at_gate = fd_under(f->data);
	f->dead_at_gate = stat(f->dead, &st) == 0;
	if (f->gate_rc != 0)
		return fl_err_set(err, FL_ERR_CONFLICT, "the gate says no");
	return 0;
}

static void progress(void *ctx, const struct st_ingest_progress *p)
{
	((struct fixture *)ctx)->records = p->records;
}

static int setup(void **state, int bad_at)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct st_profile p = {.type = ST_STORAGE_FILE, .location = "file:///"};
	struct fl_err e = {0};
	FILE *out;

	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "/tmp/floe-gate-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->csv, sizeof(f->csv), "%s/in.csv", f->dir);
	snprintf(f->data, sizeof(f->data), "%s/data", f->dir);
	snprintf(f->data_uri, sizeof(f->data_uri), "file://%s", f->data);
	snprintf(f->dead, sizeof(f->dead), "%s/rejected", f->dir);
	out = fopen(f->csv, "w");
	assert_non_null(out);
	fputs("id,s\n", out);
	for (int i = 0; i < ROWS; i++)
		if (i == bad_at)
			fputs("not-a-number,x\n", out);
		else
			fprintf(out, "%d,row %d of the gate test\n", i, i);
	assert_int_equal(fclose(out), 0);
	assert_int_equal(st_io_open(&p, &f->io, &e), 0);
	f->schema = json_loads("{\"type\":\"struct\",\"schema-id\":0,\"fields\":["
	                       "{\"id\":1,\"name\":\"id\",\"type\":\"long\",\"required\":true},"
	                       "{\"id\":2,\"name\":\"s\",\"type\":\"string\",\"required\":false}]}",
	                       0, NULL);
	assert_non_null(f->schema);
	*state = f;
	return 0;
}

/* The bad row late: the first row group meets the gate. */
static int setup_late(void **state)
{
	return setup(state, ROWS - 10);
}

/* The bad row third: its dead letter meets the gate. */
static int setup_early(void **state)
{
	return setup(state, 2);
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	assert_int_equal(system(cmd), 0);
	st_io_release(f->io);
	json_decref(f->schema);
	free(f);
	return 0;
}

/* Files in the data directory (-1: no directory). */
static int data_files(const struct fixture *f)
{
	DIR *d = opendir(f->data);
	struct dirent *e;
	int n = 0;

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static int run(struct fixture *f, int threads, struct st_ingest_result *res, struct fl_err *err)
{
	struct st_ingest_opts o = {
	        .schema = f->schema,
	        .format = ST_INGEST_CSV,
	        .on_error = ST_ON_ERROR_DEAD_LETTER,
	        .new_columns = ST_NEW_COLUMNS_REJECT,
	        .io = f->io,
	        .data_uri = f->data_uri,
	        .dead_letter_path = f->dead,
	        .codec = ST_PARQUET_ZSTD,
	        /* small row groups: several of them before the gate */
	        .row_group_bytes = 256 << 10,
	        .threads = threads,
	        .progress = progress,
	        .progress_ctx = f,
	        .gate = gate,
	        .gate_ctx = f,
	};
	const char *inputs[] = {f->csv};

	char errors[PATH_MAX + 32];

	snprintf(errors, sizeof(errors), "%s.errors.ndjson", f->dead);
	unlink(f->dead);
	unlink(errors);
	f->gate_calls = 0;
	f->records = 0;
	return st_ingest_run(&o, inputs, 1, res, err);
}

static void check_pass(void **state, int threads, bool late)
{
	struct fixture *f = *state;
	struct st_ingest_result res;
	struct fl_err err = {0};

	assert_int_equal(run(f, threads, &res, &err), 0);
	assert_int_equal(f->gate_calls, 1);
	/* with the bad row late, the gate waits for the first data file, which
	 * is created with the first row group (~8,700 rows here): 4,096
	 * records at least (one progress report) were read before it */
	if (late)
		assert_true(f->records_before_gate >= 4096);
	assert_false(f->open_at_gate);
	assert_false(f->dead_at_gate);
	assert_int_equal(res.rows_ok, ROWS - 1);
	assert_int_equal(res.rows_bad, 1);
	assert_int_equal(res.n_files, 1);
	assert_int_equal(data_files(f), 1);
	st_ingest_result_discard(f->io, &res);
	st_ingest_result_free(&res);
	assert_int_equal(data_files(f), 0);
}

static void test_pass_one_thread(void **state)
{
	check_pass(state, 1, true);
}

static void test_pass_two_threads(void **state)
{
	check_pass(state, 2, true);
}

static void test_pass_dead_letter_first(void **state)
{
	check_pass(state, 1, false);
	check_pass(state, 2, false);
}

static void check_refused(void **state, int threads)
{
	struct fixture *f = *state;
	struct st_ingest_result res;
	struct fl_err err = {0};
	struct stat st;

	f->gate_rc = -1;
	assert_int_equal(run(f, threads, &res, &err), -1);
	assert_string_equal(err.msg, "the gate says no");
	assert_int_equal(f->gate_calls, 1);
	assert_false(f->open_at_gate);
	assert_false(f->dead_at_gate);
	assert_true(data_files(f) <= 0); /* none, or no directory */
	assert_int_not_equal(stat(f->dead, &st), 0);
}

static void test_refused_one_thread(void **state)
{
	check_refused(state, 1);
}

static void test_refused_two_threads(void **state)
{
	check_refused(state, 2);
}

static void test_refused_dead_letter_first(void **state)
{
	check_refused(state, 1);
	check_refused(state, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_pass_one_thread, setup_late, teardown),
	        cmocka_unit_test_setup_teardown(test_pass_two_threads, setup_late, teardown),
	        cmocka_unit_test_setup_teardown(test_pass_dead_letter_first, setup_early, teardown),
	        cmocka_unit_test_setup_teardown(test_refused_one_thread, setup_late, teardown),
	        cmocka_unit_test_setup_teardown(test_refused_two_threads, setup_late, teardown),
	        cmocka_unit_test_setup_teardown(test_refused_dead_letter_first, setup_early,
	                                        teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
