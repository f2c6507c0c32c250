/* The smallest complete use of pleat: particles closer than the collision
 * distance are pushed apart to that distance (short of it by a tiny fraction
 * of the overlap: pleat.h, pleat_params.stiffness), two free ones each by
 * half the overlap, and a free one off a pinned one (inverse mass 0, which
 * stays put) by all of it. */
#include <pleat.h>

#include <stdio.h>

int main(void)
{
    pleat_context *ctx;
    pleat_status s = pleat_context_create(NULL, &ctx); /* defaults: best backend */
    if (s != PLEAT_OK) {
        fprintf(stderr, "pleat: %s\n", pleat_status_string(s));
        return 1;
    }

    float particles[] = {
        0.0f, 0.0f, 0.0f, 1.0f, /* x, y, z, inverse mass */
        0.5f, 0.0f, 0.0f, 1.0f,
        5.0f, 0.0f, 0.0f, 0.0f, /* pinned */
        5.5f, 0.0f, 0.0f, 1.0f,
    };
    pleat_params params = pleat_default_params();
    params.distance = 1.0f;

    pleat_stats stats;
    s = pleat_self_collide(ctx, particles, 4, &params, &stats);
    if (s != PLEAT_OK) {
        fprintf(stderr, "pleat: %s\n", pleat_status_string(s));
        pleat_context_destroy(ctx);
        return 1;
    }
    printf("%s: %llu pairs; free at x = %g and %g, pinned at x = %g and free at x = %g\n",
           pleat_context_describe(ctx), (unsigned long long)stats.pairs, particles[0],
           particles[4], particles[8], particles[12]);
    pleat_context_destroy(ctx);
    return 0;
}
