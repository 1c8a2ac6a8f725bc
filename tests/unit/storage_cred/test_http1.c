/* test_http1.c - the small HTTP/1.1 client of `floe ingest --catalog-uri`
 * (storage/rest/http1.c): its response parser on whole, split and malformed
 * answers, and its I/O against a real loopback server (a thread of this
 * test answering with scripted bytes): keep-alive, Connection: close, a
 * server that closed a kept-alive connection (a GET is sent again, a POST
 * without an Idempotency-Key is not), chunked bodies, bodies in pieces,
 * refused connections. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "http1.h"

/* ---- the parser ---- */

static int head(const char *s, struct st_http1_head *h)
{
	struct fl_err err = {0};

	return st_http1_parse_head(s, strlen(s), h, &err);
}

static void test_head(void **state)
{
	struct st_http1_head h;
	const char *ok = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
	                 "Content-Length:  12 \r\n\r\n{\"a\":1}";

	(void)state;
	assert_int_equal(head(ok, &h), 1);
	assert_int_equal(h.status, 200);
	assert_int_equal(h.length, 12);
	assert_false(h.chunked);
	assert_false(h.close);
	assert_int_equal(h.head_len, strstr(ok, "{") - ok);
	/* every proper prefix of the head asks for more */
	for (size_t n = 0; n < h.head_len; n++) {
		struct fl_err err = {0};

		assert_int_equal(st_http1_parse_head(ok, n, &h, &err), 0);
	}
	assert_int_equal(head("HTTP/1.1 404\r\ntransfer-encoding: gzip, Chunked\r\n"
	                      "Content-Length: 5\r\nConnection: keep-alive, Close\r\n\r\n",
	                      &h),
	                 1);
	assert_int_equal(h.status, 404);
	assert_true(h.chunked);
	assert_int_equal(h.length, -1); /* Transfer-Encoding wins */
	assert_true(h.close);
	assert_int_equal(head("HTTP/1.0 204 No Content\r\n\r\n", &h), 1);
	assert_true(h.close);
	assert_int_equal(head("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n\r\n", &h), 1);
	assert_false(h.close);
	assert_int_equal(head("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n\r\n", &h), 1);
	assert_int_equal(h.status, 100);
	assert_int_equal(h.head_len, 25);
}

static void test_head_malformed(void **state)
{
	static const char *const bad[] = {
	        "HTTP/2 200 OK\r\n\r\n",
	        "HTTP/1.1 20 OK\r\n\r\n",
	        "HTTP/1.1 2000\r\n\r\n",
	        "HTTP/1.1 099 x\r\n\r\n",
	        "HTTP/1.1 200OK\r\n\r\n",
	        "HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
	        "HTTP/1.1 200 OK\r\n: empty name\r\n\r\n",
	        "HTTP/1.1 200 OK\r\nA: b\r\n folded\r\n\r\n",
	        "HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n",
	        "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
	        "HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n",
	        "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
	        "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n",
	        "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
	        "HTTP/1.1 200 OK\r\nX: a\x01z\r\n\r\n",
	        "SSH-2.0-OpenSSH\r\n\r\n",
	};
	struct st_http1_head h;
	struct fl_err err = {0};
	char *big;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err.msg[0] = '\0';
		assert_int_equal(st_http1_parse_head(bad[i], strlen(bad[i]), &h, &err), -1);
		assert_true(err.msg[0] != '\0');
	}
	/* not HTTP is known from the first bytes */
	assert_int_equal(st_http1_parse_head("SSH-2", 5, &h, &err), -1);
	/* a head that never ends is refused at the bound */
	big = malloc(ST_HTTP1_MAX_HEAD + 10);
	assert_non_null(big);
	memcpy(big, "HTTP/1.1 200 OK\r\n", 17);
	memset(big + 17, 'a', ST_HTTP1_MAX_HEAD - 7);
	assert_int_equal(st_http1_parse_head(big, ST_HTTP1_MAX_HEAD + 10, &h, &err), -1);
	assert_non_null(strstr(err.msg, "response head over"));
	free(big);
}

