/* png.c — a tiny PNG writer: row filters, deflate (LZ77 + fixed Huffman),
 * zlib framing with Adler-32, PNG chunks with CRC-32. See png.h. */
#include "png.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- checksums ---------------------------------------------------------- */

static uint32_t crc32_update(uint32_t crc, const uint8_t *p, size_t n)
{
    static uint32_t table[256];
    static int ready = 0;
    if (!ready) {
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++)
                c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            table[i] = c;
        }
        ready = 1;
    }
    crc = ~crc;
    for (size_t i = 0; i < n; i++)
        crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
    return ~crc;
}

static uint32_t adler32(const uint8_t *p, size_t n)
{
    uint32_t a = 1, b = 0;
    while (n > 0) {
        size_t block = n < 5552 ? n : 5552; /* no overflow before the modulo */
        n -= block;
        while (block--) {
            a += *p++;
            b += a;
        }
        a %= 65521;
        b %= 65521;
    }
    return (b << 16) | a;
}

/* ---- a growable byte buffer with an LSB-first bit writer ---------------- */

typedef struct {
    uint8_t *data;
    size_t size, cap;
    uint32_t bits; /* pending bits, LSB first */
    int nbits;
    int failed;
} buffer;

static void put_byte(buffer *b, uint8_t v)
{
    if (b->size == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 4096;
        uint8_t *d = realloc(b->data, cap);
        if (!d) {
            b->failed = 1;
            return;
        }
        b->data = d;
        b->cap = cap;
    }
    b->data[b->size++] = v;
}

static void put_be32(buffer *b, uint32_t v)
{
    for (int s = 24; s >= 0; s -= 8)
        put_byte(b, (uint8_t)(v >> s));
}

static void put_bits(buffer *b, uint32_t value, int count)
{
    b->bits |= value << b->nbits;
    b->nbits += count;
    while (b->nbits >= 8) {
        put_byte(b, (uint8_t)b->bits);
        b->bits >>= 8;
        b->nbits -= 8;
    }
}

static void flush_bits(buffer *b)
{
    if (b->nbits > 0)
        put_byte(b, (uint8_t)b->bits);
    b->bits = 0;
    b->nbits = 0;
}

/* Huffman codes are sent most significant bit first. */
static void put_code(buffer *b, uint32_t code, int length)
{
    uint32_t reversed = 0;
    for (int i = 0; i < length; i++)
        reversed |= ((code >> i) & 1u) << (length - 1 - i);
    put_bits(b, reversed, length);
}

/* ---- deflate with the fixed Huffman code (RFC 1951, 3.2.6) -------------- */

static void put_literal(buffer *b, int symbol) /* 0..287 */
{
    if (symbol < 144)
        put_code(b, 0x30u + (uint32_t)symbol, 8);
    else if (symbol < 256)
        put_code(b, 0x190u + (uint32_t)(symbol - 144), 9);
    else if (symbol < 280)
        put_code(b, (uint32_t)(symbol - 256), 7);
    else
        put_code(b, 0xC0u + (uint32_t)(symbol - 280), 8);
}

static const uint16_t length_base[29] = {3,  4,  5,  6,  7,  8,  9,  10, 11,  13,
                                         15, 17, 19, 23, 27, 31, 35, 43, 51,  59,
                                         67, 83, 99, 115, 131, 163, 195, 227, 258};
static const uint8_t length_extra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                                         2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
static const uint16_t dist_base[30] = {1,    2,    3,    4,    5,    7,     9,     13,
                                       17,   25,   33,   49,   65,   97,    129,   193,
                                       257,  385,  513,  769,  1025, 1537,  2049,  3073,
                                       4097, 6145, 8193, 12289, 16385, 24577};
static const uint8_t dist_extra[30] = {0, 0, 0, 0, 1, 1, 2, 2, 3,  3,  4,  4,  5,  5,  6,
                                       6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};

static void put_match(buffer *b, int length, int distance)
{
    int l = 28;
    while (length_base[l] > length)
        l--;
    put_literal(b, 257 + l);
    put_bits(b, (uint32_t)(length - length_base[l]), length_extra[l]);
    int d = 29;
    while (dist_base[d] > distance)
        d--;
    put_code(b, (uint32_t)d, 5);
    put_bits(b, (uint32_t)(distance - dist_base[d]), dist_extra[d]);
}

enum { WINDOW = 32768, MIN_MATCH = 3, MAX_MATCH = 258, HASH_BITS = 15, MAX_CHAIN = 48 };

static uint32_t hash3(const uint8_t *p)
{
    uint32_t v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16;
    return (v * 2654435761u) >> (32 - HASH_BITS);
}

