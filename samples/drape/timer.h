/* timer.h — wall-clock milliseconds (C11 timespec_get; on Windows clock(),
 * which there counts wall-clock time, as MinGW's C library has no
 * timespec_get). */
#ifndef DRAPE_TIMER_H
#define DRAPE_TIMER_H

#include <time.h>

static inline double timer_now_ms(void)
{
#ifdef _WIN32
    return (double)clock() * 1e3 / CLOCKS_PER_SEC;
#else
    struct timespec ts;
    if (timespec_get(&ts, TIME_UTC) != TIME_UTC)
        return 0.0;
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
#endif
}

#endif
