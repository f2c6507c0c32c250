/* The CUDA emulator's memory (emu.h): device allocations, which the host
 * cannot touch while the device is idle, each ending at a guard page, and
 * pinned host memory. */
#include "emu.h"

#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <deque>
#include <map>

using namespace pleat_emu;

namespace {

const size_t PAGE = 4096;

struct allocation {
    char *map;        /* the mapping: the pages, then a guard page */
    size_t map_bytes; /* without the guard */
    char *user;
    size_t bytes;
    bool pinned; /* host memory the device may use too */
};
std::map<uintptr_t, allocation> allocations; /* by user address */
int device_depth;                            /* > 0: the device is working */
/* the mappings of the last frees, to name a use after cudaFree */
std::deque<std::pair<char *, size_t>> freed;

void protect(const allocation &a, bool readable)
{
    if (!a.pinned && mprotect(a.map, a.map_bytes, readable ? PROT_READ | PROT_WRITE : PROT_NONE))
        die("mprotect failed");
}

} // namespace

void pleat_emu::device_enter()
{
    if (device_depth++ == 0)
        for (auto &a : allocations)
            protect(a.second, true);
}
void pleat_emu::device_leave()
{
    if (--device_depth == 0)
        for (auto &a : allocations)
            protect(a.second, false);
}

namespace {

/* The allocation holding [p, p + bytes), or NULL. */
const allocation *find(const void *p, size_t bytes)
{
    uintptr_t u = (uintptr_t)p;
    auto it = allocations.upper_bound(u);
    if (it == allocations.begin())
        return nullptr;
    --it;
    const allocation &a = it->second;
    if (u < (uintptr_t)a.user || u - (uintptr_t)a.user > a.bytes || bytes > a.bytes ||
        u - (uintptr_t)a.user > a.bytes - bytes)
        return nullptr;
    return &a;
}

/* A block of `bytes` ending (256-byte aligned) at a guard page. */
void *map_block(size_t bytes, bool pinned)
{
    size_t rounded = (bytes + 255) & ~(size_t)255;
    if (rounded < bytes || rounded > ((size_t)1 << 46))
        return nullptr;
    size_t pages = (rounded + PAGE - 1) / PAGE * PAGE;
    void *m = mmap(nullptr, pages + PAGE, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        return nullptr;
    char *map = (char *)m;
    if (mprotect(map + pages, PAGE, PROT_NONE))
        die("mprotect failed");
    allocation a = {map, pages, map + pages - rounded, bytes, pinned};
    fill_noise(a.user, bytes);
    if (device_depth == 0)
        protect(a, false);
    allocations[(uintptr_t)a.user] = a;
    return a.user;
}

cudaError_t unmap_block(void *p, bool pinned)
{
    auto it = allocations.find((uintptr_t)p);
    if (it == allocations.end() || it->second.pinned != pinned)
        return fail(cudaErrorInvalidValue);
    munmap(it->second.map, it->second.map_bytes + PAGE);
    freed.emplace_back(it->second.map, it->second.map_bytes + PAGE);
    if (freed.size() > 64)
        freed.pop_front();
    allocations.erase(it);
    return cudaSuccess;
}

/* A segfault: say what it hit before dying. */
void on_segv(int sig, siginfo_t *info, void *)
{
    char *p = (char *)info->si_addr;
    const char *what = "pleat CUDA emulator: a fault outside device memory\n";
    for (auto &f : freed)
        if (p >= f.first && p < f.first + f.second)
            what = "pleat CUDA emulator: a fault where a cudaFree released memory "
                   "(used after the free, or mapped again since)\n";
    for (auto &a : allocations) {
        if (p >= a.second.map && p < a.second.map + a.second.map_bytes + PAGE) {
            what = p >= a.second.map + a.second.map_bytes
                       ? "pleat CUDA emulator: an access past the end of a device allocation\n"
                       : "pleat CUDA emulator: the host touched device memory\n";
            break;
        }
    }
    ssize_t written = write(2, what, strlen(what));
    (void)written;
    signal(sig, SIG_DFL);
}

struct segv_handler {
    segv_handler()
    {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_segv;
        sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
        sigaction(SIGSEGV, &sa, nullptr);
    }
} installed;

/* cudaMalloc (device memory) and cudaMallocHost (pinned): NULL for 0 bytes. */
cudaError_t allocate(void **ptr, size_t bytes, bool pinned)
{
    locked g(big_lock);
    if (!ptr)
        return fail(cudaErrorInvalidValue);
    cudaError_t e = unsafe_call();
    if (e != cudaSuccess)
        return e;
    *ptr = bytes ? map_block(bytes, pinned) : nullptr;
    return *ptr || !bytes ? cudaSuccess : fail(cudaErrorMemoryAllocation);
}

cudaError_t release(void *ptr, bool pinned)
{
    locked g(big_lock);
    cudaError_t e = unsafe_call();
    if (e != cudaSuccess || !ptr)
        return e;
    return unmap_block(ptr, pinned);
}

} // namespace

side pleat_emu::side_of(const void *p, size_t bytes)
{
    const allocation *a = find(p, bytes ? bytes : 1);
    return !a ? HOST : a->pinned ? PINNED : DEVICE;
}

bool pleat_emu::straddles(const void *p, size_t bytes) { return find(p, 1) && !find(p, bytes); }

void pleat_emu::expect_device(const void *p, size_t bytes, const char *what)
{
    locked g(big_lock);
    const allocation *a = find(p, bytes);
    if (!a || a->pinned)
        die("%s (%p, %zu bytes) is not inside one device allocation", what, p, bytes);
}

extern "C" {

cudaError_t cudaMalloc(void **ptr, size_t bytes) { return allocate(ptr, bytes, false); }
cudaError_t cudaFree(void *ptr) { return release(ptr, false); }
cudaError_t cudaMallocHost(void **ptr, size_t bytes) { return allocate(ptr, bytes, true); }
cudaError_t cudaFreeHost(void *ptr) { return release(ptr, true); }

} // extern "C"
