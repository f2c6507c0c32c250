/* The thread primitives the worker pool (cpu/pool.c) needs: POSIX threads,
 * or on Windows Win32's own (slim reader/writer locks, condition variables,
 * _beginthreadex), so that a Windows build of pleat needs no pthreads
 * library beside it. */
#ifndef PLEAT_CPU_THREAD_H
#define PLEAT_CPU_THREAD_H

#ifdef _WIN32
/* An SRWLOCK, a CONDITION_VARIABLE and a HANDLE, each one pointer (checked
 * in thread.c), declared here without <windows.h> and its macros */
typedef struct pleat_mutex {
    void *ptr;
} pleat_mutex;
typedef struct pleat_cond {
    void *ptr;
} pleat_cond;
typedef void *pleat_native_thread;
#else
#include <pthread.h>
typedef pthread_mutex_t pleat_mutex;
typedef pthread_cond_t pleat_cond;
typedef pthread_t pleat_native_thread;
#endif

/* A thread running fn(arg); the struct must stay where it is until joined. */
typedef struct pleat_thread {
    pleat_native_thread native;
    void (*fn)(void *arg);
    void *arg;
} pleat_thread;

/* 0 on success. */
int pleat_thread_start(pleat_thread *t, void (*fn)(void *arg), void *arg);
void pleat_thread_join(pleat_thread *t);
/* Gives the core to another thread that wants it, if any. */
void pleat_thread_yield(void);
/* The cores the calling thread may run on, at least 1: its CPU affinity,
 * which the threads it starts inherit (so taskset, container cpusets and
 * Windows affinity masks count; on Windows the process's mask, which covers
 * the processor group it runs in, at most 64 cores), or on
 * Linux its cgroup's CPU quota in whole cores rounded up where that is
 * fewer (quota.h). */
int pleat_usable_cores(void);

void pleat_mutex_init(pleat_mutex *m);
void pleat_mutex_destroy(pleat_mutex *m);
void pleat_mutex_lock(pleat_mutex *m);
void pleat_mutex_unlock(pleat_mutex *m);
void pleat_cond_init(pleat_cond *c);
void pleat_cond_destroy(pleat_cond *c);
/* m locked by the caller; may wake spuriously */
void pleat_cond_wait(pleat_cond *c, pleat_mutex *m);
void pleat_cond_signal(pleat_cond *c);
void pleat_cond_broadcast(pleat_cond *c);

/* One pause of a spin loop: tells the core (and a sibling hyper-thread)
 * that this thread only waits. */
static inline void pleat_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

#endif
