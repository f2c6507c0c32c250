/* pleat-drape — a cloth that folds onto itself, with and without pleat.
 *
 * Runs a small PBD cloth (cloth.c) in two scenes, once with pleat's
 * self-collision and once without, renders the final frames side by side
 * (render.c, png.c), writes the final mesh as OBJ and prints a summary:
 * interpenetrations, time per pleat_self_collide call, backend. */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* isatty, mkdir */
#endif

#include "cloth.h"
#include "png.h"
#include "render.h"
#include "timer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _WIN32
#include <direct.h>
#include <io.h>
#define stderr_is_terminal() _isatty(_fileno(stderr))
#define make_directory(path) _mkdir(path)
#else
#include <sys/stat.h>
#include <unistd.h>
#define stderr_is_terminal() isatty(STDERR_FILENO)
#define make_directory(path) mkdir(path, 0777)
#endif

enum { MAX_RES = 1024, MIN_RES = 4, PANEL_W = 440, PANEL_H = 360, HEADER_H = 44 };

typedef struct options {
    int scene_mask;   /* bit 0: sphere, bit 1: pile */
    int res;
    int frames;       /* 0 = each scene's default */
    pleat_backend backend;
    int with_self;    /* run with self-collision */
    int without_self; /* run without */
    const char *out_dir;
} options;

typedef struct run {
    cloth sheet;
    int frames;
    size_t interpenetrations;
    double median_ms, mean_ms; /* per pleat_self_collide call */
    double seconds;            /* whole simulation */
} run;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: pleat-drape [options]\n"
            "\n"
            "Drops a cloth onto a sphere and into a pile of folds, with and without\n"
            "pleat's self-collision, and writes pictures, meshes and a summary.\n"
            "\n"
            "  --scene sphere|pile|both  which scene to run (default both)\n"
            "  --res N                   particles per side, %d..%d (default 128)\n"
            "  --frames N                frames of 1/60 s (default: sphere %d, pile %d)\n"
            "  --backend auto|cpu|cuda   where pleat runs (default auto)\n"
            "  --compare                 run with and without self-collision (default)\n"
            "  --no-self-collision       run only without self-collision\n"
            "  --no-compare              run only with self-collision\n"
            "  --out DIR                 folder for the files, created if missing (default .)\n"
            "  --help                    this text\n"
            "\n"
            "Writes DIR/drape-SCENE.png (left: with self-collision, right: without)\n"
            "and DIR/drape-SCENE.obj (the final mesh, with self-collision).\n",
            MIN_RES, MAX_RES, cloth_scene_default_frames(CLOTH_SCENE_SPHERE),
            cloth_scene_default_frames(CLOTH_SCENE_PILE));
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

