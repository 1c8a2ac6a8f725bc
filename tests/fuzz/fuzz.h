/* fuzz.h - the libFuzzer entry point every target defines, and the check
 * the targets use for their invariants.
 *
 * Each target is built two ways: with -fsanitize=fuzzer (meson -Dfuzz=true,
 * clang) for fuzzing, and linked with replay.c into a plain program that runs
 * the seed corpus once, so normal CI catches regressions on known inputs. */
#ifndef FUZZ_H
#define FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* An invariant that failed is a finding: abort so both libFuzzer and the
 * replay program report the input. */
#define FUZZ_CHECK(cond)                                                                     \
	do {                                                                                 \
		if (!(cond)) {                                                               \
			fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, \
			        #cond);                                                      \
			abort();                                                             \
		}                                                                            \
	} while (0)

#endif
