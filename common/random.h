/* random.h - unpredictable bytes from the kernel (getrandom(2)).
 *
 * For ids and jitter that must not repeat or be guessed (snapshot ids, retry
 * jitter): the kernel CSPRNG, which OpenSSL's DRBG seeds from anyway, without
 * instantiating that DRBG - its first use costs a cold `floe ingest` about half
 * a millisecond (issue 9).  Keys, salts and secrets keep using OpenSSL's
 * RAND_bytes with the rest of the crypto. */
#ifndef FL_RANDOM_H
#define FL_RANDOM_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* Fills buf with n random bytes; 0, or -1 (buf unspecified) when the kernel
 * cannot give them.  Blocks only before the kernel pool is first seeded
 * (early boot).  Thread-safe. */
int fl_random_bytes(void *buf, size_t n) FL_MUST_CHECK;

/* A random id in [1, INT64_MAX] (an Iceberg snapshot id); falls back to the
 * wall clock in milliseconds when the kernel gives no randomness. */
int64_t fl_random_id(void);

#endif
