/* dl.h - optional shared libraries, loaded on first use (dlopen + dlsym).
 *
 * Floe links at build time only the libraries every command needs.  libcurl
 * (object storage, JWKS, REST client, feed CLI), libmicrohttpd (`floe serve`)
 * and libjwt (tokens) are opened by their runtime SONAME when a code path
 * first needs them, so `floe ingest` into a file:// warehouse and `floe
 * version` never map them and their private chains (nghttp2, ssh2, rtmp, psl,
 * gnutls-dane, ...): the dynamic loader was ~30% of a cold ingest (issue 9).
 *
 * Each library has one small module (storage/io/libcurl.h, server/libmhd.h,
 * server/libjwt.h) holding a struct of function pointers whose types come
 * from the library's own prototypes (typeof(&curl_easy_init)), so the real
 * headers still check every call, and a struct fl_dl_lib describing how to
 * fill it.  SONAMEs come from the build (meson reads the linked library's
 * DT_SONAME), never from a guess at run time. */
#ifndef FL_DL_H
#define FL_DL_H

#include <pthread.h>
#include <stddef.h>

#include "err.h"

/* One symbol to resolve: its name in the library and the offset of the
 * function-pointer field that receives its address. */
struct fl_dl_sym {
	const char *name;
	size_t offset;
};

/* The most symbols one library may list. */
#define FL_DL_MAX_SYMS 64

/* An optional library and the table it fills.  Define one per library,
 * statically, with FL_DL_LIB; after a successful fl_dl_lib_load the table is
 * read-only for the rest of the process. */
struct fl_dl_lib {
	const char *soname;
	const struct fl_dl_sym *syms;
	size_t nsyms;
	void *table;
	/* Optional, run once after the symbols resolved (e.g. a library's global
	 * init); a failure makes the load fail. */
	int (*init)(const void *table, struct fl_err *err);
	/* Optional, loaded before this one: a library it links whose start
	 * Floe sets up itself (libcrypto, for libpq, libcurl and libjwt). */
	struct fl_dl_lib *first;
	pthread_mutex_t mu;
	int state; /* 0 not tried, 1 loaded, -1 failed (err says why); atomic */
	struct fl_err err;
};

/* A library loaded after first_ (a struct fl_dl_lib *, or NULL). */
#define FL_DL_LIB_AFTER(first_, soname_, syms_, table_, init_)                                     \
	{                                                                                          \
		.soname = (soname_), .syms = (syms_), .nsyms = sizeof(syms_) / sizeof((syms_)[0]), \
		.table = (table_), .init = (init_), .first = (first_),                             \
		.mu = PTHREAD_MUTEX_INITIALIZER, .state = 0,                                       \
		.err = { 0 }                                                                       \
	}
#define FL_DL_LIB(soname_, syms_, table_, init_) \
	FL_DL_LIB_AFTER(NULL, soname_, syms_, table_, init_)

/* Opens soname (RTLD_NOW | RTLD_LOCAL) and stores the address of each of the
 * n symbols (n <= FL_DL_MAX_SYMS) into its field of table.  On failure -
 * library absent, a symbol missing - returns -1 with FL_ERR_UNAVAILABLE
 * naming soname and dlerror()'s reason, closes the library and leaves table
 * untouched.  The library stays mapped for the life of the process.  Not
 * synchronised: use fl_dl_lib_load, which calls it once. */
int fl_dl_open(const char *soname, const struct fl_dl_sym *syms, size_t n, void *table,
               struct fl_err *err) FL_MUST_CHECK;

/* Loads lib the first time it is called (lib->first, fl_dl_open, then
 * lib->init) and remembers the outcome: every later call returns 0 at once,
 * or -1 with the same error (a missing library is not retried).  Thread-safe; after the
 * first success the cost is one atomic load. */
int fl_dl_lib_load(struct fl_dl_lib *lib, struct fl_err *err) FL_MUST_CHECK;

#endif
