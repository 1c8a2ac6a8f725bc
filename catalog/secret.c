/* secret.c - client secrets: generation and salted PBKDF2-HMAC-SHA256 hashes.
 *
 * The stored form is "pbkdf2-sha256$<iterations>$<salt>$<hash>" with salt
 * (16 bytes) and hash (32 bytes) in unpadded base64url.  The iteration count
 * travels with the hash so it can be raised later without invalidating
 * existing secrets.  Nothing here can recover a secret from its hash. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libcrypto.h"
#include "access.h"
#include "b64.h"

#define SECRET_ITERATIONS 600000 /* OWASP's figure for PBKDF2-HMAC-SHA256 */
#define SALT_BYTES 16
#define HASH_BYTES 32

static int derive(const char *secret, const unsigned char *salt, long iter,
                  unsigned char out[HASH_BYTES])
{
	return PKCS5_PBKDF2_HMAC(secret, (int)strlen(secret), salt, SALT_BYTES, (int)iter,
	                         EVP_sha256(), HASH_BYTES, out) == 1
	               ? 0
	               : -1;
}

int cat_secret_new(char out[64], struct fl_err *err)
{
	unsigned char b[32];

	if (RAND_bytes(b, sizeof(b)) != 1)
		return fl_err_set(err, FL_ERR_INTERNAL, "no randomness for a secret");
	fl_b64url_encode(b, sizeof(b), out);
	OPENSSL_cleanse(b, sizeof(b));
	return 0;
}

int cat_secret_hash(const char *secret, char **out, struct fl_err *err)
{
	unsigned char salt[SALT_BYTES], h[HASH_BYTES];
	char s64[32], h64[48], *text;
	size_t cap = 128;

	if (RAND_bytes(salt, sizeof(salt)) != 1 || derive(secret, salt, SECRET_ITERATIONS, h) != 0)
		return fl_err_set(err, FL_ERR_INTERNAL, "cannot hash the secret");
	fl_b64url_encode(salt, sizeof(salt), s64);
	fl_b64url_encode(h, sizeof(h), h64);
	text = malloc(cap);
	if (text == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	snprintf(text, cap, "pbkdf2-sha256$%d$%s$%s", SECRET_ITERATIONS, s64, h64);
	*out = text;
	return 0;
}

/* Decodes base64url of exactly n bytes; -1 otherwise. */
static int dec(const char *s, size_t len, unsigned char *out, size_t n)
{
	size_t got;

	return fl_b64_decode(s, len, out, n, &got) == 0 && got == n ? 0 : -1;
}

bool cat_secret_verify(const char *secret, const char *stored)
{
	unsigned char salt[SALT_BYTES], want[HASH_BYTES], got[HASH_BYTES];
	const char *p, *salt_end, *hash;
	char *end;
	long iter;

	if (strncmp(stored, "pbkdf2-sha256$", 14) != 0)
		return false;
	p = stored + 14;
	iter = strtol(p, &end, 10);
	if (end == p || *end != '$' || iter < 1000 || iter > 100000000)
		return false;
	p = end + 1;
	salt_end = strchr(p, '$');
	if (salt_end == NULL)
		return false;
	hash = salt_end + 1;
	if (dec(p, (size_t)(salt_end - p), salt, sizeof(salt)) != 0 ||
	    dec(hash, strlen(hash), want, sizeof(want)) != 0 ||
	    derive(secret, salt, iter, got) != 0)
		return false;
	return CRYPTO_memcmp(want, got, sizeof(got)) == 0;
}
