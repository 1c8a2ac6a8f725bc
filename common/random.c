/* random.c - getrandom(2) wrappers (see random.h for why not RAND_bytes). */
#include "random.h"

#include <errno.h>
#include <sys/random.h>

#include "clock.h"

int fl_random_bytes(void *buf, size_t n)
{
	unsigned char *p = buf;

	while (n > 0) {
		ssize_t got = getrandom(p, n, 0);

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return -1;
		p += got;
		n -= (size_t)got;
	}
	return 0;
}

int64_t fl_random_id(void)
{
	int64_t id;

	do {
		if (fl_random_bytes(&id, sizeof(id)) != 0)
			id = fl_now_ms();
		id &= INT64_MAX;
	} while (id == 0);
	return id;
}
