/* pagetoken.c - opaque, tamper-checked page tokens.
 *
 * A token is base64url(cursor JSON) "." base64url(HMAC-SHA256(secret, cursor
 * JSON)[0..16)).  The secret lives in the database (server_secret), so every
 * replica accepts every other replica's tokens, and a client cannot forge a
 * cursor to probe names it could not list. */
#include <stdlib.h>
#include <string.h>

#include "libcrypto.h"
#include "db/db_int.h"
#include "json.h"

#define MAC_BYTES 16

static char *b64url(const unsigned char *p, size_t n)
{
	char *s = malloc(4 * ((n + 2) / 3) + 1);
	int len;

	if (s == NULL)
		return NULL;
	len = EVP_EncodeBlock((unsigned char *)s, p, (int)n);
	while (len > 0 && s[len - 1] == '=')
		len--;
	s[len] = '\0';
	for (char *c = s; *c; c++)
		*c = *c == '+' ? '-' : *c == '/' ? '_' : *c;
	return s;
}

/* Decodes base64url into a malloc'd buffer; NULL on bad input. */
static unsigned char *unb64url(const char *s, size_t len, size_t *out_len)
{
	size_t padded = (len + 3) / 4 * 4;
	char *tmp = malloc(padded + 1);
	unsigned char *out = malloc(padded / 4 * 3 + 1);
	int n;

	if (tmp == NULL || out == NULL || len % 4 == 1)
		goto fail;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];

		if (c == '-')
			c = '+';
		else if (c == '_')
			c = '/';
		else if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		           (c >= '0' && c <= '9')))
			goto fail;
		tmp[i] = c;
	}
	for (size_t i = len; i < padded; i++)
		tmp[i] = '=';
	n = EVP_DecodeBlock(out, (unsigned char *)tmp, (int)padded);
	if (n < 0)
		goto fail;
	*out_len = (size_t)n - (padded - len);
	free(tmp);
	return out;
fail:
	free(tmp);
	free(out);
	return NULL;
}

static void mac(const struct cat_db *db, const char *data, size_t n, unsigned char out[32])
{
	unsigned int len = 32;

	HMAC(EVP_sha256(), db->secret, sizeof(db->secret), (const unsigned char *)data, n, out,
	     &len);
}

char *cat_page_token_make(const struct cat_db *db, const json_t *cursor)
{
	unsigned char m[32];
	char *payload, *a = NULL, *b = NULL, *tok = NULL;
	size_t n;

	payload = fl_json_dump(cursor, &n);
	if (payload == NULL)
		return NULL;
	mac(db, payload, n, m);
	a = b64url((unsigned char *)payload, n);
	b = b64url(m, MAC_BYTES);
	if (a != NULL && b != NULL) {
		tok = malloc(strlen(a) + strlen(b) + 2);
		if (tok != NULL) {
			memcpy(tok, a, strlen(a));
			tok[strlen(a)] = '.';
			memcpy(tok + strlen(a) + 1, b, strlen(b) + 1);
		}
	}
	free(payload);
	free(a);
	free(b);
	return tok;
}

int cat_page_token_parse(const struct cat_db *db, const char *token, json_t **cursor,
                         struct fl_err *err)
{
	const char *dot = strchr(token, '.');
	unsigned char *payload = NULL, *given = NULL, want[32];
	size_t plen, glen;
	json_error_t je;
	json_t *v;
	int rc = -1;

	if (dot == NULL || strlen(token) > 8192)
		goto bad;
	payload = unb64url(token, (size_t)(dot - token), &plen);
	given = unb64url(dot + 1, strlen(dot + 1), &glen);
	if (payload == NULL || given == NULL || glen != MAC_BYTES)
		goto bad;
	mac(db, (char *)payload, plen, want);
	if (CRYPTO_memcmp(want, given, MAC_BYTES) != 0)
		goto bad;
	v = json_loadb((char *)payload, plen, JSON_REJECT_DUPLICATES, &je);
	if (v == NULL)
		goto bad;
	*cursor = v;
	rc = 0;
	goto out;
bad:
	fl_err_set(err, FL_ERR_BAD_REQUEST,
	           "invalid pageToken: not a token issued by this catalog");
out:
	free(payload);
	free(given);
	return rc;
}
