/* log.h - structured log lines on stderr.
 *
 * One line per event in logfmt: ts=… level=… req=… msg="…" plus fields.
 * Only server/ logs above debug; lower layers return errors instead.  Callers
 * never pass tokens, secrets or connection strings.  Thread-safe: each line
 * is written with a single write(2). */
#ifndef FL_LOG_H
#define FL_LOG_H

#include "err.h"

enum fl_log_level { FL_LOG_DEBUG, FL_LOG_INFO, FL_LOG_WARN, FL_LOG_ERROR };

/* Sets the process-wide threshold; call once at startup. */
void fl_log_set_level(enum fl_log_level level);

/* Parses "debug|info|warn|error"; -1 when unknown. */
int fl_log_level_parse(const char *s);

/* Logs when level reaches the threshold; req may be NULL. */
void fl_log(enum fl_log_level level, const char *req, const char *fmt, ...) FL_PRINTF(3, 4);

#define fl_debug(req, ...) fl_log(FL_LOG_DEBUG, req, __VA_ARGS__)
#define fl_info(req, ...) fl_log(FL_LOG_INFO, req, __VA_ARGS__)
#define fl_warn(req, ...) fl_log(FL_LOG_WARN, req, __VA_ARGS__)
#define fl_error(req, ...) fl_log(FL_LOG_ERROR, req, __VA_ARGS__)

#endif
