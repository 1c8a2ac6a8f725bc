/* s3.c - the s3:// backend of io.h over libcurl.
 *
 * Every request is signed with SigV4 (sigv4.c, payload UNSIGNED-PAYLOAD)
 * using the server's keys, resolved once when the handle is opened.  Each
 * call takes a fresh easy handle attached to the handle's CURLSH, which
 * shares connections and DNS between all threads using the warehouse, so
 * requests reuse warm connections without a per-thread cache.
 *
 * Retries: a request that failed at the transport (connection refused or
 * reset, timeout) or got 500/502/503/504/SlowDown is retried up to
 * MAX_ATTEMPTS times with "full jitter" exponential backoff; a 4xx never is.
 * Bodies are in memory (at most one part), so a retry resends them as is.
 *
 * Create-only writes (metadata files) use If-None-Match: * (S3 since 2024,
 * MinIO, moto): the store refuses with 412 when the key exists, so two
 * writers can never both create one object.
 *
 * Streaming writes buffer up to PART_SIZE; a file that stays below it is
 * one PUT, a larger one becomes a multipart upload whose parts are sent as
 * the buffer fills.  The object appears only at CompleteMultipartUpload;
 * an abort (or a failure) sends AbortMultipartUpload, and a process killed
 * mid-upload leaves only an incomplete upload, which is never listed or
 * readable as an object.
 *
 * Response bodies are bounded: error and control answers at CTRL_MAX,
 * listings at LIST_MAX, reads at the caller's bound. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libcrypto.h"
#include "clock.h"
#include "random.h"
#include "io_int.h"
#include "libcurl.h"
#include "s3_int.h"
#include "sigv4.h"

#define MAX_ATTEMPTS 5
#define PART_SIZE ((size_t)8 << 20)
#define CTRL_MAX ((size_t)1 << 20)
#define LIST_MAX ((size_t)16 << 20)
#define DELETE_BATCH 1000

struct s3 {
	const struct st_libcurl *cu;
	CURLSH *share;
	pthread_mutex_t locks[CURL_LOCK_DATA_LAST];
	struct st_creds creds;
	struct fl_err creds_err; /* kind != NONE: the keys could not be resolved */
};

/* One request and its answer. */
struct call {
	const char *method;
	const char *bucket;
	const char *key;
	const char *query; /* canonical, "" for none */
	const void *body;
	size_t body_len;
	bool has_body;
	const char *content_type;
	const char *content_md5;
	bool if_none_match;
	const char *range;
	size_t max_resp; /* bound on a 2xx response body (errors: CTRL_MAX) */
	const struct st_libcurl *cu; /* set with easy */
	CURL *easy; /* the transfer in flight */
	/* The answer. */
	long status;
	struct fl_buf resp;
	bool too_large;
	char etag[160];
	uint64_t length;
	bool has_length;
	char code[64];
	char message[160];
};

static void share_lock(CURL *h, curl_lock_data data, curl_lock_access access, void *arg)
{
	struct s3 *s = arg;

	(void)h;
	(void)access;
	pthread_mutex_lock(&s->locks[data]);
}

static void share_unlock(CURL *h, curl_lock_data data, void *arg)
{
	struct s3 *s = arg;

	(void)h;
	pthread_mutex_unlock(&s->locks[data]);
}

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct call *c = arg;
	size_t len = size * n, max = c->max_resp;
	long status = 0;

	/* An error answer is read whatever the caller's bound (a read of at
	 * most 3 bytes still needs the <Code> of its 404). */
	if (c->cu->easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &status) == CURLE_OK &&
	    status >= 300 && max < CTRL_MAX)
		max = CTRL_MAX;
	if (c->resp.len + len > max) {
		c->too_large = true;
		return 0;
	}
	return fl_buf_append(&c->resp, p, len) == 0 ? len : 0;
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
	struct call *c = arg;
	size_t len = size * n, v;

	if (len > 5 && strncasecmp(p, "etag:", 5) == 0) {
		for (v = 5; v < len && p[v] == ' '; v++)
			;
		size_t e = len;
		while (e > v && (p[e - 1] == '\r' || p[e - 1] == '\n' || p[e - 1] == ' '))
			e--;
		snprintf(c->etag, sizeof(c->etag), "%.*s", (int)(e - v), p + v);
	} else if (len > 15 && strncasecmp(p, "content-length:", 15) == 0) {
		char tmp[32];

		snprintf(tmp, sizeof(tmp), "%.*s", (int)(len - 15 < 31 ? len - 15 : 31), p + 15);
		c->length = strtoull(tmp, NULL, 10);
		c->has_length = true;
	}
	return len;
}

