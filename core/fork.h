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
 * was loaded (core/fork.c): a value taken when something is made differs
 * from the current one only in a child. Counted by a pthread_atfork child
 * handler, so not in the child handlers registered before it, nor after
 * _Fork() or clone(), which run none. Always 0 where there is no fork()
 * (Windows), or if the count could not start (out of memory). */
unsigned long pleat_forks(void);

#ifdef __cplusplus
}
#endif

#endif
