/* clock.h - wall and monotonic time, and ISO-8601 durations. */
#ifndef FL_CLOCK_H
#define FL_CLOCK_H

#include <stdint.h>

/* Milliseconds since the Unix epoch. */
int64_t fl_now_ms(void);

/* Monotonic nanoseconds, for latency. */
int64_t fl_mono_ns(void);

/* Parses a duration in seconds: "1800", "30s", "30m", "2h", "1d" or ISO-8601
 * "PT30M" / "P1DT2H".  Returns -1 when malformed. */
int64_t fl_duration_parse(const char *s);

/* Formats seconds as an ISO-8601 duration ("PT30M") into out. */
void fl_duration_format(int64_t seconds, char *out, unsigned cap);

#endif
