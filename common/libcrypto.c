/* libcrypto.c - the fl_libcrypto table, filled from FL_LIBCRYPTO_SONAME (the
 * SONAME of the libcrypto the build found; see meson.build) on first use. */
#define FL_LIBCRYPTO_TABLE
#include "libcrypto.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

struct fl_libcrypto fl_crypto;

static const struct fl_dl_sym crypto_syms[] = {
#define FL_LIBCRYPTO_SYM(f) {#f, offsetof(struct fl_libcrypto, f)},
        FL_LIBCRYPTO_FUNCS(FL_LIBCRYPTO_SYM)
#undef FL_LIBCRYPTO_SYM
};

/* Before any other call: OpenSSL then registers no exit handler, whose
 * freeing of every table it built was ~1 ms of each short command, for
 * memory the kernel takes back anyway.  The configuration (openssl.cnf) is
 * still read on OpenSSL's first real use. */
static int crypto_init(const void *table, struct fl_err *err)
{
	const struct fl_libcrypto *t = table;

	if (t->OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, NULL) != 1)
		return fl_err_set(err, FL_ERR_UNAVAILABLE, "%s: OpenSSL failed to initialise",
		                  FL_LIBCRYPTO_SONAME);
	return 0;
}

struct fl_dl_lib fl_crypto_lib =
        FL_DL_LIB(FL_LIBCRYPTO_SONAME, crypto_syms, &fl_crypto, crypto_init);

int fl_libcrypto_load(struct fl_err *err)
{
	return fl_dl_lib_load(&fl_crypto_lib, err);
}

const struct fl_libcrypto *fl_libcrypto_need(void)
{
	struct fl_err err;

	if (fl_dl_lib_load(&fl_crypto_lib, &err) != 0) {
		fprintf(stderr, "floe: %s\n", err.msg);
		abort();
	}
	return &fl_crypto;
}
