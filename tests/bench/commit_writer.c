/* commit_writer.c - the commit benchmark's writers, as lean as pgbench.
 *
 *   commit_writer --port P --prefix /v1/PREFIX --ns NS --tables N [--name-prefix t]
 *                 [--clients 16] [--duration 15] [--idempotency 1]
 *                 [--accept-encoding "gzip, deflate, zstd"]
 *
 * The same load as `bench_client.mjs commit` (see there), in C: each of
 * --clients threads holds one keep-alive connection to 127.0.0.1:P and POSTs
 * PyIceberg-style appends (assert-ref-snapshot-id main + assert-table-uuid,
 * add-snapshot, set-snapshot-ref main), each with a fresh UUIDv7
 * Idempotency-Key unless --idempotency 0.  Client k appends to tables
 * k, k+C, k+2C, ... in turn (with N = 1 all of them race on one table); on a
 * 409 it reloads the table and retries at once with the same snapshot id.
 * Only commits acknowledged (200) before the deadline count.
 *
 * Why a second writer: on a small machine the writer shares the cores with
 * the daemon and PostgreSQL, and the ceilings' writer is pgbench.  node's
 * HTTP stack costs ~0.3 ms of CPU per commit, and parsing a large table's
 * reload after each 409 costs more than the daemon's whole commit; this one
 * reads the five fields it needs from a reload's text (the first occurrence
 * of each key, which for Floe's metadata is the top-level one) and leaves
 * the rest unparsed, as pgbench leaves its results.
 *
 * --accept-encoding sends that header with every request, as PyIceberg's
 * requests session does (urllib3 2.x with zstandard installed sends the
 * value above), and decodes a zstd answer before reading it; an answer in
 * any other coding is an error.
 *
 * Prints one JSON line with the fields `bench_client.mjs commit` prints.
 * Exits 1 when it cannot measure (no connection, a malformed answer). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <zstd.h>

#define MAX_SECONDS 3600
#define MAX_NAME 200

struct table {
	char name[MAX_NAME];
	char uuid[64];
	char location[1024];
	bool has_current;
	int64_t current;
	int64_t last_seq;
	int64_t schema_id;
	long snapshots;
	size_t load_bytes;
};

struct conn {
	int fd;
	char *buf; /* the response being read */
	size_t len, cap;
	size_t head; /* bytes of status line and headers */
	size_t body_len;
	const char *body; /* the body as sent, or decoded into plain */
	char *plain; /* a zstd answer's body, decoded */
	size_t plain_cap;
};

struct lat {
	double *v;
	size_t n, cap;
};

struct client {
	pthread_t thread;
	int k;
	struct conn c;
	struct table **own;
	size_t nown, next;
	uint64_t rng;
	long commits, attempts, conflicts, errors, reloads;
	struct lat commit_ms, post_ms;
	char error[200];
};

/* The run's settings and its shared counters. */
static struct {
	int port;
	const char *prefix, *ns, *name_prefix, *accept;
	int ntables, nclients, seconds;
	bool idem;
	struct table *tables;
	struct timespec t0;
	double deadline_s;
	atomic_long per_second[MAX_SECONDS];
	atomic_int in_flight, max_in_flight;
} run;

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("commit_writer: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

static double since_start(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - run.t0.tv_sec) + (double)(t.tv_nsec - run.t0.tv_nsec) / 1e9;
}

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int64_t wall_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* xorshift64*: a fast generator per thread, seeded from the kernel. */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1DULL;
}

static void uuid_text(const unsigned char b[16], char out[37])
{
	static const char d[] = "0123456789abcdef";
	int o = 0;

	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[o++] = '-';
		out[o++] = d[b[i] >> 4];
		out[o++] = d[b[i] & 15];
	}
	out[o] = '\0';
}

