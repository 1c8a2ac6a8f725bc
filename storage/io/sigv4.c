/* sigv4.c - AWS Signature Version 4 (see sigv4.h).
 *
 * Canonical request (one field a line):
 *   METHOD \n CanonicalURI \n CanonicalQuery \n CanonicalHeaders \n
 *   SignedHeaders \n PayloadHash
 * CanonicalURI: S3 keeps the wire path; other services remove dot segments
 * and empty segments and percent-encode the encoded path once more.
 * CanonicalQuery: name=value pairs, each decoded then encoded with the
 * unreserved set (A-Z a-z 0-9 - . _ ~), sorted by name then value (bytes).
 * CanonicalHeaders: lowercase names sorted, "name:value\n" with values
 * trimmed and inner runs of spaces collapsed; repeated names joined by ','.
 * Signing key: HMAC chain "AWS4"+secret → date → region → service →
 * "aws4_request"; signature = hex(HMAC(key, string to sign)). */
#include "sigv4.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "libcrypto.h"
#include "pct.h"

static int nomem(struct fl_err *err)
{
	return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
}

void st_sigv4_sha256_hex(const void *p, size_t n, char out[65])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char h[32];
	unsigned int hl = 0;

	memset(h, 0, sizeof(h));
	EVP_Digest(p, n, h, &hl, EVP_sha256(), NULL);
	for (int i = 0; i < 32; i++) {
		out[2 * i] = hex[h[i] >> 4];
		out[2 * i + 1] = hex[h[i] & 15];
	}
	out[64] = '\0';
}

void st_sigv4_date(int64_t t, char out[17])
{
	time_t tt = (time_t)t;
	struct tm tm;

	gmtime_r(&tt, &tm);
	strftime(out, 17, "%Y%m%dT%H%M%SZ", &tm);
}

int st_sigv4_encode(struct fl_buf *b, const char *s, size_t n, int keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";

	if (fl_buf_reserve(b, 3 * n + 1) != 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '.' || c == '_' || c == '~' || (keep_slash && c == '/')) {
			b->data[b->len++] = (char)c;
		} else {
			b->data[b->len++] = '%';
			b->data[b->len++] = hex[c >> 4];
			b->data[b->len++] = hex[c & 15];
		}
	}
	b->data[b->len] = '\0';
	return 0;
}

/* Decodes n bytes at s (strict) and appends them encoded once (twice when
 * twice is set). */
static int put_reencoded(struct fl_buf *b, const char *s, size_t n, bool twice, struct fl_err *err)
{
	char *d = malloc(n + 1);
	struct fl_buf once = FL_BUF_INIT;
	size_t dl;
	int rc = -1;

	if (d == NULL)
		return nomem(err);
	if (fl_pct_decode(s, n, false, d, &dl, err) != 0)
		goto out;
	if (!twice) {
		if (st_sigv4_encode(b, d, dl, 0) != 0)
			goto nomem;
	} else if (st_sigv4_encode(&once, d, dl, 0) != 0 ||
	           st_sigv4_encode(b, once.data, once.len, 0) != 0) {
		goto nomem;
	}
	rc = 0;
	goto out;
nomem:
	nomem(err);
out:
	fl_buf_free(&once);
	free(d);
	return rc;
}

/* Non-S3 canonical URI: dot segments and empty segments removed, a trailing
 * slash kept, each segment encoded again. */
static int canonical_path(struct fl_buf *b, const char *path, struct fl_err *err)
{
	const char *segs[128];
	size_t lens[128];
	int n = 0;
	size_t len = strlen(path);
	bool trailing = len > 1 && path[len - 1] == '/';
	const char *p = path;

	while (*p != '\0') {
		const char *e;
		size_t sl;

		while (*p == '/')
			p++;
		if (*p == '\0')
			break;
		e = strchr(p, '/');
		sl = e ? (size_t)(e - p) : strlen(p);
		if (sl == 1 && p[0] == '.') {
			/* nothing */
		} else if (sl == 2 && p[0] == '.' && p[1] == '.') {
			if (n > 0)
				n--;
		} else {
			if (n == 128)
				return fl_err_set(err, FL_ERR_TOO_LARGE,
				                  "request path has more than 128 segments");
			segs[n] = p;
			lens[n++] = sl;
		}
		p += sl;
	}
	if (n == 0)
		return fl_buf_puts(b, "/") == 0 ? 0 : nomem(err);
	for (int i = 0; i < n; i++) {
		if (fl_buf_puts(b, "/") != 0)
			return nomem(err);
		if (put_reencoded(b, segs[i], lens[i], true, err) != 0)
			return -1;
	}
	if (trailing && fl_buf_puts(b, "/") != 0)
		return nomem(err);
	return 0;
}

struct qparam {
	char *name; /* encoded */
	char *value; /* encoded */
};

static int qparam_cmp(const void *a, const void *b)
{
	const struct qparam *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c != 0 ? c : strcmp(x->value, y->value);
}

