/* This ISA's kernel table (compiled once per ISA). */
#include "kernels.h"

#define PLEAT_STR_(x) #x
#define PLEAT_STR(x) PLEAT_STR_(x)

const pleat_kernels PLEAT_KERNEL(kernels) = {
    PLEAT_STR(PLEAT_ISA),
    PLEAT_KERNEL(bounds_task),
    PLEAT_KERNEL(keys_task),
    PLEAT_KERNEL(gather_task),
    PLEAT_KERNEL(gather_copy_task),
    PLEAT_KERNEL(sweep_task),
    PLEAT_KERNEL(apply_task),
};