/* A UUID of version 7 (now, then random bits) or 4 (random). */
static void uuid_new(uint64_t *s, int version, char out[37])
{
	unsigned char b[16];
	uint64_t r1 = rnd(s), r2 = rnd(s);

	memcpy(b, &r1, 8);
	memcpy(b + 8, &r2, 8);
	if (version == 7) {
		uint64_t ms = (uint64_t)wall_ms();

		for (int i = 0; i < 6; i++)
			b[i] = (unsigned char)(ms >> (8 * (5 - i)));
	}
	b[6] = (unsigned char)((b[6] & 0x0f) | (version << 4));
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
	uuid_text(b, out);
}

static void lat_add(struct lat *l, double ms)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 4096;
		l->v = realloc(l->v, l->cap * sizeof(double));
		if (l->v == NULL)
			die("out of memory");
	}
	l->v[l->n++] = ms;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double percentile(const struct lat *l, double p)
{
	size_t i;

	if (l->n == 0)
		return 0;
	i = (size_t)((p / 100) * (double)l->n + 0.999999);
	i = i == 0 ? 0 : i - 1;
	return l->v[i < l->n ? i : l->n - 1];
}

static void conn_open(struct conn *c)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)run.port)};
	int one = 1;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&a, sizeof(a)) != 0)
		die("cannot connect to 127.0.0.1:%d: %s", run.port, strerror(errno));
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static void conn_close(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

static bool header_is(const char *line, const char *end, const char *name)
{
	size_t n = strlen(name);

	return (size_t)(end - line) > n && strncasecmp(line, name, n) == 0 && line[n] == ':';
}

/* Decodes c's zstd body into c->plain; c->body and c->body_len name it. */
static void unzstd(struct conn *c)
{
	const char *frame = c->buf + c->head;
	unsigned long long n = ZSTD_getFrameContentSize(frame, c->body_len);
	size_t got;

	if (n == ZSTD_CONTENTSIZE_ERROR || n == ZSTD_CONTENTSIZE_UNKNOWN || n > (1ULL << 30))
		die("a zstd answer without its size");
	if (c->plain_cap < n + 1) {
		c->plain_cap = n + 1;
		c->plain = realloc(c->plain, c->plain_cap);
		if (c->plain == NULL)
			die("out of memory");
	}
	got = ZSTD_decompress(c->plain, n, frame, c->body_len);
	if (ZSTD_isError(got) || got != n)
		die("a zstd answer that does not decode");
	c->plain[n] = '\0';
	c->body = c->plain;
	c->body_len = n;
}

/* Sends one request and reads its answer into c->buf; returns the status.
 * The body is c->body, c->body_len bytes, NUL-terminated (decoded when it
 * came in zstd).  Only Content-Length bodies are read: Floe answers with
 * them. */
static int conn_request(struct conn *c, const char *req, size_t req_len)
{
	size_t off = 0;
	bool keep = true, zstd = false;
	int status;

	if (c->fd < 0)
		conn_open(c);
	while (off < req_len) {
		ssize_t w = send(c->fd, req + off, req_len - off, MSG_NOSIGNAL);

		if (w <= 0)
			die("send: %s", strerror(errno));
		off += (size_t)w;
	}
	c->len = 0;
	c->head = 0;
	for (;;) {
		ssize_t got;

		if (c->cap - c->len < 65536) {
			c->cap = c->cap ? 2 * c->cap : 262144;
			c->buf = realloc(c->buf, c->cap);
			if (c->buf == NULL)
				die("out of memory");
		}
		got = recv(c->fd, c->buf + c->len, c->cap - c->len - 1, 0);
		if (got <= 0)
			die("the server closed the connection mid-answer");
		c->len += (size_t)got;
		c->buf[c->len] = '\0';
		if (c->head == 0) {
			char *e = strstr(c->buf, "\r\n\r\n");
			char *line;
			bool length = false;

			if (e == NULL)
				continue;
			c->head = (size_t)(e - c->buf) + 4;
			if (sscanf(c->buf, "HTTP/1.%*d %d", &status) != 1)
				die("not an HTTP answer: %.60s", c->buf);
			for (line = strstr(c->buf, "\r\n") + 2; line < e;
			     line = strstr(line, "\r\n") + 2) {
				char *le = strstr(line, "\r\n");

				if (header_is(line, le, "content-length")) {
					c->body_len = strtoull(line + 15, NULL, 10);
					length = true;
				} else if (header_is(line, le, "content-encoding")) {
					zstd = memmem(line, (size_t)(le - line), "zstd", 4) != NULL;
					if (!zstd)
						die("an answer coded otherwise than zstd: %.*s",
						    (int)(le - line), line);
				} else if (header_is(line, le, "connection")) {
					keep = memmem(line, (size_t)(le - line), "close", 5) ==
					       NULL;
				}
			}
			if (!length)
				die("an answer without Content-Length (status %d)", status);
		}
		if (c->len >= c->head + c->body_len)
			break;
	}
	c->buf[c->head + c->body_len] = '\0';
	c->body = c->buf + c->head;
	if (zstd)
		unzstd(c);
	if (!keep)
		conn_close(c);
	return status;
}

static int http(struct conn *c, const char *method, const char *path, const char *key,
                const char *body, size_t body_len)
{
	char head[1024];
	char *req;
	int n, cur, status;

	n = snprintf(head, sizeof(head),
	             "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAccept: application/json\r\n"
	             "%s%s%s%s%s%s"
	             "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
	             method, path, run.port, key ? "Idempotency-Key: " : "", key ? key : "",
	             key ? "\r\n" : "", run.accept ? "Accept-Encoding: " : "",
	             run.accept ? run.accept : "", run.accept ? "\r\n" : "", body_len);
	if (n < 0 || (size_t)n >= sizeof(head))
		die("request head too long");
	req = malloc((size_t)n + body_len);
	if (req == NULL)
		die("out of memory");
	memcpy(req, head, (size_t)n);
	memcpy(req + n, body, body_len);
	cur = atomic_fetch_add(&run.in_flight, 1) + 1;
	for (int m = atomic_load(&run.max_in_flight); cur > m;)
		if (atomic_compare_exchange_weak(&run.max_in_flight, &m, cur))
			break;
	status = conn_request(c, req, (size_t)n + body_len);
	atomic_fetch_sub(&run.in_flight, 1);
	free(req);
	return status;
}

static void table_path(const struct table *t, char *out, size_t cap)
{
	snprintf(out, cap, "%s/namespaces/%s/tables/%s", run.prefix, run.ns, t->name);
}

/* The value after the first "key": in text, or NULL. */
static const char *field(const char *text, const char *key)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(text, pat);
	if (p == NULL)
		return NULL;
	p += strlen(pat);
	while (*p == ' ')
		p++;
	return p;
}

