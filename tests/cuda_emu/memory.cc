/* The CUDA emulator's memory (emu.h): device allocations, which the host
 * cannot touch while the device is idle, nor a kernel of another device,
 * each between two guard pages (and the bytes between its end and the next
 * 256, and between the first page's start and its own, holding a canary),
 * pinned host memory, and freed blocks, which stay unreadable and are
 * never handed out again, so that work touching them after the free
 * faults. */
#include "emu.h"

#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <map>
#include <vector>

using namespace pleat_emu;

namespace {

const size_t PAGE = 4096;
const unsigned char CANARY = 0xcd;

struct allocation {
    char *map;        /* its pages, between a guard page before and one after */
    size_t map_bytes; /* without the guards */
    char *user;
    size_t bytes;
    bool pinned; /* host memory the devices may use too */
    int device;  /* the one it was allocated on; pinned: every device's */
    bool readable;
};

/* Function-local, so that a call during another file's static
 * initialisation finds them made. */
std::map<uintptr_t, allocation> &allocations() /* by user address */
{
    static std::map<uintptr_t, allocation> live;
    return live;
}
std::vector<std::pair<char *, size_t>> &freed() /* mappings, guard included */
{
    static std::vector<std::pair<char *, size_t>> gone;
    return gone;
}
/* while the device works, whose memory is readable (the innermost view
 * last: a kernel's work runs inside its stream's flush) */
std::vector<int> &views()
{
    static std::vector<int> stack;
    return stack;
}
armed_failure failed_allocation; /* pleat_emu_fail_allocation */

void protect(allocation &a, bool readable)
{
    if (a.pinned || a.readable == readable)
        return;
    if (mprotect(a.map, a.map_bytes, readable ? PROT_READ | PROT_WRITE : PROT_NONE))
        die("mprotect failed");
    a.readable = readable;
}

/* Whether the innermost view lets work read a. */
bool visible(const allocation &a)
{
    return !views().empty() && (views().back() == ALL_DEVICES || views().back() == a.device);
}

void show_view()
{
    for (auto &a : allocations())
        protect(a.second, visible(a.second));
}

/* The bytes from the end of a block to its 256-byte-rounded end. */
size_t slack(const allocation &a)
{
    return (size_t)(a.map + a.map_bytes - (a.user + a.bytes));
}

/* The bytes from the start of its first page to the block's. */
size_t lead(const allocation &a) { return (size_t)(a.user - a.map); }

void check_canary(const allocation &a)
{
    const unsigned char *end = (const unsigned char *)a.user + a.bytes;
    for (size_t i = 0; i < slack(a); ++i)
        if (end[i] != CANARY)
            die("%zu bytes past the end of a device allocation of %zu bytes were written", i + 1,
                a.bytes);
    for (size_t i = 0; i < lead(a); ++i)
        if ((unsigned char)a.map[i] != CANARY)
            die("%zu bytes before the start of a device allocation of %zu bytes were written",
                lead(a) - i, a.bytes);
}

} // namespace

bool pleat_emu::allocation_refused()
{
    return failed_allocation.fires();
}

void pleat_emu::device_enter(int view)
{
    views().push_back(view);
    show_view();
}

/* When the device is idle again, what it wrote past a block's end shows. */
void pleat_emu::device_leave()
{
    views().pop_back();
    if (views().empty())
        for (auto &a : allocations())
            check_canary(a.second);
    show_view();
}

