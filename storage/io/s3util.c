/* s3util.c - addressing, XML scanning, error mapping and retry policy for
 * the S3 backend (see s3_int.h).
 *
 * The XML scanner is deliberately small: S3 answers are flat documents and
 * Floe reads a handful of leaf elements from them (Code, Message, Key,
 * Size, UploadId, IsTruncated, NextContinuationToken).  It searches for
 * literal open and close tags within the given bounds, so it never reads
 * past the buffer and never recurses; nested elements of the same name do
 * not occur in the answers it reads. */
#include "s3_int.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sigv4.h"

int st_s3_target(const struct st_profile *p, const char *bucket, const char *key, const char *query,
                 struct fl_buf *url, struct fl_buf *path, char *host, size_t host_cap,
                 struct fl_err *err)
{
	char aws[128];
	const char *ep = p->endpoint, *h, *scheme_end;
	size_t scheme_len;
	int n;

	if (ep[0] == '\0') {
		snprintf(aws, sizeof(aws), "https://s3.%s.amazonaws.com", p->region);
		ep = aws;
	}
	scheme_end = strstr(ep, "://");
	if (scheme_end == NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "s3: endpoint %.200s has no scheme", ep);
	scheme_len = (size_t)(scheme_end - ep) + 3;
	h = scheme_end + 3;
	if (p->path_style)
		n = snprintf(host, host_cap, "%s", h);
	else
		n = snprintf(host, host_cap, "%s.%s", bucket, h);
	if (n < 0 || (size_t)n >= host_cap)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "s3: host name too long");
	fl_buf_reset(path);
	fl_buf_reset(url);
	if (fl_buf_puts(path, "/") != 0 ||
	    (p->path_style &&
	     (fl_buf_puts(path, bucket) != 0 || (key[0] != '\0' && fl_buf_puts(path, "/") != 0))) ||
	    st_sigv4_encode(path, key, strlen(key), 1) != 0 ||
	    fl_buf_append(url, ep, scheme_len) != 0 || fl_buf_puts(url, host) != 0 ||
	    fl_buf_append(url, path->data, path->len) != 0 ||
	    (query[0] != '\0' && fl_buf_printf(url, "?%s", query) != 0))
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	return 0;
}

const char *st_xml_next(const char *s, size_t n, const char *tag, const char **val, size_t *vlen)
{
	const char *end = s + n, *p = s;
	size_t tl = strlen(tag);

	while (p < end) {
		const char *lt = memchr(p, '<', (size_t)(end - p)), *gt, *body, *close;

		if (lt == NULL || (size_t)(end - lt) < tl + 2)
			return NULL;
		p = lt + 1;
		if (memcmp(p, tag, tl) != 0 || (p[tl] != '>' && p[tl] != ' ' && p[tl] != '/' &&
		                                p[tl] != '\t' && p[tl] != '\n'))
			continue;
		gt = memchr(p, '>', (size_t)(end - p));
		if (gt == NULL)
			return NULL;
		if (gt[-1] == '/') { /* <tag/> */
			*val = gt + 1;
			*vlen = 0;
			return gt + 1;
		}
		body = gt + 1;
		for (close = body; close < end;) {
			const char *c = memchr(close, '<', (size_t)(end - close));

			if (c == NULL || (size_t)(end - c) < tl + 3)
				return NULL;
			if (c[1] == '/' && memcmp(c + 2, tag, tl) == 0 && c[2 + tl] == '>') {
				*val = body;
				*vlen = (size_t)(c - body);
				return c + 3 + tl;
			}
			close = c + 1;
		}
		return NULL;
	}
	return NULL;
}

