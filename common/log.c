/* log.c - logfmt lines; the message is quoted with '"' and '\' escaped and
 * control bytes dropped, so a client-supplied name cannot forge a line. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static enum fl_log_level log_threshold = FL_LOG_INFO;

void fl_log_set_level(enum fl_log_level level)
{
	log_threshold = level;
}

int fl_log_level_parse(const char *s)
{
	static const char *const names[] = {"debug", "info", "warn", "error"};

	for (int i = 0; i < 4; i++)
		if (strcmp(s, names[i]) == 0)
			return i;
	return -1;
}

void fl_log(enum fl_log_level level, const char *req, const char *fmt, ...)
{
	static const char *const names[] = {"debug", "info", "warn", "error"};
	char msg[1024], line[1400];
	struct timespec ts;
	struct tm tm;
	va_list ap;
	size_t n;

	if (level < log_threshold)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = (size_t)snprintf(line, sizeof(line), "ts=%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ level=%s",
	                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
	                     tm.tm_sec, ts.tv_nsec / 1000000, names[level]);
	if (req != NULL)
		n += (size_t)snprintf(line + n, sizeof(line) - n, " req=%s", req);
	n += (size_t)snprintf(line + n, sizeof(line) - n, " msg=\"");
	for (const char *p = msg; *p != '\0' && n < sizeof(line) - 3; p++) {
		unsigned char c = (unsigned char)*p;

		if (c < 0x20 || c == 0x7f)
			continue;
		if (c == '"' || c == '\\')
			line[n++] = '\\';
		line[n++] = (char)c;
	}
	line[n++] = '"';
	line[n++] = '\n';
	(void)!write(STDERR_FILENO, line, n);
}
