/* samples/portable.h's functions: <windows.h> stays in here, away from the
 * code that uses the names it takes (near, far, min, max). */
#include "portable.h"

#include <stdlib.h>

#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#include <malloc.h> /* _aligned_malloc */
#include <windows.h>
#else
#include <time.h>
#include <unistd.h>
#endif

void portable_setenv(const char *name, const char *value)
{
#ifdef _WIN32
    _putenv_s(name, value ? value : ""); /* "" removes it */
#else
    if (value)
        setenv(name, value, 1);
    else
        unsetenv(name);
#endif
}

int portable_online_cores(void)
{
#ifdef _WIN32
    SYSTEM_INFO info; /* the processors of this process's group */
    GetSystemInfo(&info);
    DWORD n = info.dwNumberOfProcessors;
#else
    long n = sysconf(_SC_NPROCESSORS_ONLN);
#endif
    return n < 1 ? 1 : n > 1 << 20 ? 1 << 20 : (int)n;
}

void portable_sleep_us(long us)
{
#ifdef _WIN32
    Sleep((DWORD)((us + 999) / 1000));
#else
    struct timespec t = {us / 1000000, us % 1000000 * 1000};
    nanosleep(&t, NULL);
#endif
}

double portable_now_ms(void)
{
#ifdef _WIN32
    LARGE_INTEGER count, frequency;
    QueryPerformanceCounter(&count);
    QueryPerformanceFrequency(&frequency);
    return (double)count.QuadPart * 1e3 / (double)frequency.QuadPart;
#else
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
#endif
}

void *portable_aligned_alloc(size_t size, size_t alignment)
{
#ifdef _WIN32
    return _aligned_malloc(size, alignment);
#else
    void *block = NULL;
    return posix_memalign(&block, alignment > sizeof(void *) ? alignment : sizeof(void *),
                          size) == 0
               ? block
               : NULL;
#endif
}

void portable_aligned_free(void *block)
{
#ifdef _WIN32
    _aligned_free(block);
#else
    free(block);
#endif
}
