/* http1.c - a small HTTP/1.1 client for a catalog at an http:// address
 * (see http1.h for why, and for what it leaves to libcurl).
 *
 * Invariants: h->fd is -1 or a connected, non-blocking socket on which no
 * request is outstanding; every wait is a poll() bounded by the request's
 * deadline; a response is parsed from the start of one buffer, so a head or
 * chunk split across reads is simply parsed again when more bytes come. */
#include "http1.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "clock.h"

#define CONNECT_TIMEOUT_NS (10 * 1000000000LL)
#define REQUEST_TIMEOUT_NS (120 * 1000000000LL)
#define READ_CHUNK (64u << 10)

struct st_http1 {
	char *origin; /* "http://authority", which every request URL starts with */
	char *authority; /* the Host header: host[:port] as the URI wrote it */
	char *host; /* for getaddrinfo: IPv6 brackets removed */
	char *port;
	int fd;
};

/* ---- the response parser ---- */

static bool is_tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* Whether the comma-separated list v[0..n) holds token t (any case). */
static bool list_has(const char *v, size_t n, const char *t)
{
	size_t tl = strlen(t), i = 0;

	while (i < n) {
		size_t s, e;

		while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		s = i;
		while (i < n && v[i] != ',')
			i++;
		e = i;
		while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t'))
			e--;
		if (e - s == tl && strncasecmp(v + s, t, tl) == 0)
			return true;
	}
	return false;
}

/* The last coding of a Transfer-Encoding list is chunked. */
static bool last_is_chunked(const char *v, size_t n)
{
	size_t e = n, s;

	while (e > 0 && (v[e - 1] == ' ' || v[e - 1] == '\t'))
		e--;
	s = e;
	while (s > 0 && v[s - 1] != ',' && v[s - 1] != ' ' && v[s - 1] != '\t')
		s--;
	return e - s == 7 && strncasecmp(v + s, "chunked", 7) == 0;
}

int st_http1_parse_head(const char *buf, size_t len, struct st_http1_head *h, struct fl_err *err)
{
	const char *end =
	        memmem(buf, len < ST_HTTP1_MAX_HEAD ? len : ST_HTTP1_MAX_HEAD, "\r\n\r\n", 4);
	const char *p, *eol;
	bool http10, keep_alive = false, have_te = false;

	/* Known from the first bytes, before the head ends. */
	if (memcmp(buf, "HTTP/", len < 5 ? len : 5) != 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "not an HTTP response");
	if (end == NULL) {
		if (len >= ST_HTTP1_MAX_HEAD)
			return fl_err_set(err, FL_ERR_BAD_REQUEST, "response head over %u bytes",
			                  ST_HTTP1_MAX_HEAD);
		return 0;
	}
	memset(h, 0, sizeof(*h));
	h->length = -1;
	h->head_len = (size_t)(end - buf) + 4;
	/* "HTTP/1.x SSS[ reason]" */
	eol = memmem(buf, (size_t)(end - buf) + 2, "\r\n", 2);
	if (eol - buf < 12 || memcmp(buf, "HTTP/1.", 7) != 0 || (buf[7] != '0' && buf[7] != '1') ||
	    buf[8] != ' ' || buf[9] < '1' || buf[9] > '9' || buf[10] < '0' || buf[10] > '9' ||
	    buf[11] < '0' || buf[11] > '9' || (eol - buf > 12 && buf[12] != ' '))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "malformed status line");
	http10 = buf[7] == '0';
	h->status = (buf[9] - '0') * 100 + (buf[10] - '0') * 10 + (buf[11] - '0');
	for (p = eol + 2; p < end + 2; p = eol + 2) {
		const char *colon, *v, *ve;
		size_t nl;

		eol = memmem(p, (size_t)(end + 2 - p), "\r\n", 2);
		for (colon = p; colon < eol && is_tchar((unsigned char)*colon); colon++)
			;
		if (colon == p || colon == eol || *colon != ':')
			return fl_err_set(err, FL_ERR_BAD_REQUEST, "malformed header line");
		nl = (size_t)(colon - p);
		for (v = colon + 1; v < eol && (*v == ' ' || *v == '\t'); v++)
			;
		for (ve = eol; ve > v && (ve[-1] == ' ' || ve[-1] == '\t'); ve--)
			;
		for (const char *c = v; c < ve; c++)
			if ((unsigned char)*c < 0x20 && *c != '\t')
				return fl_err_set(err, FL_ERR_BAD_REQUEST,
				                  "control character in a header value");
		if (nl == 14 && strncasecmp(p, "content-length", 14) == 0) {
			int64_t n = 0;

			if (v == ve)
				return fl_err_set(err, FL_ERR_BAD_REQUEST, "empty Content-Length");
			for (const char *c = v; c < ve; c++) {
				if (*c < '0' || *c > '9')
					return fl_err_set(err, FL_ERR_BAD_REQUEST,
					                  "malformed Content-Length");
				n = n * 10 + (*c - '0');
				if (n > (int64_t)ST_HTTP1_MAX_BODY)
					return fl_err_set(err, FL_ERR_BAD_REQUEST,
					                  "response body over %u bytes",
					                  ST_HTTP1_MAX_BODY);
			}
			if (h->length >= 0 && h->length != n)
				return fl_err_set(err, FL_ERR_BAD_REQUEST,
				                  "two different Content-Lengths");
			h->length = n;
		} else if (nl == 17 && strncasecmp(p, "transfer-encoding", 17) == 0) {
			have_te = true;
			h->chunked = last_is_chunked(v, (size_t)(ve - v));
		} else if (nl == 10 && strncasecmp(p, "connection", 10) == 0) {
			if (list_has(v, (size_t)(ve - v), "close"))
				h->close = true;
			if (list_has(v, (size_t)(ve - v), "keep-alive"))
				keep_alive = true;
		}
	}
	if (have_te && !h->chunked)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "unsupported Transfer-Encoding");
	if (h->chunked)
		h->length = -1; /* RFC 9112 6.3: Transfer-Encoding wins */
	if (http10 && !keep_alive)
		h->close = true;
	return 1;
}

