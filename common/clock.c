/* clock.c - time helpers. */
#include "clock.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int64_t fl_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t fl_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t unit_seconds(char u, int in_time)
{
	switch (u) {
	case 'D':
	case 'd': return 86400;
	case 'H':
	case 'h': return 3600;
	case 'M':
	case 'm': return in_time ? 60 : -1;
	case 'S':
	case 's': return 1;
	default: return -1;
	}
}

int64_t fl_duration_parse(const char *s)
{
	int64_t total = 0;
	int iso = 0, in_time = 1, digits = 0;
	const char *p = s;

	if (*p == 'P' || *p == 'p') {
		iso = 1;
		in_time = 0;
		p++;
	}
	while (*p != '\0') {
		int64_t v = 0, mul;

		if (iso && (*p == 'T' || *p == 't')) {
			in_time = 1;
			p++;
			continue;
		}
		if (!isdigit((unsigned char)*p))
			return -1;
		while (isdigit((unsigned char)*p)) {
			if (v > (INT64_MAX - 9) / 10)
				return -1;
			v = v * 10 + (*p++ - '0');
		}
		digits = 1;
		if (*p == '\0') {
			if (iso)
				return -1;
			mul = 1;
		} else {
			if (!iso && (*p == 'D' || *p == 'd'))
				in_time = 0;
			mul = unit_seconds(*p, in_time || !iso);
			if (!iso)
				in_time = 1;
			if (mul < 0)
				return -1;
			p++;
		}
		if (v > (INT64_MAX - total) / mul)
			return -1;
		total += v * mul;
	}
	return digits ? total : -1;
}

void fl_duration_format(int64_t seconds, char *out, unsigned cap)
{
	int64_t h = seconds / 3600, m = seconds % 3600 / 60, sec = seconds % 60;
	char tmp[64];
	int n = snprintf(tmp, sizeof(tmp), "PT");

	if (h > 0)
		n += snprintf(tmp + n, sizeof(tmp) - (size_t)n, "%lldH", (long long)h);
	if (m > 0)
		n += snprintf(tmp + n, sizeof(tmp) - (size_t)n, "%lldM", (long long)m);
	if (sec > 0 || seconds == 0)
		snprintf(tmp + n, sizeof(tmp) - (size_t)n, "%lldS", (long long)sec);
	/* Formatted in full first so that a short out only ever truncates. */
	if (cap > 0)
		snprintf(out, cap, "%s", tmp);
}