/* Reads <Code> and <Message> of an error body into c. */
static void parse_error(struct call *c)
{
	const char *v;
	size_t n;

	c->code[0] = c->message[0] = '\0';
	if (c->resp.len == 0)
		return;
	if (st_xml_next(c->resp.data, c->resp.len, "Code", &v, &n) != NULL)
		snprintf(c->code, sizeof(c->code), "%.*s", (int)(n < 63 ? n : 63), v);
	if (st_xml_next(c->resp.data, c->resp.len, "Message", &v, &n) != NULL)
		snprintf(c->message, sizeof(c->message), "%.*s", (int)(n < 159 ? n : 159), v);
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) != 0)
		;
}

/* Signs and sends c once; 0 when the exchange completed (any status). */
static int attempt(struct st_io *io, struct call *c, CURLcode *cc, struct fl_err *err)
{
	struct s3 *s = io->impl;
	const struct st_libcurl *cu = s->cu;
	struct fl_buf url = FL_BUF_INIT, path = FL_BUF_INIT, auth = FL_BUF_INIT, line = FL_BUF_INIT;
	struct st_sigv4_header h[8];
	struct curl_slist *list = NULL, *grown;
	char host[512], date[17];
	size_t nh = 0;
	CURL *e = NULL;
	int rc = -1;

	if (st_s3_target(&io->profile, c->bucket, c->key, c->query, &url, &path, host, sizeof(host),
	                 err) != 0)
		goto out;
	st_sigv4_date((int64_t)time(NULL), date);
	h[nh++] = (struct st_sigv4_header){"host", host};
	h[nh++] = (struct st_sigv4_header){"x-amz-date", date};
	h[nh++] = (struct st_sigv4_header){"x-amz-content-sha256", "UNSIGNED-PAYLOAD"};
	if (s->creds.session_token[0] != '\0')
		h[nh++] = (struct st_sigv4_header){"x-amz-security-token", s->creds.session_token};
	if (c->content_md5 != NULL)
		h[nh++] = (struct st_sigv4_header){"content-md5", c->content_md5};
	if (c->has_body)
		h[nh++] = (struct st_sigv4_header){"content-type",
		                                   c->content_type ? c->content_type
		                                                   : "application/octet-stream"};
	if (c->if_none_match)
		h[nh++] = (struct st_sigv4_header){"if-none-match", "*"};
	if (c->range != NULL)
		h[nh++] = (struct st_sigv4_header){"range", c->range};
	struct st_sigv4_req sr = {
	        .method = c->method,
	        .path = path.data,
	        .query = c->query,
	        .headers = h,
	        .n_headers = nh,
	        .payload_hash = "UNSIGNED-PAYLOAD",
	        .region = io->profile.region,
	        .service = "s3",
	        .amz_date = date,
	        .access_key_id = s->creds.access_key_id,
	        .secret_access_key = s->creds.secret_access_key,
	};
	if (fl_buf_puts(&auth, "Authorization: ") != 0 ||
	    st_sigv4_authorization(&sr, &auth, err) != 0)
		goto out_nomem_or_err;
	/* Host comes from the URL; the others are sent as signed. */
	for (size_t i = 1; i < nh; i++) {
		fl_buf_reset(&line);
		if (fl_buf_printf(&line, "%s: %s", h[i].name, h[i].value) != 0 ||
		    (grown = cu->slist_append(list, line.data)) == NULL)
			goto nomem;
		list = grown;
	}
	if ((grown = cu->slist_append(list, auth.data)) == NULL)
		goto nomem;
	list = grown;
	if ((grown = cu->slist_append(list, "Expect:")) == NULL)
		goto nomem;
	list = grown;
	if (!c->has_body) {
		if ((grown = cu->slist_append(list, "Content-Type:")) == NULL)
			goto nomem;
		list = grown;
	}
	e = cu->easy_init();
	if (e == NULL)
		goto nomem;
	cu->easy_setopt(e, CURLOPT_SHARE, s->share);
	cu->easy_setopt(e, CURLOPT_URL, url.data);
	cu->easy_setopt(e, CURLOPT_HTTPHEADER, list);
	cu->easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	cu->easy_setopt(e, CURLOPT_CONNECTTIMEOUT, 10L);
	cu->easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
	cu->easy_setopt(e, CURLOPT_LOW_SPEED_TIME, 60L);
	cu->easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	cu->easy_setopt(e, CURLOPT_WRITEDATA, c);
	cu->easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	cu->easy_setopt(e, CURLOPT_HEADERDATA, c);
	cu->easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	if (strcmp(c->method, "HEAD") == 0) {
		cu->easy_setopt(e, CURLOPT_NOBODY, 1L);
	} else {
		cu->easy_setopt(e, CURLOPT_CUSTOMREQUEST, c->method);
		if (c->has_body) {
			cu->easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)c->body_len);
			cu->easy_setopt(e, CURLOPT_POSTFIELDS, c->body_len ? c->body : "");
		}
	}
	fl_buf_reset(&c->resp);
	c->too_large = false;
	c->etag[0] = '\0';
	c->has_length = false;
	c->status = 0;
	c->cu = cu;
	c->easy = e;
	*cc = cu->easy_perform(e);
	c->easy = NULL;
	cu->easy_getinfo(e, CURLINFO_RESPONSE_CODE, &c->status);
	if (*cc == CURLE_WRITE_ERROR && !c->too_large)
		fl_err_set(err, FL_ERR_NOMEM, "out of memory reading the answer");
	else if (*cc != CURLE_OK && *cc != CURLE_WRITE_ERROR)
		fl_err_set(err, FL_ERR_UNAVAILABLE, "cannot reach %.200s: %s",
		           io->profile.endpoint[0] ? io->profile.endpoint : host,
		           cu->easy_strerror(*cc));
	rc = 0;
	goto out;
