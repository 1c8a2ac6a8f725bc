/* uuid.c - UUIDs from getrandom (v4) and from the clock plus getrandom (v7, RFC 9562
 * §5.7); libuuid only when the kernel gives no randomness (its own random UUID
 * asks the kernel too, plus getpid, getuid, gettid and getppid each time). */
#include "uuid.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <uuid/uuid.h>

#include "random.h"

void fl_uuid_v4(char out[FL_UUID_STR])
{
	unsigned char b[16];

	if (fl_random_bytes(b, sizeof(b)) != 0) {
		uuid_generate_random(b);
	} else {
		b[6] = (unsigned char)(0x40 | (b[6] & 0x0f));
		b[8] = (unsigned char)(0x80 | (b[8] & 0x3f));
	}
	uuid_unparse_lower(b, out);
}

void fl_uuid_v7(char out[FL_UUID_STR])
{
	struct timespec ts;
	unsigned char b[16];
	uint64_t ms;

	clock_gettime(CLOCK_REALTIME, &ts);
	ms = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
	if (fl_random_bytes(b, sizeof(b)) != 0)
		uuid_generate_random(b);
	for (int i = 0; i < 6; i++)
		b[i] = (unsigned char)(ms >> (40 - 8 * i));
	b[6] = (unsigned char)(0x70 | (b[6] & 0x0f));
	b[8] = (unsigned char)(0x80 | (b[8] & 0x3f));
	uuid_unparse_lower(b, out);
}

bool fl_uuid_valid(const char *s)
{
	for (int i = 0; i < 36; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-')
				return false;
		} else if (!isxdigit((unsigned char)s[i])) {
			return false;
		}
	}
	return s[36] == '\0';
}

bool fl_uuid_is_v7(const char *s)
{
	if (!fl_uuid_valid(s))
		return false;
	return s[14] == '7' && strchr("89abAB", s[19]) != NULL;
}
