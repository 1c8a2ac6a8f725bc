/* metrics.c - request counters and latency histograms per route.
 *
 * Storage is one fixed array per route, indexed by method and by a small
 * table of the statuses Floe emits, so recording is two atomic increments
 * and no allocation.  A status outside the table is counted as "other". */
#include "metrics.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feed.h"
#include "httpd.h"
#include "maintenance.h"
#include "router.h"

static const unsigned statuses[] = {200, 201, 204, 304, 400, 401, 403, 404, 405,
                                    406, 409, 413, 419, 422, 500, 503, 0};
#define NSTATUS (sizeof(statuses) / sizeof(statuses[0]))
static const char *const methods[] = {"GET", "HEAD", "POST", "PUT", "DELETE", "OTHER"};
#define NMETHOD (sizeof(methods) / sizeof(methods[0]))
static const double buckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                 0.1,    0.25,  0.5,    1,     2.5,  5};
#define NBUCKET (sizeof(buckets) / sizeof(buckets[0]))

/* A latency histogram: counts per bucket (last = +Inf) and the sum. */
struct hist {
	atomic_ullong bucket[NBUCKET + 1];
	atomic_ullong sum_ns;
};

struct route_stats {
	atomic_ullong count[NMETHOD][NSTATUS];
	struct hist latency;
};

static const char *const commit_results[] = {"ok", "conflict", "rejected", "unknown"};
#define NRESULT (sizeof(commit_results) / sizeof(commit_results[0]))

struct srv_metrics {
	struct route_stats *routes; /* srv_route_count + 1 (unmatched) */
	atomic_ullong commits[NRESULT];
	struct hist commit_latency;
	struct hist commit_stage[CAT_STAGE_N];
	atomic_ullong replays;
	atomic_ullong vend_unavailable; /* vended-credentials asked of a warehouse without STS */
	atomic_ullong vended; /* credentials handed out (cache hits included) */
	atomic_ullong sts_calls; /* AssumeRole calls made */
	atomic_ullong signed_requests[2]; /* remote signing: signed, refused */
	/* Responses sent content-coded, by coding: how many, their bodies'
	 * bytes before coding and as sent. */
	atomic_ullong coded[FL_CODING_COUNT], coded_plain[FL_CODING_COUNT],
	        coded_sent[FL_CODING_COUNT];
};

static void hist_observe(struct hist *h, int64_t ns)
{
	double secs = (double)ns / 1e9;
	size_t b = 0;

	while (b < NBUCKET && secs > buckets[b])
		b++;
	atomic_fetch_add_explicit(&h->bucket[b], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->sum_ns, (unsigned long long)ns, memory_order_relaxed);
}

/* Appends name_bucket/_sum/_count lines; labels is "" or `route="…"`. */
static int hist_render(struct fl_buf *out, const char *name, const char *labels, struct hist *h)
{
	const char *sep = labels[0] ? "," : "";
	unsigned long long cum = 0;
	int rc = 0;

	for (size_t b = 0; b < NBUCKET; b++) {
		cum += atomic_load(&h->bucket[b]);
		rc |= fl_buf_printf(out, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, labels, sep,
		                    buckets[b], cum);
	}
	cum += atomic_load(&h->bucket[NBUCKET]);
	rc |= fl_buf_printf(out, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, sep, cum);
	rc |= fl_buf_printf(out, "%s_sum%s%s%s %.9f\n", name, labels[0] ? "{" : "", labels,
	                    labels[0] ? "}" : "", (double)atomic_load(&h->sum_ns) / 1e9);
	rc |= fl_buf_printf(out, "%s_count%s%s%s %llu\n", name, labels[0] ? "{" : "", labels,
	                    labels[0] ? "}" : "", cum);
	return rc;
}

void srv_metrics_stage(void *arg, enum cat_stage stage, int64_t ns)
{
	struct srv_metrics *m = arg;

	if (stage < CAT_STAGE_N)
		hist_observe(&m->commit_stage[stage], ns);
}

