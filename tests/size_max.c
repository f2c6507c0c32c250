/* What a 32-bit build (a 32-bit size_t) must do where a count outgrows
 * size_t; registered only there, and run by the x86_32 test.
 *
 * 92,683 coincident particles make 2^32 + 55,607 pairs, which no size_t
 * counts: pleat_find_pairs must return CAPACITY with *num_pairs SIZE_MAX,
 * for a size query and for an array that holds the total's low 32 bits,
 * and write nothing. (Truncated, the total read 55,607: the query said OK,
 * and the list overran its scratch.)
 *
 * And count = UINT32_MAX, whose sizes wrapped: the index check's bitmap
 * (count + 7 bits, sized 0 bytes and written through NULL) and the sorted
 * arrays (m + 32 entries). No 32-bit process can hold that many particles,
 * so these calls break pleat.h's contract on purpose: they pass 2 particles,
 * and rely on pleat reading only a subset's particles, and nothing before
 * it has sized its scratch. Each runs on a new context, whose scratch is
 * empty (an earlier call's bitmap would hide the wrap), and the first may
 * take 512 MiB for its bitmap. Needs no test framework. */
#include <pleat.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

static void expect(int ok, const char *what)
{
    if (!ok) {
        printf("FAIL %s\n", what);
        ++failures;
    }
}

static void pairs_past_size_max(pleat_context *ctx)
{
    enum { N = 92683 };
    const uint64_t total = (uint64_t)N * (N - 1) / 2;
    float *pts = calloc((size_t)N * 4, sizeof *pts); /* all at the origin */
    const size_t low = (size_t)total, words = 2 * low;
    uint32_t *pairs = malloc(words * sizeof *pairs), *marked = malloc(words * sizeof *marked);
    if (!pts || !pairs || !marked) {
        printf("FAIL no memory for the test itself\n");
        exit(1);
    }
    for (int i = 0; i < N; ++i)
        pts[4 * i + 3] = 1.0f;
    memset(pairs, 0xab, words * sizeof *pairs);
    memcpy(marked, pairs, words * sizeof *pairs);
    pleat_params p = pleat_default_params();
    p.distance = 1.0f;

    size_t num = 0;
    pleat_status s = pleat_find_pairs(ctx, pts, N, &p, NULL, 0, &num);
    expect(s == PLEAT_ERROR_CAPACITY, "a size query of 2^32 + 55,607 pairs: CAPACITY");
    expect(num == SIZE_MAX, "... and *num_pairs SIZE_MAX");
    num = 0;
    s = pleat_find_pairs(ctx, pts, N, &p, pairs, low, &num);
    expect(s == PLEAT_ERROR_CAPACITY, "a list into room for the total's low 32 bits: CAPACITY");
    expect(num == SIZE_MAX, "... and *num_pairs SIZE_MAX");
    expect(memcmp(pairs, marked, words * sizeof *pairs) == 0, "... and the array untouched");
    printf("%llu pairs: %s\n", (unsigned long long)total, pleat_status_string(s));
    free(marked);
    free(pairs);
    free(pts);
}

static pleat_context *new_context(void)
{
    pleat_context *ctx = NULL;
    if (pleat_context_create(NULL, &ctx) != PLEAT_OK) {
        printf("FAIL no context\n");
        exit(1);
    }
    return ctx;
}

/* Two particles 0.5 apart, a subset of a claimed UINT32_MAX: OK (they are
 * pushed apart) or, with no memory for the index bitmap, OUT_OF_MEMORY
 * with the array as it was. */
static void uint32_max_particles(void)
{
    float pts[8] = {0.0f, 0.0f, 0.0f, 1.0f, 0.5f, 0.0f, 0.0f, 1.0f}, before[8];
    memcpy(before, pts, sizeof pts);
    const uint32_t indices[2] = {0, 1};
    pleat_params p = pleat_default_params();
    p.distance = 1.0f;
    p.indices = indices;
    p.num_indices = 2;
    pleat_context *ctx = new_context();
    pleat_status s = pleat_self_collide(ctx, pts, UINT32_MAX, &p, NULL);
    pleat_context_destroy(ctx);
    expect(s == PLEAT_OK || s == PLEAT_ERROR_OUT_OF_MEMORY,
           "a subset of UINT32_MAX particles: OK, or no memory for its bitmap");
    if (s == PLEAT_OK)
        expect(pts[0] < 0.0f && pts[4] > 0.5f, "... OK: the pair pushed apart");
    else
        expect(memcmp(pts, before, sizeof pts) == 0, "... and the particles as they were");
    printf("a subset of UINT32_MAX particles: %s\n", pleat_status_string(s));

    /* all of them: m + 32 sorted entries cannot be counted, and the call
     * must say so before it reads a particle */
    p.indices = NULL;
    p.num_indices = 0;
    size_t num = 0;
    ctx = new_context();
    s = pleat_find_pairs(ctx, pts, UINT32_MAX, &p, NULL, 0, &num);
    pleat_context_destroy(ctx);
    expect(s == PLEAT_ERROR_OUT_OF_MEMORY, "UINT32_MAX particles: OUT_OF_MEMORY");
    printf("UINT32_MAX particles: %s\n", pleat_status_string(s));
}

int main(void)
{
    if (SIZE_MAX > UINT32_MAX) {
        printf("FAIL built with a 64-bit size_t: this test is for 32-bit builds\n");
        return 1;
    }
    pleat_context *ctx = new_context();
    printf("%s\n", pleat_context_describe(ctx));
    pairs_past_size_max(ctx);
    pleat_context_destroy(ctx);
    uint32_max_particles();
    printf("%d failed\n", failures);
    return failures != 0;
}