/* Returns 0 to run, 1 after --help, 2 on a bad command line. */
static int parse_options(int argc, char **argv, options *o)
{
    o->scene_mask = 3;
    o->res = 128;
    o->frames = 0;
    o->backend = PLEAT_BACKEND_AUTO;
    o->with_self = o->without_self = 1;
    o->out_dir = ".";
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *value = NULL;
        char name[32];
        const char *eq = strchr(arg, '=');
        size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
        if (len >= sizeof name) {
            fprintf(stderr, "pleat-drape: unknown option '%s'\n", arg);
            return 2;
        }
        memcpy(name, arg, len);
        name[len] = '\0';
        int takes_value = !strcmp(name, "--scene") || !strcmp(name, "--res") ||
                          !strcmp(name, "--frames") || !strcmp(name, "--backend") ||
                          !strcmp(name, "--out");
        if (takes_value) {
            value = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
            if (!value || !*value) {
                fprintf(stderr, "pleat-drape: %s needs a value\n", name);
                return 2;
            }
        } else if (eq) {
            fprintf(stderr, "pleat-drape: %s takes no value\n", name);
            return 2;
        }

        if (!strcmp(name, "--help") || !strcmp(name, "-h")) {
            usage(stdout);
            return 1;
        } else if (!strcmp(name, "--scene")) {
            if (!strcmp(value, "sphere"))
                o->scene_mask = 1;
            else if (!strcmp(value, "pile"))
                o->scene_mask = 2;
            else if (!strcmp(value, "both"))
                o->scene_mask = 3;
            else {
                fprintf(stderr, "pleat-drape: unknown scene '%s'\n", value);
                return 2;
            }
        } else if (!strcmp(name, "--res")) {
            if (parse_int(value, MIN_RES, MAX_RES, &o->res)) {
                fprintf(stderr, "pleat-drape: --res must be %d..%d\n", MIN_RES, MAX_RES);
                return 2;
            }
        } else if (!strcmp(name, "--frames")) {
            if (parse_int(value, 1, 1000000, &o->frames)) {
                fprintf(stderr, "pleat-drape: --frames must be 1..1000000\n");
                return 2;
            }
        } else if (!strcmp(name, "--backend")) {
            if (!strcmp(value, "auto"))
                o->backend = PLEAT_BACKEND_AUTO;
            else if (!strcmp(value, "cpu"))
                o->backend = PLEAT_BACKEND_CPU;
            else if (!strcmp(value, "cuda"))
                o->backend = PLEAT_BACKEND_CUDA;
            else {
                fprintf(stderr, "pleat-drape: unknown backend '%s'\n", value);
                return 2;
            }
        } else if (!strcmp(name, "--out")) {
            o->out_dir = value;
        } else if (!strcmp(name, "--compare")) {
            o->with_self = o->without_self = 1;
        } else if (!strcmp(name, "--no-self-collision")) {
            o->with_self = 0, o->without_self = 1;
        } else if (!strcmp(name, "--no-compare")) {
            o->with_self = 1, o->without_self = 0;
        } else {
            fprintf(stderr, "pleat-drape: unknown option '%s'\n", arg);
            return 2;
        }
    }
    return 0;
}

