/* Telling a fork() child from its parent. A context made before a fork()
 * is copied into the child without the threads it started there (only the
 * forking thread survives) and, on CUDA, without a usable runtime, so its
 * backend must not wait for those threads or call that runtime in the
 * child (pleat.h, the thread rules). */
#ifndef PLEAT_CORE_FORK_H
#define PLEAT_CORE_FORK_H

#ifdef __cplusplus
extern "C" { /* the CUDA backend asks too */
#endif

/* How many fork()s this process has come through as the child since pleat
 * first asked (core/fork.c): a value taken when something is made differs
 * from the current one only in a child. The first call starts the count
 * (pthread_atfork), so take the value before making what it guards. Always
 * 0 where there is no fork() (Windows), or if the count could not start
 * (out of memory at the first call). */
unsigned long pleat_forks(void);

#ifdef __cplusplus
}
#endif

#endif
