/* What the samples, pleat-bench and the tests need from the system beyond
 * C11, for POSIX systems and Windows alike (samples/portable.c, in the
 * pleat_scenes library). */
#ifndef PLEAT_SAMPLES_PORTABLE_H
#define PLEAT_SAMPLES_PORTABLE_H

#include <stddef.h>

/* Sets the environment variable `name` to `value`, or removes it when value
 * is NULL. */
void portable_setenv(const char *name, const char *value);

/* The processors the system has online (Windows: in this process's
 * processor group), at least 1. */
int portable_online_cores(void);

/* Sleeps about `us` microseconds (on Windows, at least a millisecond, or a
 * yield of the core when us is 0). */
void portable_sleep_us(long us);

/* Milliseconds from a fixed point in the past, monotonic. */
double portable_now_ms(void);

/* `size` bytes at a multiple of `alignment` (a power of two), or NULL;
 * given back with portable_aligned_free (Windows: _aligned_malloc). */
void *portable_aligned_alloc(size_t size, size_t alignment);
void portable_aligned_free(void *block);

#endif