nomem:
	fl_err_set(err, FL_ERR_NOMEM, "out of memory");
out_nomem_or_err:
out:
	cu->easy_cleanup(e);
	cu->slist_free_all(list);
	if (auth.data != NULL)
		memset(auth.data, 0, auth.len);
	fl_buf_free(&auth);
	fl_buf_free(&url);
	fl_buf_free(&path);
	fl_buf_free(&line);
	return rc;
}

/* Sends c with retries.  0 for a 2xx answer; otherwise err names the call,
 * its status and the store's error code. */
static int perform(struct st_io *io, struct call *c, struct fl_err *err)
{
	struct s3 *s = io->impl;
	CURLcode cc = CURLE_OK;
	const char *hint;

	if (fl_may_wait(err) != 0)
		return -1;
	if (s->creds_err.kind != FL_ERR_NONE) {
		*err = s->creds_err;
		return -1;
	}
	if (c->max_resp == 0)
		c->max_resp = CTRL_MAX;
	for (int i = 0;; i++) {
		uint32_t rnd = 0;

		fl_err_clear(err);
		if (attempt(io, c, &cc, err) != 0)
			return -1;
		c->code[0] = '\0';
		if (cc == CURLE_OK && c->status >= 300)
			parse_error(c);
		else if (cc == CURLE_OK && c->resp.len > 0 && strcmp(c->method, "POST") == 0 &&
		         st_xml_next(c->resp.data, c->resp.len, "Error", &(const char *){NULL},
		                     &(size_t){0}) != NULL &&
		         st_xml_next(c->resp.data, c->resp.len, "Code", &(const char *){NULL},
		                     &(size_t){0}) != NULL &&
		         strstr(c->resp.data, "<DeleteResult") == NULL) {
			/* CompleteMultipartUpload may fail inside a 200 answer. */
			parse_error(c);
			c->status = 500;
		}
		if (cc == CURLE_OK && c->status >= 200 && c->status < 300)
			return 0;
		if (i + 1 >= MAX_ATTEMPTS || !st_s3_retryable((int)cc, c->status, c->code))
			break;
		if (fl_random_bytes(&rnd, sizeof(rnd)) != 0)
			rnd = (uint32_t)time(NULL);
		sleep_ms(st_s3_backoff_ms(i, rnd));
	}
	if (cc == CURLE_WRITE_ERROR && c->too_large)
		return fl_err_set(err, FL_ERR_TOO_LARGE,
		                  "s3 %s s3://%s/%.200s: the answer is larger than %zu bytes",
		                  c->method, c->bucket, c->key, c->max_resp);
	if (cc != CURLE_OK)
		return fl_err_prefix(err, "s3 %s s3://%s/%.150s", c->method, c->bucket, c->key);
	hint = st_s3_error_hint(c->code);
	return fl_err_set(err, st_s3_error_kind(c->status, c->code),
	                  "s3 %s s3://%s/%.150s: %ld %s%s%s%s", c->method, c->bucket, c->key,
	                  c->status, c->code[0] ? c->code : "", hint || c->message[0] ? " (" : "",
	                  hint ? hint : c->message, hint || c->message[0] ? ")" : "");
}

