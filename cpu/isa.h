/* CPU kernel variants. The best one the CPU supports is chosen once per
 * context; PLEAT_CPU_ISA=name forces one. */
#ifndef PLEAT_CPU_ISA_H
#define PLEAT_CPU_ISA_H

#include "pleat.h"

typedef struct pleat_isa {
    const char *name;
} pleat_isa;

/* BACKEND_UNAVAILABLE when PLEAT_CPU_ISA names a variant this build or CPU
 * lacks. */
pleat_status pleat_isa_select(const pleat_isa **out);

#endif
