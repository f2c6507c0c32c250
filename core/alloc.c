/* MADV_HUGEPAGE is Linux's, outside POSIX */
#define _DEFAULT_SOURCE
#include "alloc.h"
#include "pleat.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif
#ifdef _WIN32
#include <malloc.h> /* _aligned_malloc */
#endif

static atomic_uint_least64_t attempts;
static atomic_uint_least64_t failures;
static atomic_int_least64_t live;
static atomic_uint_least64_t granted;
/* 0: no failure armed; else the number of attempts left until the one that
 * fails (1 = the next). */
static atomic_uint_least64_t countdown;
static atomic_int sticky_failure;
static atomic_int failing; /* sticky mode, once triggered */
static atomic_size_t limit; /* 0: none */
static atomic_size_t largest;

/* The application's heap (both NULL: the C library's). Changed only while
 * no context exists, so no call reads it meanwhile. */
static pleat_alloc_fn heap_alloc;
static pleat_free_fn heap_free;
static void *heap_context;
static atomic_int contexts;

/* What the application's heap is asked to align most blocks to; the C
 * library's malloc gives what it gives (pleat's loads and stores are all
 * unaligned, and its cache-line buffers align themselves). */
#define BLOCK_ALIGN ((size_t)16)

/* The C library's heap. Windows's has no aligned block that free() takes
 * back, so there every block is an _aligned_malloc one. */
static void *system_block(size_t bytes, size_t alignment)
{
#ifdef _WIN32
    return _aligned_malloc(bytes, alignment);
#else
    if (alignment == BLOCK_ALIGN)
        return malloc(bytes);
    void *block;
    return posix_memalign(&block, alignment, bytes) == 0 ? block : NULL;
#endif
}

static void system_free(void *block)
{
#ifdef _WIN32
    _aligned_free(block);
#else
    free(block);
#endif
}

/* A block of `bytes` (at least 1) on a multiple of `alignment` (BLOCK_ALIGN
 * or PLEAT_HUGE_PAGE). */
static void *heap_block(size_t bytes, size_t alignment)
{
    if (heap_alloc)
        return heap_alloc(bytes, alignment, heap_context);
    return system_block(bytes, alignment);
}

static int should_fail(size_t bytes)
{
    atomic_fetch_add_explicit(&attempts, 1, memory_order_relaxed);
    size_t seen = atomic_load_explicit(&largest, memory_order_relaxed);
    while (bytes > seen && !atomic_compare_exchange_weak_explicit(&largest, &seen, bytes,
                                                                  memory_order_relaxed,
                                                                  memory_order_relaxed)) {
    }
    size_t max = atomic_load_explicit(&limit, memory_order_relaxed);
    if (max != 0 && bytes > max) {
        atomic_fetch_add_explicit(&failures, 1, memory_order_relaxed);
        return 1;
    }
    if (atomic_load_explicit(&failing, memory_order_relaxed)) {
        atomic_fetch_add_explicit(&failures, 1, memory_order_relaxed);
        return 1;
    }
    uint64_t n = atomic_load_explicit(&countdown, memory_order_relaxed);
    while (n != 0 && !atomic_compare_exchange_weak_explicit(&countdown, &n, n - 1,
                                                            memory_order_relaxed,
                                                            memory_order_relaxed)) {
    }
    if (n != 1)
        return 0;
    if (atomic_load_explicit(&sticky_failure, memory_order_relaxed))
        atomic_store_explicit(&failing, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&failures, 1, memory_order_relaxed);
    return 1;
}

/* Counts a block the system granted. */
static void *granted_block(void *block, size_t bytes)
{
    if (block) {
        atomic_fetch_add_explicit(&live, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&granted, bytes, memory_order_relaxed);
    }
    return block;
}

void *pleat_malloc(size_t bytes)
{
    if (should_fail(bytes))
        return NULL;
    return granted_block(heap_block(bytes, BLOCK_ALIGN), bytes);
}

void *pleat_malloc_huge(size_t bytes)
{
#if defined(MADV_HUGEPAGE)
    if (bytes < PLEAT_HUGE_FROM)
        return pleat_malloc(bytes);
    if (should_fail(bytes))
        return NULL;
    void *block = heap_block(bytes, PLEAT_HUGE_PAGE);
    if (!block)
        return NULL;
    /* advice only: where the kernel says no, the pages stay small */
    (void)madvise(block, bytes / PLEAT_HUGE_PAGE * PLEAT_HUGE_PAGE, MADV_HUGEPAGE);
    return granted_block(block, bytes);
#else
    /* no huge-page advice to align for (Windows: 2 MiB would cost up to
     * 2 MiB more a block) */
    return pleat_malloc(bytes);
#endif
}

void *pleat_calloc(size_t count, size_t size)
{
    int wraps = size != 0 && count > SIZE_MAX / size;
    if (should_fail(wraps ? SIZE_MAX : count * size) || wraps)
        return NULL;
#ifndef _WIN32
    if (!heap_alloc) /* calloc's fresh pages come zeroed (Windows: see system_block) */
        return granted_block(calloc(count, size), count * size);
#endif
    size_t bytes = count * size != 0 ? count * size : 1; /* the heap is promised >= 1 */
    void *block = heap_block(bytes, BLOCK_ALIGN);
    if (block)
        memset(block, 0, bytes);
    return granted_block(block, count * size);
}

int pleat_alloc_thread(void)
{
    return !should_fail(0);
}

void pleat_free(void *block)
{
    if (!block)
        return;
    atomic_fetch_sub_explicit(&live, 1, memory_order_relaxed);
    if (heap_free)
        heap_free(block, heap_context);
    else
        system_free(block);
}

void pleat_alloc_context_made(void)
{
    atomic_fetch_add(&contexts, 1);
}

void pleat_alloc_context_gone(void)
{
    atomic_fetch_sub(&contexts, 1);
}

pleat_status pleat_set_allocator(pleat_alloc_fn alloc, pleat_free_fn free_fn, void *alloc_context)
{
    if (!alloc != !free_fn || atomic_load(&contexts) != 0)
        return PLEAT_ERROR_INVALID_ARGUMENT;
    heap_alloc = alloc;
    heap_free = free_fn;
    heap_context = alloc_context;
    return PLEAT_OK;
}

void pleat_alloc_fail_at(uint64_t nth, int sticky)
{
    atomic_store(&failing, 0);
    atomic_store(&sticky_failure, sticky != 0);
    atomic_store(&countdown, nth);
}

void pleat_alloc_limit(size_t max_bytes)
{
    atomic_store(&limit, max_bytes);
}

size_t pleat_alloc_largest(void)
{
    return atomic_load(&largest);
}

void pleat_alloc_reset_largest(void)
{
    atomic_store(&largest, 0);
}

uint64_t pleat_alloc_attempts(void)
{
    return atomic_load(&attempts);
}

uint64_t pleat_alloc_failures(void)
{
    return atomic_load(&failures);
}

int64_t pleat_alloc_live(void)
{
    return atomic_load(&live);
}

uint64_t pleat_alloc_granted(void)
{
    return atomic_load(&granted);
}
