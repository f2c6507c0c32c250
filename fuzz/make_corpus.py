#!/usr/bin/env python3
"""Writes the seed corpus (fuzz/corpus) in the input format of fuzz_common.c.

Each seed is a small, readable case: a pair at the distance, lattices,
coincident and pinned particles, rest poses, index lists, every misuse,
NaN/Inf/denormal/huge values, the generated layouts. Run it again after a
change of the format: python3 fuzz/make_corpus.py
"""
import os
import random
import re
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus")

# scale table indices (fuzz_common.c `scales`)
UNIT_1, UNIT_QUARTER, UNIT_MILLI, UNIT_1E5, UNIT_1E20, UNIT_DENORM, UNIT_1E35 = 0, 1, 2, 4, 6, 9, 8
# special() indices
SP_ZERO, SP_NZERO, SP_FLT_MIN, SP_DENORM, SP_FLT_MAX, SP_NFLT_MAX, SP_NAN, SP_INF, SP_NINF = (
    0, 1, 5, 7, 10, 11, 12, 13, 14)
SP_1E19, SP_1P8E19, SP_1E5, SP_3E38, SP_N3E38, SP_2POW_75 = 15, 16, 20, 27, 28, 30


def lat(v):  # lattice coordinate v * unit / 8, v in -64..63
    assert -64 <= v <= 63
    return bytes([v + 64])


def sp(k):
    return bytes([0x80 | 1 << 5 | k])


def raw(f):
    return bytes([0x80]) + struct.pack("<f", f)


def rep(back=0):
    return bytes([0x80 | 2 << 5 | back])


def nudge(steps):
    return bytes([0x80 | 3 << 5 | (steps + 4)])


MASS_1, MASS_PIN, MASS_NPIN = bytes([0]), bytes([160]), bytes([161])


def mass_q(k):  # k * 0.25
    return bytes([200 + k])


def mass_sp(k):  # -1, -FLT_MIN, -denorm, FLT_MAX, denorm, 1e-30, 1e30, .5, 3, nan, inf
    return bytes([220 + k])


def dist_lat(k):  # k * unit / 16
    return bytes([k])


def dist_raw(f):
    return bytes([128]) + struct.pack("<f", f)


def dist_sp(k):
    return bytes([160 + k])


STIFF_1 = bytes([0])


def stiff_frac(k):  # k / 63
    return bytes([128 + k])


def stiff_sp(k):  # 0, -0, 1.0000001, -denorm, denorm, .999999, 2, -1, nan, inf, .5
    return bytes([192 + k])


def header(flags=0, unit=UNIT_1, dist=dist_lat(16), stiff=STIFF_1, misuse=None, capacity=0x0f):
    b = bytes([flags, unit]) + dist + stiff
    if misuse is not None:
        b += bytes([misuse])
    return b + bytes([capacity])


def particles(ps):
    n = len(ps)
    b = bytes([n]) if n < 255 else bytes([255]) + struct.pack("<H", n - 255)
    for p in ps:
        b += p[0] + p[1] + p[2] + p[3]
    return b


def P(x, y, z, m=MASS_1):
    return (lat(x), lat(y), lat(z), m)


seeds = {}
seeds["pair_at_distance"] = header() + particles([P(0, 0, 0), P(8, 0, 0), P(40, 0, 0)])
seeds["pair_inside"] = header() + particles([P(0, 0, 0), P(4, 1, 0), P(-4, 0, 1)])
seeds["lattice_27"] = header(dist=dist_lat(12)) + particles(
    [P(x, y, z) for x in (-4, 0, 4) for y in (-4, 0, 4) for z in (-4, 0, 4)])
seeds["coincident"] = header() + particles([P(3, 3, 3)] * 6 + [P(4, 3, 3)])
seeds["pinned"] = header() + particles(
    [P(0, 0, 0, MASS_PIN), P(4, 0, 0), P(0, 4, 0, MASS_NPIN), P(4, 4, 0, mass_q(8))])
seeds["masses"] = header(stiff=stiff_frac(31)) + particles(
    [P(0, 0, 0, mass_sp(3)), P(2, 0, 0, mass_sp(4)), P(0, 2, 0, mass_sp(5)),
     P(2, 2, 0, mass_sp(6)), P(1, 1, 1, mass_sp(0))])