static void field_str(const char *text, const char *key, char *out, size_t cap)
{
	const char *p = field(text, key), *e;

	if (p == NULL || *p != '"' || (e = strchr(p + 1, '"')) == NULL ||
	    (size_t)(e - p - 1) >= cap)
		die("no string %s in a loadTable answer", key);
	memcpy(out, p + 1, (size_t)(e - p - 1));
	out[e - p - 1] = '\0';
}

/* Reloads t (GET); its snapshots are counted by their manifest lists. */
static void table_load(struct conn *c, struct table *t)
{
	char path[512];
	const char *p, *body;
	int status;

	table_path(t, path, sizeof(path));
	status = http(c, "GET", path, NULL, "", 0);
	body = c->body;
	if (status != 200)
		die("load %s: %d %.200s", t->name, status, body);
	field_str(body, "table-uuid", t->uuid, sizeof(t->uuid));
	field_str(body, "location", t->location, sizeof(t->location));
	p = field(body, "current-snapshot-id");
	t->has_current = p != NULL && strncmp(p, "null", 4) != 0 && strncmp(p, "-1", 2) != 0;
	t->current = t->has_current ? strtoll(p, NULL, 10) : 0;
	p = field(body, "last-sequence-number");
	t->last_seq = p ? strtoll(p, NULL, 10) : 0;
	p = field(body, "current-schema-id");
	t->schema_id = p ? strtoll(p, NULL, 10) : 0;
	t->snapshots = 0;
	for (p = strstr(body, "\"manifest-list\":"); p != NULL;
	     p = strstr(p + 1, "\"manifest-list\":"))
		t->snapshots++;
	t->load_bytes = c->body_len;
}

