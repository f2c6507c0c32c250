#include "isa.h"

#include <stdlib.h>
#include <string.h>

static const pleat_isa scalar = {"scalar"};

/* Best first. */
static const pleat_isa *const variants[] = {&scalar};

pleat_status pleat_isa_select(const pleat_isa **out)
{
    const char *want = getenv("PLEAT_CPU_ISA");
    if (!want || !*want) {
        *out = variants[0];
        return PLEAT_OK;
    }
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; ++i) {
        if (strcmp(variants[i]->name, want) == 0) {
            *out = variants[i];
            return PLEAT_OK;
        }
    }
    return PLEAT_ERROR_BACKEND_UNAVAILABLE;
}
