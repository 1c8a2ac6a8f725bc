/* libcrypto.h - OpenSSL's libcrypto, loaded on first use (see dl.h for why).
 *
 * libcrypto is the largest library every command mapped: ~17,000 relative
 * relocations, ~120 pages copied on write before main, ~2.4 ms of each
 * process start on the machine BENCHMARKS.md describes - a tenth of a cold
 * `floe ingest` through a catalog, which needs libcrypto only to hash its
 * inputs (the batch identity) on a thread of its own.  Loaded on first use,
 * that cost moves onto that thread, beside the reading of the rows.
 *
 * Files that call libcrypto include this header instead of OpenSSL's (it
 * includes every OpenSSL header that declares a function listed here, so
 * that none is read after the names below become macros).  Each listed
 * function becomes a call through struct fl_libcrypto, whose fields are typed
 * from OpenSSL's own prototypes, so every call is still checked against the
 * real headers.  OpenSSL's macros (OPENSSL_free, BIO_get_mem_data,
 * EVP_EC_gen, ...) expand to listed functions and so work unchanged.
 *
 * Unlike libpq, libcrypto has no single door: hashing, HMAC, base64 and keys
 * are called from everywhere, with no error path for "the library is
 * missing".  So every call loads it if needed (one atomic load once it is).
 * A linked libcrypto that was missing stopped the program before main; a
 * missing one now stops it, with a message naming it, at its first use - or
 * cleanly where the caller asks first with fl_libcrypto_load (`floe serve` at
 * start, the batch identity).  Its first load also runs
 * OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT): see libcrypto.c. */
#ifndef FL_LIBCRYPTO_H
#define FL_LIBCRYPTO_H

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/param_build.h>
#include <openssl/params.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <openssl/x509.h>

#include "dl.h"
#include "err.h"

/* SHA-256 with its context as a plain struct, which copies without an
 * allocation: catalog/secret.c keys PBKDF2's HMAC once and copies its two
 * states each round, where every EVP copy allocates and frees.  OpenSSL 3.0
 * deprecates these; an OpenSSL built without them (no-deprecated) has
 * OPENSSL_NO_DEPRECATED_3_0 set, and secret.c then uses PKCS5_PBKDF2_HMAC. */
#ifndef OPENSSL_NO_DEPRECATED_3_0
#define FL_LIBCRYPTO_HAS_SHA256_CTX 1
#define FL_LIBCRYPTO_SHA256_FUNCS(X) X(SHA256_Final) X(SHA256_Init) X(SHA256_Update)
#else
#define FL_LIBCRYPTO_SHA256_FUNCS(X)
#endif

#define FL_LIBCRYPTO_FUNCS(X)               \
	X(BIO_ctrl)                         \
	X(BIO_free)                         \
	X(BIO_new)                          \
	X(BIO_new_mem_buf)                  \
	X(BIO_s_mem)                        \
	X(BN_bin2bn)                        \
	X(BN_free)                          \
	X(CRYPTO_free)                      \
	X(CRYPTO_memcmp)                    \
	X(EVP_DecodeBlock)                  \
	X(EVP_Digest)                       \
	X(EVP_DigestFinal_ex)               \
	X(EVP_DigestInit_ex)                \
	X(EVP_DigestUpdate)                 \
	X(EVP_EncodeBlock)                  \
	X(EVP_MD_CTX_free)                  \
	X(EVP_MD_CTX_new)                   \
	X(EVP_PKEY_CTX_free)                \
	X(EVP_PKEY_CTX_new_from_name)       \
	X(EVP_PKEY_CTX_new_from_pkey)       \
	X(EVP_PKEY_Q_keygen)                \
	X(EVP_PKEY_free)                    \
	X(EVP_PKEY_fromdata)                \
	X(EVP_PKEY_fromdata_init)           \
	X(EVP_PKEY_get_base_id)             \
	X(EVP_PKEY_get_bits)                \
	X(EVP_PKEY_get_group_name)          \
	X(EVP_PKEY_pairwise_check)          \
	X(EVP_md5)                          \
	X(EVP_sha256)                       \
	X(HMAC)                             \
	X(OPENSSL_cleanse)                  \
	X(OPENSSL_init_crypto)              \
	X(OSSL_PARAM_BLD_free)              \
	X(OSSL_PARAM_BLD_new)               \
	X(OSSL_PARAM_BLD_push_BN)           \
	X(OSSL_PARAM_BLD_push_octet_string) \
	X(OSSL_PARAM_BLD_push_utf8_string)  \
	X(OSSL_PARAM_BLD_to_param)          \
	X(OSSL_PARAM_free)                  \
	X(PEM_read_bio_PUBKEY)              \
	X(PEM_read_bio_PrivateKey)          \
	X(PEM_write_bio_PUBKEY)             \
	X(PEM_write_bio_PrivateKey)         \
	X(PKCS5_PBKDF2_HMAC)                \
	X(RAND_bytes)                       \
	X(i2d_PUBKEY)                       \
	FL_LIBCRYPTO_SHA256_FUNCS(X)

/* The fields' types name the deprecated prototypes above, not a call. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
struct fl_libcrypto {
#define FL_LIBCRYPTO_FIELD(f) __typeof__(&f) f;
	FL_LIBCRYPTO_FUNCS(FL_LIBCRYPTO_FIELD)
#undef FL_LIBCRYPTO_FIELD
};
#pragma GCC diagnostic pop

/* Filled by the first successful load; read-only after. */
extern struct fl_libcrypto fl_crypto;
extern struct fl_dl_lib fl_crypto_lib;

/* Loads libcrypto (FL_LIBCRYPTO_SONAME, the build's) the first time; 0, or
 * -1 with FL_ERR_UNAVAILABLE naming the library and the loader's reason
 * (remembered).  Thread-safe. */
