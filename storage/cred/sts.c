/* sts.c - AssumeRole: a form POST (Action=AssumeRole&Version=2011-06-15&
 * RoleArn&RoleSessionName&DurationSeconds[&Policy][&ExternalId]) signed for
 * service "sts", and the <Credentials> of its XML answer. */
#include "sts.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "io/libcurl.h"
#include "io/s3_int.h"
#include "io/sigv4.h"
#include "pct.h"
#include "signcheck.h"

#define STS_MAX_RESPONSE (64u << 10)

int64_t st_iso8601_ms(const char *s)
{
	struct tm tm;
	int y, mo, d, h, mi, sec, n = 0;
	int64_t ms = 0;
	const char *p;

	if (s == NULL ||
	    sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6 || n != 19)
		return -1;
	p = s + n;
	if (*p == '.') {
		int digits = 0;

		for (p++; *p >= '0' && *p <= '9'; p++, digits++)
			if (digits < 3)
				ms = ms * 10 + (*p - '0');
		if (digits == 0)
			return -1;
		for (; digits < 3; digits++)
			ms *= 10;
	}
	if (strcmp(p, "Z") != 0 && strcmp(p, "+00:00") != 0)
		return -1;
	if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
		return -1;
	memset(&tm, 0, sizeof(tm));
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	return (int64_t)timegm(&tm) * 1000 + ms;
}

int st_xml_text(const char *xml, size_t n, const char *tag, char *out, size_t cap,
                const char **next, struct fl_err *err)
{
	struct fl_buf b = FL_BUF_INIT;
	const char *v = NULL, *after;
	size_t vl = 0;
	int rc = -1;

	after = st_xml_next(xml, n, tag, &v, &vl);
	if (after == NULL)
		return 0;
	if (next != NULL)
		*next = after;
	if (memchr(v, '<', vl) != NULL) {
		fl_err_set(err, FL_ERR_BAD_REQUEST, "XML element <%s> holds markup, not text", tag);
		goto out;
	}
	if (st_xml_unescape(&b, v, vl) != 0 || b.len >= cap || memchr(b.data, '\0', b.len)) {
		fl_err_set(err, FL_ERR_BAD_REQUEST,
		           "XML element <%s>: a bad entity or more than %zu bytes", tag, cap - 1);
		goto out;
	}
	memcpy(out, b.data, b.len + 1);
	rc = 1;
out:
	fl_buf_free(&b);
	return rc;
}

static int first(const char *xml, size_t n, const char *tag, char *out, size_t cap,
                 struct fl_err *err)
{
	return st_xml_text(xml, n, tag, out, cap, NULL, err);
}

int st_sts_parse(const char *xml, size_t n, struct st_sts_creds *out, struct fl_err *err)
{
	struct st_sts_creds *c = calloc(1, sizeof(*c));
	char code[128], msg[200], exp[64];
	int rc = -1;

	if (c == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	if (first(xml, n, "Code", code, sizeof(code), err) == 1) {
		if (first(xml, n, "Message", msg, sizeof(msg), err) != 1)
			msg[0] = '\0';
		fl_err_set(err,
		           strcmp(code, "AccessDenied") == 0 ? FL_ERR_FORBIDDEN
		                                             : FL_ERR_BAD_REQUEST,
		           "STS AssumeRole: %s: %s", code, msg);
		goto out;
	}
	/* The credentials are the only elements of these names in the answer. */
	if (first(xml, n, "AccessKeyId", c->access_key_id, sizeof(c->access_key_id), err) != 1 ||
	    first(xml, n, "SecretAccessKey", c->secret_access_key, sizeof(c->secret_access_key),
	          err) != 1 ||
	    first(xml, n, "SessionToken", c->session_token, sizeof(c->session_token), err) != 1 ||
	    first(xml, n, "Expiration", exp, sizeof(exp), err) != 1 ||
	    (c->expires_at_ms = st_iso8601_ms(exp)) < 0 || c->access_key_id[0] == '\0' ||
	    c->secret_access_key[0] == '\0') {
		fl_err_set(err, FL_ERR_INTERNAL,
		           "STS AssumeRole answer lacks AccessKeyId, SecretAccessKey, SessionToken "
		           "or a valid Expiration");
		goto out;
	}
	*out = *c;
	rc = 0;
out:
	memset(c, 0, sizeof(*c));
	free(c);
	return rc;
}

static size_t collect(char *p, size_t size, size_t n, void *arg)
{
	struct fl_buf *b = arg;

	if (b->len + size * n > STS_MAX_RESPONSE || fl_buf_append(b, p, size * n) != 0)
		return 0;
	return size * n;
}

/* Appends "&name=" and value form-encoded. */
static int form(struct fl_buf *b, const char *name, const char *value)
{
	size_t n = strlen(value), cap = 3 * n + 1;
	char *enc = malloc(cap);
	int rc = -1;

	if (enc != NULL && fl_pct_encode(value, n, enc, cap) >= 0 &&
	    fl_buf_printf(b, "&%s=%s", name, enc) == 0)
		rc = 0;
	free(enc);
	return rc;
}

static bool session_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n < 2 || n > 64)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || strchr("_+=,.@-", *s) != NULL))
			return false;
	return true;
}

