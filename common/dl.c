/* dl.c - dlopen + dlsym of an optional library into a table of function
 * pointers, once per process (see dl.h for why).
 *
 * Invariant: a table is written only by fl_dl_open, all at once after every
 * symbol resolved, and only before its fl_dl_lib's state becomes 1 (a release
 * store); readers that saw state 1 (an acquire load) or that hold an object
 * the library created see the complete table. */
#include "dl.h"

#include <dlfcn.h>
#include <string.h>

int fl_dl_open(const char *soname, const struct fl_dl_sym *syms, size_t n, void *table,
               struct fl_err *err)
{
	void *addr[FL_DL_MAX_SYMS];
	void *h;
	const char *why;

	if (n > FL_DL_MAX_SYMS)
		return fl_err_set(err, FL_ERR_INTERNAL, "%s: %zu symbols, at most %d", soname, n,
		                  FL_DL_MAX_SYMS);
	h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		why = dlerror();
		return fl_err_set(err, FL_ERR_UNAVAILABLE, "cannot load %s: %s", soname,
		                  why != NULL ? why : "unknown reason");
	}
	for (size_t i = 0; i < n; i++) {
		(void)dlerror();
		addr[i] = dlsym(h, syms[i].name);
		if (addr[i] == NULL) {
			why = dlerror();
			fl_err_put(err, FL_ERR_UNAVAILABLE, "cannot load %s: symbol %s: %s", soname,
			           syms[i].name, why != NULL ? why : "is NULL");
			dlclose(h);
			return -1;
		}
	}
	/* POSIX guarantees that a data pointer returned by dlsym converts to
	 * the function pointer the field holds; memcpy keeps ISO C quiet. */
	for (size_t i = 0; i < n; i++)
		memcpy((char *)table + syms[i].offset, &addr[i], sizeof(addr[i]));
	return 0;
}

int fl_dl_lib_load(struct fl_dl_lib *lib, struct fl_err *err)
{
	int state = __atomic_load_n(&lib->state, __ATOMIC_ACQUIRE);

	if (state == 0 && lib->first != NULL && fl_dl_lib_load(lib->first, err) != 0)
		return -1;
	if (state == 0) {
		pthread_mutex_lock(&lib->mu);
		state = __atomic_load_n(&lib->state, __ATOMIC_RELAXED);
		if (state == 0) {
			if (fl_dl_open(lib->soname, lib->syms, lib->nsyms, lib->table, &lib->err) ==
			            0 &&
			    (lib->init == NULL || lib->init(lib->table, &lib->err) == 0))
				state = 1;
			else
				state = -1;
			__atomic_store_n(&lib->state, state, __ATOMIC_RELEASE);
		}
		pthread_mutex_unlock(&lib->mu);
	}
	if (state == 1)
		return 0;
	if (err != NULL)
		*err = lib->err;
	return -1;
}