struct srv_metrics *srv_metrics_new(void)
{
	struct srv_metrics *m = calloc(1, sizeof(*m));

	if (m == NULL)
		return NULL;
	m->routes = calloc((size_t)srv_route_count + 1, sizeof(*m->routes));
	if (m->routes == NULL) {
		free(m);
		return NULL;
	}
	return m;
}

void srv_metrics_free(struct srv_metrics *m)
{
	if (m == NULL)
		return;
	free(m->routes);
	free(m);
}

void srv_metrics_request(struct srv_metrics *m, int route, const char *method, unsigned status,
                         int64_t ns)
{
	struct route_stats *s = &m->routes[route];
	size_t mi = NMETHOD - 1, si = NSTATUS - 1;

	for (size_t i = 0; i + 1 < NMETHOD; i++)
		if (strcmp(methods[i], method) == 0)
			mi = i;
	for (size_t i = 0; i + 1 < NSTATUS; i++)
		if (statuses[i] == status)
			si = i;
	atomic_fetch_add_explicit(&s->count[mi][si], 1, memory_order_relaxed);
	hist_observe(&s->latency, ns);
}

void srv_metrics_commit(struct srv_metrics *m, const char *result, int64_t ns)
{
	for (size_t i = 0; i < NRESULT; i++)
		if (strcmp(commit_results[i], result) == 0)
			atomic_fetch_add_explicit(&m->commits[i], 1, memory_order_relaxed);
	hist_observe(&m->commit_latency, ns);
}

