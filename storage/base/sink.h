/* sink.h - where a format writer's bytes go.
 *
 * A writer produces its file front to back and never seeks, so one write
 * callback is enough for a local file, memory, or (later) an object-store
 * upload.  The writer counts the bytes itself; a sink only has to accept
 * them or fail. */
#ifndef ST_SINK_H
#define ST_SINK_H

#include <stddef.h>

#include "buf.h"
#include "err.h"

struct st_sink {
	/* Accepts all n bytes or fails with err set (FL_ERR_IO, FL_ERR_NOMEM). */
	int (*write)(void *ctx, const void *p, size_t n, struct fl_err *err);
	void *ctx;
};

/* A sink appending to b (which must outlive it). */
void st_sink_to_buf(struct st_sink *s, struct st_buf *b);

/* A local file written with write(2). */
struct st_file_sink {
	struct st_sink sink;
	int fd;
};

/* Creates (truncating) path with mode 0644; FL_ERR_IO naming path and errno. */
int st_file_sink_open(struct st_file_sink *f, const char *path, struct fl_err *err) FL_MUST_CHECK;

/* fsyncs nothing (durability is the object store's job) and closes; reports
 * a failed close(2) as FL_ERR_IO.  Accepts a sink that failed to open. */
int st_file_sink_close(struct st_file_sink *f, struct fl_err *err) FL_MUST_CHECK;

#endif