static void test_dechunk(void **state)
{
	const char *body = "5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nTrailer: x\r\n\r\nNEXT";
	size_t full = strlen(body) - 4, used = 0;
	struct fl_buf out = FL_BUF_INIT;
	struct fl_err err = {0};

	(void)state;
	assert_int_equal(st_http1_dechunk(body, strlen(body), &out, &used, &err), 1);
	assert_int_equal(used, full);
	assert_int_equal(out.len, 12);
	assert_memory_equal(out.data, "hello, world", 12);
	/* split anywhere: more is needed, and nothing is appended */
	for (size_t n = 0; n < full; n++) {
		fl_buf_reset(&out);
		assert_int_equal(st_http1_dechunk(body, n, &out, &used, &err), 0);
		assert_int_equal(out.len, 0);
	}
	fl_buf_reset(&out);
	assert_int_equal(st_http1_dechunk("0\r\n\r\n", 5, &out, &used, &err), 1);
	assert_int_equal(used, 5);
	assert_int_equal(out.len, 0);
	assert_int_equal(st_http1_dechunk("A\r\n0123456789\r\n0\r\n\r\n", 21, &out, &used, &err),
	                 1);
	assert_int_equal(out.len, 10);
	/* malformed */
	assert_int_equal(st_http1_dechunk("x\r\n", 3, &out, &used, &err), -1);
	assert_int_equal(st_http1_dechunk("\r\n", 2, &out, &used, &err), -1);
	assert_int_equal(st_http1_dechunk("5\r\nhelloXX0\r\n\r\n", 16, &out, &used, &err), -1);
	assert_int_equal(st_http1_dechunk("5z\r\nhello\r\n", 11, &out, &used, &err), -1);
	assert_int_equal(st_http1_dechunk("FFFFFFFFFFFFFFFFF\r\n", 19, &out, &used, &err), -1);
	assert_non_null(strstr(err.msg, "over"));
	fl_buf_free(&out);
}

static void test_usable(void **state)
{
	struct st_http1 *h = NULL;
	struct fl_err err = {0};

	(void)state;
	unsetenv("http_proxy");
	unsetenv("all_proxy");
	unsetenv("ALL_PROXY");
	assert_true(st_http1_usable("http://127.0.0.1:8181"));
	assert_true(st_http1_usable("HTTP://catalog/prefix/"));
	assert_true(st_http1_usable("http://[::1]:8181/x"));
	assert_false(st_http1_usable("https://catalog"));
	assert_false(st_http1_usable("http://user:pw@catalog"));
	assert_false(st_http1_usable("http://"));
	assert_false(st_http1_usable("file:///x"));
	setenv("http_proxy", "http://proxy:3128", 1);
	assert_false(st_http1_usable("http://catalog"));
	unsetenv("http_proxy");
	setenv("ALL_PROXY", "socks5://p", 1);
	assert_false(st_http1_usable("http://catalog"));
	unsetenv("ALL_PROXY");
	/* HTTP_PROXY is not used for http:// (libcurl ignores it: CGI's httpoxy) */
	setenv("HTTP_PROXY", "http://proxy:3128", 1);
	assert_true(st_http1_usable("http://catalog"));
	unsetenv("HTTP_PROXY");
	assert_int_equal(st_http1_open("http://[::1]:8181/v1", &h, &err), 0);
	st_http1_close(h);
	assert_int_equal(st_http1_open("http://host:99999999", &h, &err), -1);
	assert_int_equal(st_http1_open("http://host:", &h, &err), -1);
	assert_int_equal(st_http1_open("http://[::1", &h, &err), -1);
	assert_int_equal(st_http1_open("http://:80", &h, &err), -1);
}

/* ---- against a loopback server ---- */