void srv_metrics_vend(struct srv_metrics *m, enum srv_vend_event e)
{
	atomic_ullong *c = e == SRV_VEND_UNAVAILABLE ? &m->vend_unavailable
	                   : e == SRV_VEND_VENDED    ? &m->vended
	                   : e == SRV_VEND_STS_CALL  ? &m->sts_calls
	                   : e == SRV_VEND_SIGNED    ? &m->signed_requests[0]
	                                             : &m->signed_requests[1];

	atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

void srv_metrics_coded(struct srv_metrics *m, enum fl_coding c, size_t plain, size_t sent)
{
	if (c <= FL_CODING_IDENTITY || c >= FL_CODING_COUNT)
		return;
	atomic_fetch_add_explicit(&m->coded[c], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&m->coded_plain[c], plain, memory_order_relaxed);
	atomic_fetch_add_explicit(&m->coded_sent[c], sent, memory_order_relaxed);
}

void srv_metrics_replay(struct srv_metrics *m)
{
	atomic_fetch_add_explicit(&m->replays, 1, memory_order_relaxed);
}

struct table_render {
	struct fl_buf *out;
	struct fl_buf avg; /* floe_table_avg_file_size_bytes, rendered after */
	int rc;
};

/* Writes a label value with '"', '\' and newlines escaped. */
static int label(struct fl_buf *out, const char *s)
{
	for (; *s; s++) {
		if ((*s == '"' || *s == '\\') && fl_buf_append(out, "\\", 1) != 0)
			return -1;
		if (*s == '\n' ? fl_buf_puts(out, "\\n") != 0 : fl_buf_append(out, s, 1) != 0)
			return -1;
	}
	return 0;
}

static void render_table(const struct cat_table_stat *st, void *arg)
{
	static const char *const names[] = {"floe_table_records", "floe_table_data_files",
	                                    "floe_table_files_bytes",
	                                    "floe_table_seconds_since_commit"};
	struct table_render *t = arg;
	double v[4] = {(double)st->total_records, (double)st->total_data_files,
	               (double)st->total_files_size, st->seconds_since_commit};

	for (int i = 0; i < 4; i++) {
		if (v[i] < 0)
			continue;
		t->rc |= fl_buf_printf(t->out, "%s{warehouse=\"", names[i]);
		t->rc |= label(t->out, st->warehouse);
		t->rc |= fl_buf_puts(t->out, "\",namespace=\"");
		t->rc |= label(t->out, st->ns);
		t->rc |= fl_buf_puts(t->out, "\",table=\"");
		t->rc |= label(t->out, st->name);
		t->rc |= fl_buf_printf(t->out, "\"} %.3f\n", v[i]);
	}
	if (st->total_data_files > 0 && st->total_files_size >= 0) {
		t->rc |= fl_buf_puts(&t->avg, "floe_table_avg_file_size_bytes{warehouse=\"");
		t->rc |= label(&t->avg, st->warehouse);
		t->rc |= fl_buf_puts(&t->avg, "\",namespace=\"");
		t->rc |= label(&t->avg, st->ns);
		t->rc |= fl_buf_puts(&t->avg, "\",table=\"");
		t->rc |= label(&t->avg, st->name);
		t->rc |= fl_buf_printf(&t->avg, "\"} %.3f\n",
		                       (double)st->total_files_size / (double)st->total_data_files);
	}
}

/* Feed and table signals: one buffer per metric family, so that each
 * family's samples stay together as the exposition format requires. */
#define NFEED_FAMILIES 13
static const char *const feed_families[NFEED_FAMILIES][3] = {
        {"floe_feed_rows_committed_total", "counter", "Rows the feed committed."},
        {"floe_feed_bytes_read_total", "counter", "Source bytes the feed read."},
        {"floe_feed_bytes_committed_total", "counter", "Data-file bytes the feed committed."},
        {"floe_feed_batches_committed_total", "counter", "Snapshots the feed committed."},
        {"floe_feed_batch_seconds_total", "counter",
         "Seconds spent in committed batches (divide by batches for the mean latency)."},
        {"floe_feed_dead_letter_rows_total", "counter", "Rows the feed set aside as bad."},
        {"floe_feed_dead_letter_objects_total", "counter",
         "Objects or pushes the feed set aside whole."},
        {"floe_feed_retries_total", "counter", "Runs that failed and were retried later."},
        {"floe_feed_failures", "gauge", "Runs failed in a row (0 when the last run worked)."},
        {"floe_feed_paused", "gauge", "1 when the feed is paused."},
        {"floe_feed_backlog_objects", "gauge", "Source objects seen but not yet landed."},
        {"floe_feed_backlog_bytes", "gauge", "Pushed bytes spooled, waiting to be committed."},
        {"floe_feed_backlog_requests", "gauge", "Pushes spooled, waiting to be committed."},
};

struct family_render {
	struct fl_buf *bufs;
	int rc;
};

static void render_feed(const struct cat_feed_stat *st, void *arg)
{
	struct family_render *f = arg;
	double v[NFEED_FAMILIES] = {
	        (double)st->rows_committed,
	        (double)st->bytes_read,
	        (double)st->bytes_written,
	        (double)st->batches_committed,
	        st->batch_seconds,
	        (double)st->dead_letter_rows,
	        (double)st->dead_letter_objects,
	        (double)st->runs_failed,
	        (double)st->failures,
	        st->paused ? 1.0 : 0.0,
	        (double)st->backlog_objects,
	        (double)st->spooled_bytes,
	        (double)st->spooled_requests,
	};

	for (int i = 0; i < NFEED_FAMILIES; i++) {
		struct fl_buf *b = &f->bufs[i];

		f->rc |= fl_buf_printf(b, "%s{feed=\"", feed_families[i][0]);
		f->rc |= label(b, st->name);
		f->rc |= fl_buf_puts(b, "\",warehouse=\"");
		f->rc |= label(b, st->warehouse);
		f->rc |= fl_buf_puts(b, "\",namespace=\"");
		f->rc |= label(b, st->ns);
		f->rc |= fl_buf_puts(b, "\",table=\"");
		f->rc |= label(b, st->table);
		f->rc |= fl_buf_printf(b, "\"} %.17g\n", v[i]);
	}
}

static void render_signal(const struct cat_table_signal *st, void *arg)
{
	struct family_render *f = arg;
	double v[2] = {(double)st->commits, st->freshness_s};

	for (int i = 0; i < 2; i++) {
		struct fl_buf *b = &f->bufs[i];

		if (v[i] < 0)
			continue;
		f->rc |= fl_buf_puts(b, i == 0 ? "floe_table_commits_total{warehouse=\""
		                               : "floe_table_freshness_seconds{warehouse=\"");
		f->rc |= label(b, st->warehouse);
		f->rc |= fl_buf_puts(b, "\",namespace=\"");
		f->rc |= label(b, st->ns);
		f->rc |= fl_buf_puts(b, "\",table=\"");
		f->rc |= label(b, st->name);
		f->rc |= fl_buf_printf(b, "\"} %.3f\n", v[i]);
	}
}

/* Appends the feed and table signals (a database outage leaves a comment). */
static int render_signals(struct srv_ctx *ctx, struct fl_buf *out)
{
	struct fl_buf bufs[NFEED_FAMILIES] = {0};
	struct family_render f = {bufs, 0};
	struct fl_err err;
	int rc = 0;

	if (cat_feed_stats(ctx->db, 10000, render_feed, &f, &err) != 0)
		rc |= fl_buf_puts(out, "# feed statistics unavailable\n");
	for (int i = 0; i < NFEED_FAMILIES; i++) {
		rc |= fl_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", feed_families[i][0],
		                    feed_families[i][2], feed_families[i][0], feed_families[i][1]);
		if (bufs[i].len > 0)
			rc |= fl_buf_append(out, bufs[i].data, bufs[i].len);
		fl_buf_reset(&bufs[i]);
	}
	if (cat_table_signals(ctx->db, 10000, render_signal, &f, &err) != 0)
		rc |= fl_buf_puts(out, "# table signals unavailable\n");
	rc |= fl_buf_puts(out,
	                  "# HELP floe_table_commits_total Commits of the table by any process"
	                  " (from the commit events).\n# TYPE floe_table_commits_total counter\n");
	if (bufs[0].len > 0)
		rc |= fl_buf_append(out, bufs[0].data, bufs[0].len);
	rc |= fl_buf_puts(
	        out, "# HELP floe_table_freshness_seconds Seconds since the newest"
	             " snapshot that added data.\n# TYPE floe_table_freshness_seconds gauge\n");
	if (bufs[1].len > 0)
		rc |= fl_buf_append(out, bufs[1].data, bufs[1].len);
	for (int i = 0; i < NFEED_FAMILIES; i++)
		fl_buf_free(&bufs[i]);
	return rc | f.rc;
}

