/* tio.h - one file:// IO handle for a whole test program (URIs anywhere
 * on the local disk); never released, the program's exit frees it. */
#ifndef TIO_H
#define TIO_H

#include <stdlib.h>

#include "io/io.h"

static inline struct st_io *tio(void)
{
	static struct st_io *io;

	if (io == NULL) {
		struct st_profile p = {.type = ST_STORAGE_FILE, .location = "file:///"};
		struct fl_err e = {0};

		if (st_io_open(&p, &io, &e) != 0)
			abort();
	}
	return io;
}

#endif