static size_t commit_body(struct client *cl, const struct table *t, int64_t sid, char *out,
                          size_t cap)
{
	char u4[37], parent[48] = "", cur[24] = "null";
	int n;

	uuid_new(&cl->rng, 4, u4);
	if (t->has_current) {
		snprintf(cur, sizeof(cur), "%" PRId64, t->current);
		snprintf(parent, sizeof(parent), "\"parent-snapshot-id\":%" PRId64 ",", t->current);
	}
	n = snprintf(
	        out, cap,
	        "{\"identifier\":{\"namespace\":[\"%s\"],\"name\":\"%s\"},"
	        "\"requirements\":[{\"type\":\"assert-ref-snapshot-id\",\"ref\":\"main\","
	        "\"snapshot-id\":%s},{\"type\":\"assert-table-uuid\",\"uuid\":\"%s\"}],"
	        "\"updates\":[{\"action\":\"add-snapshot\",\"snapshot\":{\"snapshot-id\":%" PRId64
	        ","
	        "%s\"sequence-number\":%" PRId64 ",\"timestamp-ms\":%" PRId64 ","
	        "\"manifest-list\":\"%s/metadata/snap-%" PRId64 "-0-%s.avro\","
	        "\"summary\":{\"operation\":\"append\",\"added-data-files\":\"1\","
	        "\"added-records\":\"1\",\"added-files-size\":\"1024\"},\"schema-id\":%" PRId64
	        "}},"
	        "{\"action\":\"set-snapshot-ref\",\"ref-name\":\"main\",\"type\":\"branch\","
	        "\"snapshot-id\":%" PRId64 "}]}",
	        run.ns, t->name, cur, t->uuid, sid, parent, t->last_seq + 1, wall_ms(), t->location,
	        sid, u4, t->schema_id, sid);
	if (n < 0 || (size_t)n >= cap)
		die("commit body too long");
	return (size_t)n;
}

static void *client_run(void *arg)
{
	struct client *cl = arg;
	char body[8192], path[512], key[37];

	while (since_start() < run.deadline_s) {
		struct table *t = cl->own[cl->next++ % cl->nown];
		/* Snapshot ids below 2^53, so that JSON numbers stay exact everywhere. */
		int64_t sid = (int64_t)((rnd(&cl->rng) % ((1ULL << 47) - 1)) + 1) * 64 +
		              (int64_t)(rnd(&cl->rng) % 64);
		double start = now_ms();

		table_path(t, path, sizeof(path));
		while (since_start() < run.deadline_s) {
			size_t n = commit_body(cl, t, sid, body, sizeof(body));
			double t1 = now_ms();
			int status;

			if (run.idem)
				uuid_new(&cl->rng, 7, key);
			cl->attempts++;
			status = http(&cl->c, "POST", path, run.idem ? key : NULL, body, n);
			lat_add(&cl->post_ms, now_ms() - t1);
			if (status == 200) {
				double done = since_start();

				if (done <= run.deadline_s) {
					cl->commits++;
					lat_add(&cl->commit_ms, now_ms() - start);
					atomic_fetch_add(&run.per_second[(int)done < run.seconds
					                                         ? (int)done
					                                         : run.seconds - 1],
					                 1);
				}
				t->has_current = true;
				t->current = sid;
				t->last_seq++;
				break;
			}
			if (status == 409) {
				cl->conflicts++;
			} else {
				cl->errors++;
				if (cl->error[0] == '\0')
					snprintf(cl->error, sizeof(cl->error), "%d %.150s", status,
					         cl->c.body);
			}
			cl->reloads++;
			table_load(&cl->c, t);
			if (status != 409)
				break;
		}
	}
	return NULL;
}

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