int st_sts_assume_role(const struct st_sts_assume *a, struct st_sts_creds *out, struct fl_err *err)
{
	struct fl_buf body = FL_BUF_INIT, auth = FL_BUF_INIT, resp = FL_BUF_INIT,
	              line = FL_BUF_INIT;
	struct st_sigv4_header h[4];
	struct curl_slist *hl = NULL;
	struct st_url u;
	char date[17], hash[65];
	struct st_sigv4_req req;
	struct st_sts_creds got;
	size_t nh = 0;
	const struct st_libcurl *cu;
	CURL *easy = NULL;
	CURLcode cc;
	long status = 0;
	int rc = -1;

	if (fl_may_wait(err) != 0)
		return -1;
	if (a->role_arn == NULL || strncmp(a->role_arn, "arn:", 4) != 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "sts-role-arn must be an ARN");
	if (!session_name_ok(a->session_name))
		return fl_err_set(
		        err, FL_ERR_BAD_REQUEST,
		        "role session name must have 2-64 characters of [A-Za-z0-9_+=,.@-]");
	if (a->duration_s < 900 || a->duration_s > 43200)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "credential lifetime must be 900 to 43200 seconds, got %lld",
		                  (long long)a->duration_s);
	if (st_url_split(a->endpoint, &u, err) != 0)
		return fl_err_prefix(err, "sts-endpoint");
	if ((cu = st_libcurl_load(err)) == NULL)
		return fl_err_prefix(err, "sts");
	if (fl_buf_puts(&body, "Action=AssumeRole&Version=2011-06-15") != 0 ||
	    form(&body, "RoleArn", a->role_arn) != 0 ||
	    form(&body, "RoleSessionName", a->session_name) != 0 ||
	    fl_buf_printf(&body, "&DurationSeconds=%lld", (long long)a->duration_s) != 0 ||
	    (a->policy != NULL && form(&body, "Policy", a->policy) != 0) ||
	    (a->external_id != NULL && form(&body, "ExternalId", a->external_id) != 0))
		goto nomem;
	st_sigv4_date(fl_now_ms() / 1000, date);
	st_sigv4_sha256_hex(body.data, body.len, hash);
	h[nh++] = (struct st_sigv4_header){"content-type",
	                                   "application/x-www-form-urlencoded; charset=utf-8"};
	h[nh++] = (struct st_sigv4_header){"host", u.host};
	h[nh++] = (struct st_sigv4_header){"x-amz-date", date};
	if (a->creds->session_token[0] != '\0')
		h[nh++] = (struct st_sigv4_header){"x-amz-security-token", a->creds->session_token};
	req = (struct st_sigv4_req){.method = "POST",
	                            .path = u.path,
	                            .query = u.query,
	                            .headers = h,
	                            .n_headers = nh,
	                            .payload_hash = hash,
	                            .region = a->region,
	                            .service = "sts",
	                            .amz_date = date,
	                            .access_key_id = a->creds->access_key_id,
	                            .secret_access_key = a->creds->secret_access_key,
	                            .normalize_path = true};
	if (st_sigv4_authorization(&req, &auth, err) != 0)
		goto out;
	for (size_t i = 0; i < nh; i++) {
		if (strcmp(h[i].name, "host") == 0)
			continue;
		fl_buf_reset(&line);
		if (fl_buf_printf(&line, "%s: %s", h[i].name, h[i].value) != 0 ||
		    (hl = cu->slist_append(hl, line.data)) == NULL)
			goto nomem;
	}
	fl_buf_reset(&line);
	if (fl_buf_printf(&line, "Authorization: %s", auth.data) != 0 ||
	    (hl = cu->slist_append(hl, line.data)) == NULL ||
	    (hl = cu->slist_append(hl, "Accept: application/xml")) == NULL ||
	    (hl = cu->slist_append(hl, "Expect:")) == NULL)
		goto nomem;
	easy = cu->easy_init();
	if (easy == NULL)
		goto nomem;
	cu->easy_setopt(easy, CURLOPT_URL, a->endpoint);
	cu->easy_setopt(easy, CURLOPT_POST, 1L);
	cu->easy_setopt(easy, CURLOPT_POSTFIELDS, body.data);
	cu->easy_setopt(easy, CURLOPT_POSTFIELDSIZE, (long)body.len);
	cu->easy_setopt(easy, CURLOPT_HTTPHEADER, hl);
	cu->easy_setopt(easy, CURLOPT_WRITEFUNCTION, collect);
	cu->easy_setopt(easy, CURLOPT_WRITEDATA, &resp);
	cu->easy_setopt(easy, CURLOPT_TIMEOUT, (long)(a->timeout_s > 0 ? a->timeout_s : 10));
	cu->easy_setopt(easy, CURLOPT_CONNECTTIMEOUT, 5L);
	cu->easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
	cu->easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
	cc = cu->easy_perform(easy);
	if (cc != CURLE_OK) {
		fl_err_set(err, FL_ERR_UNAVAILABLE, "STS %s unreachable: %s", u.host,
		           cu->easy_strerror(cc));
		goto out;
	}
	cu->easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
	if (st_sts_parse(resp.data ? resp.data : "", resp.len, &got, err) != 0) {
		if (status >= 500)
			err->kind = FL_ERR_UNAVAILABLE;
		fl_err_prefix(err, "HTTP %ld", status);
		goto out;
	}
	if (status != 200) {
		fl_err_set(err, FL_ERR_INTERNAL, "STS AssumeRole answered HTTP %ld", status);
		goto out;
	}
	*out = got;
	rc = 0;
	goto out;
nomem:
	fl_err_set(err, FL_ERR_NOMEM, "out of memory");
out:
	if (easy != NULL)
		cu->easy_cleanup(easy);
	cu->slist_free_all(hl);
	if (auth.data != NULL)
		memset(auth.data, 0, auth.len);
	if (resp.data != NULL)
		memset(resp.data, 0, resp.len);
	fl_buf_free(&auth);
	fl_buf_free(&resp);
	fl_buf_free(&line);
	fl_buf_free(&body);
	memset(&got, 0, sizeof(got));
	return rc;
}
