/* Grow-only scratch buffers owned by a context: a call reserves what it needs
 * before it writes anything, so an allocation failure leaves the caller's
 * data untouched, and a repeated call of the same size allocates nothing. */
#ifndef PLEAT_CORE_BUFFER_H
#define PLEAT_CORE_BUFFER_H

#include "pleat.h"

typedef struct pleat_buffer {
    void *data;
    size_t bytes;
} pleat_buffer;

/* Makes buf hold at least count * size bytes (contents not kept; from
 * PLEAT_HUGE_FROM bytes on in huge pages, see pleat_malloc_huge).
 * OUT_OF_MEMORY when the product overflows or malloc fails; buf is then
 * unchanged. */
pleat_status pleat_buffer_reserve(pleat_buffer *buf, size_t count, size_t size);

/* pleat_buffer_reserve, with a new allocation zero-filled: for scratch that
 * its users leave clear. */
pleat_status pleat_buffer_reserve_zeroed(pleat_buffer *buf, size_t count, size_t size);

void pleat_buffer_free(pleat_buffer *buf);

/* Scratch allocations made so far by every context (for the tests' check
 * that steady-state calls allocate nothing). */
size_t pleat_buffer_allocations(void);

#endif