static int utf8_put(struct fl_buf *out, unsigned long cp)
{
	char b[4];
	size_t n;

	if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return -1;
	if (cp < 0x80) {
		b[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		b[0] = (char)(0xC0 | (cp >> 6));
		b[1] = (char)(0x80 | (cp & 0x3F));
		n = 2;
	} else if (cp < 0x10000) {
		b[0] = (char)(0xE0 | (cp >> 12));
		b[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		b[2] = (char)(0x80 | (cp & 0x3F));
		n = 3;
	} else {
		b[0] = (char)(0xF0 | (cp >> 18));
		b[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
		b[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
		b[3] = (char)(0x80 | (cp & 0x3F));
		n = 4;
	}
	return fl_buf_append(out, b, n);
}

int st_xml_unescape(struct fl_buf *out, const char *s, size_t n)
{
	static const struct {
		const char *name;
		char c;
	} ents[] = {{"amp", '&'}, {"lt", '<'}, {"gt", '>'}, {"quot", '"'}, {"apos", '\''}};
	size_t i = 0;

	if (fl_buf_append(out, "", 0) != 0)
		return -1;
	while (i < n) {
		const char *semi;
		size_t el, k;

		if (s[i] != '&') {
			const char *amp = memchr(s + i, '&', n - i);
			size_t run = amp ? (size_t)(amp - (s + i)) : n - i;

			if (fl_buf_append(out, s + i, run) != 0)
				return -1;
			i += run;
			continue;
		}
		semi = memchr(s + i, ';', n - i < 12 ? n - i : 12);
		if (semi == NULL)
			return -1;
		el = (size_t)(semi - (s + i + 1));
		if (el >= 2 && s[i + 1] == '#') {
			unsigned long cp = 0;
			bool hexa = s[i + 2] == 'x' || s[i + 2] == 'X';

			k = hexa ? 2 : 1;
			if (k >= el)
				return -1;
			for (; k < el; k++) {
				char c = s[i + 1 + k];
				int d = c >= '0' && c <= '9'           ? c - '0'
				        : hexa && c >= 'a' && c <= 'f' ? c - 'a' + 10
				        : hexa && c >= 'A' && c <= 'F' ? c - 'A' + 10
				                                       : -1;

				if (d < 0 || cp > 0x10FFFF)
					return -1;
				cp = cp * (hexa ? 16 : 10) + (unsigned long)d;
			}
			if (utf8_put(out, cp) != 0)
				return -1;
		} else {
			for (k = 0; k < sizeof(ents) / sizeof(*ents); k++)
				if (strlen(ents[k].name) == el &&
				    memcmp(ents[k].name, s + i + 1, el) == 0)
					break;
			if (k == sizeof(ents) / sizeof(*ents) ||
			    fl_buf_append(out, &ents[k].c, 1) != 0)
				return -1;
		}
		i += el + 2;
	}
	return 0;
}

int st_xml_escape(struct fl_buf *out, const char *s)
{
	for (; *s; s++) {
		const char *e = *s == '&'    ? "&amp;"
		                : *s == '<'  ? "&lt;"
		                : *s == '>'  ? "&gt;"
		                : *s == '"'  ? "&quot;"
		                : *s == '\'' ? "&apos;"
		                             : NULL;

		if (e != NULL ? fl_buf_puts(out, e) != 0 : fl_buf_append(out, s, 1) != 0)
			return -1;
	}
	return fl_buf_append(out, "", 0);
}

enum fl_err_kind st_s3_error_kind(long status, const char *code)
{
	if (strcmp(code, "NoSuchKey") == 0 || (status == 404 && code[0] == '\0'))
		return FL_ERR_NOT_FOUND;
	if (strcmp(code, "PreconditionFailed") == 0 || status == 412 ||
	    strcmp(code, "ConditionalRequestConflict") == 0)
		return FL_ERR_ALREADY_EXISTS;
	if (status == 403 || strcmp(code, "AccessDenied") == 0 ||
	    strcmp(code, "InvalidAccessKeyId") == 0 || strcmp(code, "SignatureDoesNotMatch") == 0 ||
	    strcmp(code, "ExpiredToken") == 0 || strcmp(code, "InvalidToken") == 0)
		return FL_ERR_FORBIDDEN;
	if (status == 503 || status == 502 || status == 504 || strcmp(code, "SlowDown") == 0)
		return FL_ERR_UNAVAILABLE;
	return FL_ERR_IO;
}

const char *st_s3_error_hint(const char *code)
{
	static const struct {
		const char *code, *hint;
	} hints[] = {
	        {"NoSuchBucket", "the bucket does not exist"},
	        {"AccessDenied", "the credentials may not do this"},
	        {"InvalidAccessKeyId", "the store does not know this access key id"},
	        {"SignatureDoesNotMatch", "the secret key does not match the access key id"},
	        {"RequestTimeTooSkewed",
	         "the clocks of Floe and the store differ by more than 15 minutes"},
	        {"ExpiredToken", "the session token has expired"},
	        {"InvalidToken", "the session token is not valid"},
	        {"SlowDown", "the store is throttling requests"},
	        {"AuthorizationHeaderMalformed", "the signing region does not match the bucket's"},
	        {"PermanentRedirect", "the bucket is in another region or needs another endpoint"},
	        {"InvalidBucketName", "the bucket name is not valid"},
	};

	for (size_t i = 0; i < sizeof(hints) / sizeof(*hints); i++)
		if (strcmp(code, hints[i].code) == 0)
			return hints[i].hint;
	return NULL;
}

bool st_s3_retryable(int curl_code, long status, const char *code)
{
	switch (curl_code) {
	case CURLE_OK: break;
	case CURLE_COULDNT_CONNECT:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM: return true;
	default: return false;
	}
	if (status >= 400 && status < 500)
		return false;
	return status == 500 || status == 502 || status == 503 || status == 504 ||
	       strcmp(code, "SlowDown") == 0 || strcmp(code, "InternalError") == 0 ||
	       strcmp(code, "ServiceUnavailable") == 0;
}

long st_s3_backoff_ms(int attempt, uint32_t rnd)
{
	long cap = 100L << (attempt < 6 ? attempt : 6);

	if (cap > 5000)
		cap = 5000;
	return (long)(rnd % (uint32_t)(cap + 1));
}

/* An S3 timestamp, "YYYY-MM-DDTHH:MM:SS[.fff]Z" (UTC), in milliseconds
 * since the epoch (days from the civil date, proleptic Gregorian). */
static int parse_time_ms(const char *p, size_t n, int64_t *out)
{
	int y, mo, d, h, mi, sec, ms = 0, used = 0;
	char buf[40];
	int64_t yy, era, yoe, doy, doe, days;

	if (n >= sizeof(buf))
		return -1;
	memcpy(buf, p, n);
	buf[n] = '\0';
	if (sscanf(buf, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &used) != 6)
		return -1;
	if (buf[used] == '.') {
		int k = used + 1, digits = 0;

		for (; buf[k] >= '0' && buf[k] <= '9'; k++, digits++) {
			if (digits < 3)
				ms = ms * 10 + (buf[k] - '0');
		}
		for (; digits < 3; digits++)
			ms *= 10;
		used = k;
	}
	if (strcmp(buf + used, "Z") != 0 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 ||
	    mi > 59 || sec > 60)
		return -1;
	yy = mo <= 2 ? y - 1 : y;
	era = (yy >= 0 ? yy : yy - 399) / 400;
	yoe = yy - era * 400;
	doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	days = era * 146097 + doe - 719468;
	*out = ((days * 24 + h) * 60 + mi) * 60000 + (int64_t)sec * 1000 + ms;
	return 0;
}

int st_s3_list_parse(const char *xml, size_t n, st_s3_entry_fn fn, void *arg, char **next,
                     struct fl_err *err)
{
	struct fl_buf key = FL_BUF_INIT;
	const char *p = xml, *v, *end = xml + n;
	size_t vl;
	int rc = -1;

	*next = NULL;
	while ((p = st_xml_next(p, (size_t)(end - p), "Contents", &v, &vl)) != NULL) {
		const char *kv, *sv, *mv;
		size_t kl, sl, ml;
		char size[24];
		int64_t mtime;

		if (st_xml_next(v, vl, "Key", &kv, &kl) == NULL ||
		    st_xml_next(v, vl, "Size", &sv, &sl) == NULL ||
		    st_xml_next(v, vl, "LastModified", &mv, &ml) == NULL ||
		    parse_time_ms(mv, ml, &mtime) != 0) {
			fl_err_set(err, FL_ERR_IO, "a malformed entry");
			goto out;
		}
		fl_buf_reset(&key);
		/* S3 returns a control character of a key raw; a NUL would end
		 * the key early wherever it is used, naming another object. */
		if (st_xml_unescape(&key, kv, kl) != 0 || memchr(key.data, '\0', key.len) != NULL) {
			fl_err_set(err, FL_ERR_IO,
			           "a malformed key (an unknown entity or a NUL byte)");
			goto out;
		}
		snprintf(size, sizeof(size), "%.*s", (int)(sl < 23 ? sl : 23), sv);
		if (fn(arg, key.data, strtoull(size, NULL, 10), mtime, err) != 0)
			goto out;
	}
	if (st_xml_next(xml, n, "IsTruncated", &v, &vl) != NULL && vl == 4 &&
	    memcmp(v, "true", 4) == 0) {
		fl_buf_reset(&key);
		if (st_xml_next(xml, n, "NextContinuationToken", &v, &vl) == NULL || vl == 0 ||
		    st_xml_unescape(&key, v, vl) != 0) {
			fl_err_set(err, FL_ERR_IO, "truncated without a continuation token");
			goto out;
		}
		*next = fl_buf_steal(&key);
	}
	rc = 0;
out:
	fl_buf_free(&key);
	return rc;
}
