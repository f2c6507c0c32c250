/* The same bits for every thread count and every repeat of a call. */
#include "core/buffer.h"
#include "scenes.h"
#include "support.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

static const int thread_counts[] = {1, 2, 3, 8};
#define NUM_COUNTS (sizeof thread_counts / sizeof thread_counts[0])

/* Hash of the corrected particles and of the pair list, after `calls`
 * successive self-collision passes. */
static void run(pleat_context *ctx, const scene *s, const pleat_params *p, int calls,
                uint64_t *h_collide, uint64_t *h_pairs)
{
    size_t num;
    uint32_t *pairs = pleat_pairs(ctx, s->particles, s->count, p, &num);
    *h_pairs = hash_bytes(pairs, num * 2 * sizeof *pairs);
    free(pairs);
    float *work = copy_floats(s->particles, (size_t)s->count * 4);
    for (int c = 0; c < calls; ++c)
        cr_assert_eq(pleat_self_collide(ctx, work, s->count, p, NULL), PLEAT_OK);
    *h_collide = hash_bytes(work, (size_t)s->count * 4 * sizeof(float));
    free(work);
}

Test(determinism, same_bits_for_every_thread_count)
{
    uint64_t rng = 99;
    for (int kind = 0; kind < SCENE_KIND_COUNT; ++kind) {
        /* large enough for many chunks, so threads really share work */
        scene s = scene_make((scene_kind)kind, 40000, kind % 2, pleat_scene_random(&rng));
        pleat_params p = pleat_default_params();
        p.distance = s.distance;
        p.stiffness = 0.7f;
        p.rest_positions = s.rest;
        uint64_t first_c = 0, first_p = 0;
        for (size_t t = 0; t < NUM_COUNTS; ++t) {
            pleat_context *ctx = cpu_context(thread_counts[t]);
            uint64_t hc, hp;
            run(ctx, &s, &p, 3, &hc, &hp);
            if (t == 0) {
                first_c = hc;
                first_p = hp;
            }
            cr_assert_eq(hc, first_c, "%s: %d threads moved particles differently",
                         scene_name(kind), thread_counts[t]);
            cr_assert_eq(hp, first_p, "%s: %d threads listed different pairs", scene_name(kind),
                         thread_counts[t]);
            pleat_context_destroy(ctx);
        }
        scene_free(&s);
    }
}

Test(determinism, repeated_calls_same_bits_and_no_allocation)
{
    scene s = scene_make(SCENE_FOLDED, 30000, 1, 5);
    pleat_params p = pleat_default_params();
    p.distance = s.distance;
    p.rest_positions = s.rest;
    pleat_context *ctx = cpu_context(2);
    float *a = copy_floats(s.particles, (size_t)s.count * 4);
    pleat_stats st;
    cr_assert_eq(pleat_self_collide(ctx, a, s.count, &p, &st), PLEAT_OK);
    cr_assert_gt(st.pairs, 0);
    size_t allocations = pleat_buffer_allocations();
    for (int r = 0; r < 5; ++r) {
        float *b = copy_floats(s.particles, (size_t)s.count * 4);
        cr_assert_eq(pleat_self_collide(ctx, b, s.count, &p, NULL), PLEAT_OK);
        cr_assert(memcmp(a, b, (size_t)s.count * 4 * sizeof(float)) == 0, "repeat %d differs", r);
        free(b);
    }
    cr_assert_eq(pleat_buffer_allocations(), allocations,
                 "calls of the same size must reuse the context's scratch");
    free(a);
    pleat_context_destroy(ctx);
    scene_free(&s);
}

/* The order of the index list does not change the result. */
Test(determinism, index_order_does_not_matter)
{
    scene s = scene_make(SCENE_CLOUD, 5000, 0, 17);
    pleat_params p = pleat_default_params();
    p.distance = s.distance;
    uint32_t num;
    uint32_t *subset = random_subset(s.count, 3, &num);
    pleat_context *ctx = cpu_context(2);
    p.indices = subset;
    p.num_indices = num;
    float *a = copy_floats(s.particles, (size_t)s.count * 4);
    cr_assert_eq(pleat_self_collide(ctx, a, s.count, &p, NULL), PLEAT_OK);
    for (uint32_t i = 0; i < num / 2; ++i) { /* reverse */
        uint32_t t = subset[i];
        subset[i] = subset[num - 1 - i];
        subset[num - 1 - i] = t;
    }
    float *b = copy_floats(s.particles, (size_t)s.count * 4);
    cr_assert_eq(pleat_self_collide(ctx, b, s.count, &p, NULL), PLEAT_OK);
    cr_assert(memcmp(a, b, (size_t)s.count * 4 * sizeof(float)) == 0);
    free(a);
    free(b);
    free(subset);
    pleat_context_destroy(ctx);
    scene_free(&s);
}
