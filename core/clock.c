/* The monotonic clock of core/clock.h: CLOCK_MONOTONIC, or Windows's
 * performance counter. */
#include "clock.h"

#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#include <windows.h>

double pleat_now_ms(void)
{
    LARGE_INTEGER count, frequency;
    QueryPerformanceCounter(&count);
    QueryPerformanceFrequency(&frequency); /* fixed at boot */
    return (double)count.QuadPart * 1e3 / (double)frequency.QuadPart;
}
#else
#include <time.h>

double pleat_now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}
#endif
