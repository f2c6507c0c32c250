/* The fork count of core/fork.h: a child handler of pthread_atfork. It is
 * registered when the library is loaded (a constructor), so that it runs
 * before the child handlers the application registers later, which may use
 * a context: child handlers run in the order they were registered. A
 * handler registered before that (by a library loaded earlier) runs while
 * the count is still the parent's. In the child only the forking thread
 * runs, so the handler's add races with nothing. */
#include "fork.h"

#ifdef _WIN32
unsigned long pleat_forks(void)
{
    return 0;
}
#else
#include <pthread.h>
#include <stdatomic.h>

static atomic_ulong forks;
static pthread_once_t counting = PTHREAD_ONCE_INIT;

static void count_fork(void)
{
    atomic_fetch_add_explicit(&forks, 1, memory_order_relaxed);
}

static void start_counting(void)
{
    /* fails only out of memory: the count then stays 0 */
    (void)pthread_atfork(NULL, NULL, count_fork);
}

#if defined(__GNUC__) || defined(__clang__)
__attribute__((constructor)) static void count_from_load(void)
{
    pthread_once(&counting, start_counting);
}
#endif

unsigned long pleat_forks(void)
{
    pthread_once(&counting, start_counting); /* where no constructor ran */
    return atomic_load_explicit(&forks, memory_order_relaxed);
}
#endif
