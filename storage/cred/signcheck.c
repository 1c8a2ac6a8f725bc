/* signcheck.c - the boundary check before remote signing.
 *
 * The rule is "refuse what is not plainly inside": a key is checked on its
 * raw (wire) form first, where encoded separators (%2F, %5C), backslashes,
 * empty segments and dot segments are refused outright, and only then
 * decoded and compared, as bytes, with "<table prefix>/".  Sub-resources
 * are an allow-list, so a new S3 feature is refused until someone decides
 * it is safe. */
#include "signcheck.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "pct.h"
#include "sts.h"

#define MAX_DELETE_KEYS 1000

#define forbid(err, ...) fl_err_set(err, FL_ERR_FORBIDDEN, __VA_ARGS__)

static void lower(char *s)
{
	for (; *s; s++)
		if (*s >= 'A' && *s <= 'Z')
			*s = (char)(*s - 'A' + 'a');
}

int st_url_split(const char *uri, struct st_url *out, struct fl_err *err)
{
	const char *p, *auth_end, *q;
	size_t hl, pl;
	struct st_url u;

	memset(&u, 0, sizeof(u));
	if (strncasecmp(uri, "https://", 8) == 0) {
		u.https = true;
		p = uri + 8;
	} else if (strncasecmp(uri, "http://", 7) == 0) {
		p = uri + 7;
	} else {
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "uri '%.200s' is not http(s)", uri);
	}
	if (strchr(uri, '#') != NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "uri must not have a fragment");
	auth_end = p + strcspn(p, "/?");
	hl = (size_t)(auth_end - p);
	if (hl == 0 || hl >= sizeof(u.host) || memchr(p, '@', hl) != NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "uri '%.200s' has no usable host (user info is not allowed)",
		                  uri);
	memcpy(u.host, p, hl);
	lower(u.host);
	/* "host:9000:80" would lose its last port below and name another. */
	if (u.host[0] != '[' && strchr(u.host, ':') != strrchr(u.host, ':'))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "uri '%.200s' has more than one port",
		                  uri);
	/* The default port is the same host. */
	if (u.https && hl > 4 && strcmp(u.host + hl - 4, ":443") == 0)
		u.host[hl - 4] = '\0';
	if (!u.https && hl > 3 && strcmp(u.host + hl - 3, ":80") == 0)
		u.host[hl - 3] = '\0';
	q = strchr(auth_end, '?');
	pl = q ? (size_t)(q - auth_end) : strlen(auth_end);
	if (pl + 2 > sizeof(u.path) || (q && strlen(q + 1) >= sizeof(u.query)))
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "RemoteSignRequest: uri's path or query is over %zu bytes",
		                  sizeof(u.path) - 2);
	if (pl == 0) {
		u.path[0] = '/';
	} else {
		memcpy(u.path, auth_end, pl);
	}
	if (q != NULL)
		memcpy(u.query, q + 1, strlen(q + 1) + 1);
	for (const char *c = uri; *c; c++)
		if ((unsigned char)*c <= ' ' || *c == 127)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "uri holds a space or control byte");
	*out = u;
	return 0;
}

/* Checks a raw key (wire form, no leading '/'; one trailing '/' allowed)
 * and decodes it into out (room for strlen(raw) + 1). */
static int raw_key(const char *raw, char *out, struct fl_err *err)
{
	size_t n = strlen(raw), dl;

	for (size_t i = 0; i + 2 < n; i++)
		if (raw[i] == '%' &&
		    ((raw[i + 1] == '2' && (raw[i + 2] == 'F' || raw[i + 2] == 'f')) ||
		     (raw[i + 1] == '5' && (raw[i + 2] == 'C' || raw[i + 2] == 'c'))))
			return forbid(err, "key '%.200s' holds a percent-encoded separator", raw);
	if (strchr(raw, '\\') != NULL)
		return forbid(err, "key '%.200s' holds a backslash", raw);
	for (size_t i = 0; i < n;) {
		const char *e = memchr(raw + i, '/', n - i);
		size_t sl = e ? (size_t)(e - (raw + i)) : n - i;
		char seg[16];
		size_t segl = 0;

		/* A trailing '/' ends the loop, so an empty segment is "//". */
		if (sl == 0)
			return forbid(err, "key '%.200s' holds an empty segment (double slash)",
			              raw);
		/* A segment that decodes to "." or "..": short, so decode it. */
		if (sl > 0 && sl <= 6) {
			struct fl_err e2;

			if (fl_pct_decode(raw + i, sl, false, seg, &segl, &e2) == 0 &&
			    ((segl == 1 && seg[0] == '.') ||
			     (segl == 2 && seg[0] == '.' && seg[1] == '.')))
				return forbid(err, "key '%.200s' holds a '.' or '..' segment", raw);
		}
		i += sl + 1;
	}
	if (fl_pct_decode(raw, n, false, out, &dl, err) != 0)
		return fl_err_prefix(err, "key");
	return 0;
}