namespace {

/* The allocation holding [p, p + bytes), or NULL. */
const allocation *find(const void *p, size_t bytes)
{
    uintptr_t u = (uintptr_t)p;
    auto it = allocations().upper_bound(u);
    if (it == allocations().begin())
        return nullptr;
    --it;
    const allocation &a = it->second;
    if (u < (uintptr_t)a.user || u - (uintptr_t)a.user > a.bytes || bytes > a.bytes ||
        u - (uintptr_t)a.user > a.bytes - bytes)
        return nullptr;
    return &a;
}

/* A block of `bytes` ending (256-byte aligned) at a guard page, its first
 * page after another. */
void *map_block(size_t bytes, bool pinned)
{
    size_t rounded = (bytes + 255) & ~(size_t)255;
    if (rounded < bytes || rounded > ((size_t)1 << 46))
        return nullptr;
    size_t pages = (rounded + PAGE - 1) / PAGE * PAGE;
    void *m = mmap(nullptr, pages + 2 * PAGE, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        return nullptr;
    char *map = (char *)m + PAGE;
    if (mprotect(m, PAGE, PROT_NONE) || mprotect(map + pages, PAGE, PROT_NONE))
        die("mprotect failed");
    allocation a = {map, pages, map + pages - rounded, bytes, pinned, current_device(), true};
    fill_noise(a.user, bytes);
    memset(a.user + bytes, CANARY, slack(a));
    memset(a.map, CANARY, lead(a));
    protect(a, visible(a));
    allocations()[(uintptr_t)a.user] = a;
    return a.user;
}

/* Its pages go back to the system, its addresses stay unreadable. */
cudaError_t unmap_block(void *p, bool pinned)
{
    auto it = allocations().find((uintptr_t)p);
    if (it == allocations().end() || it->second.pinned != pinned)
        return fail(cudaErrorInvalidValue);
    allocation &a = it->second;
    protect(a, true);
    check_canary(a);
    if (madvise(a.map, a.map_bytes, MADV_DONTNEED) || mprotect(a.map, a.map_bytes, PROT_NONE))
        die("cannot release a block");
    freed().emplace_back(a.map - PAGE, a.map_bytes + 2 * PAGE);
    allocations().erase(it);
    return cudaSuccess;
}

/* A segfault: say what it hit before dying. */
void on_segv(int sig, siginfo_t *info, void *)
{
    char *p = (char *)info->si_addr;
    const char *what = "pleat CUDA emulator: a fault outside device memory\n";
    for (auto &f : freed())
        if (p >= f.first && p < f.first + f.second)
            what = "pleat CUDA emulator: an access to device memory after its cudaFree\n";
    for (auto &a : allocations()) {
        if (p >= a.second.map - PAGE && p < a.second.map + a.second.map_bytes + PAGE) {
            what = p >= a.second.map + a.second.map_bytes
                       ? "pleat CUDA emulator: an access past the end of a device allocation\n"
                   : p < a.second.map
                       ? "pleat CUDA emulator: an access before the start of a device "
                         "allocation\n"
                   : views().empty() ? "pleat CUDA emulator: the host touched device memory\n"
                                     : "pleat CUDA emulator: a kernel touched another device's "
                                       "memory\n";
            break;
        }
    }
    ssize_t written = write(2, what, strlen(what));
    (void)written;
    signal(sig, SIG_DFL);
}

/* On a stack of its own (for the thread that loads the emulator), so that a
 * fiber's stack overflow is named too. */
struct segv_handler {
    segv_handler()
    {
        static char alt[64 * 1024];
        stack_t st;
        memset(&st, 0, sizeof st);
        st.ss_sp = alt;
        st.ss_size = sizeof alt;
        sigaltstack(&st, nullptr);
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_segv;
        sa.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_ONSTACK;
        sigaction(SIGSEGV, &sa, nullptr);
    }
} installed;

/* cudaMalloc (device memory) and cudaMallocHost (pinned): NULL for 0 bytes. */
cudaError_t allocate(void **ptr, size_t bytes, bool pinned)
{
    locked g(big_lock());
    if (!ptr)
        return fail(cudaErrorInvalidValue);
    if (cudaError_t e = lost_or_unsafe())
        return e;
    *ptr = nullptr;
    if (!bytes)
        return cudaSuccess;
    if (allocation_refused())
        return fail(cudaErrorMemoryAllocation);
    *ptr = map_block(bytes, pinned);
    return *ptr ? cudaSuccess : fail(cudaErrorMemoryAllocation);
}

cudaError_t release(void *ptr, bool pinned)
{
    locked g(big_lock());
    const cudaError_t lost = lost_context(current_device());
    const cudaError_t refused = lost != cudaSuccess ? cudaSuccess : unsafe_call();
    /* cudaFree(NULL) frees nothing and makes the device's context: the
     * runtime's idiom for that, a setup call (pleat_emu_fail_call) */
    if (!ptr)
        return lost != cudaSuccess ? lost
               : refused != cudaSuccess || pinned ? refused
                                                   : refused_call();
    if (refused != cudaSuccess)
        return refused;
    /* a lost device's memory is freed all the same: the test that lost it
     * goes on in the same process */
    const cudaError_t e = unmap_block(ptr, pinned);
    return lost != cudaSuccess ? lost : e;
}

} // namespace

side pleat_emu::side_of(const void *p, size_t bytes)
{
    const allocation *a = find(p, bytes ? bytes : 1);
    return !a ? HOST : a->pinned ? PINNED : DEVICE;
}

size_t pleat_emu::live_allocations()
{
    locked g(big_lock());
    return allocations().size();
}

bool pleat_emu::straddles(const void *p, size_t bytes) { return find(p, 1) && !find(p, bytes); }

void pleat_emu::expect_device(const void *p, size_t bytes, const char *what)
{
    locked g(big_lock());
    const allocation *a = find(p, bytes);
    if (!a || a->pinned)
        die("%s (%p, %zu bytes) is not inside one device allocation", what, p, bytes);
}

void pleat_emu::expect_kernel_pointer(const void *p, const char *what)
{
    locked g(big_lock());
    if (p && !find(p, 0))
        die("a kernel is given %s (%p) outside every device and pinned allocation: a GPU "
            "would fault on it",
            what, p);
}

extern "C" {

cudaError_t cudaMalloc(void **ptr, size_t bytes) { return allocate(ptr, bytes, false); }
cudaError_t cudaFree(void *ptr) { return release(ptr, false); }
cudaError_t cudaMallocHost(void **ptr, size_t bytes) { return allocate(ptr, bytes, true); }
cudaError_t cudaFreeHost(void *ptr) { return release(ptr, true); }

void pleat_emu_fail_allocation(long long skip)
{
    locked g(big_lock());
    failed_allocation.arm(skip, cudaErrorMemoryAllocation);
}

int pleat_emu_failure_pending(void)
{
    locked g(big_lock());
    return failed_allocation.pending();
}

} // extern "C"
