/* SPDX-License-Identifier: ISC */
/* What every libFuzzer harness of tests/fuzz shares: the entry points libFuzzer calls and
 * an assertion that stays on in every build (a broken promise is a crash to the fuzzer). */
#ifndef SPINDLE_FUZZ_H
#define SPINDLE_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define fuzz_assert(cond)                                                                          \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: broken promise: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

#endif
