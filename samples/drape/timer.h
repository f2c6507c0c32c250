/* timer.h — wall-clock milliseconds (C11 timespec_get). */
#ifndef DRAPE_TIMER_H
#define DRAPE_TIMER_H

#include <time.h>

static inline double timer_now_ms(void)
{
    struct timespec ts;
    if (timespec_get(&ts, TIME_UTC) != TIME_UTC)
        return 0.0;
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

#endif
