/* fuzz_signcheck.c - st_signcheck, the boundary check before remote signing
 * (storage/cred/signcheck.c), against an oracle of its own.
 *
 * The table is s3://warehouse/lake/t.  Byte 0 chooses:
 *   bit 0     addressing: 0 path style (endpoint/bucket/key), 1 virtual host
 *   bit 1     the caller's access: 0 read, 1 read-write
 *   bits 2-4  the method: GET HEAD PUT POST DELETE PATCH OPTIONS get
 *   bit 5     a body is sent (a DeleteObjects document)
 *   bit 6     x-amz-copy-source is sent
 *   bit 7     the store: 0 http://s3.local:9000, 1 https://s3.example.com:8443
 * The rest is split on '\n' into the URI, the x-amz-copy-source value, a
 * second value sent as "X-Amz-Copy-Source" when not empty (clients may
 * repeat a header; the signer signs every value), and the body: everything
 * after the third '\n', newlines included.  A header content-type is always
 * sent first.
 *
 * Invariants: st_signcheck returns 0, or -1 with FL_ERR_FORBIDDEN or
 * FL_ERR_BAD_REQUEST and a message.  When it returns 0 (the request would
 * be signed), the oracle below, which shares no code with signcheck.c (it
 * only cross-checks st_url_split), must agree that the request stays
 * inside the table:
 *   - the method is GET, HEAD, PUT, POST or DELETE, and only GET or HEAD for
 *     read access;
 *   - the URI, split by hand, is of the store's scheme and names the store
 *     (path style) or warehouse.<store> (virtual host), case-insensitively,
 *     and st_url_split agrees with that split field by field;
 *   - the path, percent-decoded once as S3 decodes it, holds no NUL, no
 *     backslash, no "//", "/./" or "/../", does not end in "/." or "/..",
 *     and the raw path holds no encoded separator (%2F, %5C);
 *   - an object request names a key under "lake/t/" (not the prefix itself,
 *     nor a sibling such as "lake/t-2/") and uses only the object
 *     sub-resources of plain reads, writes and multipart uploads; POST only
 *     for multipart uploads; every x-amz-copy-source value names an object
 *     of the table;
 *   - a bucket request is a HEAD, GetBucketLocation, a listing whose every
 *     prefix parameter lies under "lake/t/", or a DeleteObjects POST whose
 *     every non-empty <Key>, read as an XML parser reads it (namespace
 *     prefixes, entities, CDATA, any whitespace in tags), lies under
 *     "lake/t/" with a clean path; a document malformed before its root
 *     element closes is refused by the store and is not judged;
 *   - st_signcheck says its verdict rested on the body exactly for such a
 *     DeleteObjects (the signer then binds the signature to that body).
 * The allow-lists of query parameters are the same as signcheck.c's: they
 * are the specification (which S3 operations are safe to sign), not a
 * detail of the code.  Any disagreement is a finding; the seeds named
 * finding_* are the ones the fuzzer has found. */
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "fuzz.h"
#include "signcheck.h"

#define BUCKET "warehouse"
#define PREFIX "lake/t/" /* the table's key prefix with its closing '/' */
#define PREFIX_LEN (sizeof(PREFIX) - 1)

static const char *const endpoints[] = {"http://s3.local:9000", "https://s3.example.com:8443"};
static const char *const path_hosts[] = {"s3.local:9000", "s3.example.com:8443"};
static const char *const vhost_hosts[] = {"warehouse.s3.local:9000",
                                          "warehouse.s3.example.com:8443"};

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Percent-decodes the n bytes at s into out (room for n + 1), keeping a
 * decoded NUL so that the caller can see it; false on a malformed escape. */
static bool pct_decode(const char *s, size_t n, bool plus_is_space, char *out, size_t *out_len)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		if (s[i] == '%') {
			if (n - i < 3 || hexval(s[i + 1]) < 0 || hexval(s[i + 2]) < 0)
				return false;
			out[o++] = (char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
			i += 2;
		} else {
			out[o++] = plus_is_space && s[i] == '+' ? ' ' : s[i];
		}
	}
	out[o] = '\0';
	*out_len = o;
	return true;
}

