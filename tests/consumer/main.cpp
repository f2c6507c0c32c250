// C++ consumer: the header compiles as C++ and links without extern "C" help.
#include <pleat.h>

#include <cstdio>
#include <vector>

int main()
{
    pleat_context *ctx = nullptr;
    if (pleat_context_create(nullptr, &ctx) != PLEAT_OK)
        return 1;
    std::vector<float> p = {0, 0, 0, 1, 0.5f, 0, 0, 1, 0.9f, 0, 0, 1};
    pleat_params params = pleat_default_params();
    params.distance = 1.0f;
    size_t n = 0;
    pleat_status s = pleat_find_pairs(ctx, p.data(), 3, &params, nullptr, 0, &n);
    std::vector<uint32_t> pairs(2 * n);
    if (s == PLEAT_OK)
        s = pleat_find_pairs(ctx, p.data(), 3, &params, pairs.data(), n, &n);
    pleat_context_destroy(ctx);
    if (s != PLEAT_OK || n != 3)
        return 1;
    std::printf("consumer_cpp: %zu pairs ok\n", n);
    return 0;
}
