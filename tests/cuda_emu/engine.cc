/* The CUDA emulator's kernels (emu.h): each thread of a block on a fiber of
 * its own, switched only at the warp intrinsics and __syncthreads. */
#include "emu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/mman.h>

#include <algorithm>
#include <memory>
#include <vector>

/* AddressSanitizer must be told of every stack switch: it checks accesses
 * and unpoisons frames against the stack it thinks it is on. */
#if defined(__SANITIZE_ADDRESS__)
#define PLEAT_EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PLEAT_EMU_ASAN 1
#endif
#endif
#ifdef PLEAT_EMU_ASAN
#include <sanitizer/common_interface_defs.h>
#endif
/* ThreadSanitizer keeps a shadow state per fiber: a switch it is not told
 * of mixes two stacks' frames and clocks. Each switch synchronises the two
 * fibers (flags 0), as the lanes of a block do not race in the emulator:
 * only the host threads that call it do, through its lock. In the race
 * mode (emu.h, PLEAT_CUDA_EMULATOR_RACES) each emulated thread is a
 * ThreadSanitizer thread of its own instead, switched to without
 * synchronising: see `races` below. This file is built without
 * ThreadSanitizer's instrumentation (library.cmake), so that its own
 * bookkeeping, which fibers and the scheduler share, is not taken for the
 * kernels' races, and its frames never straddle two of those threads. */
#if !defined(PLEAT_EMU_TSAN) && defined(__SANITIZE_THREAD__)
#error "ThreadSanitizer on engine.cc: library.cmake builds it without, defining PLEAT_EMU_TSAN"
#elif !defined(PLEAT_EMU_TSAN) && defined(__has_feature)
#if __has_feature(thread_sanitizer)
#error "ThreadSanitizer on engine.cc: library.cmake builds it without, defining PLEAT_EMU_TSAN"
#endif
#endif
#ifdef PLEAT_EMU_TSAN /* library.cmake: a build with ThreadSanitizer */
#include <sanitizer/tsan_interface.h>
/* ThreadSanitizer's dynamic annotations (no header declares them) */
extern "C" void AnnotateIgnoreReadsBegin(const char *file, int line);
extern "C" void AnnotateIgnoreReadsEnd(const char *file, int line);
extern "C" void AnnotateIgnoreWritesBegin(const char *file, int line);
extern "C" void AnnotateIgnoreWritesEnd(const char *file, int line);
#endif

#if !defined(__x86_64__)
#error "the CUDA emulator's fiber switch is written for x86-64"
#endif

using namespace pleat_emu;

