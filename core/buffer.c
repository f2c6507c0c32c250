#include "buffer.h"
#include "alloc.h"

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

static atomic_size_t allocations;

size_t pleat_buffer_allocations(void)
{
    return atomic_load(&allocations);
}

pleat_status pleat_buffer_reserve(pleat_buffer *buf, size_t count, size_t size)
{
    if (size != 0 && count > SIZE_MAX / size)
        return PLEAT_ERROR_OUT_OF_MEMORY;
    size_t bytes = count * size;
    if (bytes <= buf->bytes)
        return PLEAT_OK;
    /* malloc before free: on failure the old buffer stays valid */
    void *data = pleat_malloc_huge(bytes);
    if (!data)
        return PLEAT_ERROR_OUT_OF_MEMORY;
    atomic_fetch_add(&allocations, 1);
    pleat_free(buf->data);
    buf->data = data;
    buf->bytes = bytes;
    return PLEAT_OK;
}

pleat_status pleat_buffer_reserve_zeroed(pleat_buffer *buf, size_t count, size_t size)
{
    void *before = buf->data; /* a new block cannot be at it: it is freed after */
    pleat_status s = pleat_buffer_reserve(buf, count, size);
    if (s == PLEAT_OK && buf->data != before)
        memset(buf->data, 0, buf->bytes);
    return s;
}

void pleat_buffer_free(pleat_buffer *buf)
{
    pleat_free(buf->data);
    buf->data = NULL;
    buf->bytes = 0;
}