/* Maintenance: the shape the caretaker measured (per table) and the last
 * outcome of each action (per table and action).  At most
 * MAINT_TABLES_MAX tables are exported, so the series stay bounded: a
 * handful per table and action, never one per partition value. */
#define MAINT_TABLES_MAX 1000
#define NMAINT_FAMILIES 10
static const char *const maint_families[NMAINT_FAMILIES][3] = {
        {"floe_table_snapshots", "gauge", "Snapshots the table's metadata keeps."},
        {"floe_table_partitions", "gauge",
         "Partitions holding live data files in the current snapshot."},
        {"floe_table_files_per_partition_max", "gauge",
         "Most live data files in one partition of the current snapshot."},
        {"floe_table_files_per_partition_avg", "gauge",
         "Live data files per partition of the current snapshot, on average."},
        {"floe_table_measured_data_files", "gauge",
         "Live data files when the table was last measured (after its last maintenance)."},
        {"floe_maintenance_last_run_timestamp_seconds", "gauge",
         "When the action last finished on the table (Unix time)."},
        {"floe_maintenance_last_run_ok", "gauge",
         "1 when the action's last run on the table succeeded, 0 when it failed."},
        {"floe_maintenance_runs_total", "counter", "Runs of the action on the table."},
        {"floe_maintenance_failures_total", "counter", "Failed runs of the action on the table."},
        {"floe_maintenance_bytes_reclaimed_total", "counter",
         "Bytes the action deleted from storage (expire and orphans)."},
};