/* What the server thread does with each connection it accepts: reads one
 * request head (and a body of Content-Length), records it, then writes the
 * scripted answer; after `answers` answers on a connection it closes it. */
struct server {
	int lfd;
	int port;
	pthread_t th;
	const char *const *answers; /* one per request, in order; NULL ends */
	int per_conn; /* answers per connection before closing it (0: no limit) */
	int piece_ms; /* > 0: each answer written in 3 pieces, this far apart */
	int accepted;
	int requests;
	/* The last request received, under mu: the test reads it while the
	 * thread may be reading the next one (the socket orders the two, which
	 * ThreadSanitizer cannot see). */
	pthread_mutex_t mu;
	char last[4096];
};

static ssize_t read_request(int fd, char *buf, size_t cap)
{
	size_t n = 0;
	char *end;

	while ((end = memmem(buf, n, "\r\n\r\n", 4)) == NULL) {
		ssize_t r = recv(fd, buf + n, cap - 1 - n, 0);

		if (r <= 0)
			return -1;
		n += (size_t)r;
	}
	buf[n] = '\0';
	{
		const char *cl = strstr(buf, "Content-Length: ");
		size_t want = (size_t)(end + 4 - buf) + (cl ? strtoul(cl + 16, NULL, 10) : 0);

		while (n < want) {
			ssize_t r = recv(fd, buf + n, cap - 1 - n, 0);

			if (r <= 0)
				return -1;
			n += (size_t)r;
		}
	}
	buf[n] = '\0';
	return (ssize_t)n;
}

static void pause_ms(int ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

static void *server_main(void *arg)
{
	struct server *s = arg;
	int i = 0;

	while (s->answers[i] != NULL) {
		int fd = accept(s->lfd, NULL, NULL), on_conn = 0;

		if (fd < 0)
			break;
		s->accepted++;
		while (s->answers[i] != NULL && (s->per_conn == 0 || on_conn < s->per_conn)) {
			const char *a = s->answers[i];
			size_t al = strlen(a);

			char req[sizeof(s->last)];

			if (read_request(fd, req, sizeof(req)) < 0)
				break;
			pthread_mutex_lock(&s->mu);
			memcpy(s->last, req, sizeof(req));
			pthread_mutex_unlock(&s->mu);
			s->requests++;
			if (s->piece_ms > 0) {
				for (size_t k = 0; k < 3; k++) {
					size_t from = al * k / 3, to = al * (k + 1) / 3;

					(void)!send(fd, a + from, to - from, MSG_NOSIGNAL);
					pause_ms(s->piece_ms);
				}
			} else {
				(void)!send(fd, a, al, MSG_NOSIGNAL);
			}
			i++;
			on_conn++;
		}
		close(fd);
	}
	return NULL;
}

static void server_start(struct server *s, const char *const *answers, int per_conn)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);

	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->mu, NULL);
	s->answers = answers;
	s->per_conn = per_conn;
	s->lfd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(s->lfd >= 0);
	assert_int_equal(bind(s->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(s->lfd, 8), 0);
	assert_int_equal(getsockname(s->lfd, (struct sockaddr *)&a, &al), 0);
	s->port = ntohs(a.sin_port);
}

/* Whether the last request received contains text. */
static bool got(struct server *s, const char *text)
{
	bool found;

	pthread_mutex_lock(&s->mu);
	found = strstr(s->last, text) != NULL;
	pthread_mutex_unlock(&s->mu);
	return found;
}

static void server_run(struct server *s)
{
	assert_int_equal(pthread_create(&s->th, NULL, server_main, s), 0);
}

static void server_stop(struct server *s)
{
	shutdown(s->lfd, SHUT_RDWR);
	pthread_join(s->th, NULL);
	close(s->lfd);
	pthread_mutex_destroy(&s->mu);
}