static bool has_encoded_separator(const char *s, size_t n)
{
	for (size_t i = 0; i + 2 < n; i++)
		if (s[i] == '%' && ((s[i + 1] == '2' && (s[i + 2] == 'F' || s[i + 2] == 'f')) ||
		                    (s[i + 1] == '5' && (s[i + 2] == 'C' || s[i + 2] == 'c'))))
			return true;
	return false;
}

static bool ends_with(const char *s, size_t n, const char *suffix)
{
	size_t sl = strlen(suffix);

	return n >= sl && memcmp(s + n - sl, suffix, sl) == 0;
}

/* True when the decoded path p (n bytes, NUL after them) starts with '/' and
 * holds no NUL, backslash, "//", "/./" or "/../", nor ends in "/." or "/..". */
static bool path_clean(const char *p, size_t n)
{
	return n > 0 && p[0] == '/' && memchr(p, '\0', n) == NULL && strchr(p, '\\') == NULL &&
	       strstr(p, "//") == NULL && strstr(p, "/./") == NULL && strstr(p, "/../") == NULL &&
	       !ends_with(p, n, "/.") && !ends_with(p, n, "/..");
}

/* True when the decoded key (n bytes) is an object strictly under PREFIX
 * whose path is clean. */
static bool key_inside(const char *key, size_t n)
{
	char *p;
	bool ok;

	if (n <= PREFIX_LEN || memcmp(key, PREFIX, PREFIX_LEN) != 0)
		return false;
	p = malloc(n + 2);
	FUZZ_CHECK(p != NULL);
	p[0] = '/';
	memcpy(p + 1, key, n);
	p[n + 1] = '\0';
	ok = path_clean(p, n + 1);
	free(p);
	return ok;
}

/* True when an x-amz-copy-source value ("[/]bucket/key[?versionId=…]",
 * percent-encoded) names an object of the table: decoded once, its bucket
 * is BUCKET and its key lies inside. */
static bool copy_source_inside(const char *v)
{
	size_t n, dl;
	char *dec, *slash;
	bool ok;

	if (*v == '/')
		v++;
	n = strcspn(v, "?");
	if (has_encoded_separator(v, n))
		return false;
	dec = malloc(n + 1);
	FUZZ_CHECK(dec != NULL);
	ok = pct_decode(v, n, false, dec, &dl);
	slash = ok ? memchr(dec, '/', dl) : NULL;
	ok = slash != NULL && (size_t)(slash - dec) == strlen(BUCKET) &&
	     memcmp(dec, BUCKET, strlen(BUCKET)) == 0 &&
	     key_inside(slash + 1, dl - (size_t)(slash + 1 - dec));
	free(dec);
	return ok;
}

/* What a query string asks for, read as S3 reads it: '&'-separated
 * parameters, names and values percent-decoded ('+' is a space in values). */
struct query {
	bool unknown; /* a parameter outside the allow-list, or undecodable */
	bool uploads, upload_id, location, delete_objects;
	int prefixes; /* prefix parameters */
	bool prefix_outside; /* one of them does not lie under PREFIX */
};

static bool name_is(const char *name, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(name, list[i]) == 0)
			return true;
	return false;
}

static void query_read(const char *q, bool bucket, struct query *out)
{
	/* Object level: plain reads and writes, multipart uploads, versions
	 * (x-id only names the SDK operation).  Bucket level: HeadBucket,
	 * GetBucketLocation, ListObjects (v1 and v2) and DeleteObjects. */
	static const char *const object_params[] = {"uploads", "uploadId", "partNumber", "x-id",
	                                            "versionId"};
	static const char *const bucket_params[] = {
	        "list-type",   "prefix",   "delimiter",     "continuation-token",
	        "start-after", "max-keys", "encoding-type", "fetch-owner",
	        "location",    "delete",   "x-id",          "marker"};
	const char *const *allowed = bucket ? bucket_params : object_params;
	size_t nallowed = bucket ? sizeof(bucket_params) / sizeof(bucket_params[0])
	                         : sizeof(object_params) / sizeof(object_params[0]);

	memset(out, 0, sizeof(*out));
	while (*q != '\0') {
		size_t len = strcspn(q, "&"), nl = strcspn(q, "=&"), dl;
		char *name = malloc(nl + 1), *val = malloc(len + 1);

		FUZZ_CHECK(name != NULL && val != NULL);
		if (len == 0)
			goto next;
		if (!pct_decode(q, nl, false, name, &dl) || strlen(name) != dl) {
			out->unknown = true;
			goto next;
		}
		if (!name_is(name, allowed, nallowed))
			out->unknown = true;
		out->uploads |= strcmp(name, "uploads") == 0;
		out->upload_id |= strcmp(name, "uploadId") == 0;
		out->location |= strcmp(name, "location") == 0;
		out->delete_objects |= strcmp(name, "delete") == 0;
		/* Every prefix, not only the first: which of repeated
		 * parameters a store uses is its own choice.  A listing
		 * prefix is matched literally, so '..' cannot climb out of
		 * it; "/../" and "//" are refused as signcheck.c does. */
		if (strcmp(name, "prefix") == 0) {
			const char *v = nl < len ? q + nl + 1 : "";
			size_t vl = nl < len ? len - nl - 1 : 0;

			out->prefixes++;
			if (!pct_decode(v, vl, true, val, &dl) || strlen(val) != dl ||
			    strncmp(val, PREFIX, PREFIX_LEN) != 0 || strstr(val, "/../") != NULL ||
			    strstr(val, "//") != NULL)
				out->prefix_outside = true;
		}
	next:
		free(name);
		free(val);
		q += len + (q[len] == '&');
	}
}