seeds["nan_mass"] = header() + particles([P(0, 0, 0), P(1, 0, 0, mass_sp(9))])
seeds["nan_position"] = header() + particles([P(0, 0, 0), (sp(SP_NAN), lat(0), lat(0), MASS_1)])
seeds["inf_position"] = header() + particles([P(0, 0, 0), (lat(0), sp(SP_NINF), lat(0), MASS_1)])
seeds["huge_coords"] = header(dist=dist_sp(10)) + particles(
    [(sp(SP_FLT_MAX), lat(0), lat(0), MASS_1), (nudge(-1), lat(0), lat(0), MASS_1),
     (sp(SP_NFLT_MAX), lat(0), lat(0), MASS_1), (sp(SP_3E38), sp(SP_N3E38), lat(1), MASS_1),
     (sp(SP_1P8E19), lat(0), lat(0), MASS_1), (lat(0), lat(0), lat(0), MASS_1)])
seeds["denormals"] = header(unit=UNIT_DENORM, dist=dist_lat(16)) + particles(
    [P(0, 0, 0), P(8, 0, 0), P(0, 5, 0), (sp(SP_DENORM), sp(SP_FLT_MIN), lat(0), MASS_1)])
seeds["tiny_distance_square_underflows"] = header(dist=dist_sp(7)) + particles(
    [P(0, 0, 0), (sp(SP_2POW_75), lat(0), lat(0), MASS_1), (lat(0), sp(SP_DENORM), lat(0), MASS_1)])
seeds["far_from_origin"] = header(unit=UNIT_1E5) + particles(
    [(lat(8), lat(8), lat(8), MASS_1), (nudge(1), rep(1), rep(1), MASS_1),
     (nudge(3), rep(1), nudge(-2), MASS_1), (sp(SP_1E5), lat(8), lat(8), MASS_1)])
seeds["boundary_ulps"] = header(dist=dist_lat(16)) + particles(
    [P(0, 0, 0), (lat(8), lat(0), lat(0), MASS_1), (nudge(1), lat(0), lat(0), MASS_1),
     (lat(16), lat(0), lat(0), MASS_1), (nudge(-1), lat(0), lat(0), MASS_1),
     (lat(63), lat(0), lat(0), MASS_1), (lat(-64), lat(0), lat(0), MASS_1)])
seeds["flat_and_line"] = header(dist=dist_lat(5)) + particles(
    [P(x, 0, 0) for x in range(-20, 21, 2)] + [P(0, y, 3) for y in range(-20, 21, 3)])
seeds["units_1e20"] = header(unit=UNIT_1E20, dist=dist_sp(10)) + particles(
    [P(0, 0, 0), P(1, 0, 0), P(0, 2, 0), P(9, 9, 9)])
seeds["units_1e35"] = header(unit=UNIT_1E35, dist=dist_sp(10)) + particles(
    [P(0, 0, 0), P(1, 0, 0), P(63, 63, 63), P(-64, -64, -64)])
seeds["raw_floats"] = header(dist=dist_raw(0.3)) + particles(
    [(raw(0.1), raw(0.2), raw(0.3), MASS_1), (raw(0.35), raw(0.2), raw(0.3), MASS_1),
     (raw(-1e-7), raw(1e-38), raw(0.3), MASS_1)])
for k, name in ((0, "zero"), (1, "negzero"), (4, "denorm"), (5, "denorm2"), (7, "1e-20"),
                (9, "1e19"), (10, "1.8e19"), (11, "1.85e19"), (12, "2e19"), (13, "max"),
                (14, "neg"), (15, "nan"), (16, "inf"), (18, "2^-63"), (19, "2^-64"), (23, "2^-90")):
    seeds["distance_" + name] = header(dist=dist_sp(k)) + particles(
        [P(0, 0, 0), P(0, 0, 0), P(1, 0, 0), (sp(SP_1E19), lat(0), lat(0), MASS_1)])
for k, name in ((0, "zero"), (1, "negzero"), (2, "above_one"), (3, "negdenorm"), (4, "denorm"),
                (6, "two"), (8, "nan"), (9, "inf")):
    seeds["stiffness_" + name] = header(stiff=stiff_sp(k)) + particles([P(0, 0, 0), P(4, 0, 0)])

# rest poses: copy, offset, own coordinates, NaN in a lane / NaN w (ignored)
body = particles([P(0, 0, 0), P(4, 0, 0), P(0, 4, 0), P(4, 4, 0), P(2, 2, 6)])
seeds["rest"] = header(flags=2) + body + bytes([0, 130, 10, 0, 250, 200]) + lat(0) + lat(20) + \
    lat(0) + bytes([8 + 1])
seeds["rest_nan_lane"] = header(flags=2) + body + bytes([0, 240, 0, 0, 0])
seeds["rest_nan_w_ignored"] = header(flags=2) + body + bytes([8, 8 + 1, 0, 0, 0])
# indices: random subset (mode < 192: bits 2-4 pick valid / duplicate / out of range) or raw
lattice = particles([P(x, y, 0) for x in range(0, 24, 3) for y in range(0, 24, 3)])
seeds["indices_subset"] = header(flags=1, dist=dist_lat(10)) + lattice + bytes([0]) + \
    struct.pack("<I", 12345)