static void render_maint(const struct cat_maint_stat *st, void *arg)
{
	struct family_render *f = arg;
	double v[NMAINT_FAMILIES];
	int from = st->action == NULL ? 0 : 5, to = st->action == NULL ? 5 : NMAINT_FAMILIES;

	if (st->action == NULL) {
		v[0] = (double)st->snapshots;
		v[1] = (double)st->partitions;
		v[2] = (double)st->max_files_per_partition;
		v[3] = st->partitions > 0 ? (double)st->data_files / (double)st->partitions : 0;
		v[4] = (double)st->data_files;
	} else {
		v[5] = st->last_run_s;
		v[6] = st->ok ? 1 : 0;
		v[7] = (double)st->runs;
		v[8] = (double)st->failures;
		v[9] = (double)st->bytes_reclaimed;
	}
	for (int i = from; i < to; i++) {
		struct fl_buf *b = &f->bufs[i];

		f->rc |= fl_buf_printf(b, "%s{warehouse=\"", maint_families[i][0]);
		f->rc |= label(b, st->warehouse);
		f->rc |= fl_buf_puts(b, "\",namespace=\"");
		f->rc |= label(b, st->ns);
		f->rc |= fl_buf_puts(b, "\",table=\"");
		f->rc |= label(b, st->name);
		if (st->action != NULL) {
			f->rc |= fl_buf_puts(b, "\",action=\"");
			f->rc |= label(b, st->action);
		}
		f->rc |= fl_buf_printf(b, "\"} %.17g\n", v[i]);
	}
}

static int render_maintenance(struct srv_ctx *ctx, struct fl_buf *out)
{
	struct fl_buf bufs[NMAINT_FAMILIES] = {0};
	struct family_render f = {bufs, 0};
	struct fl_err err;
	int rc = 0;

	if (cat_maint_stats(ctx->db, MAINT_TABLES_MAX, render_maint, &f, &err) != 0)
		rc |= fl_buf_puts(out, "# maintenance statistics unavailable\n");
	for (int i = 0; i < NMAINT_FAMILIES; i++) {
		rc |= fl_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", maint_families[i][0],
		                    maint_families[i][2], maint_families[i][0],
		                    maint_families[i][1]);
		if (bufs[i].len > 0)
			rc |= fl_buf_append(out, bufs[i].data, bufs[i].len);
		fl_buf_free(&bufs[i]);
	}
	return rc | f.rc;
}

static const char *route_label(int i)
{
	return i < srv_route_count ? srv_routes[i].path : "unmatched";
}

