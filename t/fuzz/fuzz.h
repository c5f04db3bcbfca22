/*
 * t/fuzz/fuzz.h - shared by the libFuzzer harnesses (fuzz_*.c).
 *
 * Each harness defines LLVMFuzzerTestOneInput(). Built with
 * -fsanitize=fuzzer by `make fuzz`; linked with replay-main.c by the
 * normal build (t/fuzz/replay-<name>), which runs it over the corpus and
 * the regression inputs in `make check` (t/t7004-fuzz-regressions.sh).
 *
 * FUZZ_CHECK(cond) states an invariant: when it does not hold, the
 * input is a finding (the process aborts, as on a crash).
 */
#ifndef APTIX_FUZZ_H
#define APTIX_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* Optional, called once before the first input (libFuzzer's name). */
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define FUZZ_CHECK(cond) do { \
	if (!(cond)) { \
		fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, \
			__LINE__, #cond); \
		abort(); \
	} \
} while (0)

#endif