/* Walks a chunked body; appends the data to out when out is not NULL.
 * Same answers as st_http1_dechunk. */
static int walk_chunks(const char *buf, size_t len, struct fl_buf *out, size_t *used,
                       struct fl_err *err)
{
	size_t i = 0, total = 0;

	for (;;) {
		const char *eol = memmem(buf + i, len - i, "\r\n", 2);
		size_t size = 0, k = i;

		if (eol == NULL)
			return len - i > 1024 ? fl_err_set(err, FL_ERR_BAD_REQUEST,
			                                   "malformed chunk size line")
			                      : 0;
		for (; k < (size_t)(eol - buf); k++) {
			int d = buf[k] >= '0' && buf[k] <= '9'   ? buf[k] - '0'
			        : buf[k] >= 'a' && buf[k] <= 'f' ? buf[k] - 'a' + 10
			        : buf[k] >= 'A' && buf[k] <= 'F' ? buf[k] - 'A' + 10
			                                         : -1;

			if (d < 0)
				break;
			size = size * 16 + (size_t)d;
			if (size > ST_HTTP1_MAX_BODY)
				return fl_err_set(err, FL_ERR_BAD_REQUEST,
				                  "response body over %u bytes", ST_HTTP1_MAX_BODY);
		}
		/* hex digits, then nothing, or chunk extensions after ';' */
		if (k == i ||
		    (k < (size_t)(eol - buf) && buf[k] != ';' && buf[k] != ' ' && buf[k] != '\t'))
			return fl_err_set(err, FL_ERR_BAD_REQUEST, "malformed chunk size line");
		i = (size_t)(eol - buf) + 2;
		if (size == 0)
			break;
		total += size;
		if (total > ST_HTTP1_MAX_BODY)
			return fl_err_set(err, FL_ERR_BAD_REQUEST, "response body over %u bytes",
			                  ST_HTTP1_MAX_BODY);
		if (len - i < size + 2)
			return 0;
		if (buf[i + size] != '\r' || buf[i + size + 1] != '\n')
			return fl_err_set(err, FL_ERR_BAD_REQUEST, "chunk not followed by CRLF");
		if (out != NULL && fl_buf_append(out, buf + i, size) != 0)
			return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		i += size + 2;
	}
	/* Trailer lines, then an empty one. */
	for (;;) {
		const char *eol = memmem(buf + i, len - i, "\r\n", 2);

		if (eol == NULL)
			return len - i > ST_HTTP1_MAX_HEAD
			               ? fl_err_set(err, FL_ERR_BAD_REQUEST, "trailers too long")
			               : 0;
		if (eol == buf + i) {
			*used = i + 2;
			return 1;
		}
		i = (size_t)(eol - buf) + 2;
	}
}