static int split(const char *uri, char bucket[64], const char **key, struct fl_err *err)
{
	return st_s3_uri_split(uri, bucket, 64, key, err);
}

static int s3_write_new(struct st_io *io, const char *uri, const void *p, size_t n,
                        struct fl_err *err)
{
	char bucket[64];
	struct call c = {.method = "PUT", .query = "", .if_none_match = true, .has_body = true};
	int rc;

	if (split(uri, bucket, &c.key, err) != 0)
		return -1;
	c.bucket = bucket;
	c.body = p;
	c.body_len = n;
	rc = perform(io, &c, err);
	if (rc != 0 && err->kind == FL_ERR_ALREADY_EXISTS)
		fl_err_set(err, FL_ERR_ALREADY_EXISTS, "%.200s already exists", uri);
	fl_buf_free(&c.resp);
	return rc;
}

static int s3_read(struct st_io *io, const char *uri, size_t max, char **out, size_t *n,
                   struct fl_err *err)
{
	char bucket[64], *data;
	struct call c = {.method = "GET", .query = ""};

	if (split(uri, bucket, &c.key, err) != 0)
		return -1;
	c.bucket = bucket;
	c.max_resp = max;
	if (perform(io, &c, err) != 0) {
		if (err->kind == FL_ERR_TOO_LARGE)
			fl_err_set(err, FL_ERR_TOO_LARGE, "%.200s is larger than %zu bytes", uri,
			           max);
		fl_buf_free(&c.resp);
		return -1;
	}
	*n = c.resp.len;
	data = c.resp.len ? fl_buf_steal(&c.resp) : strdup("");
	if (data == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	*out = data;
	return 0;
}

static int s3_read_range(struct st_io *io, const char *uri, uint64_t off, size_t len, void *buf,
                         size_t *got, struct fl_err *err)
{
	char bucket[64], range[64];
	struct call c = {.method = "GET", .query = "", .range = range};
	int rc;

	if (split(uri, bucket, &c.key, err) != 0)
		return -1;
	c.bucket = bucket;
	snprintf(range, sizeof(range), "bytes=%llu-%llu", (unsigned long long)off,
	         (unsigned long long)(off + len - 1));
	c.max_resp = len;
	rc = perform(io, &c, err);
	if (rc != 0 && c.status == 416) { /* the range starts past the end */
		*got = 0;
		rc = 0;
	} else if (rc == 0 && c.status == 200 && off > 0) {
		rc = fl_err_set(err, FL_ERR_IO, "s3 GET %.200s: the store ignored the Range header",
		                uri);
	} else if (rc == 0) {
		*got = c.resp.len < len ? c.resp.len : len;
		memcpy(buf, c.resp.data ? c.resp.data : "", *got);
	}
	fl_buf_free(&c.resp);
	return rc;
}

static int s3_stat(struct st_io *io, const char *uri, uint64_t *size, struct fl_err *err)
{
	char bucket[64];
	struct call c = {.method = "HEAD", .query = ""};
	int rc;

	if (split(uri, bucket, &c.key, err) != 0)
		return -1;
	c.bucket = bucket;
	rc = perform(io, &c, err);
	if (rc == 0 && !c.has_length)
		rc = fl_err_set(err, FL_ERR_IO, "s3 HEAD %.200s: no Content-Length", uri);
	if (rc == 0)
		*size = c.length;
	fl_buf_free(&c.resp);
	return rc;
}

static void content_md5(const void *p, size_t n, char out[32])
{
	unsigned char h[16];
	unsigned int hl = 0;

	EVP_Digest(p, n, h, &hl, EVP_md5(), NULL);
	EVP_EncodeBlock((unsigned char *)out, h, 16);
}

/* One DeleteObjects request for up to DELETE_BATCH keys of one bucket. */
static int delete_batch(struct st_io *io, const char *bucket, const char *const *keys, size_t n,
                        struct fl_err *err)
{
	struct fl_buf body = FL_BUF_INIT;
	char md5[32];
	struct call c = {.method = "POST", .query = "delete=", .has_body = true};
	const char *v;
	size_t vl;
	int rc = -1;

