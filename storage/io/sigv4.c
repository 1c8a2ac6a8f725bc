/* sigv4.c - AWS Signature Version 4 (see sigv4.h).
 *
 *   CanonicalRequest = Method \n CanonicalURI \n CanonicalQuery \n
 *                      (lower(name) ":" trim(value) \n)* sorted by name \n
 *                      SignedHeaders \n PayloadHash
 *   StringToSign     = "AWS4-HMAC-SHA256" \n AmzDate \n Scope \n hex(SHA256(CR))
 *   Scope            = Date "/" Region "/" Service "/aws4_request"
 *   SigningKey       = HMAC(HMAC(HMAC(HMAC("AWS4" Secret, Date), Region),
 *                           Service), "aws4_request")
 *   Signature        = hex(HMAC(SigningKey, StringToSign)) */
#include "sigv4.h"

#include <ctype.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_HEADERS 32

static void hex(const unsigned char *p, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 15];
	}
	out[2 * n] = '\0';
}

void st_sigv4_sha256_hex(const void *p, size_t n, char out[65])
{
	unsigned char h[32];
	unsigned int hl = 0;

	if (EVP_Digest(p, n, h, &hl, EVP_sha256(), NULL) != 1)
		memset(h, 0, sizeof(h));
	hex(h, 32, out);
}

void st_sigv4_date(int64_t t, char out[17])
{
	time_t tt = (time_t)t;
	struct tm tm;

	gmtime_r(&tt, &tm);
	strftime(out, 17, "%Y%m%dT%H%M%SZ", &tm);
}

int st_sigv4_encode(struct fl_buf *out, const char *s, size_t len, int keep_slash)
{
	static const char digits[] = "0123456789ABCDEF";

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		char e[3] = {'%', digits[c >> 4], digits[c & 15]};

		if (isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' ||
		    (keep_slash && c == '/')) {
			if (fl_buf_append(out, &s[i], 1) != 0)
				return -1;
		} else if (fl_buf_append(out, e, 3) != 0) {
			return -1;
		}
	}
	return 0;
}

static int hmac(const void *key, size_t klen, const char *msg, unsigned char out[32])
{
	unsigned int n = 0;

	return HMAC(EVP_sha256(), key, (int)klen, (const unsigned char *)msg, strlen(msg), out,
	            &n) != NULL &&
	                       n == 32
	               ? 0
	               : -1;
}

struct hdr {
	char name[64];
	const char *value;
	size_t vlen;
};

static int hdr_cmp(const void *a, const void *b)
{
	return strcmp(((const struct hdr *)a)->name, ((const struct hdr *)b)->name);
}

int st_sigv4_authorization(const struct st_sigv4_req *r, struct fl_buf *out, struct fl_err *err)
{
	struct hdr h[MAX_HEADERS];
	struct fl_buf cr = FL_BUF_INIT, signed_h = FL_BUF_INIT, sts = FL_BUF_INIT;
	char date[9], cr_hash[65], sig[65];
	unsigned char k[32], k2[32];
	struct fl_buf secret = FL_BUF_INIT;
	int rc = -1;

	if (r->n_headers > MAX_HEADERS)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "sigv4: more than %d headers",
		                  MAX_HEADERS);
	if (strlen(r->amz_date) != 16 || r->amz_date[8] != 'T' || r->amz_date[15] != 'Z')
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "sigv4: x-amz-date must be YYYYMMDDTHHMMSSZ");
	memcpy(date, r->amz_date, 8);
	date[8] = '\0';
	for (size_t i = 0; i < r->n_headers; i++) {
		const char *v = r->headers[i].value;
		size_t n = strlen(r->headers[i].name), vl;

		if (n >= sizeof(h[i].name))
			return fl_err_set(err, FL_ERR_BAD_REQUEST, "sigv4: header name too long");
		for (size_t j = 0; j <= n; j++)
			h[i].name[j] = (char)tolower((unsigned char)r->headers[i].name[j]);
		while (*v == ' ' || *v == '\t')
			v++;
		vl = strlen(v);
		while (vl > 0 && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
			vl--;
		h[i].value = v;
		h[i].vlen = vl;
	}
	qsort(h, r->n_headers, sizeof(*h), hdr_cmp);
	if (fl_buf_printf(&cr, "%s\n%s\n%s\n", r->method, r->path, r->query) != 0)
		goto nomem;
	for (size_t i = 0; i < r->n_headers; i++) {
		if (fl_buf_printf(&cr, "%s:%.*s\n", h[i].name, (int)h[i].vlen, h[i].value) != 0 ||
		    fl_buf_printf(&signed_h, "%s%s", i ? ";" : "", h[i].name) != 0)
			goto nomem;
	}
	if (fl_buf_printf(&cr, "\n%s\n%s", signed_h.len ? signed_h.data : "", r->payload_hash) != 0)
		goto nomem;
	st_sigv4_sha256_hex(cr.data, cr.len, cr_hash);
	if (fl_buf_printf(&sts, "AWS4-HMAC-SHA256\n%s\n%s/%s/%s/aws4_request\n%s", r->amz_date,
	                  date, r->region, r->service, cr_hash) != 0 ||
	    fl_buf_printf(&secret, "AWS4%s", r->secret_access_key) != 0)
		goto nomem;
	if (hmac(secret.data, secret.len, date, k) != 0 || hmac(k, 32, r->region, k2) != 0 ||
	    hmac(k2, 32, r->service, k) != 0 || hmac(k, 32, "aws4_request", k2) != 0 ||
	    hmac(k2, 32, sts.data, k) != 0) {
		fl_err_set(err, FL_ERR_INTERNAL, "sigv4: HMAC failed");
		goto out;
	}
	hex(k, 32, sig);
	if (fl_buf_printf(out,
	                  "AWS4-HMAC-SHA256 Credential=%s/%s/%s/%s/aws4_request, SignedHeaders=%s, "
	                  "Signature=%s",
	                  r->access_key_id, date, r->region, r->service,
	                  signed_h.len ? signed_h.data : "", sig) != 0)
		goto nomem;
	rc = 0;
	goto out;
nomem:
	fl_err_set(err, FL_ERR_NOMEM, "out of memory");
out:
	OPENSSL_cleanse(k, sizeof(k));
	OPENSSL_cleanse(k2, sizeof(k2));
	if (secret.data != NULL)
		OPENSSL_cleanse(secret.data, secret.len);
	fl_buf_free(&secret);
	fl_buf_free(&cr);
	fl_buf_free(&signed_h);
	fl_buf_free(&sts);
	return rc;
}