int st_http1_dechunk(const char *buf, size_t len, struct fl_buf *out, size_t *used,
                     struct fl_err *err)
{
	size_t n = 0;
	int rc = walk_chunks(buf, len, NULL, &n, err);

	if (rc != 1)
		return rc;
	rc = walk_chunks(buf, len, out, &n, err);
	if (rc == 1)
		*used = n;
	return rc;
}

/* ---- addresses ---- */

/* The authority of an http:// URI: [s, e) after "http://", up to the path. */
static bool authority_of(const char *uri, const char **s, const char **e)
{
	if (strncasecmp(uri, "http://", 7) != 0)
		return false;
	*s = uri + 7;
	*e = *s + strcspn(*s, "/?#");
	return *e > *s && memchr(*s, '@', (size_t)(*e - *s)) == NULL;
}

bool st_http1_usable(const char *uri)
{
	static const char *const proxies[] = {"http_proxy", "all_proxy", "ALL_PROXY"};
	const char *s, *e;

	if (uri == NULL || !authority_of(uri, &s, &e))
		return false;
	for (size_t i = 0; i < sizeof(proxies) / sizeof(proxies[0]); i++) {
		const char *v = getenv(proxies[i]);

		if (v != NULL && v[0] != '\0')
			return false;
	}
	return true;
}

int st_http1_open(const char *uri, struct st_http1 **out, struct fl_err *err)
{
	struct st_http1 *h;
	const char *s, *e, *hs, *he, *ps = NULL;

	if (uri == NULL || !authority_of(uri, &s, &e))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "not an http:// address");
	if (*s == '[') { /* [v6]:port */
		hs = s + 1;
		he = memchr(hs, ']', (size_t)(e - hs));
		if (he == NULL || (he + 1 < e && he[1] != ':'))
			return fl_err_set(err, FL_ERR_BAD_REQUEST, "malformed address in %.200s",
			                  uri);
		if (he + 1 < e)
			ps = he + 2;
	} else {
		hs = s;
		he = memchr(s, ':', (size_t)(e - s));
		if (he != NULL)
			ps = he + 1;
		else
			he = e;
	}
	if (he == hs ||
	    (ps != NULL && (ps == e || strspn(ps, "0123456789") != (size_t)(e - ps) || e - ps > 5)))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "malformed address in %.200s", uri);
	h = calloc(1, sizeof(*h));
	if (h == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	h->fd = -1;
	h->origin = strndup(uri, (size_t)(e - uri));
	h->authority = strndup(s, (size_t)(e - s));
	h->host = strndup(hs, (size_t)(he - hs));
	h->port = ps != NULL ? strndup(ps, (size_t)(e - ps)) : strdup("80");
	if (h->origin == NULL || h->authority == NULL || h->host == NULL || h->port == NULL) {
		st_http1_close(h);
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	}
	*out = h;
	return 0;
}

static void disconnect(struct st_http1 *h)
{
	if (h->fd >= 0)
		close(h->fd);
	h->fd = -1;
}

void st_http1_close(struct st_http1 *h)
{
	if (h == NULL)
		return;
	disconnect(h);
	free(h->origin);
	free(h->authority);
	free(h->host);
	free(h->port);
	free(h);
}

/* ---- I/O ---- */

/* Waits for events on fd until deadline: 0 ready, -1 with errno (ETIMEDOUT
 * once the deadline passed). */
static int wait_fd(int fd, short events, int64_t deadline)
{
	for (;;) {
		int64_t left = deadline - fl_mono_ns();
		struct pollfd p = {.fd = fd, .events = events};
		int n;

		if (left <= 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		n = poll(&p, 1, (int)((left + 999999) / 1000000));
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -1;
	}
}

static int connect_one(const struct addrinfo *a, int64_t deadline)
{
	int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
	                a->ai_protocol),
	    one = 1, e = 0;
	socklen_t el = sizeof(e);

	if (fd < 0)
		return -1;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, a->ai_addr, a->ai_addrlen) == 0)
		return fd;
	if (errno == EINPROGRESS && wait_fd(fd, POLLOUT, deadline) == 0) {
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) == 0 && e == 0)
			return fd;
		if (e != 0)
			errno = e;
	}
	e = errno;
	close(fd);
	errno = e;
	return -1;
}

