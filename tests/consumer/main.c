/* C99 consumer: two particles closer than the distance end up that far apart. */
#include <pleat.h>

#include <math.h>
#include <stdio.h>

int main(void)
{
    pleat_context *ctx = NULL;
    if (pleat_context_create(NULL, &ctx) != PLEAT_OK)
        return 1;
    float p[8] = {0, 0, 0, 1, 0.25f, 0, 0, 1};
    pleat_params params = pleat_default_params();
    params.distance = 1.0f;
    pleat_stats stats;
    pleat_status s = pleat_self_collide(ctx, p, 2, &params, &stats);
    pleat_context_destroy(ctx);
    if (s != PLEAT_OK || stats.pairs != 1 || fabsf(p[4] - p[0] - 1.0f) > 1e-6f)
        return 1;
    printf("consumer_c: pleat %s ok\n", pleat_version());
    return 0;
}
