/* Every heap block the library takes goes through these wrappers, to the
 * application's heap when it set one (pleat_set_allocator), else to the C
 * library's, and so the tests can count the blocks still live (leaks) and
 * make the Nth allocation fail (OUT_OF_MEMORY paths). Internal, but for
 * pleat_set_allocator(), defined here too. The hook
 * costs a few relaxed atomic operations per allocation, and the
 * library allocates only when a context is created or its scratch grows. */
#ifndef PLEAT_CORE_ALLOC_H
#define PLEAT_CORE_ALLOC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" { /* the CUDA backend's context comes from here too */
#endif

/* malloc / calloc / free. pleat_malloc and pleat_calloc return NULL when the
 * system or the failure hook says no; pleat_free(NULL) does nothing. */
void *pleat_malloc(size_t bytes);
void *pleat_calloc(size_t count, size_t size);
void pleat_free(void *block);

/* pleat_malloc for large scratch: on Linux, from PLEAT_HUGE_FROM bytes on,
 * the block starts on a 2 MiB boundary and is advised into transparent huge
 * pages (madvise MADV_HUGEPAGE; where THP is off, nothing changes); where
 * there is no such advice (Windows), a plain pleat_malloc block. The
 * sort's scatter, the gather and the sweep touch many pages of such buffers
 * at once, more than the TLB holds in 4 KiB pages (1M and 4M particles:
 * whole call 2-5% faster). Freed with pleat_free. The alignment reserves up
 * to 2 MiB of address space that is never touched, so never resident. */
#define PLEAT_HUGE_PAGE ((size_t)2 << 20)
#define PLEAT_HUGE_FROM (2 * PLEAT_HUGE_PAGE)
void *pleat_malloc_huge(size_t bytes);

/* Asks the failure hook before the system gives pleat something outside
 * these wrappers: a worker thread (its stack). 0: the hook makes it fail.
 * Counted as an allocation attempt, not as a live block. */
int pleat_alloc_thread(void);

/* Test hook: the nth allocation from now fails (1 = the next one); with
 * sticky, every allocation from the nth on fails. nth = 0 turns failures off.
 * Thread-safe, but with several threads allocating, which one gets the nth
 * allocation is up to the scheduler. */
void pleat_alloc_fail_at(uint64_t nth, int sticky);

/* Test hook: every allocation of more than max_bytes fails (0 = no limit).
 * Lets a test drive pleat to sizes it cannot really allocate (counts near
 * 2^32) and see what it asks for. */
void pleat_alloc_limit(size_t max_bytes);

/* The largest request since the last pleat_alloc_reset_largest(), granted or
 * not (catches a size that wrapped around: it would come out small). */
size_t pleat_alloc_largest(void);
void pleat_alloc_reset_largest(void);

/* Allocation attempts since the process started (successful or not). */
uint64_t pleat_alloc_attempts(void);

/* Allocation attempts that the hook made fail. */
uint64_t pleat_alloc_failures(void);

/* Blocks allocated through the wrappers and not freed yet. */
int64_t pleat_alloc_live(void);

/* Bytes granted since the process started (frees not subtracted): what a
 * fresh context's first call takes is its scratch. */
uint64_t pleat_alloc_granted(void);

/* Contexts alive: pleat_set_allocator() changes the heap only at 0. */
void pleat_alloc_context_made(void);
void pleat_alloc_context_gone(void);

#ifdef __cplusplus
}
#endif

#endif