static int get(struct st_http1 *h, const char *url, bool retry_safe, const char *method,
               long *status, struct fl_buf *out, bool *sent, struct fl_err *err)
{
	static const char *const hdr[] = {"Accept: application/json"};
	struct st_http1_request r = {
	        .method = method,
	        .url = url,
	        .headers = hdr,
	        .nheaders = 1,
	        .body = strcmp(method, "POST") == 0 ? "{\"x\":1}" : NULL,
	        .body_len = strcmp(method, "POST") == 0 ? 7 : 0,
	        .retry_safe = retry_safe,
	};

	return st_http1_do(h, &r, status, out, sent, err);
}

#define OK_ABC "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc"

/* A server answering `answers`, and a client for it; url is the server's
 * address with `path`. */
struct live {
	struct server s;
	struct st_http1 *h;
	struct fl_buf out;
	struct fl_err err;
	char url[96];
	long status;
	bool sent;
};

static void live_start(struct live *l, const char *const *answers, int per_conn, int piece_ms,
                       const char *path)
{
	memset(l, 0, sizeof(*l));
	server_start(&l->s, answers, per_conn);
	l->s.piece_ms = piece_ms;
	server_run(&l->s);
	snprintf(l->url, sizeof(l->url), "http://127.0.0.1:%d%s", l->s.port, path);
	assert_int_equal(st_http1_open(l->url, &l->h, &l->err), 0);
}

static int live_do(struct live *l, const char *url, bool retry_safe, const char *method)
{
	return get(l->h, url, retry_safe, method, &l->status, &l->out, &l->sent, &l->err);
}

static void live_stop(struct live *l)
{
	st_http1_close(l->h);
	server_stop(&l->s);
	fl_buf_free(&l->out);
}

static void test_keep_alive(void **state)
{
	static const char *const answers[] = {
	        OK_ABC,
	        "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n"
	        "\r\n3\r\ndef\r\n2\r\ngh\r\n0\r\n\r\n",
	        "HTTP/1.1 204 No Content\r\n\r\n", NULL};
	struct live l;
	char url[128], host[48];

	(void)state;
	live_start(&l, answers, 0, 0, "");
	snprintf(url, sizeof(url), "%s/v1/config?warehouse=w", l.url);
	assert_int_equal(live_do(&l, url, true, "GET"), 0);
	assert_int_equal(l.status, 200);
	assert_string_equal(l.out.data, "abc");
	assert_true(l.sent);
	assert_true(got(&l.s, "GET /v1/config?warehouse=w HTTP/1.1\r\n"));
	snprintf(host, sizeof(host), "\r\nHost: 127.0.0.1:%d\r\n", l.s.port);
	assert_true(got(&l.s, host));
	assert_true(got(&l.s, "\r\nAccept: application/json\r\n"));
	assert_int_equal(live_do(&l, url, false, "POST"), 0);
	assert_int_equal(l.status, 201);
	assert_int_equal(l.out.len, 5);
	assert_string_equal(l.out.data, "defgh");
	assert_true(got(&l.s, "\r\nContent-Length: 7\r\n\r\n{\"x\":1}"));
	assert_int_equal(live_do(&l, l.url, true, "GET"), 0);
	assert_int_equal(l.status, 204);
	assert_int_equal(l.out.len, 0);
	assert_true(got(&l.s, "GET / HTTP/1.1\r\n"));
	/* a URL on another origin is refused, not sent there */
	assert_int_equal(live_do(&l, "http://127.0.0.2:1/x", true, "GET"), -1);
	live_stop(&l);
	assert_int_equal(l.s.accepted, 1); /* three requests, one connection */
	assert_int_equal(l.s.requests, 3);
}