/* True when the decoded key lies strictly under "<prefix>/". */
static bool inside(const struct st_s3_loc *t, const char *key)
{
	size_t pl = strlen(t->prefix);

	return strncmp(key, t->prefix, pl) == 0 && key[pl] == '/' && key[pl + 1] != '\0';
}

/* Query parameter names, each checked against an allow-list; value of
 * `want` (decoded, arena: out) when present. */
static int query_check(const char *query, const char *const *allowed, size_t nallowed, bool *has,
                       const char *const *want, char **vals, size_t nwant, struct fl_err *err)
{
	const char *p = query;

	while (p != NULL && *p != '\0') {
		const char *amp = strchr(p, '&');
		size_t len = amp ? (size_t)(amp - p) : strlen(p);
		const char *eq = memchr(p, '=', len);
		size_t nl = eq ? (size_t)(eq - p) : len;
		char name[64];
		size_t dl;
		bool ok = false;

		if (len > 0) {
			if (nl >= sizeof(name) || fl_pct_decode(p, nl, false, name, &dl, err) != 0)
				return fl_err_set(err, FL_ERR_FORBIDDEN,
				                  "query parameter '%.60s' is not allowed", p);
			for (size_t i = 0; i < nallowed; i++)
				if (strcmp(name, allowed[i]) == 0) {
					/* Which of two values a store takes is its
					 * own choice: a second prefix could list
					 * another table. */
					if (has[i])
						return fl_err_set(err, FL_ERR_FORBIDDEN,
						                  "query parameter '%.60s' is "
						                  "repeated",
						                  name);
					ok = true;
					has[i] = true;
				}
			if (!ok)
				return fl_err_set(
				        err, FL_ERR_FORBIDDEN,
				        "query parameter '%.60s' (an S3 sub-resource) is not "
				        "allowed for remote signing",
				        name);
			for (size_t i = 0; i < nwant; i++)
				if (strcmp(name, want[i]) == 0 && vals[i] == NULL) {
					size_t vl = eq ? len - nl - 1 : 0;

					vals[i] = malloc(vl + 1);
					if (vals[i] == NULL)
						return fl_err_set(err, FL_ERR_NOMEM,
						                  "out of memory");
					if (fl_pct_decode(eq ? eq + 1 : "", vl, true, vals[i], &dl,
					                  err) != 0)
						return fl_err_prefix(err, "query parameter %s",
						                     name);
				}
		}
		p = amp ? amp + 1 : NULL;
	}
	return 0;
}

/* The value of header name, NULL when absent; *count is how many it has. */
static const char *header(const struct st_signcheck_req *r, const char *name, int *count)
{
	const char *v = NULL;

	*count = 0;
	for (size_t i = 0; i < r->nheaders; i++)
		if (strcasecmp(r->headers[i].name, name) == 0) {
			if (v == NULL)
				v = r->headers[i].value;
			++*count;
		}
	return v;
}