namespace {

extern "C" void pleat_emu_switch(void **save_sp, void *load_sp);
asm(R"(
.text
.p2align 4
.globl pleat_emu_switch
.hidden pleat_emu_switch
.type pleat_emu_switch, @function
pleat_emu_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
.size pleat_emu_switch, .-pleat_emu_switch
)");

const size_t STACK = 256 * 1024, GUARD = 4096;

/* Kept above the guard page at the bottom of its own stack's mapping, not
 * on the heap: nothing frees a fiber. Its stack is the mapping but the
 * guard, this record included. */
struct fiber {
    void *sp;
    void *fake_stack; /* AddressSanitizer's, while the fiber is switched out */
    void *tsan;       /* ThreadSanitizer's state of the fiber */
};

enum thread_state { UNSTARTED, RUNNING, WAITING, READY, EXITED };

/* The race mode: what the lanes of one __syncwarp release into and then
 * acquire, made for it alone (a clock ThreadSanitizer keeps per address
 * only grows: a reused one would order the lanes after whatever an earlier
 * barrier's released there), freed by the last lane past it. */
struct sync_point {
    unsigned left; /* lanes yet to acquire */
};
struct thread_rec {
    uint3 idx;
    thread_state state;
    bool at_syncthreads;
    fiber *f;
    uint64_t result;
    sync_point *synced; /* the race mode: the __syncwarp it is past */
};

/* Lanes of one warp waiting at one intrinsic. */
struct warp_wait {
    pleat_emu::exchange_kind kind;
    unsigned mask, arrived;
    uint64_t value[32];
    unsigned arg[32];
    sync_point *sync; /* the race mode: at a __syncwarp */
};

struct block_run {
    const std::function<void()> *body;
    unsigned n;
    uint3 bidx;
    std::vector<thread_rec> threads;
    std::vector<unsigned> order; /* which thread starts and resumes first */
    unsigned started, exited, at_syncthreads;
    std::vector<std::vector<warp_wait>> waits; /* per warp */
    std::vector<unsigned> exited_lanes;        /* per warp */
    unsigned barriers;                         /* __syncthreads completed */
    std::vector<fiber *> done;                 /* the race mode: see fiber_main */
};

block_run *blk;
thread_rec *cur;
fiber *cur_fiber;
void *sched_sp;
/* the scheduler's stack (the thread's own), for AddressSanitizer: learnt
 * each time a fiber is switched to */
void *sched_fake_stack;
const void *sched_bottom;
size_t sched_size;
/* ThreadSanitizer's state of the scheduler (the calling host thread's) */
void *sched_tsan;
std::vector<fiber *> idle_fibers;
/* The race mode (PLEAT_CUDA_EMULATOR_RACES=1, in a ThreadSanitizer build):
 * each thread index of a block has a ThreadSanitizer state of its own
 * (lane_tsan, none of the stacks'), which the thread's kernel code runs on,
 * and a stack of its own in its block; switches between them and the
 * scheduler do not synchronise. What orders two threads is what orders them
 * on a GPU: __syncthreads (a release at the barrier, an acquire past it,
 * alternating between two objects so that no thread acquires a release
 * made past the barrier it left), __syncwarp (its lanes release into a
 * sync_point made for it, which each acquires past it), never a shuffle or
 * a ballot (which order no memory), and the block's start and
 * end: blocks run one after another, each acquiring all that the one before
 * it did, as they share the emulator's shared memory (its bits and
 * ThreadSanitizer's record of it) and stacks; so races between blocks go
 * unseen. Atomics are atomic (cuda_runtime.h). */
const bool races = [] {
    const char *v = getenv("PLEAT_CUDA_EMULATOR_RACES");
    if (!v || strcmp(v, "1") != 0)
        return false;
#ifndef PLEAT_EMU_TSAN
    die("PLEAT_CUDA_EMULATOR_RACES=1 needs a build with ThreadSanitizer (the tsan preset)");
#endif
    return true;
}();
char block_start, block_end, barrier[2]; /* addresses to synchronise on */
#ifdef PLEAT_EMU_TSAN
std::vector<void *> lane_tsan; /* by thread index, made when first needed */
/* ThreadSanitizer counts each fiber as a thread, so it takes a forked child
 * for a multi-threaded fork's and ignores its synchronisation: fibers made
 * before the fork report false races there. The child makes its own. In
 * such a child it reports no race at all, so the race mode refuses to run
 * a kernel there (run_grid). */
bool blind_child;
const int fresh_fibers_after_fork = pthread_atfork(nullptr, nullptr, [] {
    blind_child = races && !lane_tsan.empty();
    idle_fibers.clear();
    lane_tsan.clear();
});
#endif

/* PLEAT_CUDA_EMULATOR_ORDER=reverse: threads start and resume last first,
 * and blocks run last first */
bool reverse_order = [] {
    const char *order = getenv("PLEAT_CUDA_EMULATOR_ORDER");
    return order && strcmp(order, "reverse") == 0;
}();

const char *kind_name(pleat_emu::exchange_kind k)
{
    switch (k) {
    case pleat_emu::SYNC_WARP: return "__syncwarp";
    case pleat_emu::BALLOT: return "__ballot_sync";
    case pleat_emu::SHFL: return "__shfl_sync";
    case pleat_emu::SHFL_XOR: return "__shfl_xor_sync";
    case pleat_emu::SHFL_DOWN: return "__shfl_down_sync";
    }
    return "?";
}

unsigned tid_of(const thread_rec *t) { return (unsigned)(t - blk->threads.data()); }

/* The race mode's happens-before edges (nothing without it). */
void race_release(void *at)
{
#ifdef PLEAT_EMU_TSAN
    if (races)
        __tsan_release(at);
#else
    (void)at;
#endif
}

void race_acquire(void *at)
{
#ifdef PLEAT_EMU_TSAN
    if (races)
        __tsan_acquire(at);
#else
    (void)at;
#endif
}

/* In the race mode, what an emulated thread does inside the emulator (its
 * containers' copies and allocations, which the library's interceptors
 * see) is not the kernel's and races with nothing: between these two
 * calls, which a switch away and back may separate, it is not recorded. */
void bookkeeping_begin()
{
#ifdef PLEAT_EMU_TSAN
    if (races) {
        AnnotateIgnoreReadsBegin(__FILE__, __LINE__);
        AnnotateIgnoreWritesBegin(__FILE__, __LINE__);
    }
#endif
}

void bookkeeping_end()
{
#ifdef PLEAT_EMU_TSAN
    if (races) {
        AnnotateIgnoreWritesEnd(__FILE__, __LINE__);
        AnnotateIgnoreReadsEnd(__FILE__, __LINE__);
    }
#endif
}

#ifdef PLEAT_EMU_TSAN
/* The race mode's ThreadSanitizer state of thread index `tid`. */
void *lane_state(unsigned tid)
{
    if (lane_tsan.size() <= tid)
        lane_tsan.resize(tid + 1, nullptr);
    if (!lane_tsan[tid]) {
        lane_tsan[tid] = __tsan_create_fiber(0);
        char name[48];
        snprintf(name, sizeof name, "emulated CUDA thread %u of a block", tid);
        __tsan_set_fiber_name(lane_tsan[tid], name);
    }
    return lane_tsan[tid];
}
#endif

/* Back on a stack after a switch (`fake_stack`: what the switch away from
 * it saved); on a fiber, from the scheduler, whose stack it notes. */
void landed(void *fake_stack, bool on_fiber)
{
#ifdef PLEAT_EMU_ASAN
    __sanitizer_finish_switch_fiber(fake_stack, on_fiber ? &sched_bottom : nullptr,
                                    on_fiber ? &sched_size : nullptr);
#else
    (void)fake_stack;
    (void)on_fiber;
#endif
}

/* Saves this stack's pointer in *save_sp (and its fake stack in
 * *fake_stack) and goes on at load_sp, on the stack [bottom, bottom + size):
 * a fiber's (to_fiber), or the scheduler's; `tsan` is its ThreadSanitizer
 * state. */
void switch_stack(void **save_sp, void **fake_stack, void *load_sp, const void *bottom,
                  size_t size, bool to_fiber, void *tsan)
{
#ifdef PLEAT_EMU_ASAN
    __sanitizer_start_switch_fiber(fake_stack, bottom, size);
#else
    (void)bottom;
    (void)size;
#endif
#ifdef PLEAT_EMU_TSAN
    __tsan_switch_to_fiber(tsan, races ? __tsan_switch_to_fiber_no_sync : 0);
#else
    (void)tsan;
#endif
    pleat_emu_switch(save_sp, load_sp);
    landed(*fake_stack, !to_fiber);
}

void to_scheduler()
{
    fiber *f = cur_fiber;
    switch_stack(&f->sp, &f->fake_stack, sched_sp, sched_bottom, sched_size, false, sched_tsan);
}

void become(thread_rec *t)
{
    cur = t;
    if (t)
        threadIdx = t->idx;
}

void run_on(fiber *f, thread_rec *t)
{
    cur_fiber = f;
    become(t);
    void *tsan = f->tsan;
#ifdef PLEAT_EMU_TSAN
    sched_tsan = __tsan_get_current_fiber(); /* a grid may run on any host thread */
    if (races) /* the thread it resumes, or the one it starts (fiber_main) */
        tsan = lane_state(t ? tid_of(t) : blk->order[blk->started]);
#endif
    switch_stack(&sched_sp, &sched_fake_stack, f->sp, f, STACK - GUARD, true, tsan);
}

void thread_exit(thread_rec *t)
{
    unsigned tid = tid_of(t), lane = tid % 32;
    for (const warp_wait &w : blk->waits[tid / 32])
        if (w.mask >> lane & 1)
            die("thread %u of block %u exited while lanes of its warp wait for it at %s", tid,
                blk->bidx.x, kind_name(w.kind));
    if (blk->at_syncthreads)
        die("thread %u of block %u exited while others wait at __syncthreads", tid, blk->bidx.x);
    t->state = EXITED;
    ++blk->exited;
    blk->exited_lanes[tid / 32] |= 1u << lane;
}

/* Every fiber runs this: unstarted threads of the block, one after another,
 * until none is left (in the race mode, one: ThreadSanitizer would take a
 * stack's reuse by the next thread for a race), then it waits to be given
 * the next block. Never
 * returns (not marked so: under AddressSanitizer a call to a noreturn
 * function unpoisons the stack it thinks it is on, the caller's). */
void fiber_main()
{
    for (;;) {
        while (blk->started < blk->n) {
            thread_rec *t = &blk->threads[blk->order[blk->started++]];
            t->state = RUNNING;
            t->f = cur_fiber;
            become(t);
            race_acquire(&block_start);
            (*blk->body)();
            race_release(&block_end);
            thread_exit(cur);
            if (races)
                break;
        }
        bookkeeping_begin();
        (races ? blk->done : idle_fibers).push_back(cur_fiber);
        bookkeeping_end();
        to_scheduler();
    }
}

extern "C" void pleat_emu_fiber_entry()
{
    landed(nullptr, true);
    fiber_main();
    abort(); /* there is nothing to return to */
}

fiber *new_fiber()
{
    static unsigned made;
    void *m = mmap(nullptr, STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED || mprotect(m, GUARD, PROT_NONE))
        die("no memory for a fiber stack");
    char *stack = (char *)m;
    fiber *f = (fiber *)(stack + GUARD);
    f->fake_stack = nullptr;
    f->tsan = nullptr; /* the race mode's threads have states of their own */
#ifdef PLEAT_EMU_TSAN
    if (!races)
        f->tsan = __tsan_create_fiber(0);
#endif
    /* Each stack's top at another offset: at the same one, the switches'
     * loads and stores would all fall into the same cache sets. */
    const size_t stagger = (size_t)(made++ * 17 % 1024) * 64;
    /* what pleat_emu_switch pops: six registers, then the return address;
     * the entry then sees the stack as a called function does */
    void **sp = (void **)(stack + STACK - stagger);
    *--sp = nullptr;
    *--sp = (void *)pleat_emu_fiber_entry;
    for (int r = 0; r < 6; ++r)
        *--sp = nullptr;
    f->sp = sp;
    return f;
}

extern "C" char __start_pleat_emu_shared[] __attribute__((weak));
extern "C" char __stop_pleat_emu_shared[] __attribute__((weak));

[[noreturn]] void deadlock()
{
    fprintf(stderr, "pleat CUDA emulator: block %u cannot go on:\n", blk->bidx.x);
    for (unsigned w = 0; w < blk->waits.size(); ++w)
        for (const warp_wait &ww : blk->waits[w])
            fprintf(stderr, "  warp %u: lanes %08x of mask %08x wait at %s\n", w, ww.arrived,
                    ww.mask, kind_name(ww.kind));
    if (blk->at_syncthreads)
        fprintf(stderr, "  %u threads wait at __syncthreads\n", blk->at_syncthreads);
    die("deadlock");
}

void run_block(block_run &b)
{
    blk = &b;
    if (__start_pleat_emu_shared)
        fill_noise(__start_pleat_emu_shared,
                   (size_t)(__stop_pleat_emu_shared - __start_pleat_emu_shared));
    race_release(&block_start);
    for (;;) {
        if (b.started < b.n) {
            fiber *f;
            if (idle_fibers.empty()) {
                f = new_fiber();
            } else {
                f = idle_fibers.back();
                idle_fibers.pop_back();
            }
            run_on(f, nullptr);
            continue;
        }
        if (b.exited == b.n)
            break;
        bool resumed = false;
        for (unsigned k = 0; k < b.n; ++k) {
            thread_rec *t = &b.threads[b.order[k]];
            if (t->state == READY) {
                t->state = RUNNING;
                run_on(t->f, t);
                resumed = true;
            }
        }
        if (!resumed && b.exited < b.n)
            deadlock();
    }
    race_acquire(&block_end);
    idle_fibers.insert(idle_fibers.end(), b.done.begin(), b.done.end());
    b.done.clear();
    blk = nullptr;
}

void run_grid(const std::function<void()> &body, dim3 grid, dim3 block)
{
#ifdef PLEAT_EMU_TSAN
    if (blind_child)
        die("the race mode runs no kernel in a fork() child of a process that ran one: "
            "ThreadSanitizer checks nothing there");
#endif
    block_run b;
    b.body = &body;
    b.n = block.x;
    blockDim = dim3(block.x);
    gridDim = dim3(grid.x);
    b.threads.resize(b.n);
    b.order.resize(b.n);
    for (unsigned k = 0; k < b.n; ++k)
        b.order[k] = reverse_order ? b.n - 1 - k : k;
    b.waits.resize((b.n + 31) / 32);
    b.exited_lanes.resize(b.waits.size());
    for (unsigned k = 0; k < grid.x; ++k) {
        const unsigned x = reverse_order ? grid.x - 1 - k : k;
        b.bidx = blockIdx = uint3{x, 0, 0};
        for (unsigned t = 0; t < b.n; ++t)
            b.threads[t] = thread_rec{{t, 0, 0}, UNSTARTED, false, nullptr, 0, nullptr};
        b.started = b.exited = b.at_syncthreads = b.barriers = 0;
        std::fill(b.exited_lanes.begin(), b.exited_lanes.end(), 0u);
        run_block(b);
    }
}

/* The lane whose value lane l of w reads: __shfl_sync's source lane is
 * taken modulo the width (32), the others' may fall past the warp. */
uint64_t source_lane(const warp_wait &w, unsigned l)
{
    switch (w.kind) {
    case pleat_emu::SHFL: return w.arg[l] % 32;
    case pleat_emu::SHFL_XOR: return l ^ w.arg[l];
    default: return (uint64_t)l + w.arg[l];
    }
}

/* What each lane of a completed wait gets back; every one of them is then
 * ready, to go on in the schedule's order. A source lane past the warp gives
 * the lane its own value, as on a GPU; one inside it but outside the mask
 * is undefined there, so it aborts. */
void complete(warp_wait &w, unsigned warp)
{
    uint64_t ballot = 0;
    for (unsigned l = 0; l < 32; ++l)
        if ((w.mask >> l & 1) && w.value[l])
            ballot |= 1ull << l;
    for (unsigned l = 0; l < 32; ++l) {
        if (!(w.mask >> l & 1))
            continue;
        uint64_t r = 0;
        if (w.kind == pleat_emu::BALLOT) {
            r = ballot;
        } else if (w.kind != pleat_emu::SYNC_WARP) {
            uint64_t src = source_lane(w, l);
            if (src >= 32)
                src = l;
            if (!(w.mask >> src & 1))
                die("lane %u of warp %u shuffles from lane %u, outside the mask %08x", l, warp,
                    (unsigned)src, w.mask);
            r = w.value[src];
        }
        thread_rec &t = blk->threads[warp * 32 + l];
        t.result = r;
        t.state = READY;
        if (w.sync)
            t.synced = w.sync;
    }
}

} // namespace