/* One final block, fixed Huffman, greedy LZ77 with hash chains. */
static int deflate_fixed(buffer *out, const uint8_t *in, size_t n)
{
    int32_t *head = malloc(sizeof(int32_t) << HASH_BITS);
    int32_t *prev = malloc(sizeof(int32_t) * WINDOW);
    if (!head || !prev) {
        free(head);
        free(prev);
        return -1;
    }
    for (size_t i = 0; i < ((size_t)1 << HASH_BITS); i++)
        head[i] = -1;

    put_bits(out, 1, 1); /* BFINAL */
    put_bits(out, 1, 2); /* BTYPE = 01, fixed Huffman */
    size_t i = 0;
    while (i < n) {
        int best_len = 0, best_dist = 0;
        if (i + MIN_MATCH <= n) {
            uint32_t h = hash3(in + i);
            size_t limit = n - i < MAX_MATCH ? n - i : MAX_MATCH;
            int chain = MAX_CHAIN;
            for (int32_t j = head[h]; j >= 0 && i - (size_t)j <= WINDOW - 1 && chain-- > 0;
                 j = prev[j % WINDOW]) {
                size_t len = 0;
                while (len < limit && in[(size_t)j + len] == in[i + len])
                    len++;
                if ((int)len > best_len) {
                    best_len = (int)len;
                    best_dist = (int)(i - (size_t)j);
                    if (len == limit)
                        break;
                }
            }
        }
        size_t advance = best_len >= MIN_MATCH ? (size_t)best_len : 1;
        if (best_len >= MIN_MATCH)
            put_match(out, best_len, best_dist);
        else
            put_literal(out, in[i]);
        for (size_t k = 0; k < advance; k++, i++) { /* insert every position */
            if (i + MIN_MATCH <= n) {
                uint32_t h = hash3(in + i);
                prev[i % WINDOW] = head[h];
                head[h] = (int32_t)i;
            }
        }
    }
    put_literal(out, 256); /* end of block */
    flush_bits(out);
    free(head);
    free(prev);
    return out->failed ? -1 : 0;
}

/* ---- row filters (PNG spec, 9) ------------------------------------------ */

static uint8_t paeth(int a, int b, int c)
{
    int p = a + b - c;
    int pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
    if (pa <= pb && pa <= pc)
        return (uint8_t)a;
    return (uint8_t)(pb <= pc ? b : c);
}

/* Filters one row with each of the 5 filters (into scratch, 5 * (len + 1)
 * bytes) and keeps the one with the smallest sum of |signed bytes|, the
 * usual heuristic. */
static void filter_row(uint8_t *dst, const uint8_t *row, const uint8_t *above, size_t len,
                       uint8_t *scratch)
{
    long best_cost = -1;
    int best = 0;
    for (int f = 0; f < 5; f++) {
        uint8_t *t = scratch + (size_t)f * (len + 1);
        long cost = 0;
        t[0] = (uint8_t)f;
        for (size_t x = 0; x < len; x++) {
            int a = x >= 3 ? row[x - 3] : 0;
            int b = above ? above[x] : 0;
            int c = (x >= 3 && above) ? above[x - 3] : 0;
            int pred = f == 0 ? 0 : f == 1 ? a : f == 2 ? b : f == 3 ? (a + b) / 2 : paeth(a, b, c);
            uint8_t v = (uint8_t)(row[x] - pred);
            t[1 + x] = v;
            cost += v < 128 ? v : 256 - v;
        }
        if (best_cost < 0 || cost < best_cost) {
            best_cost = cost;
            best = f;
        }
    }
    memcpy(dst, scratch + (size_t)best * (len + 1), len + 1);
}

/* ---- PNG file ----------------------------------------------------------- */

static void put_chunk(buffer *file, const char type[4], const uint8_t *data, size_t n)
{
    put_be32(file, (uint32_t)n);
    size_t start = file->size;
    for (int i = 0; i < 4; i++)
        put_byte(file, (uint8_t)type[i]);
    for (size_t i = 0; i < n; i++)
        put_byte(file, data[i]);
    if (file->failed)
        return;
    put_be32(file, crc32_update(0, file->data + start, n + 4));
}

int png_write_rgb(const char *path, const uint8_t *rgb, int width, int height)
{
    if (width <= 0 || height <= 0)
        return -1;
    size_t stride = (size_t)width * 3;
    size_t raw_size = (stride + 1) * (size_t)height;
    uint8_t *raw = malloc(raw_size);
    uint8_t *scratch = malloc(5 * (stride + 1));
    if (!raw || !scratch) {
        free(raw);
        free(scratch);
        return -1;
    }
    for (int y = 0; y < height; y++)
        filter_row(raw + (size_t)y * (stride + 1), rgb + (size_t)y * stride,
                   y > 0 ? rgb + (size_t)(y - 1) * stride : NULL, stride, scratch);
    free(scratch);

    buffer z = {0};
    put_byte(&z, 0x78); /* zlib: deflate, 32K window */
    put_byte(&z, 0x01); /* no dictionary, check bits */
    int rc = deflate_fixed(&z, raw, raw_size);
    put_be32(&z, adler32(raw, raw_size));
    free(raw);

    buffer file = {0};
    static const uint8_t signature[8] = {137, 80, 78, 71, 13, 10, 26, 10};
    for (int i = 0; i < 8; i++)
        put_byte(&file, signature[i]);
    uint8_t ihdr[13] = {0};
    for (int i = 0; i < 4; i++) {
        ihdr[i] = (uint8_t)((uint32_t)width >> (24 - 8 * i));
        ihdr[4 + i] = (uint8_t)((uint32_t)height >> (24 - 8 * i));
    }
    ihdr[8] = 8;  /* bit depth */
    ihdr[9] = 2;  /* colour type: RGB */
    put_chunk(&file, "IHDR", ihdr, sizeof ihdr);
    if (rc == 0 && !z.failed)
        put_chunk(&file, "IDAT", z.data, z.size);
    put_chunk(&file, "IEND", NULL, 0);
    free(z.data);
    if (rc != 0 || z.failed || file.failed) {
        free(file.data);
        return -1;
    }

    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(file.data, 1, file.size, f) == file.size;
    if (f && fclose(f) != 0)
        ok = 0;
    free(file.data);
    return ok ? 0 : -1;
}
