/* path.h - local file-system path helpers shared by the layers. */
#ifndef FL_PATH_H
#define FL_PATH_H

#include "err.h"

/* Creates directory path and its missing parents (mode 0755), like
 * `mkdir -p`.  Returns -1 with errno set on failure (ENAMETOOLONG when path
 * does not fit PATH_MAX). */
int fl_mkdir_p(const char *path) FL_MUST_CHECK;

#endif