static void progress(const char *label, int frame, int frames)
{
    enum { WIDTH = 32 };
    char bar[WIDTH + 1];
    int filled = frames > 0 ? frame * WIDTH / frames : WIDTH;
    for (int k = 0; k < WIDTH; k++)
        bar[k] = k < filled ? '#' : '.';
    bar[WIDTH] = '\0';
    fprintf(stderr, "\r%-30s [%s] %d/%d", label, bar, frame, frames);
    fflush(stderr);
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Simulates one scene with or without self-collision. 0, or -1 on error. */
static int simulate(run *r, cloth_scene scene, int self_collision, const options *o,
                    pleat_context *ctx, int show_progress)
{
    memset(r, 0, sizeof *r);
    if (cloth_init(&r->sheet, scene, o->res, self_collision) != 0) {
        fprintf(stderr, "pleat-drape: out of memory\n");
        return -1;
    }
    r->frames = o->frames > 0 ? o->frames : cloth_scene_default_frames(scene);
    char label[64];
    snprintf(label, sizeof label, "%s, self-collision %s", cloth_scene_name(scene),
             self_collision ? "on" : "off");

    double start = timer_now_ms();
    for (int f = 0; f < r->frames; f++) {
        if (show_progress)
            progress(label, f, r->frames);
        pleat_status status = cloth_step(&r->sheet, ctx);
        if (status != PLEAT_OK) {
            fprintf(stderr, "%spleat-drape: pleat_self_collide failed: %s\n",
                    show_progress ? "\n" : "", pleat_status_string(status));
            return -1;
        }
    }
    r->seconds = (timer_now_ms() - start) * 1e-3;
    if (show_progress) {
        progress(label, r->frames, r->frames);
        fprintf(stderr, "\r%*s\r", 80, "");
    }

    size_t n = r->sheet.num_calls;
    if (n > 0) {
        double sum = 0.0;
        for (size_t k = 0; k < n; k++)
            sum += r->sheet.call_ms[k];
        r->mean_ms = sum / (double)n;
        qsort(r->sheet.call_ms, n, sizeof(double), compare_double);
        r->median_ms = n % 2 ? r->sheet.call_ms[n / 2]
                             : 0.5 * (r->sheet.call_ms[n / 2 - 1] + r->sheet.call_ms[n / 2]);
    }
    pleat_status status = cloth_count_interpenetrations(&r->sheet, ctx, &r->interpenetrations);
    if (status != PLEAT_OK) {
        fprintf(stderr, "pleat-drape: pleat_find_pairs failed: %s\n", pleat_status_string(status));
        return -1;
    }
    return 0;
}

static void scene_view(cloth_scene scene, render_scene *v)
{
    static const float sphere_eye[3] = {2.0f, 1.9f, 2.5f}, sphere_target[3] = {0.0f, 0.4f, 0.0f};
    static const float pile_eye[3] = {1.25f, 1.45f, 1.75f}, pile_target[3] = {0.0f, 0.05f, 0.0f};
    const float *eye = scene == CLOTH_SCENE_SPHERE ? sphere_eye : pile_eye;
    const float *target = scene == CLOTH_SCENE_SPHERE ? sphere_target : pile_target;
    memcpy(v->eye, eye, sizeof v->eye);
    memcpy(v->target, target, sizeof v->target);
    v->fov_deg = 38.0f;
}

/* One panel per run, side by side, each under a two-line caption. */
static int write_picture(const char *path, cloth_scene scene, run *runs[2], int num_runs)
{
    static const uint8_t paper[3] = {250, 250, 250}, ink[3] = {30, 30, 30};
    static const uint8_t good[3] = {20, 120, 40}, bad[3] = {190, 40, 30};
    canvas cv;
    if (canvas_init(&cv, PANEL_W * num_runs, PANEL_H + HEADER_H, paper) != 0)
        return -1;
    for (int k = 0; k < num_runs; k++) {
        const cloth *c = &runs[k]->sheet;
        render_scene view;
        memset(&view, 0, sizeof view);
        view.particles = c->particles;
        view.res = c->res;
        view.has_sphere = c->has_sphere;
        memcpy(view.sphere_center, c->sphere_center, sizeof view.sphere_center);
        view.sphere_radius = c->sphere_radius;
        scene_view(scene, &view);
        if (render_panel(&cv, k * PANEL_W, HEADER_H, PANEL_W, PANEL_H, &view) != 0) {
            canvas_free(&cv);
            return -1;
        }
        char line[96];
        int x = k * PANEL_W + 10;
        render_text(&cv, x, 6, 2, c->self_collision ? "with pleat self-collision" : "without self-collision",
                    ink);
        snprintf(line, sizeof line, "%zu interpenetrations", runs[k]->interpenetrations);
        render_text(&cv, x, 26, 2, line, c->self_collision ? good : bad);
    }
    for (int y = 0; y < cv.height && num_runs == 2; y++) /* a divider */
        for (int x = PANEL_W - 1; x <= PANEL_W; x++)
            memcpy(cv.rgb + 3 * ((size_t)y * (size_t)cv.width + (size_t)x), paper, 3);
    int rc = png_write_rgb(path, cv.rgb, cv.width, cv.height);
    canvas_free(&cv);
    return rc;
}

static int ensure_directory(const char *dir)
{
    if (make_directory(dir) == 0 || errno == EEXIST)
        return 0;
    fprintf(stderr, "pleat-drape: cannot create '%s': %s\n", dir, strerror(errno));
    return -1;
}

int main(int argc, char **argv)
{
    options o;
    int rc = parse_options(argc, argv, &o);
    if (rc == 1)
        return 0;
    if (rc == 2) {
        usage(stderr);
        return 2;
    }
    if (ensure_directory(o.out_dir) != 0)
        return 1;

    pleat_context_desc desc = pleat_default_context_desc();
    desc.backend = o.backend;
    pleat_context *ctx = NULL;
    pleat_status status = pleat_context_create(&desc, &ctx);
    if (status != PLEAT_OK) {
        fprintf(stderr, "pleat-drape: cannot create a pleat context: %s\n", pleat_status_string(status));
        return 1;
    }
    printf("pleat-drape: pleat %s, backend %s\n", pleat_version(), pleat_context_describe(ctx));
    fflush(stdout);

    const int show_progress = stderr_is_terminal();
    run results[2][2]; /* [scene][0 = with, 1 = without] */
    int have[2][2] = {{0, 0}, {0, 0}};
    int failed = 0;
    char files[4][1024];
    int num_files = 0;
    for (int s = 0; s < 2 && !failed; s++) {
        if (!(o.scene_mask >> s & 1))
            continue;
        cloth_scene scene = s == 0 ? CLOTH_SCENE_SPHERE : CLOTH_SCENE_PILE;
        run *shown[2];
        int num_shown = 0;
        for (int v = 0; v < 2 && !failed; v++) {
            if (!(v == 0 ? o.with_self : o.without_self))
                continue;
            if (simulate(&results[s][v], scene, v == 0, &o, ctx, show_progress) != 0) {
                cloth_free(&results[s][v].sheet);
                failed = 1;
                break;
            }
            have[s][v] = 1;
            shown[num_shown++] = &results[s][v];
        }
        if (failed)
            break;

        char *png = files[num_files++], *obj = files[num_files++];
        snprintf(png, sizeof files[0], "%s/drape-%s.png", o.out_dir, cloth_scene_name(scene));
        snprintf(obj, sizeof files[0], "%s/drape-%s.obj", o.out_dir, cloth_scene_name(scene));
        if (write_picture(png, scene, shown, num_shown) != 0) {
            fprintf(stderr, "pleat-drape: cannot write '%s'\n", png);
            failed = 1;
        } else if (cloth_write_obj(&shown[0]->sheet, obj) != 0) {
            fprintf(stderr, "pleat-drape: cannot write '%s'\n", obj);
            failed = 1;
        }
    }

    if (!failed) {
        printf("\n%-7s %-9s %6s  %-14s %17s  %11s  %10s  %8s\n", "scene", "cloth", "frames",
               "self-collision", "interpenetrations", "pleat calls", "ms/call", "total s");
        for (int s = 0; s < 2; s++)
            for (int v = 0; v < 2; v++) {
                if (!have[s][v])
                    continue;
                const run *r = &results[s][v];
                char cloth_size[32], calls[32] = "-", ms[32] = "-";
                snprintf(cloth_size, sizeof cloth_size, "%dx%d", r->sheet.res, r->sheet.res);
                if (r->sheet.num_calls > 0) {
                    snprintf(calls, sizeof calls, "%zu", r->sheet.num_calls);
                    snprintf(ms, sizeof ms, "%.3f", r->median_ms);
                }
                printf("%-7s %-9s %6d  %-14s %17zu  %11s  %10s  %8.2f\n",
                       cloth_scene_name(s == 0 ? CLOTH_SCENE_SPHERE : CLOTH_SCENE_PILE), cloth_size,
                       r->frames, v == 0 ? "on" : "off", r->interpenetrations, calls, ms, r->seconds);
            }
        printf("\nms/call: median time of one pleat_self_collide call (mean:");
        for (int s = 0; s < 2; s++)
            if (have[s][0])
                printf(" %s %.3f", s == 0 ? "sphere" : "pile", results[s][0].mean_ms);
        printf(").\ninterpenetrations: pairs of particles, not mesh neighbours, closer than half\n"
               "the collision distance (0.4 x edge) at the end, found with pleat_find_pairs.\n");
        for (int s = 0; s < 2; s++) {
            if (!have[s][0] || !have[s][1])
                continue;
            size_t with = results[s][0].interpenetrations, without = results[s][1].interpenetrations;
            printf("%s: %zu interpenetrations without self-collision, %zu with", s == 0 ? "sphere" : "pile",
                   without, with);
            if (with == 0)
                printf(" (none left)\n");
            else
                printf(" (%.0fx fewer)\n", (double)without / (double)with);
        }
        printf("wrote:");
        for (int k = 0; k < num_files; k++)
            printf(" %s", files[k]);
        printf("\n");
    }

    for (int s = 0; s < 2; s++)
        for (int v = 0; v < 2; v++)
            if (have[s][v])
                cloth_free(&results[s][v].sheet);
    pleat_context_destroy(ctx);
    return failed ? 1 : 0;
}
