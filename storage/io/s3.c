/* s3.c - the s3:// backend of io.h (not yet implemented). */
#include "io_int.h"

int st_io_s3_init(struct st_io *io, struct fl_err *err)
{
	return fl_err_set(err, FL_ERR_UNSUPPORTED, "s3 storage is not supported by this build yet");
}
