/* png.h — a tiny PNG writer (no external libraries).
 *
 * Writes 8-bit RGB images. The image data is compressed with a small
 * deflate encoder of its own (LZ77 + the fixed Huffman code of RFC 1951);
 * CRC-32 (PNG chunks) and Adler-32 (zlib stream) are computed here too. */
#ifndef DRAPE_PNG_H
#define DRAPE_PNG_H

#include <stddef.h>
#include <stdint.h>

/** Writes rgb (width * height pixels, 3 bytes each, rows top to bottom) to
 *  path as a PNG. Returns 0 on success, -1 on an I/O or memory error. */
int png_write_rgb(const char *path, const uint8_t *rgb, int width, int height);

#endif