static int canonical_query(struct fl_buf *b, const char *query, struct fl_err *err)
{
	struct qparam q[ST_SIGV4_MAX_QUERY_PARAMS];
	struct fl_buf t = FL_BUF_INIT;
	const char *p = query;
	int n = 0, rc = -1;

	while (p != NULL && *p != '\0') {
		const char *amp = strchr(p, '&');
		size_t len = amp ? (size_t)(amp - p) : strlen(p);
		const char *eq = memchr(p, '=', len);
		size_t nl = eq ? (size_t)(eq - p) : len;

		if (len > 0) {
			if (n == ST_SIGV4_MAX_QUERY_PARAMS) {
				fl_err_set(err, FL_ERR_TOO_LARGE,
				           "query has more than %d parameters",
				           ST_SIGV4_MAX_QUERY_PARAMS);
				goto out;
			}
			q[n].name = q[n].value = NULL;
			n++;
			fl_buf_reset(&t);
			if (put_reencoded(&t, p, nl, false, err) != 0)
				goto out;
			q[n - 1].name = strdup(t.len ? t.data : "");
			fl_buf_reset(&t);
			if (eq != NULL && put_reencoded(&t, eq + 1, len - nl - 1, false, err) != 0)
				goto out;
			q[n - 1].value = strdup(t.len ? t.data : "");
			if (q[n - 1].name == NULL || q[n - 1].value == NULL) {
				nomem(err);
				goto out;
			}
		}
		p = amp ? amp + 1 : NULL;
	}
	if (n > 1)
		qsort(q, (size_t)n, sizeof(q[0]), qparam_cmp);
	for (int i = 0; i < n; i++)
		if (fl_buf_printf(b, "%s%s=%s", i ? "&" : "", q[i].name, q[i].value) != 0) {
			nomem(err);
			goto out;
		}
	rc = 0;
out:
	for (int i = 0; i < n; i++) {
		free(q[i].name);
		free(q[i].value);
	}
	fl_buf_free(&t);
	return rc;
}

/* Appends v trimmed, with inner runs of spaces and tabs as one space. */
static int put_trimmed(struct fl_buf *b, const char *v)
{
	bool space = false, any = false;

	for (; *v != '\0'; v++) {
		if (*v == ' ' || *v == '\t') {
			space = any;
			continue;
		}
		if (space && fl_buf_append(b, " ", 1) != 0)
			return -1;
		if (fl_buf_append(b, v, 1) != 0)
			return -1;
		space = false;
		any = true;
	}
	return 0;
}

static int put_lower(struct fl_buf *b, const char *s)
{
	for (; *s != '\0'; s++) {
		char c = (*s >= 'A' && *s <= 'Z') ? (char)(*s - 'A' + 'a') : *s;

		if (fl_buf_append(b, &c, 1) != 0)
			return -1;
	}
	return 0;
}

static int canonical_headers(const struct st_sigv4_req *req, struct fl_buf *b,
                             struct fl_buf *signed_headers, struct fl_err *err)
{
	size_t idx[ST_SIGV4_MAX_HEADERS];
	size_t n = req->n_headers;

	if (n > ST_SIGV4_MAX_HEADERS)
		return fl_err_set(err, FL_ERR_TOO_LARGE, "more than %d headers to sign",
		                  ST_SIGV4_MAX_HEADERS);
	for (size_t i = 0; i < n; i++) {
		const char *nm = req->headers[i].name;

		if (nm == NULL || nm[0] == '\0' || req->headers[i].value == NULL)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "header %zu has no name or value", i);
		for (const char *c = nm; *c; c++)
			if (*c <= ' ' || *c == ':' || *c == 127)
				return fl_err_set(err, FL_ERR_BAD_REQUEST,
				                  "header name '%.60s' is not a token", nm);
		for (const char *c = req->headers[i].value; *c; c++)
			if (*c == '\r' || *c == '\n')
				return fl_err_set(err, FL_ERR_BAD_REQUEST,
				                  "header %.60s has a line break in its value", nm);
		idx[i] = i;
	}
	/* A stable insertion sort of indices by lowercase name: repeated names
	 * keep their order, and no comparator needs shared state. */
	for (size_t i = 1; i < n; i++) {
		size_t v = idx[i], j = i;

		while (j > 0 &&
		       strcasecmp(req->headers[idx[j - 1]].name, req->headers[v].name) > 0) {
			idx[j] = idx[j - 1];
			j--;
		}
		idx[j] = v;
	}
	for (size_t i = 0; i < n;) {
		const char *name = req->headers[idx[i]].name;
		size_t j = i;

		if ((signed_headers->len > 0 && fl_buf_puts(signed_headers, ";") != 0) ||
		    put_lower(signed_headers, name) != 0 || put_lower(b, name) != 0 ||
		    fl_buf_puts(b, ":") != 0)
			return nomem(err);
		for (; j < n && strcasecmp(req->headers[idx[j]].name, name) == 0; j++)
			if ((j > i && fl_buf_puts(b, ",") != 0) ||
			    put_trimmed(b, req->headers[idx[j]].value) != 0)
				return nomem(err);
		if (fl_buf_puts(b, "\n") != 0)
			return nomem(err);
		i = j;
	}
	return 0;
}