seeds["indices_duplicate"] = header(flags=1, dist=dist_lat(10)) + lattice + bytes([6 << 2]) + \
    struct.pack("<I", 777)
seeds["indices_out_of_range"] = header(flags=1, dist=dist_lat(10)) + lattice + bytes([7 << 2]) + \
    struct.pack("<I", 99)
seeds["indices_raw"] = header(flags=1, dist=dist_lat(10)) + lattice + bytes([192, 5, 3, 1, 4, 59, 2])
seeds["indices_raw_huge"] = header(flags=1, dist=dist_lat(10)) + lattice + bytes([192, 2, 3, 250]) + \
    struct.pack("<I", 0xffffffff)
seeds["indices_and_rest"] = header(flags=3, dist=dist_lat(10)) + lattice + bytes([0, 130, 5, 5, 5] * 20) + \
    bytes([0]) + struct.pack("<I", 4242)
# misuse: NULL context, params, particles, indices (num > 0), num_pairs; empty indices
for k, name in enumerate(["null_context", "null_params", "null_particles", "null_indices",
                          "null_num_pairs", "empty_indices"]):
    seeds["misuse_" + name] = header(flags=8, misuse=k) + particles([P(0, 0, 0), P(4, 0, 0)])
seeds["empty"] = header() + particles([])
# indices with no particles (count 0): raw index list (mode 192) of 2 entries
seeds["indices_no_particles"] = header(flags=1) + particles([]) + bytes([192, 2, 0, 1])
seeds["indices_none_no_particles"] = header(flags=1) + particles([]) + bytes([192, 0])
seeds["one"] = header() + particles([P(1, 2, 3)])
# a few hundred particles on a small lattice: many pairs, brute force check
rng = random.Random(7)
seeds["dense_300"] = header(dist=dist_lat(6), flags=0x30) + particles(
    [P(rng.randrange(-12, 12), rng.randrange(-12, 12), rng.randrange(-3, 3),
       MASS_PIN if rng.random() < 0.1 else MASS_1) for _ in range(300)])
# generated: count u16, seed u32, pattern u8, inject u8 (>= 224: a bad value late)
for pattern in range(5):
    for flags, inject, tag in ((4, 0, ""), (4 | 1 | 2, 0, "_indices_rest"), (4, 224, "_nan"),
                               (4, 225, "_negative_mass"), (4 | 1, 200, "_dup_index"),
                               (4 | 2, 192, "_rest_nan")):
        ctx = (pattern * 5 + inject) % 16
        seeds["generated_%d%s" % (pattern, tag)] = header(flags=flags | ctx << 4, dist=dist_lat(16)) + \
            struct.pack("<HIBB", 3000 + 1000 * pattern, 1000 + pattern, pattern, inject)

# the test limit, the byte after the data of either kind of input: k in 1..255 puts a
# valid call's limit between 1 test and all but one of its tests (every
# context stops at its own point of the walk), an invalid call's at k tests,
# which must not change its error
for base, k in (("dense_300", 128), ("lattice_27", 1), ("indices_and_rest", 200),
                ("nan_position", 1), ("generated_2_negative_mass", 3), ("rest_nan_lane", 9),
                ("generated_1_indices_rest", 40), ("generated_3_dup_index", 1)):
    seeds["limit_%s_%d" % (base, k)] = seeds[base] + bytes([k])
for pattern in range(5):
    for k in (1, 90, 255):
        seeds["limit_generated_%d_%d" % (pattern, k)] = seeds["generated_%d" % pattern] + bytes([k])

# the heap, the byte after the limit: the k-th allocation of a call on a
# fresh context fails (k = bits 0-6), and with bit 7 every one after it
for base, k in (("dense_300", 1), ("dense_300", 3), ("dense_300", 0x82), ("indices_and_rest", 2),
                ("generated_0", 1), ("generated_1_indices_rest", 4), ("generated_2", 0x85),
                ("generated_3", 9), ("generated_4_nan", 1), ("coincident", 0x81)):
    seeds["heap_%s_%d" % (base, k)] = seeds[base] + bytes([0, k])

os.makedirs(OUT, exist_ok=True)
# the seeds are rewritten; inputs the fuzzers found (named by their SHA-1)
# are kept
for name in os.listdir(OUT):
    if not re.fullmatch("[0-9a-f]{40}", name):
        os.remove(os.path.join(OUT, name))
for name, data in sorted(seeds.items()):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
print("%d seeds, %d bytes" % (len(seeds), sum(len(d) for d in seeds.values())))
