/* A monotonic clock for the optional per-stage profile. */
#ifndef PLEAT_CORE_CLOCK_H
#define PLEAT_CORE_CLOCK_H

#include <time.h>

static inline double pleat_now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* Adds the time since *mark to *total and moves the mark; no-op when off. */
static inline void pleat_lap(int on, double *mark, double *total)
{
    if (!on)
        return;
    double now = pleat_now_ms();
    *total += now - *mark;
    *mark = now;
}

#endif
