/* path.h - local file-system path helpers shared by the layers. */
#ifndef FL_PATH_H
#define FL_PATH_H

#include <stdbool.h>

#include "err.h"

/* Creates directory path and its missing parents (mode 0755), like
 * `mkdir -p`; each directory it creates is fsynced into its parent, so a
 * file later made durable inside it survives a crash.  Returns -1 with errno
 * set on failure (ENAMETOOLONG when path does not fit PATH_MAX). */
int fl_mkdir_p(const char *path) FL_MUST_CHECK;

/* Fsyncs the directory that holds path (its entry for path becomes
 * durable).  Returns -1 with errno set on failure. */
int fl_sync_parent(const char *path) FL_MUST_CHECK;

/* Opens the lock file at path for fl_lockfile_set, creating it (mode 0644)
 * when missing.  The descriptor is close-on-exec, so programs this process
 * runs never hold it.  Returns the descriptor, or -1 with errno set. */
int fl_lockfile_open(const char *path) FL_MUST_CHECK;

/* Sets this process's POSIX record lock on the whole of lock file fd: type is
 * F_RDLCK (shared), F_WRLCK (exclusive) or F_UNLCK.  With wait it blocks until
 * granted; without, it fails at once with errno EAGAIN when another process
 * holds a conflicting lock.  A shared lock this process holds is upgraded in
 * place and kept when the upgrade fails.  The lock belongs to the process:
 * children do not inherit it, the kernel drops it when the process exits
 * however it exits (kill -9 included), and closing any descriptor of the file
 * drops it too -- so a process opens each lock file once.  Returns 0 or -1
 * with errno set. */
int fl_lockfile_set(int fd, short type, bool wait) FL_MUST_CHECK;

/* The pid of another process holding a lock on fd that conflicts with type
 * (F_RDLCK or F_WRLCK), 0 when there is none, -1 on error.  Takes no lock;
 * the answer can be stale by the time it returns. */
long fl_lockfile_holder(int fd, short type);

#endif