static double cpu_seconds(void)
{
	struct rusage u;

	getrusage(RUSAGE_SELF, &u);
	return (double)u.ru_utime.tv_sec + (double)u.ru_utime.tv_usec / 1e6 +
	       (double)u.ru_stime.tv_sec + (double)u.ru_stime.tv_usec / 1e6;
}

static int number(const char *opt, const char *v, long lo, long hi)
{
	char *end;
	long n;

	errno = 0;
	n = strtol(v, &end, 10);
	if (errno != 0 || end == v || *end != '\0' || n < lo || n > hi)
		die("%s must be a number from %ld to %ld, got '%s'", opt, lo, hi, v);
	return (int)n;
}

static bool simple_name(const char *s)
{
	if (*s == '\0' || strlen(s) >= 100)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_' || *s == '-'))
			return false;
	return true;
}

int main(int argc, char **argv)
{
	struct client *cl;
	struct lat all_commit = {0}, all_post = {0};
	long commits = 0, attempts = 0, conflicts = 0, errors = 0, fewest = -1, most = 0;
	const char *err_sample[5];
	int nerr = 0;
	double cpu0, cpu1, wall;
	struct conn last = {.fd = -1};

	run.prefix = "/v1";
	run.ns = "bench";
	run.name_prefix = "t";
	run.ntables = 1;
	run.nclients = 16;
	run.seconds = 15;
	run.idem = true;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (v == NULL)
			die("%s needs a value", a);
		i++;
		if (strcmp(a, "--port") == 0)
			run.port = number(a, v, 1, 65535);
		else if (strcmp(a, "--prefix") == 0)
			run.prefix = v;
		else if (strcmp(a, "--ns") == 0)
			run.ns = v;
		else if (strcmp(a, "--name-prefix") == 0)
			run.name_prefix = v;
		else if (strcmp(a, "--tables") == 0)
			run.ntables = number(a, v, 1, 1000000);
		else if (strcmp(a, "--clients") == 0)
			run.nclients = number(a, v, 1, 1024);
		else if (strcmp(a, "--duration") == 0)
			run.seconds = number(a, v, 1, MAX_SECONDS);
		else if (strcmp(a, "--idempotency") == 0)
			run.idem = strcmp(v, "0") != 0;
		else if (strcmp(a, "--accept-encoding") == 0) {
			if (strlen(v) >= 200 || strpbrk(v, "\r\n") != NULL)
				die("--accept-encoding: one header value, under 200 bytes");
			run.accept = *v != '\0' ? v : NULL;
		} else
			die("unknown option %s", a);
	}
	if (run.port == 0)
		die("usage: commit_writer --port P --prefix /v1/PREFIX --ns NS --tables N "
		    "[--name-prefix t] [--clients 16] [--duration 15] [--idempotency 1] "
		    "[--accept-encoding VALUE]");
	if (!simple_name(run.ns) || !simple_name(run.name_prefix))
		die("namespace and name prefix must be letters, digits, '_' or '-'");
	run.tables = calloc((size_t)run.ntables, sizeof(*run.tables));
	cl = calloc((size_t)run.nclients, sizeof(*cl));
	if (run.tables == NULL || cl == NULL)
		die("out of memory");
	for (int i = 0; i < run.ntables; i++)
		snprintf(run.tables[i].name, MAX_NAME, "%s%d", run.name_prefix, i);
	/* Each client's own view of its tables, loaded before the clock starts. */
	for (int k = 0; k < run.nclients; k++) {
		struct client *c = &cl[k];

		c->k = k;
		c->c.fd = -1;
		if (getrandom(&c->rng, sizeof(c->rng), 0) != sizeof(c->rng) || c->rng == 0)
			c->rng = 0x9e3779b97f4a7c15ULL + (uint64_t)k;
		c->own = calloc((size_t)run.ntables, sizeof(*c->own));
		if (c->own == NULL)
			die("out of memory");
		for (int i = 0; i < run.ntables; i++) {
			if (run.ntables >= run.nclients && i % run.nclients != k)
				continue;
			/* A shared hot table: each client keeps a view of its own. */
			struct table *t = &run.tables[i];

			if (run.ntables < run.nclients) {
				t = malloc(sizeof(*t));
				if (t == NULL)
					die("out of memory");
				*t = run.tables[i];
			}
			table_load(&c->c, t);
			c->own[c->nown++] = t;
		}
	}
	run.deadline_s = run.seconds;
	cpu0 = cpu_seconds();
	clock_gettime(CLOCK_MONOTONIC, &run.t0);
	for (int k = 0; k < run.nclients; k++)
		if (pthread_create(&cl[k].thread, NULL, client_run, &cl[k]) != 0)
			die("cannot start a client thread");
	for (int k = 0; k < run.nclients; k++)
		pthread_join(cl[k].thread, NULL);
	wall = since_start();
	cpu1 = cpu_seconds();
	for (int k = 0; k < run.nclients; k++) {
		struct client *c = &cl[k];

		commits += c->commits;
		if (fewest < 0 || c->commits < fewest)
			fewest = c->commits;
		if (c->commits > most)
			most = c->commits;
		attempts += c->attempts;
		conflicts += c->conflicts;
		errors += c->errors;
		if (c->error[0] != '\0' && nerr < 5)
			err_sample[nerr++] = c->error;
		for (size_t i = 0; i < c->commit_ms.n; i++)
			lat_add(&all_commit, c->commit_ms.v[i]);
		for (size_t i = 0; i < c->post_ms.n; i++)
			lat_add(&all_post, c->post_ms.v[i]);
	}
	qsort(all_commit.v, all_commit.n, sizeof(double), cmp_double);
	qsort(all_post.v, all_post.n, sizeof(double), cmp_double);
	table_load(&last, &run.tables[0]);
	printf("{\"writer\":\"commit_writer\",\"tables\":%d,\"clients\":%d,\"idempotency_key\":%s,"
	       "\"accept_encoding\":",
	       run.ntables, run.nclients, run.idem ? "true" : "false");
	json_str(run.accept ? run.accept : "");
	printf(",\"duration_s\":%d,\"commits\":%ld,\"commits_per_s\":%.1f,\"attempts\":%ld,"
	       "\"conflicts\":%ld,\"errors\":%ld,\"error_samples\":[",
	       run.seconds, commits, (double)commits / run.seconds, attempts, conflicts, errors);
	for (int i = 0; i < nerr; i++) {
		if (i > 0)
			putchar(',');
		json_str(err_sample[i]);
	}
	printf("],\"commit_p50_ms\":%.3f,\"commit_p99_ms\":%.3f,\"post_p50_ms\":%.3f,"
	       "\"post_p99_ms\":%.3f,\"client_commits_min\":%ld,\"client_commits_max\":%ld,"
	       "\"max_in_flight\":%d,\"per_second\":[",
	       percentile(&all_commit, 50), percentile(&all_commit, 99), percentile(&all_post, 50),
	       percentile(&all_post, 99), fewest, most, atomic_load(&run.max_in_flight));
	for (int s = 0; s < run.seconds; s++)
		printf("%s%ld", s ? "," : "", atomic_load(&run.per_second[s]));
	printf("],\"generator_cpu_pct\":%.2f,\"first_table_snapshots\":%ld,"
	       "\"first_table_load_bytes\":%zu}\n",
	       100 * (cpu1 - cpu0) / wall, run.tables[0].snapshots, run.tables[0].load_bytes);
	return 0;
}