int fl_libcrypto_load(struct fl_err *err) FL_MUST_CHECK;

/* The table, loaded if it was not; a load that fails prints why and aborts
 * (see above). */
const struct fl_libcrypto *fl_libcrypto_need(void);

static inline const struct fl_libcrypto *fl_libcrypto(void)
{
	if (__builtin_expect(__atomic_load_n(&fl_crypto_lib.state, __ATOMIC_ACQUIRE) == 1, 1))
		return &fl_crypto;
	return fl_libcrypto_need();
}

#ifndef FL_LIBCRYPTO_TABLE
#define BIO_ctrl (*fl_libcrypto()->BIO_ctrl)
#define BIO_free (*fl_libcrypto()->BIO_free)
#define BIO_new (*fl_libcrypto()->BIO_new)
#define BIO_new_mem_buf (*fl_libcrypto()->BIO_new_mem_buf)
#define BIO_s_mem (*fl_libcrypto()->BIO_s_mem)
#define BN_bin2bn (*fl_libcrypto()->BN_bin2bn)
#define BN_free (*fl_libcrypto()->BN_free)
#define CRYPTO_free (*fl_libcrypto()->CRYPTO_free)
#define CRYPTO_memcmp (*fl_libcrypto()->CRYPTO_memcmp)
#define EVP_DecodeBlock (*fl_libcrypto()->EVP_DecodeBlock)
#define EVP_Digest (*fl_libcrypto()->EVP_Digest)
#define EVP_DigestFinal_ex (*fl_libcrypto()->EVP_DigestFinal_ex)
#define EVP_DigestInit_ex (*fl_libcrypto()->EVP_DigestInit_ex)
#define EVP_DigestUpdate (*fl_libcrypto()->EVP_DigestUpdate)
#define EVP_EncodeBlock (*fl_libcrypto()->EVP_EncodeBlock)
#define EVP_MD_CTX_free (*fl_libcrypto()->EVP_MD_CTX_free)
#define EVP_MD_CTX_new (*fl_libcrypto()->EVP_MD_CTX_new)
#define EVP_PKEY_CTX_free (*fl_libcrypto()->EVP_PKEY_CTX_free)
#define EVP_PKEY_CTX_new_from_name (*fl_libcrypto()->EVP_PKEY_CTX_new_from_name)
#define EVP_PKEY_CTX_new_from_pkey (*fl_libcrypto()->EVP_PKEY_CTX_new_from_pkey)
#define EVP_PKEY_Q_keygen (*fl_libcrypto()->EVP_PKEY_Q_keygen)
#define EVP_PKEY_free (*fl_libcrypto()->EVP_PKEY_free)
#define EVP_PKEY_fromdata (*fl_libcrypto()->EVP_PKEY_fromdata)
#define EVP_PKEY_fromdata_init (*fl_libcrypto()->EVP_PKEY_fromdata_init)
#define EVP_PKEY_get_base_id (*fl_libcrypto()->EVP_PKEY_get_base_id)
#define EVP_PKEY_get_bits (*fl_libcrypto()->EVP_PKEY_get_bits)
#define EVP_PKEY_get_group_name (*fl_libcrypto()->EVP_PKEY_get_group_name)
#define EVP_PKEY_pairwise_check (*fl_libcrypto()->EVP_PKEY_pairwise_check)
#define EVP_md5 (*fl_libcrypto()->EVP_md5)
#define EVP_sha256 (*fl_libcrypto()->EVP_sha256)
#define HMAC (*fl_libcrypto()->HMAC)
#define OPENSSL_cleanse (*fl_libcrypto()->OPENSSL_cleanse)
#define OPENSSL_init_crypto (*fl_libcrypto()->OPENSSL_init_crypto)
#define OSSL_PARAM_BLD_free (*fl_libcrypto()->OSSL_PARAM_BLD_free)
#define OSSL_PARAM_BLD_new (*fl_libcrypto()->OSSL_PARAM_BLD_new)
#define OSSL_PARAM_BLD_push_BN (*fl_libcrypto()->OSSL_PARAM_BLD_push_BN)
#define OSSL_PARAM_BLD_push_octet_string (*fl_libcrypto()->OSSL_PARAM_BLD_push_octet_string)
#define OSSL_PARAM_BLD_push_utf8_string (*fl_libcrypto()->OSSL_PARAM_BLD_push_utf8_string)
#define OSSL_PARAM_BLD_to_param (*fl_libcrypto()->OSSL_PARAM_BLD_to_param)
#define OSSL_PARAM_free (*fl_libcrypto()->OSSL_PARAM_free)
#define PEM_read_bio_PUBKEY (*fl_libcrypto()->PEM_read_bio_PUBKEY)
#define PEM_read_bio_PrivateKey (*fl_libcrypto()->PEM_read_bio_PrivateKey)
#define PEM_write_bio_PUBKEY (*fl_libcrypto()->PEM_write_bio_PUBKEY)
#define PEM_write_bio_PrivateKey (*fl_libcrypto()->PEM_write_bio_PrivateKey)
#define PKCS5_PBKDF2_HMAC (*fl_libcrypto()->PKCS5_PBKDF2_HMAC)
#define RAND_bytes (*fl_libcrypto()->RAND_bytes)
#define i2d_PUBKEY (*fl_libcrypto()->i2d_PUBKEY)
#ifdef FL_LIBCRYPTO_HAS_SHA256_CTX
#define SHA256_Final (*fl_libcrypto()->SHA256_Final)
#define SHA256_Init (*fl_libcrypto()->SHA256_Init)
#define SHA256_Update (*fl_libcrypto()->SHA256_Update)
#endif
#endif

#endif