/* The server closes every connection after one answer, without saying so. */
static void test_stale_connection(void **state)
{
	static const char *const answers[] = {OK_ABC, OK_ABC, OK_ABC, NULL};
	struct live l;

	(void)state;
	live_start(&l, answers, 1, 0, "/t");
	assert_int_equal(live_do(&l, l.url, true, "GET"), 0);
	pause_ms(50); /* the server has closed its end */
	/* a GET is sent again on a new connection */
	assert_int_equal(live_do(&l, l.url, true, "GET"), 0);
	assert_int_equal(l.status, 200);
	assert_string_equal(l.out.data, "abc");
	pause_ms(50);
	/* a POST that may not be sent twice is not: the caller hears it may
	 * have been sent */
	assert_int_equal(live_do(&l, l.url, false, "POST"), -1);
	assert_true(l.sent);
	assert_int_equal(l.err.kind, FL_ERR_UNAVAILABLE);
	assert_non_null(strstr(l.err.msg, "POST http://127.0.0.1:"));
	/* the next one connects anew */
	assert_int_equal(live_do(&l, l.url, false, "POST"), 0);
	assert_int_equal(l.status, 200);
	live_stop(&l);
	assert_int_equal(l.s.accepted, 3);
	assert_int_equal(l.s.requests, 3);
}

static void test_close_and_pieces(void **state)
{
	static const char *const answers[] = {
	        "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 10\r\n\r\n0123456789",
	        "HTTP/1.1 409 Conflict\r\nContent-Type: application/json\r\n\r\n{\"until\":\"eof\"}",
	        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n0\r\n\r\n",
	        NULL};
	struct live l;

	(void)state;
	live_start(&l, answers, 1, 20, "/");
	assert_int_equal(live_do(&l, l.url, false, "POST"), 0);
	assert_string_equal(l.out.data, "0123456789");
	/* Connection: close was heeded: a POST needs no retry to get through */
	assert_int_equal(live_do(&l, l.url, false, "POST"), 0);
	assert_int_equal(l.status, 409);
	assert_string_equal(l.out.data, "{\"until\":\"eof\"}");
	assert_int_equal(live_do(&l, l.url, false, "GET"), 0);
	assert_string_equal(l.out.data, "abcd");
	live_stop(&l);
	assert_int_equal(l.s.accepted, 3);
}

static void test_bad_answers(void **state)
{
	static const char *const answers[] = {
	        "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", /* then closed */
	        "garbage\r\n\r\n", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
	        NULL};
	static const char *const why[] = {"connection closed inside the answer",
	                                  "not an HTTP response", "malformed chunk size line"};
	struct live l;

	(void)state;
	live_start(&l, answers, 1, 0, "/");
	for (int i = 0; i < 3; i++) {
		assert_int_equal(live_do(&l, l.url, true, "GET"), -1);
		assert_true(l.sent);
		assert_int_equal(l.err.kind, FL_ERR_UNAVAILABLE);
		if (strstr(l.err.msg, why[i]) == NULL)
			fail_msg("answer %d: \"%s\" lacks \"%s\"", i, l.err.msg, why[i]);
	}
	live_stop(&l);
}

static void test_refused(void **state)
{
	struct server s;
	struct st_http1 *h;
	struct fl_buf out = FL_BUF_INIT;
	struct fl_err err = {0};
	static const char *const none[] = {NULL};
	char url[64];
	long status = 0;
	bool sent = true;

	(void)state;
	server_start(&s, none, 0);
	close(s.lfd); /* the port is free again: nothing listens */
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/", s.port);
	assert_int_equal(st_http1_open(url, &h, &err), 0);
	assert_int_equal(get(h, url, false, "POST", &status, &out, &sent, &err), -1);
	assert_false(sent);
	assert_int_equal(err.kind, FL_ERR_UNAVAILABLE);
	assert_non_null(strstr(err.msg, "cannot connect"));
	st_http1_close(h);
	fl_buf_free(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_head),
	        cmocka_unit_test(test_head_malformed),
	        cmocka_unit_test(test_dechunk),
	        cmocka_unit_test(test_usable),
	        cmocka_unit_test(test_keep_alive),
	        cmocka_unit_test(test_stale_connection),
	        cmocka_unit_test(test_close_and_pieces),
	        cmocka_unit_test(test_bad_answers),
	        cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
