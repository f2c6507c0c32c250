/* render.h — a small software rasteriser for the drape demo: the cloth as
 * flat-shaded triangles with two-sided colours (orange front, blue back, so
 * stacked layers can be told apart), a sphere, a checkered ground with the
 * shadows cast on it, a z-buffer, 2x2 supersampling and a bitmap font. */
#ifndef DRAPE_RENDER_H
#define DRAPE_RENDER_H

#include <stdint.h>

/* What one panel shows. */
typedef struct render_scene {
    const float *particles; /* res * res x {x, y, z, w}; triangles from cloth_triangle() */
    int res;
    int has_sphere;
    float sphere_center[3];
    float sphere_radius;
    float eye[3];    /* camera position */
    float target[3]; /* point the camera looks at */
    float fov_deg;   /* vertical field of view */
} render_scene;

/* An 8-bit RGB picture, rows top to bottom. */
typedef struct canvas {
    int width, height;
    uint8_t *rgb;
} canvas;

/* Allocates a canvas filled with colour; 0, or -1 when memory runs out. */
int canvas_init(canvas *cv, int width, int height, const uint8_t colour[3]);
void canvas_free(canvas *cv);

/* Renders scene into the rectangle (x0, y0, width, height) of cv.
 * 0, or -1 when memory runs out. */
int render_panel(canvas *cv, int x0, int y0, int width, int height, const render_scene *scene);

/* Draws text (A-Z, 0-9, space, - . , : ( ) / x = +; lower case is drawn as
 * upper case) with its top-left corner at (x, y), each font pixel a
 * scale x scale square. Returns the width drawn, in pixels. */
int render_text(canvas *cv, int x, int y, int scale, const char *text, const uint8_t colour[3]);

/* Width in pixels that render_text would draw. */
int render_text_width(const char *text, int scale);

#endif