static int do_connect(struct st_http1 *h, int64_t deadline, char *why, size_t cap)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res, *a;
	int64_t cd = fl_mono_ns() + CONNECT_TIMEOUT_NS;
	int g = getaddrinfo(h->host, h->port, &hints, &res);

	if (g != 0) {
		snprintf(why, cap, "cannot resolve %s: %s", h->host, gai_strerror(g));
		return -1;
	}
	if (cd > deadline)
		cd = deadline;
	snprintf(why, cap, "cannot connect to %s", h->authority);
	for (a = res; a != NULL && h->fd < 0; a = a->ai_next) {
		h->fd = connect_one(a, cd);
		if (h->fd < 0)
			snprintf(why, cap, "cannot connect to %s: %s", h->authority,
			         strerror(errno));
	}
	freeaddrinfo(res);
	return h->fd >= 0 ? 0 : -1;
}

/* Writes iov[0..n) whole; -1 with errno on failure or timeout. */
static int send_all(int fd, struct iovec *iov, int n, int64_t deadline)
{
	while (n > 0) {
		struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)n};
		ssize_t w = sendmsg(fd, &m, MSG_NOSIGNAL);

		if (w < 0) {
			if (errno != EINTR && ((errno != EAGAIN && errno != EWOULDBLOCK) ||
			                       wait_fd(fd, POLLOUT, deadline) != 0))
				return -1;
			continue;
		}
		while (n > 0 && (size_t)w >= iov->iov_len) {
			w -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (char *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

/* Reads what is there into b (at least one byte, waiting until deadline):
 * > 0 bytes read, 0 the peer closed, -1 error or timeout (errno). */
static ssize_t read_some(int fd, struct fl_buf *b, int64_t deadline)
{
	for (;;) {
		ssize_t n;

		if (fl_buf_reserve(b, READ_CHUNK) != 0) {
			errno = ENOMEM;
			return -1;
		}
		n = recv(fd, b->data + b->len, b->cap - b->len - 1, 0);
		if (n > 0) {
			b->len += (size_t)n;
			b->data[b->len] = '\0';
			return n;
		}
		if (n == 0)
			return 0;
		if (errno != EINTR && ((errno != EAGAIN && errno != EWOULDBLOCK) ||
		                       wait_fd(fd, POLLIN, deadline) != 0))
			return -1;
	}
}

enum outcome { DONE, STALE, FAILED };

/* One try on the current connection.  STALE: nothing came back and nothing
 * says the server saw the request (it had closed the connection). */
static enum outcome exchange(struct st_http1 *h, const struct st_http1_request *r, const char *head,
                             size_t head_len, int64_t deadline, long *status, struct fl_buf *out,
                             char *why, size_t cap, struct fl_err *err)
{
	struct iovec iov[2] = {{(void *)head, head_len}, {(void *)r->body, r->body_len}};
	struct fl_buf in = FL_BUF_INIT;
	struct st_http1_head hd;
	enum outcome o = FAILED;
	bool no_body;
	int p;

	if (send_all(h->fd, iov, r->body != NULL ? 2 : 1, deadline) != 0) {
		o = errno == EPIPE || errno == ECONNRESET ? STALE : FAILED;
		snprintf(why, cap, "sending to %s: %s", h->authority, strerror(errno));
		goto out;
	}
	for (;;) { /* the head; 1xx interim answers are skipped */
		ssize_t n;

		p = st_http1_parse_head(in.data ? in.data : "", in.len, &hd, err);
		if (p < 0) {
			snprintf(why, cap, "from %s: %s", h->authority, err->msg);
			goto out;
		}
		if (p == 1 && hd.status >= 200)
			break;
		if (p == 1) {
			memmove(in.data, in.data + hd.head_len, in.len - hd.head_len);
			in.len -= hd.head_len;
			continue;
		}
		n = read_some(h->fd, &in, deadline);
		if (n <= 0) {
			if (in.len == 0 && (n == 0 || errno == ECONNRESET))
				o = STALE;
			snprintf(why, cap, "reading from %s: %s", h->authority,
			         n == 0 ? "connection closed before an answer" : strerror(errno));
			goto out;
		}
	}
	no_body = hd.status == 204 || hd.status == 304 || strcmp(r->method, "HEAD") == 0;
	for (;;) { /* the body */
		const char *b = in.data + hd.head_len;
		size_t bl = in.len - hd.head_len, used = 0;
		ssize_t n;

		if (no_body || (hd.length >= 0 && bl >= (size_t)hd.length)) {
			size_t l = no_body ? 0 : (size_t)hd.length;

			if (fl_buf_append(out, b, l) != 0) {
				snprintf(why, cap, "out of memory");
				goto out;
			}
			if (bl > l) /* more than was asked for: not trusted further */
				hd.close = true;
			break;
		}
		if (hd.chunked) {
			p = st_http1_dechunk(b, bl, out, &used, err);
			if (p < 0) {
				snprintf(why, cap, "from %s: %s", h->authority, err->msg);
				goto out;
			}
			if (p == 1) {
				if (bl > used)
					hd.close = true;
				break;
			}
		}
		if (hd.length < 0 && !hd.chunked && bl > ST_HTTP1_MAX_BODY) {
			snprintf(why, cap, "from %s: response body over %u bytes", h->authority,
			         ST_HTTP1_MAX_BODY);
			goto out;
		}
		n = read_some(h->fd, &in, deadline);
		if (n == 0 && hd.length < 0 && !hd.chunked) { /* delimited by the close */
			if (fl_buf_append(out, b, bl) != 0) {
				snprintf(why, cap, "out of memory");
				goto out;
			}
			hd.close = true;
			break;
		}
		if (n <= 0) {
			snprintf(why, cap, "reading from %s: %s", h->authority,
			         n == 0 ? "connection closed inside the answer" : strerror(errno));
			goto out;
		}
	}
	*status = hd.status;
	if (hd.close)
		disconnect(h);
	o = DONE;
out:
	fl_buf_free(&in);
	return o;
}

int st_http1_do(struct st_http1 *h, const struct st_http1_request *r, long *status,
                struct fl_buf *out, bool *sent, struct fl_err *err)
{
	struct fl_buf head = FL_BUF_INIT;
	size_t ol = strlen(h->origin);
	const char *target = r->url + ol;
	int64_t deadline = fl_mono_ns() + REQUEST_TIMEOUT_NS;
	char why[320];
	int rc = -1;

	*sent = false;
	fl_buf_reset(out);
	if (strncasecmp(r->url, h->origin, ol) != 0 ||
	    (*target != '/' && *target != '?' && *target != '\0'))
		return fl_err_set(err, FL_ERR_INTERNAL, "%.200s is not on %.200s", r->url,
		                  h->origin);
	if (fl_buf_printf(&head, "%s %s%s HTTP/1.1\r\nHost: %s\r\n", r->method,
	                  *target == '/' ? "" : "/", target, h->authority) != 0)
		goto nomem;
	for (size_t i = 0; i < r->nheaders; i++)
		if (fl_buf_printf(&head, "%s\r\n", r->headers[i]) != 0)
			goto nomem;
	if ((r->body != NULL &&
	     fl_buf_printf(&head, "Content-Length: %zu\r\n", r->body_len) != 0) ||
	    fl_buf_puts(&head, "\r\n") != 0)
		goto nomem;
	for (int attempt = 0;; attempt++) {
		bool reused = h->fd >= 0;
		enum outcome o;

		if (!reused && do_connect(h, deadline, why, sizeof(why)) != 0)
			break;
		*sent = true;
		o = exchange(h, r, head.data, head.len, deadline, status, out, why, sizeof(why),
		             err);
		if (o == DONE) {
			rc = 0;
			break;
		}
		disconnect(h);
		fl_buf_reset(out);
		/* A kept-alive connection the server had closed: once more on a
		 * new one, when sending twice cannot apply anything twice. */
		if (o != STALE || !reused || attempt > 0 || !r->retry_safe)
			break;
	}
	if (rc != 0)
		fl_err_set(err, FL_ERR_UNAVAILABLE, "%s %s: %s", r->method, r->url, why);
	fl_buf_free(&head);
	return rc;
nomem:
	fl_buf_free(&head);
	return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
}
