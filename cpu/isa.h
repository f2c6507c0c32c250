/* Run-time choice of the CPU kernel variant: the best one this build has and
 * the CPU and OS support, once per context; PLEAT_CPU_ISA=name forces one. */
#ifndef PLEAT_CPU_ISA_H
#define PLEAT_CPU_ISA_H

#include "kernels.h"
#include "pleat.h"

/* BACKEND_UNAVAILABLE when PLEAT_CPU_ISA names a variant this build or CPU
 * lacks (or no variant at all). */
pleat_status pleat_isa_select(const pleat_kernels **out);

/* Whether the named variant is built and supported here. */
int pleat_isa_available(const char *name);

#endif
