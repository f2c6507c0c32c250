#ifndef PLEAT_CORE_CONTEXT_H
#define PLEAT_CORE_CONTEXT_H

#include "backend.h"

struct pleat_context {
    pleat_backend backend; /* never AUTO */
    const pleat_backend_ops *ops;
    void *impl;
    int profile;
    pleat_timings timings; /* of the last successful call */
    char describe[128];
};

#endif
