/* A monotonic clock for the optional per-stage profile. */
#ifndef PLEAT_CORE_CLOCK_H
#define PLEAT_CORE_CLOCK_H

#ifdef __cplusplus
extern "C" { /* the CUDA backend's profile reads it too */
#endif

/* Milliseconds from a fixed point in the past (core/clock.c). */
double pleat_now_ms(void);

#ifdef __cplusplus
}
#endif

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
