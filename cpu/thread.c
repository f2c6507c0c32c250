#ifndef _WIN32
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#endif
#include "thread.h"

#include "quota.h"

#include <limits.h>

#ifdef _WIN32
#include "win32.h"
#include <process.h>

_Static_assert(sizeof(SRWLOCK) == sizeof(pleat_mutex), "pleat_mutex holds an SRWLOCK");
_Static_assert(sizeof(CONDITION_VARIABLE) == sizeof(pleat_cond), "pleat_cond holds one");
_Static_assert(sizeof(HANDLE) == sizeof(pleat_native_thread), "and a thread's handle");

static SRWLOCK *srw(pleat_mutex *m)
{
    return (SRWLOCK *)m;
}

static CONDITION_VARIABLE *cv(pleat_cond *c)
{
    return (CONDITION_VARIABLE *)c;
}

static unsigned __stdcall thread_main(void *p)
{
    pleat_thread *t = p;
    t->fn(t->arg);
    return 0;
}

int pleat_thread_start(pleat_thread *t, void (*fn)(void *arg), void *arg)
{
    t->fn = fn;
    t->arg = arg;
    /* _beginthreadex, not CreateThread: the thread may use the C library */
    uintptr_t h = _beginthreadex(NULL, 0, thread_main, t, 0, NULL);
    t->native = (HANDLE)h;
    return h ? 0 : -1;
}

void pleat_thread_join(pleat_thread *t)
{
    WaitForSingleObject(t->native, INFINITE);
    CloseHandle(t->native);
}

void pleat_thread_yield(void)
{
    SwitchToThread();
}

/* The CPUs in the affinity mask, which covers the processor group the
 * process runs in; all the active ones where there is none. */
static int affinity_cores(void)
{
    DWORD_PTR process, system;
    if (GetProcessAffinityMask(GetCurrentProcess(), &process, &system) && process) {
        int n = 0;
        for (; process; process &= process - 1)
            ++n;
        return n;
    }
    DWORD n = GetActiveProcessorCount(ALL_PROCESSOR_GROUPS);
    return n > 0 && n < INT_MAX ? (int)n : 1;
}

/* SRW locks and condition variables need no destruction. */
void pleat_mutex_init(pleat_mutex *m) { InitializeSRWLock(srw(m)); }
void pleat_mutex_destroy(pleat_mutex *m) { (void)m; }
void pleat_mutex_lock(pleat_mutex *m) { AcquireSRWLockExclusive(srw(m)); }
void pleat_mutex_unlock(pleat_mutex *m) { ReleaseSRWLockExclusive(srw(m)); }
void pleat_cond_init(pleat_cond *c) { InitializeConditionVariable(cv(c)); }
void pleat_cond_destroy(pleat_cond *c) { (void)c; }
void pleat_cond_wait(pleat_cond *c, pleat_mutex *m)
{
    SleepConditionVariableSRW(cv(c), srw(m), INFINITE, 0);
}
void pleat_cond_signal(pleat_cond *c) { WakeConditionVariable(cv(c)); }
void pleat_cond_broadcast(pleat_cond *c) { WakeAllConditionVariable(cv(c)); }

#else
#include <sched.h>
#include <signal.h>
#include <unistd.h>

static void *thread_main(void *p)
{
    pleat_thread *t = p;
    t->fn(t->arg);
    return NULL;
}

/* A worker starts with the asynchronous signals blocked, whatever the
 * creating thread's mask: a signal sent to the process then goes to one of
 * the application's threads, which may block it to wait for it (sigwait,
 * signalfd) and would otherwise lose it to a worker, where its default
 * action may end the process. The faults a thread raises itself stay
 * open, so that an application's crash handler runs for a worker's. */
int pleat_thread_start(pleat_thread *t, void (*fn)(void *arg), void *arg)
{
    t->fn = fn;
    t->arg = arg;
    sigset_t blocked, caller;
    sigfillset(&blocked);
    static const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS};
    for (size_t i = 0; i < sizeof faults / sizeof faults[0]; ++i)
        sigdelset(&blocked, faults[i]);
    pthread_sigmask(SIG_SETMASK, &blocked, &caller);
    int rc = pthread_create(&t->native, NULL, thread_main, t);
    pthread_sigmask(SIG_SETMASK, &caller, NULL);
    return rc;
}

void pleat_thread_join(pleat_thread *t)
{
    pthread_join(t->native, NULL);
}

void pleat_thread_yield(void)
{
    sched_yield();
}

/* The CPUs in the affinity mask; sysconf's count where there is none. */
static int affinity_cores(void)
{
#ifdef CPU_COUNT_S
    /* room for Linux's largest NR_CPUS: a plain cpu_set_t holds 1024, and
     * sched_getaffinity fails on a host with more */
    unsigned long mask[8192 / (8 * sizeof(unsigned long))];
    if (sched_getaffinity(0, sizeof mask, (cpu_set_t *)mask) == 0) {
        int n = CPU_COUNT_S(sizeof mask, (cpu_set_t *)mask);
        if (n > 0)
            return n;
    }
#endif
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 && n < INT_MAX ? (int)n : 1;
}

void pleat_mutex_init(pleat_mutex *m) { pthread_mutex_init(m, NULL); }
void pleat_mutex_destroy(pleat_mutex *m) { pthread_mutex_destroy(m); }
void pleat_mutex_lock(pleat_mutex *m) { pthread_mutex_lock(m); }
void pleat_mutex_unlock(pleat_mutex *m) { pthread_mutex_unlock(m); }
void pleat_cond_init(pleat_cond *c) { pthread_cond_init(c, NULL); }
void pleat_cond_destroy(pleat_cond *c) { pthread_cond_destroy(c); }
void pleat_cond_wait(pleat_cond *c, pleat_mutex *m) { pthread_cond_wait(c, m); }
void pleat_cond_signal(pleat_cond *c) { pthread_cond_signal(c); }
void pleat_cond_broadcast(pleat_cond *c) { pthread_cond_broadcast(c); }
#endif

/* A quota below the affinity wins: a container given 2 CPUs of 64 still
 * sees all 64 in its mask. */
int pleat_usable_cores(void)
{
    int n = affinity_cores(), quota = pleat_cpu_quota_cores("");
    return quota && quota < n ? quota : n;
}
