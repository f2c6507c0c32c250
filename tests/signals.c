/* pleat.h (cpu_threads): CPU workers start with the asynchronous signals
 * blocked, whatever the creating thread's mask, so an application that
 * blocks a signal on its threads to wait for it (sigwait, signalfd) gets
 * it, even when it blocks it after making the context.
 *
 * This process has one thread of its own. Its context starts 3 workers
 * while SIGUSR1 is open here, then SIGUSR1 is blocked, and 20 are sent to
 * the process while calls run: each must stay pending for sigtimedwait
 * here, and the handler must never run (it would on a worker). A plain
 * program, not a Criterion suite: Criterion keeps a thread of its own in a
 * test's process, which could take the signal, and qemu-user cannot start
 * threads in a fork() child of a threaded process. (qemu-user keeps a
 * signal sent to the process for its first thread, so there this passes
 * either way.) Exit status 0 when every check passed. */
#define _POSIX_C_SOURCE 200809L /* sigaction, sigtimedwait */
#include "scenes.h"

#include <pleat.h>

#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static atomic_int handled;

static void count_signal(int sig)
{
    (void)sig;
    atomic_fetch_add(&handled, 1);
}

static pleat_context *context(int threads)
{
    pleat_context_desc desc = pleat_default_context_desc();
    desc.backend = PLEAT_BACKEND_CPU;
    desc.cpu_threads = threads;
    pleat_context *ctx = NULL;
    return pleat_context_create(&desc, &ctx) == PLEAT_OK ? ctx : NULL;
}

enum { COUNT = 30000, SIGNALS = 20 };

int main(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = count_signal;
    size_t bytes = (size_t)COUNT * 4 * sizeof(float);
    float *start = malloc(bytes), *want = malloc(bytes), *p = malloc(bytes);
    pleat_context *one = context(1), *ctx = context(4);
    if (sigaction(SIGUSR1, &sa, NULL) != 0 || !start || !want || !p || !one || !ctx) {
        printf("FAIL setting up\n");
        return 1;
    }
    pleat_params params = pleat_default_params();
    params.distance = 1.0f;
    pleat_scene_uniform_cloud(COUNT, params.distance, 8.0f, 11, start);
    memcpy(want, start, bytes);
    if (pleat_self_collide(one, want, COUNT, &params, NULL) != PLEAT_OK) {
        printf("FAIL the one-thread call\n");
        return 1;
    }
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &usr1, NULL);
    const struct timespec wait = {10, 0};
    for (int i = 0; i < SIGNALS; ++i) {
        memcpy(p, start, bytes);
        if (kill(getpid(), SIGUSR1) != 0 ||
            pleat_self_collide(ctx, p, COUNT, &params, NULL) != PLEAT_OK ||
            memcmp(p, want, bytes) != 0) {
            printf("FAIL call %d\n", i);
            return 1;
        }
        if (sigtimedwait(&usr1, NULL, &wait) != SIGUSR1) {
            printf("FAIL signal %d did not wait here (the handler ran %d times)\n", i,
                   atomic_load(&handled));
            return 1;
        }
    }
    if (atomic_load(&handled) != 0) {
        printf("FAIL the handler ran %d times\n", atomic_load(&handled));
        return 1;
    }
    pleat_context_destroy(ctx);
    pleat_context_destroy(one);
    free(start);
    free(want);
    free(p);
    printf("%d signals sent to the process, each waited for here\n", SIGNALS);
    return 0;
}