int srv_metrics_render(struct srv_metrics *m, struct srv_ctx *ctx, struct fl_buf *out)
{
	int in_use, idle, waiting, rc = 0;

	rc |= fl_buf_puts(out,
	                  "# HELP floe_build_info Floe version.\n# TYPE floe_build_info gauge\n");
	rc |= fl_buf_printf(out, "floe_build_info{version=\"%s\"} 1\n", FLOE_VERSION);
	rc |= fl_buf_puts(
	        out, "# HELP floe_http_requests_total HTTP requests by route, method and status.\n"
	             "# TYPE floe_http_requests_total counter\n");
	for (int r = 0; r <= srv_route_count; r++) {
		for (size_t mi = 0; mi < NMETHOD; mi++) {
			for (size_t si = 0; si < NSTATUS; si++) {
				unsigned long long v = atomic_load(&m->routes[r].count[mi][si]);

				if (v == 0)
					continue;
				if (statuses[si] != 0)
					rc |= fl_buf_printf(
					        out,
					        "floe_http_requests_total{route=\"%s\",method=\"%s\",status=\"%u\"} %llu\n",
					        route_label(r), methods[mi], statuses[si], v);
				else
					rc |= fl_buf_printf(
					        out,
					        "floe_http_requests_total{route=\"%s\",method=\"%s\",status=\"other\"} %llu\n",
					        route_label(r), methods[mi], v);
			}
		}
	}
	rc |= fl_buf_puts(out,
	                  "# HELP floe_http_request_duration_seconds Request latency by route.\n"
	                  "# TYPE floe_http_request_duration_seconds histogram\n");
	for (int r = 0; r <= srv_route_count; r++) {
		struct route_stats *s = &m->routes[r];
		unsigned long long seen = 0;
		char labels[200];

		for (size_t b = 0; b <= NBUCKET; b++)
			seen += atomic_load(&s->latency.bucket[b]);
		if (seen == 0)
			continue;
		snprintf(labels, sizeof(labels), "route=\"%s\"", route_label(r));
		rc |= hist_render(out, "floe_http_request_duration_seconds", labels, &s->latency);
	}
	rc |= fl_buf_puts(out, "# HELP floe_commits_total Table commits by result.\n"
	                       "# TYPE floe_commits_total counter\n");
	for (size_t i = 0; i < NRESULT; i++)
		rc |= fl_buf_printf(out, "floe_commits_total{result=\"%s\"} %llu\n",
		                    commit_results[i], atomic_load(&m->commits[i]));
	rc |= fl_buf_puts(out, "# HELP floe_commit_duration_seconds Commit latency.\n"
	                       "# TYPE floe_commit_duration_seconds histogram\n");
	rc |= hist_render(out, "floe_commit_duration_seconds", "", &m->commit_latency);
	rc |= fl_buf_puts(
	        out,
	        "# HELP floe_commit_stage_seconds Time of each stage of a table commit"
	        " (gate is waiting for another commit to the same table in this process;"
	        " lock reads the row (not at all on a first try when this process holds the table's version),"
	        " or locks it when the commit takes the row lock first, with the Idempotency-Key claim in the"
	        " same round trip; write includes the fsync;"
	        " update is the pointer move, a compare-and-swap after an unlocked read (sent while the file is"
	        " written, with the claim when no row was read); idempotency is what the"
	        " Idempotency-Key adds: a claim sent on its own, and the COMMIT that stores the record;"
	        " commit is the PostgreSQL COMMIT with the record's response stored in the same round trip).\n"
	        "# TYPE floe_commit_stage_seconds histogram\n");
	for (int s = 0; s < CAT_STAGE_N; s++) {
		char labels[40];

		snprintf(labels, sizeof(labels), "stage=\"%s\"", cat_stage_name((enum cat_stage)s));
		rc |= hist_render(out, "floe_commit_stage_seconds", labels, &m->commit_stage[s]);
	}
	rc |= fl_buf_puts(
	        out,
	        "# HELP floe_idempotent_replays_total Responses replayed for a repeated Idempotency-Key.\n"
	        "# TYPE floe_idempotent_replays_total counter\n");
	rc |= fl_buf_printf(out, "floe_idempotent_replays_total %llu\n", atomic_load(&m->replays));
	rc |= fl_buf_printf(
	        out,
	        "# HELP floe_credential_vending_unavailable_total Loads that asked for vended "
	        "credentials of a warehouse without an STS role (answered without).\n"
	        "# TYPE floe_credential_vending_unavailable_total counter\n"
	        "floe_credential_vending_unavailable_total %llu\n"
	        "# HELP floe_credentials_vended_total Vended credentials handed out.\n"
	        "# TYPE floe_credentials_vended_total counter\n"
	        "floe_credentials_vended_total %llu\n"
	        "# HELP floe_sts_assume_role_total STS AssumeRole calls made (cache misses).\n"
	        "# TYPE floe_sts_assume_role_total counter\n"
	        "floe_sts_assume_role_total %llu\n"
	        "# HELP floe_remote_sign_requests_total Remote-signing requests by result.\n"
	        "# TYPE floe_remote_sign_requests_total counter\n"
	        "floe_remote_sign_requests_total{result=\"signed\"} %llu\n"
	        "floe_remote_sign_requests_total{result=\"refused\"} %llu\n",
	        atomic_load(&m->vend_unavailable), atomic_load(&m->vended),
	        atomic_load(&m->sts_calls), atomic_load(&m->signed_requests[0]),
	        atomic_load(&m->signed_requests[1]));
	rc |= fl_buf_puts(
	        out,
	        "# HELP floe_http_coded_responses_total Responses sent content-coded (gzip or zstd,"
	        " as the client's Accept-Encoding asked).\n"
	        "# TYPE floe_http_coded_responses_total counter\n"
	        "# HELP floe_http_coded_plain_bytes_total Bytes of those responses' bodies before"
	        " coding.\n"
	        "# TYPE floe_http_coded_plain_bytes_total counter\n"
	        "# HELP floe_http_coded_sent_bytes_total Bytes of those bodies as sent.\n"
	        "# TYPE floe_http_coded_sent_bytes_total counter\n");
	for (int c = FL_CODING_IDENTITY + 1; c < FL_CODING_COUNT; c++)
		rc |= fl_buf_printf(
		        out,
		        "floe_http_coded_responses_total{coding=\"%s\"} %llu\n"
		        "floe_http_coded_plain_bytes_total{coding=\"%s\"} %llu\n"
		        "floe_http_coded_sent_bytes_total{coding=\"%s\"} %llu\n",
		        fl_coding_name((enum fl_coding)c), atomic_load(&m->coded[c]),
		        fl_coding_name((enum fl_coding)c), atomic_load(&m->coded_plain[c]),
		        fl_coding_name((enum fl_coding)c), atomic_load(&m->coded_sent[c]));
	{
		struct table_render t = {out, FL_BUF_INIT, 0};
		struct fl_err err;

		rc |= fl_buf_puts(
		        out,
		        "# HELP floe_table_records Rows in the table's current snapshot.\n# TYPE floe_table_records gauge\n"
		        "# HELP floe_table_data_files Data files in the current snapshot.\n# TYPE floe_table_data_files gauge\n"
		        "# HELP floe_table_files_bytes Bytes of data files in the current snapshot.\n# TYPE floe_table_files_bytes gauge\n"
		        "# HELP floe_table_seconds_since_commit Seconds since the table's last commit.\n# TYPE floe_table_seconds_since_commit gauge\n");
		/* A database outage must not take /metrics down with it. */
		if (cat_table_stats(ctx->db, 10000, render_table, &t, &err) != 0)
			rc |= fl_buf_puts(out, "# table statistics unavailable\n");
		rc |= fl_buf_puts(
		        out, "# HELP floe_table_avg_file_size_bytes Mean data file size in the"
		             " current snapshot.\n# TYPE floe_table_avg_file_size_bytes gauge\n");
		if (t.avg.len > 0)
			rc |= fl_buf_append(out, t.avg.data, t.avg.len);
		fl_buf_free(&t.avg);
		rc |= t.rc;
	}
	{
		struct cat_cache_stats cs;

		cat_db_cache_stats(ctx->db, &cs);
		rc |= fl_buf_printf(
		        out,
		        "# HELP floe_table_cache_hits_total loadTable and loadView answers served from the cache.\n"
		        "# TYPE floe_table_cache_hits_total counter\nfloe_table_cache_hits_total %lu\n"
		        "# HELP floe_table_cache_misses_total loadTable and loadView reads that went to the database.\n"
		        "# TYPE floe_table_cache_misses_total counter\nfloe_table_cache_misses_total %lu\n"
		        "# HELP floe_table_cache_evictions_total Entries evicted to stay within table-cache-bytes.\n"
		        "# TYPE floe_table_cache_evictions_total counter\nfloe_table_cache_evictions_total %lu\n"
		        "# HELP floe_table_cache_bytes Bytes held by the loadTable cache.\n"
		        "# TYPE floe_table_cache_bytes gauge\nfloe_table_cache_bytes %zu\n"
		        "# HELP floe_table_cache_coded_bytes Bytes of the coded copies of cached"
		        " loadTable and loadView answers, part of floe_table_cache_bytes.\n"
		        "# TYPE floe_table_cache_coded_bytes gauge\nfloe_table_cache_coded_bytes %zu\n"
		        "# HELP floe_table_cache_max_bytes The loadTable cache budget (table-cache-bytes).\n"
		        "# TYPE floe_table_cache_max_bytes gauge\nfloe_table_cache_max_bytes %zu\n"
		        "# HELP floe_table_cache_entries Tables held by the loadTable cache.\n"
		        "# TYPE floe_table_cache_entries gauge\nfloe_table_cache_entries %zu\n"
		        "# HELP floe_table_cache_notifications_total Table change notifications (NOTIFY"
		        " floe_table, sent by every process, this one too) applied to the cache.\n"
		        "# TYPE floe_table_cache_notifications_total counter\n"
		        "floe_table_cache_notifications_total %lu\n"
		        "# HELP floe_table_cache_listening 1 while the cache's LISTEN connection is up"
		        " (it serves only then).\n"
		        "# TYPE floe_table_cache_listening gauge\nfloe_table_cache_listening %d\n"
		        "# HELP floe_table_cache_batch_reads_total Statements that read cache misses in batches.\n"
		        "# TYPE floe_table_cache_batch_reads_total counter\nfloe_table_cache_batch_reads_total %lu\n"
		        "# HELP floe_table_cache_batch_loads_total Loads answered by those statements.\n"
		        "# TYPE floe_table_cache_batch_loads_total counter\nfloe_table_cache_batch_loads_total %lu\n"
		        "# HELP floe_table_cache_loads_waiting Loads queued for a batched read or being read"
		        " (parked connections included).\n"
		        "# TYPE floe_table_cache_loads_waiting gauge\nfloe_table_cache_loads_waiting %zu\n"
		        "# HELP floe_metadata_file_reads_total Table metadata read from its file because"
		        " PostgreSQL does not keep it (larger than metadata-inline-max-bytes): loads"
		        " that missed the cache, commits, replays, maintenance.\n"
		        "# TYPE floe_metadata_file_reads_total counter\nfloe_metadata_file_reads_total %lu\n"
		        "# HELP floe_metadata_file_read_bytes_total Bytes of those reads.\n"
		        "# TYPE floe_metadata_file_read_bytes_total counter\n"
		        "floe_metadata_file_read_bytes_total %lu\n",
		        cs.hits, cs.misses, cs.evictions, cs.bytes, cs.coded_bytes, cs.max_bytes,
		        cs.entries, cs.notifications, cs.listening ? 1 : 0, cs.batch_reads,
		        cs.batch_loads, cs.loads_waiting, cs.file_reads, cs.file_read_bytes);
	}
	rc |= render_signals(ctx, out);
	rc |= render_maintenance(ctx, out);
	cat_db_stats(ctx->db, &in_use, &idle, &waiting);
	rc |= fl_buf_puts(out,
	                  "# HELP floe_db_pool_connections Database pool connections by state.\n"
	                  "# TYPE floe_db_pool_connections gauge\n");
	rc |= fl_buf_printf(out, "floe_db_pool_connections{state=\"in_use\"} %d\n", in_use);
	rc |= fl_buf_printf(out, "floe_db_pool_connections{state=\"idle\"} %d\n", idle);
	rc |= fl_buf_puts(
	        out, "# HELP floe_db_pool_waiting Requests waiting for a database connection.\n"
	             "# TYPE floe_db_pool_waiting gauge\n");
	rc |= fl_buf_printf(out, "floe_db_pool_waiting %d\n", waiting);
	if (ctx->httpd != NULL) {
		unsigned threads, busy, queued;

		srv_httpd_workers(ctx->httpd, &threads, &busy, &queued);
		rc |= fl_buf_puts(out,
		                  "# HELP floe_http_workers Worker threads (requests that wait on "
		                  "PostgreSQL or storage) by state.\n"
		                  "# TYPE floe_http_workers gauge\n");
		rc |= fl_buf_printf(out, "floe_http_workers{state=\"busy\"} %u\n", busy);
		rc |= fl_buf_printf(out, "floe_http_workers{state=\"idle\"} %u\n", threads - busy);
		rc |= fl_buf_puts(
		        out,
		        "# HELP floe_http_queued_requests Requests waiting for a worker thread.\n"
		        "# TYPE floe_http_queued_requests gauge\n");
		rc |= fl_buf_printf(out, "floe_http_queued_requests %u\n", queued);
	}
	return rc ? -1 : 0;
}