int st_sigv4_canonical(const struct st_sigv4_req *req, struct fl_buf *creq,
                       struct fl_buf *signed_headers, struct fl_err *err)
{
	const char *path = req->path && req->path[0] ? req->path : "/";

	if (req->method == NULL || req->method[0] == '\0' || req->payload_hash == NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "request to sign has no method");
	if (path[0] != '/')
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "request path must start with '/'");
	if (fl_buf_printf(creq, "%s\n", req->method) != 0)
		return nomem(err);
	if (!req->normalize_path) {
		char *d = malloc(strlen(path) + 1);
		size_t dl;
		int bad = d == NULL ? nomem(err)
		                    : fl_pct_decode(path, strlen(path), false, d, &dl, err);

		free(d);
		if (bad != 0)
			return fl_err_prefix(err, "request path");
		if (fl_buf_puts(creq, path) != 0)
			return nomem(err);
	} else if (canonical_path(creq, path, err) != 0) {
		return -1;
	}
	if (fl_buf_puts(creq, "\n") != 0 || canonical_query(creq, req->query, err) != 0 ||
	    fl_buf_puts(creq, "\n") != 0 || canonical_headers(req, creq, signed_headers, err) != 0)
		return err->kind != FL_ERR_NONE ? -1 : nomem(err);
	if (fl_buf_printf(creq, "\n%s\n%s", signed_headers->data ? signed_headers->data : "",
	                  req->payload_hash) != 0)
		return nomem(err);
	return 0;
}

static int valid_date(const char *amz_date)
{
	if (amz_date == NULL || strlen(amz_date) != 16 || amz_date[8] != 'T' || amz_date[15] != 'Z')
		return 0;
	for (int i = 0; i < 15; i++)
		if (i != 8 && (amz_date[i] < '0' || amz_date[i] > '9'))
			return 0;
	return 1;
}

int st_sigv4_string_to_sign(const struct st_sigv4_req *r, const char *creq, size_t n,
                            struct fl_buf *out, struct fl_err *err)
{
	char h[65];

	if (!valid_date(r->amz_date))
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "sigv4: x-amz-date must be YYYYMMDDTHHMMSSZ");
	st_sigv4_sha256_hex(creq, n, h);
	if (fl_buf_printf(out, "AWS4-HMAC-SHA256\n%s\n%.8s/%s/%s/aws4_request\n%s", r->amz_date,
	                  r->amz_date, r->region, r->service, h) != 0)
		return nomem(err);
	return 0;
}

static int hmac(const void *key, size_t kl, const char *msg, size_t ml, unsigned char out[32])
{
	unsigned int ol = 0;

	return HMAC(EVP_sha256(), key, (int)kl, (const unsigned char *)msg, ml, out, &ol) != NULL &&
	                       ol == 32
	               ? 0
	               : -1;
}

int st_sigv4_authorization(const struct st_sigv4_req *r, struct fl_buf *out, struct fl_err *err)
{
	struct fl_buf creq = FL_BUF_INIT, sh = FL_BUF_INIT, sts = FL_BUF_INIT, k = FL_BUF_INIT;
	unsigned char key[32], sig[32];
	char date[9], hex[65];
	int rc = -1;

	if (r->access_key_id == NULL || r->secret_access_key == NULL || r->region == NULL ||
	    r->service == NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "sigv4: no credentials or scope");
	if (st_sigv4_canonical(r, &creq, &sh, err) != 0 ||
	    st_sigv4_string_to_sign(r, creq.data, creq.len, &sts, err) != 0)
		goto out;
	memcpy(date, r->amz_date, 8);
	date[8] = '\0';
	if (fl_buf_printf(&k, "AWS4%s", r->secret_access_key) != 0) {
		nomem(err);
		goto out;
	}
	if (hmac(k.data, k.len, date, 8, key) != 0 ||
	    hmac(key, 32, r->region, strlen(r->region), key) != 0 ||
	    hmac(key, 32, r->service, strlen(r->service), key) != 0 ||
	    hmac(key, 32, "aws4_request", 12, key) != 0 ||
	    hmac(key, 32, sts.data, sts.len, sig) != 0) {
		fl_err_set(err, FL_ERR_INTERNAL, "sigv4: HMAC-SHA256 failed");
		goto out;
	}
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", sig[i]);
	if (fl_buf_printf(out,
	                  "AWS4-HMAC-SHA256 Credential=%s/%s/%s/%s/aws4_request, SignedHeaders=%s, "
	                  "Signature=%s",
	                  r->access_key_id, date, r->region, r->service, sh.data ? sh.data : "",
	                  hex) != 0) {
		nomem(err);
		goto out;
	}
	rc = 0;
out:
	OPENSSL_cleanse(key, sizeof(key));
	if (k.data != NULL)
		OPENSSL_cleanse(k.data, k.len);
	fl_buf_free(&k);
	fl_buf_free(&creq);
	fl_buf_free(&sh);
	fl_buf_free(&sts);
	return rc;
}
