/* The libFuzzer entry points, compiled once per harness with
 * PLEAT_FUZZ_TARGET naming its checker: fz_collide (pleat_self_collide) or
 * fz_pairs (pleat_find_pairs). See fuzz_common.c for the input format and
 * the checks. */
#include "fuzz_common.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fz_init();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    PLEAT_FUZZ_TARGET(data, size);
    return 0;
}