uint3 threadIdx, blockIdx;
dim3 blockDim, gridDim;

/* ---- what the device side calls -------------------------------------------- */

namespace pleat_emu {

bool in_reverse() { return reverse_order; }

uint64_t exchange(exchange_kind kind, unsigned mask, uint64_t value, unsigned arg)
{
    if (!blk)
        die("%s outside a kernel", kind_name(kind));
    bookkeeping_begin();
    thread_rec *t = cur;
    const unsigned tid = tid_of(t), warp = tid / 32, lane = tid % 32;
    const unsigned width = blk->n - warp * 32 < 32 ? blk->n - warp * 32 : 32;
    const unsigned exists = width == 32 ? ~0u : (1u << width) - 1;
    if (!(mask >> lane & 1))
        die("thread %u calls %s with a mask (%08x) without its own lane", tid, kind_name(kind),
            mask);
    if (mask & ~exists)
        die("%s names lanes (%08x) that warp %u does not have", kind_name(kind), mask, warp);
    if (unsigned gone = mask & blk->exited_lanes[warp])
        die("thread %u waits at %s for lane %u, which has exited", tid, kind_name(kind),
            (unsigned)__builtin_ctz(gone));
    std::vector<warp_wait> &waits = blk->waits[warp];
    warp_wait *w = nullptr;
    for (warp_wait &x : waits) {
        if (x.mask == mask)
            w = &x;
        else if (x.mask & mask)
            die("lanes of warp %u wait with overlapping masks %08x and %08x", warp, x.mask, mask);
    }
    if (!w) {
        waits.push_back(warp_wait{kind, mask, 0, {}, {}, nullptr});
        w = &waits.back();
    } else if (w->kind != kind) {
        die("lanes of warp %u meet at different intrinsics: %s and %s", warp, kind_name(w->kind),
            kind_name(kind));
    }
    w->value[lane] = value;
    w->arg[lane] = arg;
    w->arrived |= 1u << lane;
    if (races && kind == SYNC_WARP) {
        if (!w->sync)
            w->sync = new sync_point{(unsigned)__builtin_popcount(mask)};
        race_release(w->sync);
    }
    t->state = WAITING;
    if (w->arrived == mask) {
        complete(*w, warp);
        waits.erase(waits.begin() + (w - waits.data()));
    }
    to_scheduler(); /* even the last to arrive: the order decides who goes on */
    if (sync_point *p = t->synced) {
        race_acquire(p);
        t->synced = nullptr;
        if (--p->left == 0)
            delete p;
    }
    bookkeeping_end();
    return t->result;
}

void sync_threads()
{
    if (!blk)
        die("__syncthreads outside a kernel");
    if (blk->exited)
        die("__syncthreads in block %u after %u of its threads exited", blk->bidx.x, blk->exited);
    thread_rec *t = cur;
    t->state = WAITING;
    t->at_syncthreads = true;
    char *bar = &barrier[blk->barriers & 1];
    race_release(bar);
    if (++blk->at_syncthreads == blk->n) {
        blk->at_syncthreads = 0;
        ++blk->barriers;
        for (thread_rec &o : blk->threads) {
            o.at_syncthreads = false;
            o.state = READY;
        }
    }
    to_scheduler(); /* even the last to arrive: the order decides who goes on */
    race_acquire(bar);
}

cudaError_t launch(const cudaLaunchConfig_t *c, std::function<void()> grid)
{
    locked g(big_lock());
    if (!c)
        return fail(cudaErrorInvalidValue);
    const dim3 gd = c->gridDim, bd = c->blockDim;
    if (bd.x == 0 || bd.y == 0 || bd.z == 0 || (size_t)bd.x * bd.y * bd.z > 1024 || gd.x == 0 ||
        gd.y == 0 || gd.z == 0 || gd.x > 0x7fffffffu || gd.y > 65535 || gd.z > 65535)
        return fail(cudaErrorInvalidConfiguration);
    if (bd.y != 1 || bd.z != 1 || gd.y != 1 || gd.z != 1 || c->dynamicSmemBytes || c->numAttrs)
        die("only 1-D launches without dynamic shared memory or attributes are emulated");
    if (cudaError_t e = kernel_image())
        return e;
    auto body = std::make_shared<std::function<void()>>(std::move(grid));
    return submit(c->stream, [body, gd, bd]() { run_grid(*body, gd, bd); });
}

} // namespace pleat_emu
