/* The two-phase protocol of pleat_find_pairs. */
#include "support.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

static const float pts[] = {0, 0, 0, 1, 0.5f, 0, 0, 1, 1.0f, 0, 0, 1, 5, 5, 5, 1};
/* with distance 0.75: pairs (0,1) and (1,2) */

static pleat_params params(void)
{
    pleat_params p = pleat_default_params();
    p.distance = 0.75f;
    return p;
}

Test(capacity, size_query)
{
    pleat_context *ctx = cpu_context(1);
    pleat_params p = params();
    size_t num = 0;
    cr_assert_eq(pleat_find_pairs(ctx, pts, 4, &p, NULL, 0, &num), PLEAT_OK);
    cr_assert_eq(num, 2);
    pleat_context_destroy(ctx);
}

Test(capacity, null_array_with_capacity_is_capacity_error)
{
    pleat_context *ctx = cpu_context(1);
    pleat_params p = params();
    size_t num = 0;
    cr_assert_eq(pleat_find_pairs(ctx, pts, 4, &p, NULL, 5, &num), PLEAT_ERROR_CAPACITY);
    cr_assert_eq(num, 2);
    pleat_context_destroy(ctx);
}

Test(capacity, too_small_writes_nothing)
{
    pleat_context *ctx = cpu_context(1);
    pleat_params p = params();
    uint32_t out[8];
    for (size_t cap = 0; cap < 2; ++cap) {
        memset(out, 0xcd, sizeof out);
        size_t num = 0;
        cr_assert_eq(pleat_find_pairs(ctx, pts, 4, &p, out, cap, &num), PLEAT_ERROR_CAPACITY);
        cr_assert_eq(num, 2);
        for (int k = 0; k < 8; ++k)
            cr_assert_eq(out[k], 0xcdcdcdcdu);
    }
    pleat_context_destroy(ctx);
}

Test(capacity, exact_and_larger_fit_and_tail_untouched)
{
    pleat_context *ctx = cpu_context(1);
    pleat_params p = params();
    uint32_t out[8];
    for (size_t cap = 2; cap <= 4; ++cap) {
        memset(out, 0xcd, sizeof out);
        size_t num = 0;
        cr_assert_eq(pleat_find_pairs(ctx, pts, 4, &p, out, cap, &num), PLEAT_OK);
        cr_assert_eq(num, 2);
        cr_assert(out[0] == 0 && out[1] == 1 && out[2] == 1 && out[3] == 2);
        for (int k = 4; k < 8; ++k)
            cr_assert_eq(out[k], 0xcdcdcdcdu, "entry %d past the total was written", k);
    }
    pleat_context_destroy(ctx);
}

Test(capacity, no_pairs_with_array)
{
    pleat_context *ctx = cpu_context(1);
    pleat_params p = params();
    p.distance = 0.1f;
    uint32_t out[2] = {7, 7};
    size_t num = 9;
    cr_assert_eq(pleat_find_pairs(ctx, pts, 4, &p, out, 0, &num), PLEAT_OK);
    cr_assert_eq(num, 0);
    cr_assert(out[0] == 7 && out[1] == 7);
    pleat_context_destroy(ctx);
}