/* The DeleteObjects oracle: a small XML reader that finds every element whose
 * local name is Key (any namespace prefix, any whitespace or attributes in
 * its tags) and collects its character data (text with the five entities
 * and numeric references decoded, and CDATA sections), skipping comments,
 * processing instructions and declarations. */
struct elem {
	const char *name;
	size_t name_len;
	bool key;
	char *text;
	size_t len, cap;
};

static void text_add(struct elem *e, const char *s, size_t n)
{
	if (e->len + n + 1 > e->cap) {
		e->cap = (e->len + n + 1) * 2;
		e->text = realloc(e->text, e->cap);
		FUZZ_CHECK(e->text != NULL);
	}
	memcpy(e->text + e->len, s, n);
	e->len += n;
	e->text[e->len] = '\0';
}

static void text_add_utf8(struct elem *e, unsigned long cp)
{
	char b[4];

	if (cp < 0x80) {
		b[0] = (char)cp;
		text_add(e, b, 1);
	} else if (cp < 0x800) {
		b[0] = (char)(0xC0 | (cp >> 6));
		b[1] = (char)(0x80 | (cp & 0x3F));
		text_add(e, b, 2);
	} else if (cp < 0x10000) {
		b[0] = (char)(0xE0 | (cp >> 12));
		b[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		b[2] = (char)(0x80 | (cp & 0x3F));
		text_add(e, b, 3);
	} else {
		b[0] = (char)(0xF0 | (cp >> 18));
		b[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
		b[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
		b[3] = (char)(0x80 | (cp & 0x3F));
		text_add(e, b, 4);
	}
}

/* Appends text with entities decoded; an unknown or malformed one is kept
 * as it is (a strict parser would refuse the document instead). */
static void text_add_decoded(struct elem *e, const char *s, size_t n)
{
	static const struct {
		const char *name;
		char c;
	} ents[] = {{"amp", '&'}, {"lt", '<'}, {"gt", '>'}, {"quot", '"'}, {"apos", '\''}};

	for (size_t i = 0; i < n;) {
		const char *semi = s[i] == '&' ? memchr(s + i, ';', n - i) : NULL;
		size_t el = semi ? (size_t)(semi - (s + i + 1)) : 0;
		bool done = false;

		if (semi != NULL && el >= 2 && s[i + 1] == '#') {
			bool hex = s[i + 2] == 'x' || s[i + 2] == 'X';
			size_t k = hex ? 2 : 1;
			unsigned long cp = 0;

			done = k < el && el - k <= 8;
			for (; done && k < el; k++) {
				int d = hexval(s[i + 1 + k]);

				done = d >= 0 && (hex || d < 10);
				cp = cp * (hex ? 16 : 10) + (unsigned long)(d < 0 ? 0 : d);
			}
			done = done && cp <= 0x10FFFF;
			if (done)
				text_add_utf8(e, cp);
		} else if (semi != NULL) {
			for (size_t k = 0; k < sizeof(ents) / sizeof(ents[0]); k++)
				if (strlen(ents[k].name) == el &&
				    memcmp(ents[k].name, s + i + 1, el) == 0) {
					text_add(e, &ents[k].c, 1);
					done = true;
				}
		}
		if (done) {
			i += el + 2;
		} else {
			text_add(e, s + i, 1);
			i++;
		}
	}
}

static const char *find(const char *s, const char *end, const char *what)
{
	size_t wl = strlen(what);

	for (; s + wl <= end; s++)
		if (memcmp(s, what, wl) == 0)
			return s;
	return NULL;
}

static bool starts(const char *s, const char *end, const char *what)
{
	size_t wl = strlen(what);

	return (size_t)(end - s) >= wl && memcmp(s, what, wl) == 0;
}

static bool xml_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static bool is_key_name(const char *name, size_t n)
{
	const char *colon = NULL;

	for (size_t i = 0; i < n; i++)
		if (name[i] == ':')
			colon = name + i;
	if (colon != NULL) {
		n -= (size_t)(colon + 1 - name);
		name = colon + 1;
	}
	return n == 3 && memcmp(name, "Key", 3) == 0;
}

/* Reads a start tag's attributes (name="value" or name='value', values
 * without '<') from q: returns its closing '>', or NULL when the tag is
 * malformed, which a parser refuses.  *empty tells "<x/>". */
static const char *tag_end(const char *q, const char *end, bool *empty)
{
	for (;;) {
		const char *attr;

		while (q < end && xml_space(*q))
			q++;
		if (q == end)
			return NULL;
		if (*q == '>' || *q == '/') {
			*empty = *q == '/';
			if (*empty)
				q++;
			return q < end && *q == '>' ? q : NULL;
		}
		for (attr = q; q < end && !xml_space(*q) && *q != '=' && *q != '>' && *q != '/';
		     q++)
			;
		while (q < end && xml_space(*q))
			q++;
		if (q == attr || q == end || *q != '=')
			return NULL;
		for (q++; q < end && xml_space(*q); q++)
			;
		if (q == end || (*q != '"' && *q != '\''))
			return NULL;
		attr = q;
		q = memchr(q + 1, *attr, (size_t)(end - (q + 1)));
		if (q == NULL || memchr(attr, '<', (size_t)(q - attr)) != NULL)
			return NULL;
		q++;
	}
}

/* Checks every Key of the document at s.  A parser (Go's encoding/xml, as
 * in MinIO) acts on the first complete root element and ignores what
 * follows it, so a verdict is given whenever a root element closes; a
 * document that is malformed before that (an unclosed or mismatched tag)
 * is refused by the store, so nothing is checked after the first
 * malformation. */
static void check_delete_body(const char *s, size_t n)
{
	const char *p = s, *end = s + n;
	struct elem *stack = NULL;
	size_t depth = 0, cap = 0;
	bool outside = false;

	while (p < end) {
		const char *q, *name;
		size_t name_len;
		bool empty;

		if (*p != '<') {
			q = memchr(p, '<', (size_t)(end - p));
			q = q ? q : end;
			if (depth > 0 && stack[depth - 1].key)
				text_add_decoded(&stack[depth - 1], p, (size_t)(q - p));
			p = q;
			continue;
		}
		if (starts(p, end, "<!--")) {
			q = find(p + 4, end, "-->");
			if (q == NULL)
				break;
			p = q + 3;
			continue;
		}
		if (starts(p, end, "<![CDATA[")) {
			q = find(p + 9, end, "]]>");
			if (q == NULL)
				break;
			if (depth > 0 && stack[depth - 1].key)
				text_add(&stack[depth - 1], p + 9, (size_t)(q - (p + 9)));
			p = q + 3;
			continue;
		}
		if (starts(p, end, "<?")) {
			q = find(p + 2, end, "?>");
			if (q == NULL)
				break;
			p = q + 2;
			continue;
		}
		if (starts(p, end, "<!")) {
			q = memchr(p, '>', (size_t)(end - p));
			if (q == NULL)
				break;
			p = q + 1;
			continue;
		}
		if (starts(p, end, "</")) {
			struct elem *e;

			name = p + 2;
			for (q = name; q < end && !xml_space(*q) && *q != '>'; q++)
				;
			name_len = (size_t)(q - name);
			while (q < end && xml_space(*q))
				q++;
			if (q == end || *q != '>' || depth == 0)
				break;
			e = &stack[depth - 1];
			if (e->name_len != name_len || memcmp(e->name, name, name_len) != 0)
				break;
			/* An empty key names no object (S3 refuses it). */
			if (e->key && e->len > 0 && !key_inside(e->text, e->len))
				outside = true;
			free(e->text);
			depth--;
			/* A root element has closed: the store acts on it. */
			FUZZ_CHECK(depth > 0 || !outside);
			p = q + 1;
			continue;
		}
		name = p + 1;
		for (q = name; q < end && !xml_space(*q) && *q != '/' && *q != '>'; q++)
			;
		name_len = (size_t)(q - name);
		if (name_len == 0)
			break;
		q = tag_end(q, end, &empty);
		if (q == NULL)
			break;
		/* An empty element (<Key/>) names no object. */
		if (!empty) {
			if (depth == cap) {
				cap = cap ? cap * 2 : 16;
				stack = realloc(stack, cap * sizeof(*stack));
				FUZZ_CHECK(stack != NULL);
			}
			stack[depth++] = (struct elem){.name = name,
			                               .name_len = name_len,
			                               .key = is_key_name(name, name_len)};
		}
		p = q + 1;
	}
	/* An unclosed root element: the store refuses the document. */
	while (depth > 0)
		free(stack[--depth].text);
	free(stack);
}

/* The oracle for a request that st_signcheck would sign; body_checked is
 * what it said of the body (a DeleteObjects must be bound to it). */
static void check_signed(const struct st_signcheck_scope *s, const struct st_signcheck_req *r,
                         int store, bool body_checked)
{
	const char *m = r->method, *uri = r->uri, *auth, *path, *query, *want_host, *key;
	bool https, get = strcmp(m, "GET") == 0, head = strcmp(m, "HEAD") == 0;
	bool post = strcmp(m, "POST") == 0;
	size_t al, pl, dl;
	struct st_url u;
	struct fl_err err = {0};
	struct query q;
	char *dec;
	bool judged_by_body = false;

	FUZZ_CHECK(get || head || post || strcmp(m, "PUT") == 0 || strcmp(m, "DELETE") == 0);
	if (!get && !head)
		FUZZ_CHECK(s->access == ST_ACCESS_READ_WRITE);

	/* The URI by hand: scheme, authority up to the first '/' or '?', path
	 * up to the first '?', query. */
	FUZZ_CHECK(strchr(uri, '#') == NULL);
	for (const char *c = uri; *c; c++)
		FUZZ_CHECK((unsigned char)*c > ' ' && *c != 127);
	https = strncasecmp(uri, "https://", 8) == 0;
	FUZZ_CHECK(https || strncasecmp(uri, "http://", 7) == 0);
	FUZZ_CHECK(https == (store == 1));
	auth = uri + (https ? 8 : 7);
	al = strcspn(auth, "/?");
	want_host = s->path_style ? path_hosts[store] : vhost_hosts[store];
	FUZZ_CHECK(al == strlen(want_host) && strncasecmp(auth, want_host, al) == 0);
	path = auth + al;
	pl = strcspn(path, "?");
	query = path[pl] == '?' ? path + pl + 1 : "";

	/* st_url_split agrees. */
	FUZZ_CHECK(st_url_split(uri, &u, &err) == 0);
	FUZZ_CHECK(memchr(u.host, '\0', sizeof(u.host)) != NULL);
	FUZZ_CHECK(memchr(u.path, '\0', sizeof(u.path)) != NULL);
	FUZZ_CHECK(memchr(u.query, '\0', sizeof(u.query)) != NULL);
	FUZZ_CHECK(u.https == https);
	FUZZ_CHECK(strcmp(u.host, want_host) == 0);
	if (pl == 0)
		FUZZ_CHECK(strcmp(u.path, "/") == 0);
	else
		FUZZ_CHECK(strlen(u.path) == pl && memcmp(u.path, path, pl) == 0);
	FUZZ_CHECK(strcmp(u.query, query) == 0);

	/* The path as the store reads it: decoded once. */
	FUZZ_CHECK(!has_encoded_separator(path, pl));
	dec = malloc(pl + 2);
	FUZZ_CHECK(dec != NULL);
	if (pl == 0) {
		dec[0] = '/';
		dec[1] = '\0';
		dl = 1;
	} else {
		FUZZ_CHECK(pct_decode(path, pl, false, dec, &dl));
	}
	FUZZ_CHECK(path_clean(dec, dl));
	if (s->path_style) {
		FUZZ_CHECK(strncmp(dec, "/" BUCKET, strlen(BUCKET) + 1) == 0);
		key = dec + strlen(BUCKET) + 1;
		FUZZ_CHECK(*key == '\0' || *key == '/');
		key += *key == '/';
	} else {
		key = dec + 1;
	}

	if (*key != '\0') {
		/* An object of the table. */
		FUZZ_CHECK(key_inside(key, strlen(key)));
		query_read(query, false, &q);
		FUZZ_CHECK(!q.unknown);
		if (post)
			FUZZ_CHECK(q.uploads || q.upload_id);
		/* Only PUT copies, but a copy source is checked on every object
		 * request, as signcheck.c does. */
		for (size_t i = 0; i < r->nheaders; i++)
			if (strcasecmp(r->headers[i].name, "x-amz-copy-source") == 0)
				FUZZ_CHECK(copy_source_inside(r->headers[i].value));
	} else {
		/* The bucket.  A copy source does not matter here: only PUT
		 * copies, and a PUT on the bucket is never signed. */
		query_read(query, true, &q);
		FUZZ_CHECK(!q.unknown);
		if (get) {
			/* GetBucketLocation is chosen by its sub-resource, which
			 * outranks listing parameters beside it; signcheck.c
			 * signs it whatever they say, and so does the oracle. */
			FUZZ_CHECK(q.location || (q.prefixes > 0 && !q.prefix_outside));
		} else if (post) {
			FUZZ_CHECK(q.delete_objects && r->body != NULL && r->body_len > 0);
			check_delete_body(r->body, r->body_len);
			judged_by_body = true;
		} else {
			/* HeadBucket answers headers only; PUT and DELETE on the
			 * bucket are never signed. */
			FUZZ_CHECK(head);
		}
	}
	FUZZ_CHECK(body_checked == judged_by_body);
	free(dec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const methods[] = {"GET",    "HEAD",  "PUT",     "POST",
	                                      "DELETE", "PATCH", "OPTIONS", "get"};
	static const struct st_s3_loc table = {BUCKET, "lake/t"};
	struct st_sigv4_header h[3];
	struct st_signcheck_scope s;
	struct st_signcheck_req r;
	struct fl_err err = {0};
	char *copy, *seg[4], *p, *end;
	size_t nh = 0;
	int store, rc;
	bool body_checked = false;

	if (size == 0)
		return 0;
	copy = malloc(size);
	FUZZ_CHECK(copy != NULL);
	memcpy(copy, data + 1, size - 1);
	copy[size - 1] = '\0';
	end = copy + size - 1;
	p = copy;
	for (int i = 0; i < 3; i++) {
		char *nl = memchr(p, '\n', (size_t)(end - p));

		seg[i] = p;
		if (nl != NULL) {
			*nl = '\0';
			p = nl + 1;
		} else {
			p = end;
		}
	}
	seg[3] = p;

	store = (data[0] >> 7) & 1;
	s = (struct st_signcheck_scope){&table, endpoints[store], (data[0] & 1) == 0,
	                                (data[0] & 2) ? ST_ACCESS_READ_WRITE : ST_ACCESS_READ};
	h[nh++] = (struct st_sigv4_header){"content-type", "application/xml"};
	if (data[0] & 64) {
		h[nh++] = (struct st_sigv4_header){"x-amz-copy-source", seg[1]};
		if (seg[2][0] != '\0')
			h[nh++] = (struct st_sigv4_header){"X-Amz-Copy-Source", seg[2]};
	}
	r = (struct st_signcheck_req){methods[(data[0] >> 2) & 7],
	                              seg[0],
	                              h,
	                              nh,
	                              (data[0] & 32) ? seg[3] : NULL,
	                              (data[0] & 32) ? (size_t)(end - seg[3]) : 0};

	rc = st_signcheck(&s, &r, &body_checked, &err);
	FUZZ_CHECK(rc == 0 || rc == -1);
	if (rc == 0) {
		check_signed(&s, &r, store, body_checked);
	} else {
		FUZZ_CHECK(err.kind == FL_ERR_FORBIDDEN || err.kind == FL_ERR_BAD_REQUEST);
		FUZZ_CHECK(memchr(err.msg, '\0', sizeof(err.msg)) != NULL && err.msg[0] != '\0');
	}
	free(copy);
	return 0;
}
