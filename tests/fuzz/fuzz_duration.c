/* fuzz_duration.c - fl_duration_parse on arbitrary text.
 *
 * Invariants: the result is -1 or a non-negative number of seconds; an
 * accepted text uses only digits and unit letters; formatting the value and
 * parsing it again gives the same number. */
#include <string.h>

#include "clock.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	char out[64];
	int64_t v;

	FUZZ_CHECK(s != NULL);
	memcpy(s, data, size);
	s[size] = '\0';
	v = fl_duration_parse(s);
	FUZZ_CHECK(v >= -1);
	if (v >= 0) {
		FUZZ_CHECK(s[strspn(s, "0123456789PpTtDdHhMmSs")] == '\0');
		fl_duration_format(v, out, sizeof(out));
		FUZZ_CHECK(memchr(out, '\0', sizeof(out)) != NULL);
		FUZZ_CHECK(fl_duration_parse(out) == v);
	}
	free(s);
	return 0;
}