/* x-amz-copy-source "[/]bucket/key[?versionId=…]" must be inside too. */
static int copy_source(const struct st_signcheck_scope *s, const char *v, struct fl_err *err)
{
	char buf[2048], *key, *dec;
	size_t n;
	int rc;

	if (*v == '/')
		v++;
	n = strcspn(v, "?");
	if (n >= sizeof(buf))
		return forbid(err, "x-amz-copy-source is too long");
	memcpy(buf, v, n);
	buf[n] = '\0';
	key = strchr(buf, '/');
	if (key == NULL)
		return forbid(err, "x-amz-copy-source '%.200s' names no key", buf);
	*key++ = '\0';
	if (strcmp(buf, s->table->bucket) != 0)
		return forbid(err, "x-amz-copy-source bucket '%.60s' is not the table's bucket",
		              buf);
	dec = malloc(strlen(key) + 1);
	if (dec == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	rc = raw_key(key, dec, err);
	if (rc == 0 && !inside(s->table, dec))
		rc = forbid(err, "x-amz-copy-source key '%.200s' lies outside the table", dec);
	free(dec);
	return rc;
}

/* A DeleteObjects body may hold only the S3 schema's plain markup: an XML
 * declaration first, <Delete> (with attributes: xmlns), and the elements
 * below with nothing between name and '>'.  A namespace prefix, a space
 * before '>', a comment, CDATA or a DOCTYPE is markup another parser reads
 * differently from st_xml_next: a <Key> this check never saw. */
static int markup_check(const char *b, size_t n, struct fl_err *err)
{
	static const char *const tags[] = {"Delete",           "Object", "Key",
	                                   "VersionId",        "Quiet",  "ETag",
	                                   "LastModifiedTime", "Size"};
	const char *p = b, *end = b + n;

	while ((p = memchr(p, '<', (size_t)(end - p))) != NULL) {
		const char *q = p + 1, *name, *e;
		size_t nl;
		bool close, ok = false;

		if (p == b && n > 5 && memcmp(p, "<?xml", 5) == 0) {
			e = memchr(p, '>', n);
			if (e == NULL || e[-1] != '?' || memchr(p + 1, '<', (size_t)(e - p - 1)))
				return forbid(err,
				              "DeleteObjects body: a malformed XML declaration");
			p = e + 1;
			continue;
		}
		close = q < end && *q == '/';
		q += close;
		for (name = q; q < end && ((*q >= 'A' && *q <= 'Z') || (*q >= 'a' && *q <= 'z'));
		     q++)
			;
		nl = (size_t)(q - name);
		for (size_t i = 0; i < sizeof(tags) / sizeof(tags[0]); i++)
			if (strlen(tags[i]) == nl && memcmp(tags[i], name, nl) == 0)
				ok = true;
		if (ok && !close && nl == 6 && memcmp(name, "Delete", 6) == 0 && q < end &&
		    *q == ' ') {
			e = memchr(q, '>', (size_t)(end - q));
			ok = e != NULL && memchr(q, '<', (size_t)(e - q)) == NULL && e[-1] != '/';
			q = e != NULL ? e : end;
		}
		if (!ok || q == end || *q != '>')
			return forbid(err, "DeleteObjects body: markup other than the S3 schema's "
			                   "plain elements");
		p = q + 1;
	}
	return 0;
}

/* Every <Key> of a DeleteObjects body must be inside the table. */
static int delete_body(const struct st_signcheck_scope *s, const struct st_signcheck_req *r,
                       struct fl_err *err)
{
	char key[1100];
	const char *p = r->body, *end = r->body ? r->body + r->body_len : NULL;
	int count = 0, f;

	if (r->body == NULL || r->body_len == 0)
		return forbid(err, "DeleteObjects needs its body to be signed");
	if (markup_check(r->body, r->body_len, err) != 0)
		return -1;
	while ((f = st_xml_text(p, (size_t)(end - p), "Key", key, sizeof(key), &p, err)) == 1) {
		if (++count > MAX_DELETE_KEYS)
			return forbid(err, "DeleteObjects names more than 1000 keys");
		for (char *k = key; *k; k++)
			if (*k == '\\')
				return forbid(err, "DeleteObjects key '%.200s' holds a backslash",
				              key);
		for (char *k = key; *k;) {
			size_t sl = strcspn(k, "/");

			if ((sl == 1 && k[0] == '.') || (sl == 2 && k[0] == '.' && k[1] == '.') ||
			    sl == 0)
				return forbid(
				        err,
				        "DeleteObjects key '%.200s' holds a '.', '..' or empty "
				        "segment",
				        key);
			k += sl + (k[sl] == '/');
		}
		if (!inside(s->table, key))
			return forbid(err, "DeleteObjects key '%.200s' lies outside the table",
			              key);
	}
	if (f < 0) {
		err->kind = FL_ERR_FORBIDDEN;
		return fl_err_prefix(err, "DeleteObjects body");
	}
	if (count == 0)
		return forbid(err, "DeleteObjects body names no <Key>");
	return 0;
}

int st_signcheck(const struct st_signcheck_scope *s, const struct st_signcheck_req *r,
                 bool *body_checked, struct fl_err *err)
{
	static const char *const obj_params[] = {"uploads", "uploadId", "partNumber", "x-id",
	                                         "versionId"};
	static const char *const bucket_params[] = {
	        "list-type",   "prefix",   "delimiter",     "continuation-token",
	        "start-after", "max-keys", "encoding-type", "fetch-owner",
	        "location",    "delete",   "x-id",          "marker"};
	static const char *const want[] = {"prefix"};
	const char *m = r->method, *raw, *cs;
	struct st_url u, ep;
	char host[256], *dec = NULL, *vals[1] = {NULL};
	bool has[12] = {false}, write, read_only = s->access == ST_ACCESS_READ;
	int rc = -1, ncs;

	*body_checked = false;
	if (m == NULL ||
	    (strcmp(m, "GET") != 0 && strcmp(m, "HEAD") != 0 && strcmp(m, "PUT") != 0 &&
	     strcmp(m, "POST") != 0 && strcmp(m, "DELETE") != 0))
		return forbid(err, "method %.20s is not signed", m ? m : "(none)");
	write = strcmp(m, "GET") != 0 && strcmp(m, "HEAD") != 0;
	if (write && read_only)
		return forbid(err, "method %s needs write access; the caller may only read", m);
	if (st_url_split(r->uri, &u, err) != 0 || st_url_split(s->endpoint, &ep, err) != 0)
		return -1;
	if (u.https != ep.https)
		return forbid(err, "uri scheme differs from the store endpoint %.100s",
		              s->endpoint);
	/* Which bucket does the store see?  Only the profile's addressing style
	 * counts: reading a virtual-host request as path-style (or the reverse)
	 * would check one bucket and sign for another. */
	if (s->path_style) {
		const char *e;
		size_t bl;

		if (strcmp(u.host, ep.host) != 0)
			return forbid(
			        err,
			        "host '%.100s' is not the store endpoint '%.100s' (path-style "
			        "addressing)",
			        u.host, ep.host);
		e = strchr(u.path + 1, '/');
		bl = e ? (size_t)(e - u.path - 1) : strlen(u.path + 1);
		if (bl == 0 || bl >= sizeof(host))
			return forbid(err, "request names no bucket");
		memcpy(host, u.path + 1, bl);
		host[bl] = '\0';
		raw = e ? e + 1 : "";
	} else {
		size_t hl = strlen(u.host), el = strlen(ep.host);

		if (hl <= el + 1 || strcmp(u.host + hl - el, ep.host) != 0 ||
		    u.host[hl - el - 1] != '.')
			return forbid(
			        err,
			        "host '%.100s' is not <bucket>.%.100s (virtual-host addressing)",
			        u.host, ep.host);
		memcpy(host, u.host, hl - el - 1);
		host[hl - el - 1] = '\0';
		raw = u.path + 1;
	}
	if (strcmp(host, s->table->bucket) != 0)
		return forbid(err, "bucket '%.63s' is not the table's bucket '%.63s'", host,
		              s->table->bucket);
	if (raw[0] == '\0') {
		/* Bucket-level: listing inside the table, its location, HEAD, and
		 * DeleteObjects of keys inside. */
		if (query_check(u.query, bucket_params, 12, has, want, vals, 1, err) != 0)
			goto out;
		if (strcmp(m, "POST") == 0 && has[9]) {
			rc = delete_body(s, r, err);
			*body_checked = rc == 0;
			goto out;
		}
		if (strcmp(m, "HEAD") == 0 || (strcmp(m, "GET") == 0 && has[8])) {
			rc = 0;
			goto out;
		}
		if (strcmp(m, "GET") == 0 && !has[8] && !has[9]) {
			size_t pl = strlen(s->table->prefix);

			if (vals[0] == NULL || strncmp(vals[0], s->table->prefix, pl) != 0 ||
			    vals[0][pl] != '/') {
				forbid(err,
				       "a listing must have a prefix inside the table ('%.200s/')",
				       s->table->prefix);
				goto out;
			}
			if (strstr(vals[0], "/../") != NULL || strstr(vals[0], "//") != NULL) {
				forbid(err, "listing prefix '%.200s' holds '..' or '//'", vals[0]);
				goto out;
			}
			rc = 0;
			goto out;
		}
		forbid(err, "%s on the bucket is not signed", m);
		goto out;
	}
	if (query_check(u.query, obj_params, 5, has, NULL, NULL, 0, err) != 0)
		goto out;
	if (strcmp(m, "POST") == 0 && !has[0] && !has[1]) {
		forbid(err, "POST on an object is signed only for multipart uploads");
		goto out;
	}
	dec = malloc(strlen(raw) + 1);
	if (dec == NULL) {
		fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		goto out;
	}
	if (raw_key(raw, dec, err) != 0)
		goto out;
	if (!inside(s->table, dec)) {
		forbid(err, "key '%.200s' lies outside the table location '%.200s/'", dec,
		       s->table->prefix);
		goto out;
	}
	cs = header(r, "x-amz-copy-source", &ncs);
	if (ncs > 1) {
		forbid(err, "x-amz-copy-source is repeated");
		goto out;
	}
	if (cs != NULL && copy_source(s, cs, err) != 0)
		goto out;
	rc = 0;
out:
	free(vals[0]);
	free(dec);
	return rc;
}