	if (fl_buf_puts(&body, "<Delete xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
	                       "<Quiet>true</Quiet>") != 0)
		goto nomem;
	for (size_t i = 0; i < n; i++)
		if (fl_buf_puts(&body, "<Object><Key>") != 0 ||
		    st_xml_escape(&body, keys[i]) != 0 ||
		    fl_buf_puts(&body, "</Key></Object>") != 0)
			goto nomem;
	if (fl_buf_puts(&body, "</Delete>") != 0)
		goto nomem;
	content_md5(body.data, body.len, md5);
	c.bucket = bucket;
	c.key = "";
	c.body = body.data;
	c.body_len = body.len;
	c.content_type = "application/xml";
	c.content_md5 = md5;
	if (perform(io, &c, err) != 0)
		goto out;
	/* Quiet mode lists only the keys that failed. */
	if (c.resp.len > 0 && st_xml_next(c.resp.data, c.resp.len, "Error", &v, &vl) != NULL) {
		const char *k = "", *code = "";
		size_t kl = 0, cl = 0;

		if (st_xml_next(v, vl, "Key", &k, &kl) == NULL)
			kl = 0;
		if (st_xml_next(v, vl, "Code", &code, &cl) == NULL)
			cl = 0;
		fl_err_set(err,
		           strncmp(code, "AccessDenied", cl) == 0 && cl ? FL_ERR_FORBIDDEN
		                                                        : FL_ERR_IO,
		           "s3 DeleteObjects s3://%s/%.*s: %.*s", bucket,
		           (int)(kl < 150 ? kl : 150), k, (int)(cl < 60 ? cl : 60), code);
		goto out;
	}
	rc = 0;
	goto out;
nomem:
	fl_err_set(err, FL_ERR_NOMEM, "out of memory");
out:
	fl_buf_free(&body);
	fl_buf_free(&c.resp);
	return rc;
}

static int s3_delete_many(struct st_io *io, const char *const *uris, size_t n, struct fl_err *err)
{
	const char **keys = calloc(n < DELETE_BATCH ? n : DELETE_BATCH, sizeof(*keys));
	char bucket[64], b2[64];
	size_t i = 0;
	int rc = 0;

	if (keys == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	while (rc == 0 && i < n) {
		size_t k = 0;

		if (split(uris[i], bucket, &keys[0], err) != 0) {
			rc = -1;
			break;
		}
		for (k = 1, i++; i < n && k < DELETE_BATCH; i++, k++) {
			if (split(uris[i], b2, &keys[k], err) != 0) {
				rc = -1;
				break;
			}
			if (strcmp(b2, bucket) != 0)
				break;
		}
		if (rc != 0)
			break;
		if (k == 1) {
			struct call c = {
			        .method = "DELETE", .query = "", .bucket = bucket, .key = keys[0]};

			rc = perform(io, &c, err);
			if (rc != 0 && err->kind == FL_ERR_NOT_FOUND)
				rc = 0;
			fl_buf_free(&c.resp);
		} else {
			rc = delete_batch(io, bucket, keys, k, err);
		}
	}
	free(keys);
	return rc;
}

/* One page of ListObjectsV2 under prefix: fn per object; *next is the
 * continuation token (malloc'd) or NULL on the last page. */
struct list_ctx {
	const char *bucket;
	st_io_list_fn fn;
	void *arg;
	size_t *count;
	struct fl_buf uri;
	bool failed; /* fn said no: its error is the caller's, as it is */
};

/* st_s3_entry_fn: an object of the page as fn's URI. */
static int list_entry(void *arg, const char *key, uint64_t size, int64_t mtime_ms,
                      struct fl_err *err)
{
	struct list_ctx *lc = arg;

	fl_buf_reset(&lc->uri);
	if (fl_buf_printf(&lc->uri, "s3://%s/%s", lc->bucket, key) != 0)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	(*lc->count)++;
	if (lc->fn(lc->arg, lc->uri.data, size, mtime_ms, err) != 0) {
		lc->failed = true;
		return -1;
	}
	return 0;
}

static int list_page(struct st_io *io, const char *bucket, const char *prefix, const char *token,
                     st_io_list_fn fn, void *arg, char **next, size_t *count, struct fl_err *err)
{
	struct fl_buf q = FL_BUF_INIT;
	struct call c = {.method = "GET", .bucket = bucket, .key = "", .max_resp = LIST_MAX};
	struct list_ctx lc;
	int rc = -1;

	*next = NULL;
	*count = 0;
	if ((token != NULL &&
	     (fl_buf_puts(&q, "continuation-token=") != 0 ||
	      st_sigv4_encode(&q, token, strlen(token), 0) != 0 || fl_buf_puts(&q, "&") != 0)) ||
	    fl_buf_puts(&q, "list-type=2&prefix=") != 0 ||
	    st_sigv4_encode(&q, prefix, strlen(prefix), 0) != 0)
		goto nomem;
	c.query = q.data;
	if (perform(io, &c, err) != 0)
		goto out;
	lc = (struct list_ctx){.bucket = bucket, .fn = fn, .arg = arg, .count = count};
	rc = st_s3_list_parse(c.resp.data ? c.resp.data : "", c.resp.len, list_entry, &lc, next,
	                      err);
	fl_buf_free(&lc.uri);
	if (rc != 0 && !lc.failed)
		fl_err_prefix(err, "s3 ListObjectsV2 s3://%s", bucket);
	goto out;
nomem:
	fl_err_set(err, FL_ERR_NOMEM, "out of memory");
out:
	fl_buf_free(&q);
	fl_buf_free(&c.resp);
	return rc;
}

/* The key prefix for "everything under uri": key + "/" ("" at the bucket). */
static int tree_prefix(const char *uri, char bucket[64], struct fl_buf *prefix, const char **key,
                       struct fl_err *err)
{
	if (split(uri, bucket, key, err) != 0)
		return -1;
	if (fl_buf_puts(prefix, *key) != 0 ||
	    (prefix->len > 0 && prefix->data[prefix->len - 1] != '/' &&
	     fl_buf_puts(prefix, "/") != 0))
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	if (prefix->data == NULL && fl_buf_puts(prefix, "") != 0)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	return 0;
}

static int s3_list(struct st_io *io, const char *prefix_uri, st_io_list_fn fn, void *arg,
                   struct fl_err *err)
{
	struct fl_buf prefix = FL_BUF_INIT;
	char bucket[64], *token = NULL, *next = NULL;
	const char *key;
	uint64_t size;
	size_t count;
	int rc = -1;

	if (tree_prefix(prefix_uri, bucket, &prefix, &key, err) != 0)
		goto out;
	do {
		rc = list_page(io, bucket, prefix.data, token, fn, arg, &next, &count, err);
		free(token);
		token = next;
	} while (rc == 0 && token != NULL);
	if (rc == 0 && key[0] != '\0' && key[strlen(key) - 1] != '/') {
		struct fl_err e2 = {0};

		/* HEAD's Last-Modified is not parsed: the object counts as
		 * modified now, which never makes it look older than it is. */
		if (s3_stat(io, prefix_uri, &size, &e2) == 0)
			rc = fn(arg, prefix_uri, size, fl_now_ms(), err);
		else if (e2.kind != FL_ERR_NOT_FOUND)
			rc = (*err = e2, -1);
	}
out:
	free(token);
	fl_buf_free(&prefix);
	return rc;
}

/* Collects listed URIs for delete_tree. */
struct collect {
	char **uris;
	size_t n;
};

static int collect_one(void *arg, const char *uri, uint64_t size, int64_t mtime_ms,
                       struct fl_err *err)
{
	struct collect *c = arg;

	(void)size;
	(void)mtime_ms;
	c->uris[c->n] = strdup(uri);
	if (c->uris[c->n] == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	c->n++;
	return 0;
}

static int s3_delete_tree(struct st_io *io, const char *uri, struct fl_err *err)
{
	struct fl_buf prefix = FL_BUF_INIT;
	struct collect col = {0};
	char bucket[64], *next = NULL;
	const char *key;
	size_t count;
	int rc = -1;

	if (tree_prefix(uri, bucket, &prefix, &key, err) != 0)
		goto out;
	if (prefix.len == 0) {
		fl_err_set(err, FL_ERR_BAD_REQUEST, "refusing to delete the whole bucket %s",
		           bucket);
		goto out;
	}
	col.uris = calloc(DELETE_BATCH, sizeof(char *));
	if (col.uris == NULL) {
		fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		goto out;
	}
	/* Page by page from the start: each page is deleted before the next
	 * listing, so no continuation token outlives the keys it points past. */
	for (;;) {
		rc = list_page(io, bucket, prefix.data, NULL, collect_one, &col, &next, &count,
		               err);
		free(next);
		next = NULL;
		if (rc == 0 && col.n > 0)
			rc = s3_delete_many(io, (const char *const *)col.uris, col.n, err);
		for (size_t i = 0; i < col.n; i++)
			free(col.uris[i]);
		col.n = 0;
		if (rc != 0 || count == 0)
			break;
	}
	if (rc == 0 && key[0] != '\0' && key[strlen(key) - 1] != '/')
		rc = s3_delete_many(io, &uri, 1, err);
out:
	free(col.uris);
	fl_buf_free(&prefix);
	return rc;
}

static int s3_mkdirs(struct st_io *io, const char *uri, struct fl_err *err)
{
	(void)io;
	(void)uri;
	(void)err;
	return 0;
}

/* ---- streaming writer ---- */

struct s3_writer {
	struct st_io_writer w; /* first */
	struct st_io *io;
	char bucket[64];
	char *key;
	struct fl_buf buf; /* at most PART_SIZE bytes */
	char *upload_id; /* NULL until the first part */
	struct fl_buf parts; /* <Part>…</Part> of the parts sent */
	int part_no;
};

static void writer_free(struct s3_writer *sw)
{
	fl_buf_free(&sw->buf);
	fl_buf_free(&sw->parts);
	free(sw->upload_id);
	free(sw->key);
	st_io_release(sw->io);
	free(sw);
}

static int upload_query(struct s3_writer *sw, int part, struct fl_buf *q)
{
	fl_buf_reset(q);
	if ((part > 0 && fl_buf_printf(q, "partNumber=%d&", part) != 0) ||
	    fl_buf_puts(q, "uploadId=") != 0 ||
	    st_sigv4_encode(q, sw->upload_id, strlen(sw->upload_id), 0) != 0)
		return -1;
	return 0;
}

/* Sends the buffer as the next part, starting the upload when needed. */
static int flush_part(struct s3_writer *sw, struct fl_err *err)
{
	struct fl_buf q = FL_BUF_INIT;
	int rc = -1;

	if (sw->upload_id == NULL) {
		struct call c = {.method = "POST",
		                 .query = "uploads=",
		                 .bucket = sw->bucket,
		                 .key = sw->key,
		                 .has_body = true};
		const char *v;
		size_t vl;

		if (perform(sw->io, &c, err) != 0) {
			fl_buf_free(&c.resp);
			return -1;
		}
		if (c.resp.len == 0 ||
		    st_xml_next(c.resp.data, c.resp.len, "UploadId", &v, &vl) == NULL || vl == 0) {
			fl_buf_free(&c.resp);
			return fl_err_set(err, FL_ERR_IO,
			                  "s3 CreateMultipartUpload s3://%s/%.150s: no UploadId",
			                  sw->bucket, sw->key);
		}
		sw->upload_id = strndup(v, vl);
		fl_buf_free(&c.resp);
		if (sw->upload_id == NULL)
			return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	}
	sw->part_no++;
	if (upload_query(sw, sw->part_no, &q) != 0)
		goto nomem;
	struct call c = {.method = "PUT",
	                 .query = q.data,
	                 .bucket = sw->bucket,
	                 .key = sw->key,
	                 .has_body = true,
	                 .body = sw->buf.data,
	                 .body_len = sw->buf.len};
	if (perform(sw->io, &c, err) != 0)
		goto out;
	if (c.etag[0] == '\0') {
		fl_err_set(err, FL_ERR_IO, "s3 UploadPart s3://%s/%.150s: no ETag", sw->bucket,
		           sw->key);
		goto out;
	}
	if (fl_buf_printf(&sw->parts, "<Part><PartNumber>%d</PartNumber><ETag>", sw->part_no) !=
	            0 ||
	    st_xml_escape(&sw->parts, c.etag) != 0 ||
	    fl_buf_puts(&sw->parts, "</ETag></Part>") != 0)
		goto nomem;
	fl_buf_reset(&sw->buf);
	rc = 0;
	goto out;
nomem:
	fl_err_set(err, FL_ERR_NOMEM, "out of memory");
out:
	fl_buf_free(&c.resp);
	fl_buf_free(&q);
	return rc;
}

static int sw_write(void *ctx, const void *p, size_t n, struct fl_err *err)
{
	struct s3_writer *sw = ctx;
	const char *b = p;

	sw->w.bytes += n;
	while (n > 0) {
		size_t take = PART_SIZE - sw->buf.len < n ? PART_SIZE - sw->buf.len : n;

		if (fl_buf_append(&sw->buf, b, take) != 0)
			return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		b += take;
		n -= take;
		if (sw->buf.len == PART_SIZE && flush_part(sw, err) != 0)
			return -1;
	}
	return 0;
}

static void sw_abort(struct st_io_writer *w)
{
	struct s3_writer *sw = (struct s3_writer *)w;

	if (sw->upload_id != NULL) {
		struct fl_buf q = FL_BUF_INIT;
		struct fl_err ignored = {0};

		if (upload_query(sw, 0, &q) == 0) {
			struct call c = {.method = "DELETE",
			                 .query = q.data,
			                 .bucket = sw->bucket,
			                 .key = sw->key};

			if (perform(sw->io, &c, &ignored) != 0)
				ignored.kind = FL_ERR_NONE;
			fl_buf_free(&c.resp);
		}
		fl_buf_free(&q);
	}
	writer_free(sw);
}

static int sw_close(struct st_io_writer *w, struct fl_err *err)
{
	struct s3_writer *sw = (struct s3_writer *)w;
	struct fl_buf q = FL_BUF_INIT, body = FL_BUF_INIT;
	struct call c = {.bucket = sw->bucket, .key = sw->key, .has_body = true};
	int rc = -1;

	if (sw->upload_id == NULL) {
		c.method = "PUT";
		c.query = "";
		c.body = sw->buf.data;
		c.body_len = sw->buf.len;
		rc = perform(sw->io, &c, err);
		fl_buf_free(&c.resp);
		writer_free(sw);
		return rc;
	}
	if (sw->buf.len > 0 && flush_part(sw, err) != 0)
		goto fail;
	if (upload_query(sw, 0, &q) != 0 ||
	    fl_buf_puts(
	            &body,
	            "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">") !=
	            0 ||
	    fl_buf_append(&body, sw->parts.data, sw->parts.len) != 0 ||
	    fl_buf_puts(&body, "</CompleteMultipartUpload>") != 0) {
		fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		goto fail;
	}
	c.method = "POST";
	c.query = q.data;
	c.body = body.data;
	c.body_len = body.len;
	c.content_type = "application/xml";
	if (perform(sw->io, &c, err) != 0)
		goto fail;
	rc = 0;
	fl_buf_free(&c.resp);
	fl_buf_free(&q);
	fl_buf_free(&body);
	writer_free(sw);
	return rc;
fail:
	fl_buf_free(&c.resp);
	fl_buf_free(&q);
	fl_buf_free(&body);
	sw_abort(w);
	return -1;
}

static int s3_writer_open(struct st_io *io, const char *uri, struct st_io_writer **out,
                          struct fl_err *err)
{
	struct s3_writer *sw = calloc(1, sizeof(*sw));
	const char *key;

	if (sw == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	if (split(uri, sw->bucket, &key, err) != 0) {
		free(sw);
		return -1;
	}
	sw->key = strdup(key);
	if (sw->key == NULL) {
		free(sw);
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	}
	st_io_retain(io);
	sw->io = io;
	sw->w.sink.write = sw_write;
	sw->w.sink.ctx = sw;
	sw->w.close = sw_close;
	sw->w.abort = sw_abort;
	*out = &sw->w;
	return 0;
}

static void s3_free(struct st_io *io)
{
	struct s3 *s = io->impl;

	s->cu->share_cleanup(s->share);
	for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_destroy(&s->locks[i]);
	OPENSSL_cleanse(&s->creds, sizeof(s->creds));
	free(s);
}

static const struct st_io_ops s3_ops = {
        .write_new = s3_write_new,
        .read = s3_read,
        .read_range = s3_read_range,
        .stat = s3_stat,
        .delete_many = s3_delete_many,
        .list = s3_list,
        .delete_tree = s3_delete_tree,
        .mkdirs = s3_mkdirs,
        .writer_open = s3_writer_open,
        .free = s3_free,
};

int st_io_s3_init(struct st_io *io, const struct st_creds *creds, struct fl_err *err)
{
	struct s3 *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	s->cu = st_libcurl_load(err);
	if (s->cu == NULL) {
		free(s);
		return -1;
	}
	for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_init(&s->locks[i], NULL);
	s->share = s->cu->share_init();
	if (s->share == NULL) {
		free(s);
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	}
	s->cu->share_setopt(s->share, CURLSHOPT_LOCKFUNC, share_lock);
	s->cu->share_setopt(s->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
	s->cu->share_setopt(s->share, CURLSHOPT_USERDATA, s);
	s->cu->share_setopt(s->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
	s->cu->share_setopt(s->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
	if (creds != NULL)
		s->creds = *creds;
	else if (st_profile_credentials(&io->profile, &s->creds, &s->creds_err) != 0 &&
	         s->creds_err.kind == FL_ERR_NOMEM) {
		*err = s->creds_err;
		s3_free(&(struct st_io){.impl = s});
		return -1;
	}
	io->ops = &s3_ops;
	io->impl = s;
	return 0;
}
