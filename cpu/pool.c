#include "pool.h"
#include "core/alloc.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

struct pleat_pool {
    int threads;
    int started; /* workers actually running */
    pthread_t *workers;
    pthread_mutex_t lock;
    pthread_cond_t wake; /* a new generation or stop */
    pthread_cond_t idle; /* the last worker finished its generation */
    unsigned long generation;
    int stop;
    int busy; /* workers still in the current generation */
    pleat_task_fn fn;
    void *arg;
    uint32_t tasks;
    atomic_uint_fast32_t next;
};

static void drain(pleat_pool *pool)
{
    uint32_t t;
    while ((t = (uint32_t)atomic_fetch_add(&pool->next, 1)) < pool->tasks)
        pool->fn(pool->arg, t);
}

static void *worker_main(void *p)
{
    pleat_pool *pool = p;
    unsigned long seen = 0;
    pthread_mutex_lock(&pool->lock);
    for (;;) {
        while (!pool->stop && pool->generation == seen)
            pthread_cond_wait(&pool->wake, &pool->lock);
        if (pool->stop)
            break;
        seen = pool->generation;
        pthread_mutex_unlock(&pool->lock);
        drain(pool);
        pthread_mutex_lock(&pool->lock);
        if (--pool->busy == 0)
            pthread_cond_signal(&pool->idle);
    }
    pthread_mutex_unlock(&pool->lock);
    return NULL;
}

pleat_pool *pleat_pool_create(int threads)
{
    if (threads < 1)
        return NULL;
    pleat_pool *pool = pleat_calloc(1, sizeof *pool);
    if (!pool)
        return NULL;
    pool->threads = threads;
    atomic_init(&pool->next, 0);
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->wake, NULL);
    pthread_cond_init(&pool->idle, NULL);
    if (threads > 1) {
        pool->workers = pleat_calloc((size_t)threads - 1, sizeof *pool->workers);
        if (!pool->workers) {
            pleat_pool_destroy(pool);
            return NULL;
        }
        for (int i = 0; i < threads - 1; ++i) {
            if (pthread_create(&pool->workers[i], NULL, worker_main, pool) != 0) {
                pleat_pool_destroy(pool);
                return NULL;
            }
            pool->started++;
        }
    }
    return pool;
}

void pleat_pool_destroy(pleat_pool *pool)
{
    if (!pool)
        return;
    pthread_mutex_lock(&pool->lock);
    pool->stop = 1;
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);
    for (int i = 0; i < pool->started; ++i)
        pthread_join(pool->workers[i], NULL);
    pthread_cond_destroy(&pool->idle);
    pthread_cond_destroy(&pool->wake);
    pthread_mutex_destroy(&pool->lock);
    pleat_free(pool->workers);
    pleat_free(pool);
}

int pleat_pool_threads(const pleat_pool *pool)
{
    return pool->threads;
}

void pleat_pool_run(pleat_pool *pool, uint32_t tasks, pleat_task_fn fn, void *arg)
{
    if (tasks == 0)
        return;
    if (pool->threads == 1 || tasks == 1) {
        for (uint32_t t = 0; t < tasks; ++t)
            fn(arg, t);
        return;
    }
    pthread_mutex_lock(&pool->lock);
    pool->fn = fn;
    pool->arg = arg;
    pool->tasks = tasks;
    atomic_store(&pool->next, 0);
    pool->busy = pool->started;
    pool->generation++;
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);

    drain(pool);

    pthread_mutex_lock(&pool->lock);
    while (pool->busy > 0)
        pthread_cond_wait(&pool->idle, &pool->lock);
    pthread_mutex_unlock(&pool->lock);
}
