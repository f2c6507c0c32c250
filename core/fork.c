/* The fork count of core/fork.h: a child handler of pthread_atfork, set
 * once. In the child only the forking thread runs, so the handler's add
 * races with nothing. */
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

unsigned long pleat_forks(void)
{
    pthread_once(&counting, start_counting);
    return atomic_load_explicit(&forks, memory_order_relaxed);
}
#endif
