/* render.c — see render.h. */
#include "render.h"
#include "cloth.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { SS = 2 }; /* supersampling: SS x SS samples per pixel */

typedef struct { float x, y, z; } vec3;

static vec3 v3(float x, float y, float z) { vec3 v = {x, y, z}; return v; }
static vec3 sub(vec3 a, vec3 b) { return v3(a.x - b.x, a.y - b.y, a.z - b.z); }
static vec3 scale(vec3 a, float s) { return v3(a.x * s, a.y * s, a.z * s); }
static float dot(vec3 a, vec3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
static vec3 cross(vec3 a, vec3 b)
{
    return v3(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
}
static vec3 normalize(vec3 a)
{
    float l = sqrtf(dot(a, a));
    return l > 0.0f ? scale(a, 1.0f / l) : a;
}
static vec3 load(const float *p) { return v3(p[0], p[1], p[2]); }

/* Colours, 0..1 */
static const vec3 cloth_front = {0.93f, 0.52f, 0.20f}; /* orange */
static const vec3 cloth_back = {0.25f, 0.50f, 0.85f};  /* blue */
static const vec3 sphere_colour = {0.80f, 0.80f, 0.78f};
static const vec3 ground_light = {0.86f, 0.86f, 0.84f}, ground_dark = {0.74f, 0.74f, 0.72f};
static const vec3 sky_top = {0.95f, 0.96f, 0.98f}, sky_bottom = {0.80f, 0.84f, 0.90f};

typedef struct {
    vec3 eye, right, up, forward;
    float focal, cx, cy; /* in samples */
} camera;

enum { TAG_SKY, TAG_GROUND, TAG_SHADOW, TAG_OBJECT };

/* The supersampled panel being drawn. */
typedef struct {
    int w, h;
    camera cam;
    vec3 light; /* direction towards the light */
    float *colour; /* 3 per sample */
    float *inv_depth; /* 1 / view depth; larger is nearer; 0 = nothing */
    uint8_t *tag;
} target;

static int project(const camera *c, vec3 p, float out[3])
{
    vec3 q = sub(p, c->eye);
    float z = dot(q, c->forward);
    if (z < 1e-3f)
        return 0;
    out[0] = c->cx + c->focal * dot(q, c->right) / z;
    out[1] = c->cy - c->focal * dot(q, c->up) / z;
    out[2] = 1.0f / z;
    return 1;
}

typedef enum { PAINT_OBJECT, PAINT_GROUND, PAINT_SHADOW } paint_mode;

/* Fills the samples whose centres lie inside the triangle. Objects and the
 * ground are depth-tested; shadows darken ground samples once. */
static void fill_triangle(target *t, vec3 a, vec3 b, vec3 c, vec3 colour, paint_mode mode)
{
    float p[3][3];
    if (!project(&t->cam, a, p[0]) || !project(&t->cam, b, p[1]) || !project(&t->cam, c, p[2]))
        return; /* behind the camera: the scenes never need clipping */
    float area =
        (p[1][0] - p[0][0]) * (p[2][1] - p[0][1]) - (p[1][1] - p[0][1]) * (p[2][0] - p[0][0]);
    if (fabsf(area) < 1e-12f)
        return;
    float minx = fminf(p[0][0], fminf(p[1][0], p[2][0])),
          maxx = fmaxf(p[0][0], fmaxf(p[1][0], p[2][0]));
    float miny = fminf(p[0][1], fminf(p[1][1], p[2][1])),
          maxy = fmaxf(p[0][1], fmaxf(p[1][1], p[2][1]));
    int x0 = minx < 0 ? 0 : (int)minx, x1 = maxx >= (float)t->w ? t->w - 1 : (int)maxx;
    int y0 = miny < 0 ? 0 : (int)miny, y1 = maxy >= (float)t->h ? t->h - 1 : (int)maxy;
    float inv_area = 1.0f / area;
    for (int y = y0; y <= y1; y++) {
        float sy = (float)y + 0.5f;
        for (int x = x0; x <= x1; x++) {
            float sx = (float)x + 0.5f;
            /* barycentric weights from the edge functions */
            float w0 =
                ((p[2][0] - p[1][0]) * (sy - p[1][1]) - (p[2][1] - p[1][1]) * (sx - p[1][0])) *
                inv_area;
            float w1 =
                ((p[0][0] - p[2][0]) * (sy - p[2][1]) - (p[0][1] - p[2][1]) * (sx - p[2][0])) *
                inv_area;
            float w2 = 1.0f - w0 - w1;
            if (w0 < 0.0f || w1 < 0.0f || w2 < 0.0f)
                continue;
            size_t s = (size_t)y * (size_t)t->w + (size_t)x;
            if (mode == PAINT_SHADOW) {
                if (t->tag[s] == TAG_GROUND) {
                    t->tag[s] = TAG_SHADOW;
                    for (int k = 0; k < 3; k++)
                        t->colour[3 * s + k] *= 0.62f;
                }
                continue;
            }
            float iz = w0 * p[0][2] + w1 * p[1][2] + w2 * p[2][2];
            if (iz <= t->inv_depth[s])
                continue;
            t->inv_depth[s] = iz;
            t->tag[s] = mode == PAINT_GROUND ? TAG_GROUND : TAG_OBJECT;
            t->colour[3 * s] = colour.x;
            t->colour[3 * s + 1] = colour.y;
            t->colour[3 * s + 2] = colour.z;
        }
    }
}

/* Flat shading. Two-sided: the side facing the camera decides the colour
 * (front or back) and the normal used for lighting. */
static vec3 shade(const target *t, vec3 a, vec3 b, vec3 c, vec3 front, vec3 back)
{
    vec3 n = normalize(cross(sub(b, a), sub(c, a)));
    vec3 centre = scale(v3(a.x + b.x + c.x, a.y + b.y + c.y, a.z + b.z + c.z), 1.0f / 3.0f);
    vec3 view = normalize(sub(t->cam.eye, centre));
    vec3 base = front;
    if (dot(n, view) < 0.0f) {
        n = scale(n, -1.0f);
        base = back;
    }
    float diffuse = fmaxf(0.0f, dot(n, t->light));
    float facing = fmaxf(0.0f, dot(n, view));
    return scale(base, 0.30f + 0.55f * diffuse + 0.20f * facing);
}

static void draw_ground(target *t)
{
    const float tile = 0.5f;
    const int tiles = 16; /* 16 x 16 tiles, 8 m across */
    vec3 up = v3(0.0f, 1.0f, 0.0f);
    for (int j = 0; j < tiles; j++)
        for (int i = 0; i < tiles; i++) {
            float x0 = ((float)i - 0.5f * (float)tiles) * tile,
                  z0 = ((float)j - 0.5f * (float)tiles) * tile;
            vec3 a = v3(x0, 0.0f, z0), b = v3(x0 + tile, 0.0f, z0);
            vec3 c = v3(x0, 0.0f, z0 + tile), d = v3(x0 + tile, 0.0f, z0 + tile);
            vec3 base = (i + j) % 2 ? ground_light : ground_dark;
            vec3 colour = scale(base, 0.55f + 0.45f * dot(up, t->light));
            fill_triangle(t, a, c, b, colour, PAINT_GROUND);
            fill_triangle(t, b, c, d, colour, PAINT_GROUND);
        }
}

/* Sphere as a latitude-longitude mesh, drawn a hair smaller than the
 * collider so that the cloth resting on it stays visible. */
static void sphere_point(const render_scene *s, int lat, int lon, int nlat, int nlon, vec3 *out)
{
    float theta = 3.14159265f * (float)lat / (float)nlat,
          phi = 6.2831853f * (float)lon / (float)nlon;
    float r = 0.99f * s->sphere_radius;
    *out = v3(s->sphere_center[0] + r * sinf(theta) * cosf(phi),
              s->sphere_center[1] + r * cosf(theta),
              s->sphere_center[2] + r * sinf(theta) * sinf(phi));
}

static void draw_sphere(target *t, const render_scene *s, paint_mode mode)
{
    const int nlat = 24, nlon = 48;
    for (int lat = 0; lat < nlat; lat++)
        for (int lon = 0; lon < nlon; lon++) {
            vec3 a, b, c, d;
            sphere_point(s, lat, lon, nlat, nlon, &a);
            sphere_point(s, lat, lon + 1, nlat, nlon, &b);
            sphere_point(s, lat + 1, lon, nlat, nlon, &c);
            sphere_point(s, lat + 1, lon + 1, nlat, nlon, &d);
            if (mode == PAINT_SHADOW) {
                vec3 q[4] = {a, b, c, d};
                for (int k = 0; k < 4; k++) /* onto the ground along the light */
                    q[k] = sub(q[k], scale(t->light, q[k].y / t->light.y));
                fill_triangle(t, q[0], q[2], q[1], sphere_colour, mode);
                fill_triangle(t, q[1], q[2], q[3], sphere_colour, mode);
                continue;
            }
            if (lat > 0)
                fill_triangle(t, a, b, c, shade(t, a, b, c, sphere_colour, sphere_colour), mode);
            if (lat + 1 < nlat)
                fill_triangle(t, b, d, c, shade(t, b, d, c, sphere_colour, sphere_colour), mode);
        }
}

static void draw_cloth(target *t, const render_scene *s, paint_mode mode)
{
    const int res = s->res;
    const int check = res >= 16 ? res / 8 : 2; /* an 8 x 8 checker printed on the cloth */
    uint32_t triangles = 2 * (uint32_t)(res - 1) * (uint32_t)(res - 1);
    for (uint32_t tri = 0; tri < triangles; tri++) {
        uint32_t v[3];
        cloth_triangle(res, tri, v);
        vec3 p[3];
        for (int k = 0; k < 3; k++) {
            p[k] = load(s->particles + 4 * (size_t)v[k]);
            if (mode == PAINT_SHADOW)
                p[k] = sub(p[k], scale(t->light, p[k].y / t->light.y));
        }
        if (mode == PAINT_SHADOW) {
            fill_triangle(t, p[0], p[1], p[2], cloth_front, mode);
            continue;
        }
        int i = (int)(v[0] % (uint32_t)res), j = (int)(v[0] / (uint32_t)res);
        float tone = ((i / check + j / check) % 2) ? 1.0f : 0.86f;
        vec3 colour = shade(t, p[0], p[1], p[2], scale(cloth_front, tone), scale(cloth_back, tone));
        fill_triangle(t, p[0], p[1], p[2], colour, mode);
    }
}

static camera make_camera(const render_scene *s, int w, int h)
{
    camera c;
    c.eye = load(s->eye);
    c.forward = normalize(sub(load(s->target), c.eye));
    c.right = normalize(cross(c.forward, v3(0.0f, 1.0f, 0.0f)));
    c.up = cross(c.right, c.forward);
    c.focal = 0.5f * (float)h / tanf(0.5f * s->fov_deg * 3.14159265f / 180.0f);
    c.cx = 0.5f * (float)w;
    c.cy = 0.5f * (float)h;
    return c;
}

int render_panel(canvas *cv, int x0, int y0, int width, int height, const render_scene *scene)
{
    target t;
    t.w = width * SS;
    t.h = height * SS;
    size_t n = (size_t)t.w * (size_t)t.h;
    t.colour = malloc(3 * n * sizeof(float));
    t.inv_depth = malloc(n * sizeof(float));
    t.tag = malloc(n);
    if (!t.colour || !t.inv_depth || !t.tag) {
        free(t.colour);
        free(t.inv_depth);
        free(t.tag);
        return -1;
    }
    t.cam = make_camera(scene, t.w, t.h);
    t.light = normalize(v3(-0.45f, 1.0f, 0.35f));
    for (int y = 0; y < t.h; y++) {
        float f = (float)y / (float)(t.h - 1);
        vec3 sky = v3(sky_top.x + f * (sky_bottom.x - sky_top.x),
                      sky_top.y + f * (sky_bottom.y - sky_top.y),
                      sky_top.z + f * (sky_bottom.z - sky_top.z));
        for (int x = 0; x < t.w; x++) {
            size_t s = (size_t)y * (size_t)t.w + (size_t)x;
            t.colour[3 * s] = sky.x, t.colour[3 * s + 1] = sky.y, t.colour[3 * s + 2] = sky.z;
        }
    }
    memset(t.inv_depth, 0, n * sizeof(float));
    memset(t.tag, TAG_SKY, n);

    draw_ground(&t);
    draw_cloth(&t, scene, PAINT_SHADOW);
    if (scene->has_sphere)
        draw_sphere(&t, scene, PAINT_SHADOW);
    if (scene->has_sphere)
        draw_sphere(&t, scene, PAINT_OBJECT);
    draw_cloth(&t, scene, PAINT_OBJECT);

    /* average SS x SS samples into each pixel */
    for (int y = 0; y < height && y0 + y < cv->height; y++)
        for (int x = 0; x < width && x0 + x < cv->width; x++) {
            float sum[3] = {0, 0, 0};
            for (int sy = 0; sy < SS; sy++)
                for (int sx = 0; sx < SS; sx++) {
                    size_t s = (size_t)(y * SS + sy) * (size_t)t.w + (size_t)(x * SS + sx);
                    for (int k = 0; k < 3; k++)
                        sum[k] += t.colour[3 * s + k];
                }
            uint8_t *out = cv->rgb + 3 * ((size_t)(y0 + y) * (size_t)cv->width + (size_t)(x0 + x));
            for (int k = 0; k < 3; k++) {
                float v = sum[k] / (SS * SS);
                out[k] = (uint8_t)(v <= 0.0f ? 0 : v >= 1.0f ? 255 : (int)(v * 255.0f + 0.5f));
            }
        }
    free(t.colour);
    free(t.inv_depth);
    free(t.tag);
    return 0;
}

int canvas_init(canvas *cv, int width, int height, const uint8_t colour[3])
{
    cv->width = width;
    cv->height = height;
    cv->rgb = malloc((size_t)width * (size_t)height * 3);
    if (!cv->rgb)
        return -1;
    for (size_t p = 0; p < (size_t)width * (size_t)height; p++)
        memcpy(cv->rgb + 3 * p, colour, 3);
    return 0;
}

void canvas_free(canvas *cv)
{
    free(cv->rgb);
    cv->rgb = NULL;
}

/* ---- text: a 5 x 7 bitmap font -------------------------------------------- */

static const char font_chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.,:()/x=+";
static const uint8_t font_rows[][7] = {
    {0x0e, 0x11, 0x11, 0x1f, 0x11, 0x11, 0x11}, /* A */
    {0x1e, 0x11, 0x11, 0x1e, 0x11, 0x11, 0x1e}, /* B */
    {0x0e, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0e}, /* C */
    {0x1e, 0x11, 0x11, 0x11, 0x11, 0x11, 0x1e}, /* D */
    {0x1f, 0x10, 0x10, 0x1e, 0x10, 0x10, 0x1f}, /* E */
    {0x1f, 0x10, 0x10, 0x1e, 0x10, 0x10, 0x10}, /* F */
    {0x0e, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0f}, /* G */
    {0x11, 0x11, 0x11, 0x1f, 0x11, 0x11, 0x11}, /* H */
    {0x0e, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0e}, /* I */
    {0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0c}, /* J */
    {0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11}, /* K */
    {0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1f}, /* L */
    {0x11, 0x1b, 0x15, 0x15, 0x11, 0x11, 0x11}, /* M */
    {0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11}, /* N */
    {0x0e, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0e}, /* O */
    {0x1e, 0x11, 0x11, 0x1e, 0x10, 0x10, 0x10}, /* P */
    {0x0e, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0d}, /* Q */
    {0x1e, 0x11, 0x11, 0x1e, 0x14, 0x12, 0x11}, /* R */
    {0x0f, 0x10, 0x10, 0x0e, 0x01, 0x01, 0x1e}, /* S */
    {0x1f, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04}, /* T */
    {0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0e}, /* U */
    {0x11, 0x11, 0x11, 0x11, 0x11, 0x0a, 0x04}, /* V */
    {0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0a}, /* W */
    {0x11, 0x11, 0x0a, 0x04, 0x0a, 0x11, 0x11}, /* X */
    {0x11, 0x11, 0x0a, 0x04, 0x04, 0x04, 0x04}, /* Y */
    {0x1f, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1f}, /* Z */
    {0x0e, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0e}, /* 0 */
    {0x04, 0x0c, 0x04, 0x04, 0x04, 0x04, 0x0e}, /* 1 */
    {0x0e, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1f}, /* 2 */
    {0x1f, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0e}, /* 3 */
    {0x02, 0x06, 0x0a, 0x12, 0x1f, 0x02, 0x02}, /* 4 */
    {0x1f, 0x10, 0x1e, 0x01, 0x01, 0x11, 0x0e}, /* 5 */
    {0x06, 0x08, 0x10, 0x1e, 0x11, 0x11, 0x0e}, /* 6 */
    {0x1f, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08}, /* 7 */
    {0x0e, 0x11, 0x11, 0x0e, 0x11, 0x11, 0x0e}, /* 8 */
    {0x0e, 0x11, 0x11, 0x0f, 0x01, 0x02, 0x0c}, /* 9 */
    {0x00, 0x00, 0x00, 0x1f, 0x00, 0x00, 0x00}, /* - */
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x0c, 0x0c}, /* . */
    {0x00, 0x00, 0x00, 0x00, 0x0c, 0x04, 0x08}, /* , */
    {0x00, 0x0c, 0x0c, 0x00, 0x0c, 0x0c, 0x00}, /* : */
    {0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02}, /* ( */
    {0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08}, /* ) */
    {0x00, 0x01, 0x02, 0x04, 0x08, 0x10, 0x00}, /* / */
    {0x00, 0x00, 0x11, 0x0a, 0x04, 0x0a, 0x11}, /* x */
    {0x00, 0x00, 0x1f, 0x00, 0x1f, 0x00, 0x00}, /* = */
    {0x00, 0x04, 0x04, 0x1f, 0x04, 0x04, 0x00}, /* + */
};

static const uint8_t *glyph(char ch)
{
    const char *at = ch ? strchr(font_chars, ch) : NULL;
    if (!at && ch)
        at = strchr(font_chars, toupper((unsigned char)ch));
    return at ? font_rows[at - font_chars] : NULL;
}

int render_text_width(const char *text, int scale)
{
    int n = (int)strlen(text);
    return n > 0 ? (6 * n - 1) * scale : 0;
}

int render_text(canvas *cv, int x, int y, int scale, const char *text, const uint8_t colour[3])
{
    for (const char *c = text; *c; c++, x += 6 * scale) {
        const uint8_t *rows = glyph(*c);
        if (!rows)
            continue; /* space and anything unknown */
        for (int r = 0; r < 7; r++)
            for (int col = 0; col < 5; col++) {
                if (!(rows[r] >> (4 - col) & 1))
                    continue;
                for (int dy = 0; dy < scale; dy++)
                    for (int dx = 0; dx < scale; dx++) {
                        int px = x + col * scale + dx, py = y + r * scale + dy;
                        if (px >= 0 && py >= 0 && px < cv->width && py < cv->height)
                            memcpy(cv->rgb + 3 * ((size_t)py * (size_t)cv->width + (size_t)px),
                                   colour, 3);
                    }
            }
    }
    return render_text_width(text, scale);
}
