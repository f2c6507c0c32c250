/* pleat's kernel frame, checked when a kernel is queued on the emulator
 * (cuda_runtime.h, pleat_emu_check_arg): each of its pointers NULL or one a
 * GPU can read, device or pinned memory, never the caller's pageable host
 * arrays. Included ahead of each of the backend's .cu files
 * (library.cmake). */
#ifndef PLEAT_EMU_FRAME_CHECK_H
#define PLEAT_EMU_FRAME_CHECK_H

#include "cuda/frame.cuh"

inline void pleat_emu_check_arg(const pleat_cuda_frame &f)
{
    /* the frame's size when this list was written (x86-64, the emulator's
     * only host): a field added to it is added here too */
    static_assert(sizeof(pleat_cuda_frame) == 224,
                  "pleat_cuda_frame changed: list its pointers below, then its size");
    const struct {
        const void *p;
        const char *name;
    } fields[] = {
        {f.particles, "frame.particles"}, {f.indices, "frame.indices"},
        {f.rest, "frame.rest"},           {f.out, "frame.out"},
        {f.moved, "frame.moved"},         {f.grid, "frame.grid"},
        {f.counters, "frame.counters"},   {f.blocks, "frame.blocks"},
        {f.seen, "frame.seen"},           {f.keys, "frame.keys"},
        {f.order, "frame.order"},         {f.keys_in, "frame.keys_in"},
        {f.order_in, "frame.order_in"},   {f.cols, "frame.cols"},
        {f.pos, "frame.pos"},             {f.rest_pos, "frame.rest_pos"},
        {f.acc, "frame.acc"},             {f.list, "frame.list"},
    };
    for (const auto &field : fields)
        pleat_emu::expect_kernel_pointer(field.p, field.name);
}

#endif
