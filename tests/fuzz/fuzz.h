/*
 * fuzz.h - shared by the libFuzzer targets in tests/fuzz/ (see
 * tests/fuzz/README.md). A target defines LLVMFuzzerTestOneInput and checks
 * properties with FUZZ_CHECK: a failed check prints the property and aborts,
 * which libFuzzer reports as a crash and saves the input as an artifact.
 * AddressSanitizer and UndefinedBehaviorSanitizer catch the rest.
 *
 * Targets never touch the file system outside the directory that
 * fuzz_tmpdir() creates (removed at exit).
 */
#ifndef AGENTCHAT_FUZZ_H
#define AGENTCHAT_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_CHECK(cond, ...)                                                     \
    do {                                                                          \
        if (!(cond)) {                                                            \
            fprintf(stderr, "FUZZ_CHECK failed at %s:%d: %s\n  ", __FILE__,       \
                    __LINE__, #cond);                                             \
            fprintf(stderr, __VA_ARGS__);                                         \
            fputc('\n', stderr);                                                  \
            abort();                                                              \
        }                                                                         \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* A NUL-terminated malloc'ed copy of data[0..size) (aborts when out of
 * memory). */
char *fuzz_strndup(const uint8_t *data, size_t size);

/* A fresh directory in $TMPDIR (tests/fuzz/run-tap points it at a scratch
 * directory of its own), else on tmpfs (/dev/shm), else in /tmp; removed
 * with its contents at exit. Aborts on failure. */
const char *fuzz_tmpdir(void);

/* Split data at NUL bytes into at most max malloc'ed strings (the last part
 * may be empty). Returns the count; free with fuzz_free_parts. */
size_t fuzz_split(const uint8_t *data, size_t size, char **parts, size_t max);
void fuzz_free_parts(char **parts, size_t n);

#endif
