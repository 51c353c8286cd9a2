/* How a fuzz target hands its input to a reader that takes a path: the bytes
 * go into one anonymous in-memory file (memfd), named by its /proc path, so
 * that millions of inputs touch no disk and every reader runs exactly the
 * code a user's file would. */
#ifndef SLUICE_FUZZ_INPUT_H
#define SLUICE_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>

/* The path of a regular file holding exactly data[0, size). */
const char *fuzz_input_path(const uint8_t *data, size_t size);

/* The entry point every target defines (libFuzzer's). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
