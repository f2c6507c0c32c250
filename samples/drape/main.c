/* pleat-drape — a cloth that folds onto itself, with and without pleat.
 *
 * Runs a small PBD cloth (cloth.c) in two scenes, once with pleat's
 * self-collision and once without, renders the final frames side by side
 * (render.c, png.c), writes the final mesh as OBJ and prints a summary:
 * interpenetrations, pairs and time per pleat_self_collide call, backend. */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* isatty, mkdir */
#endif

#include "cli.h"
#include "cloth.h"
#include "png.h"
#include "render.h"
#include "portable.h"
#include "scenes.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _WIN32
#include <direct.h>
#include <io.h>
#include <windows.h>
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

/* What one simulation run measured. */
typedef struct run {
    int done;
    int res, frames;
    size_t interpenetrations;
    size_t calls;              /* pleat_self_collide calls */
    double pairs_per_call;     /* their mean */
    double median_ms, mean_ms; /* per call */
    double seconds;            /* all frames: cloth solver and pleat */
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
            "  --out DIR                 folder for the files, made if missing in a folder\n"
            "                            that exists (default .)\n"
            "  --help                    this text\n"
            "\n"
            "Writes DIR/drape-SCENE.png, the final frames side by side (left: with\n"
            "self-collision, right: without), DIR/drape-SCENE.obj, the final mesh (with\n"
            "self-collision when it ran), and with both scenes DIR/drape.png, both in one\n"
            "picture.\n"
            "Exit status: 0 done, 1 a run or a file failed, 2 a bad command line.\n",
            MIN_RES, MAX_RES, cloth_scene_default_frames(CLOTH_SCENE_SPHERE),
            cloth_scene_default_frames(CLOTH_SCENE_PILE));
}

/* The index of value among names (n of them); -1 when it is none of
 * them, after saying so (what: the option's kind, for the message). */
static int pick(const char *what, const char *value, const char *const *names, int n)
{
    int k = cli_name_index(value, names, n);
    if (k < n)
        return k;
    fprintf(stderr, "pleat-drape: unknown %s '%s'\n", what, value);
    return -1;
}

/* Applies the option name with its value (NULL for a flag). Returns 0, 1
 * after --help, 2 when the option or its value is bad. */
static int set_option(options *o, const char *name, const char *value)
{
    static const char *const scenes[] = {"sphere", "pile", "both"};
    static const char *const backends[] = {"auto", "cpu", "cuda"};
    static const pleat_backend backend_of[] = {PLEAT_BACKEND_AUTO, PLEAT_BACKEND_CPU,
                                               PLEAT_BACKEND_CUDA};
    long number;
    int k;
    if (!strcmp(name, "--help") || !strcmp(name, "-h")) {
        usage(stdout);
        return 1;
    } else if (!strcmp(name, "--scene")) {
        if ((k = pick("scene", value, scenes, 3)) < 0)
            return 2;
        o->scene_mask = k + 1; /* bits: sphere 1, pile 2, both 3 */
    } else if (!strcmp(name, "--res")) {
        if (cli_parse_long(value, MIN_RES, MAX_RES, &number)) {
            fprintf(stderr, "pleat-drape: --res must be %d..%d\n", MIN_RES, MAX_RES);
            return 2;
        }
        o->res = (int)number;
    } else if (!strcmp(name, "--frames")) {
        if (cli_parse_long(value, 1, 1000000, &number)) {
            fprintf(stderr, "pleat-drape: --frames must be 1..1000000\n");
            return 2;
        }
        o->frames = (int)number;
    } else if (!strcmp(name, "--backend")) {
        if ((k = pick("backend", value, backends, 3)) < 0)
            return 2;
        o->backend = backend_of[k];
    } else if (!strcmp(name, "--out")) {
        o->out_dir = value;
    } else if (!strcmp(name, "--compare")) {
        o->with_self = o->without_self = 1;
    } else if (!strcmp(name, "--no-self-collision")) {
        o->with_self = 0, o->without_self = 1;
    } else if (!strcmp(name, "--no-compare")) {
        o->with_self = 1, o->without_self = 0;
    } else {
        fprintf(stderr, "pleat-drape: unknown option '%s'\n", name);
        return 2;
    }
    return 0;
}

static int takes_value(const char *name)
{
    return !strcmp(name, "--scene") || !strcmp(name, "--res") || !strcmp(name, "--frames") ||
           !strcmp(name, "--backend") || !strcmp(name, "--out");
}

/* Returns 0 to run, 1 after --help, 2 on a bad command line. Options take
 * their values as --name=value or --name value. */
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
        if (takes_value(name)) {
            value = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
            if (!value || !*value) {
                fprintf(stderr, "pleat-drape: %s needs a value\n", name);
                return 2;
            }
        } else if (eq) {
            fprintf(stderr, "pleat-drape: %s takes no value\n", name);
            return 2;
        }
        int rc = set_option(o, name, value);
        if (rc != 0)
            return rc;
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

/* Simulates one scene with or without self-collision into sheet (which the
 * caller frees with cloth_free) and fills r. 0, or -1 on an error. */
static int simulate(cloth *sheet, run *r, cloth_scene scene, int self_collision, const options *o,
                    pleat_context *ctx, int show_progress)
{
    memset(r, 0, sizeof *r);
    if (cloth_init(sheet, scene, o->res, self_collision) != 0) {
        fprintf(stderr, "pleat-drape: out of memory\n");
        return -1;
    }
    r->res = o->res;
    r->frames = o->frames > 0 ? o->frames : cloth_scene_default_frames(scene);
    char label[64];
    snprintf(label, sizeof label, "%s, self-collision %s", cloth_scene_name(scene),
             self_collision ? "on" : "off");

    double start = portable_now_ms();
    for (int f = 0; f < r->frames; f++) {
        if (show_progress)
            progress(label, f, r->frames);
        pleat_status status = cloth_step(sheet, ctx);
        if (status != PLEAT_OK) {
            fprintf(stderr, "%spleat-drape: pleat_self_collide failed: %s\n",
                    show_progress ? "\n" : "", pleat_status_string(status));
            return -1;
        }
    }
    r->seconds = (portable_now_ms() - start) * 1e-3;
    if (show_progress) {
        progress(label, r->frames, r->frames);
        fprintf(stderr, "\r%*s\r", 80, "");
    }

    r->calls = sheet->num_calls;
    if (r->calls > 0) {
        double sum = 0.0;
        for (size_t k = 0; k < r->calls; k++)
            sum += sheet->call_ms[k];
        r->mean_ms = sum / (double)r->calls;
        r->median_ms = pleat_scene_median(sheet->call_ms, r->calls);
        r->pairs_per_call = (double)sheet->pairs / (double)r->calls;
    }
    pleat_status status = cloth_count_interpenetrations(sheet, ctx, &r->interpenetrations);
    if (status != PLEAT_OK) {
        fprintf(stderr, "pleat-drape: pleat_find_pairs failed: %s\n", pleat_status_string(status));
        return -1;
    }
    r->done = 1;
    return 0;
}

static void scene_view(cloth_scene scene, render_scene *v)
{
    static const float sphere_eye[3] = {2.3f, 2.1f, 2.9f}, sphere_target[3] = {0.0f, 0.25f, 0.0f};
    static const float pile_eye[3] = {0.95f, 1.15f, 1.35f}, pile_target[3] = {0.0f, 0.0f, 0.0f};
    const float *eye = scene == CLOTH_SCENE_SPHERE ? sphere_eye : pile_eye;
    const float *target = scene == CLOTH_SCENE_SPHERE ? sphere_target : pile_target;
    memcpy(v->eye, eye, sizeof v->eye);
    memcpy(v->target, target, sizeof v->target);
    v->fov_deg = 38.0f;
}

/* One picture row: a panel per run (with self-collision on the left),
 * each under a two-line caption. */
static int draw_row(canvas *cv, cloth_scene scene, const cloth sheets[2], const run runs[2])
{
    static const uint8_t paper[3] = {250, 250, 250}, ink[3] = {30, 30, 30};
    static const uint8_t good[3] = {20, 120, 40}, bad[3] = {190, 40, 30};
    int panels = runs[0].done + runs[1].done;
    if (canvas_init(cv, PANEL_W * panels, PANEL_H + HEADER_H, paper) != 0)
        return -1;
    int x0 = 0;
    for (int v = 0; v < 2; v++) {
        if (!runs[v].done)
            continue;
        const cloth *c = &sheets[v];
        render_scene view;
        memset(&view, 0, sizeof view);
        view.particles = c->particles;
        view.res = c->res;
        view.has_sphere = c->has_sphere;
        memcpy(view.sphere_center, c->sphere_center, sizeof view.sphere_center);
        view.sphere_radius = c->sphere_radius;
        scene_view(scene, &view);
        if (render_panel(cv, x0, HEADER_H, PANEL_W, PANEL_H, &view) != 0)
            return -1;
        char line[96];
        snprintf(line, sizeof line, "%s - %s", cloth_scene_name(scene),
                 v == 0 ? "with pleat self-collision" : "without self-collision");
        render_text(cv, x0 + 10, 6, 2, line, ink);
        snprintf(line, sizeof line, "%zu interpenetrations", runs[v].interpenetrations);
        render_text(cv, x0 + 10, 26, 2, line, v == 0 ? good : bad);
        if (x0 > 0) /* a divider between the panels */
            for (int y = 0; y < cv->height; y++)
                memcpy(cv->rgb + 3 * ((size_t)y * (size_t)cv->width + (size_t)x0), paper, 3);
        x0 += PANEL_W;
    }
    return 0;
}

/* 1 when path names a folder (on Windows also with a separator at its end,
 * which the C runtime's _stat refuses). */
static int is_directory(const char *path)
{
#ifdef _WIN32
    DWORD attributes = GetFileAttributesA(path);
    return attributes != INVALID_FILE_ATTRIBUTES && (attributes & FILE_ATTRIBUTE_DIRECTORY);
#else
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
#endif
}

/* Makes the folder dir unless it is one; checked before the runs, so that a
 * file of that name fails at once and not after them. */
static int ensure_directory(const char *dir)
{
    if (make_directory(dir) != 0 && errno != EEXIST) {
        fprintf(stderr, "pleat-drape: cannot create '%s': %s\n", dir, strerror(errno));
        return -1;
    }
    if (!is_directory(dir)) {
        fprintf(stderr, "pleat-drape: '%s' is not a folder\n", dir);
        return -1;
    }
    return 0;
}

/* DIR/drape-SCENE.EXT, or DIR/drape.EXT for scene -1, into path (1024 bytes). */
static int out_path(char path[1024], const char *dir, int scene, const char *ext)
{
    int n = scene < 0 ? snprintf(path, 1024, "%s/drape.%s", dir, ext)
                      : snprintf(path, 1024, "%s/drape-%s.%s", dir,
                                 cloth_scene_name((cloth_scene)scene), ext);
    if (n < 0 || n >= 1024) {
        fprintf(stderr, "pleat-drape: the --out path is too long\n");
        return -1;
    }
    return 0;
}

/* Runs one scene (both variants as asked), writes its PNG and OBJ, and
 * keeps its picture in row for the combined one. 0, or -1 on an error. */
static int run_scene(cloth_scene scene, const options *o, pleat_context *ctx, int show_progress,
                     run runs[2], canvas *row, char files[][1024], int *num_files)
{
    cloth sheets[2];
    memset(sheets, 0, sizeof sheets);
    int rc = 0;
    for (int v = 0; v < 2 && rc == 0; v++) {
        if (v == 0 ? o->with_self : o->without_self)
            rc = simulate(&sheets[v], &runs[v], scene, v == 0, o, ctx, show_progress);
    }
    if (rc == 0) {
        char *png = files[(*num_files)++], *obj = files[(*num_files)++];
        if (out_path(png, o->out_dir, scene, "png") != 0 ||
            out_path(obj, o->out_dir, scene, "obj") != 0)
            rc = -1;
        else if (draw_row(row, scene, sheets, runs) != 0) {
            fprintf(stderr, "pleat-drape: out of memory drawing '%s'\n", png);
            rc = -1;
        } else if (png_write_rgb(png, row->rgb, row->width, row->height) != 0) {
            fprintf(stderr, "pleat-drape: cannot write '%s'\n", png);
            rc = -1;
        } else if (cloth_write_obj(&sheets[runs[0].done ? 0 : 1], obj) != 0) {
            fprintf(stderr, "pleat-drape: cannot write '%s'\n", obj);
            rc = -1;
        }
    }
    cloth_free(&sheets[0]);
    cloth_free(&sheets[1]);
    return rc;
}

/* Both scenes' rows stacked in one picture. */
static int write_combined(const char *path, const canvas rows[2])
{
    static const uint8_t paper[3] = {250, 250, 250};
    canvas cv;
    if (rows[0].width != rows[1].width ||
        canvas_init(&cv, rows[0].width, rows[0].height + rows[1].height, paper) != 0)
        return -1;
    size_t first = (size_t)rows[0].width * (size_t)rows[0].height * 3;
    memcpy(cv.rgb, rows[0].rgb, first);
    memcpy(cv.rgb + first, rows[1].rgb, (size_t)rows[1].width * (size_t)rows[1].height * 3);
    int rc = png_write_rgb(path, cv.rgb, cv.width, cv.height);
    canvas_free(&cv);
    return rc;
}

static void print_summary(run results[2][2], double total_seconds)
{
    static const char *const names[2] = {"sphere", "pile"};
    printf("\n%-7s %-10s %6s  %-14s  %17s  %11s  %10s  %8s  %6s\n", "scene", "cloth", "frames",
           "self-collision", "interpenetrations", "pleat calls", "pairs/call", "ms/call",
           "run s");
    for (int s = 0; s < 2; s++)
        for (int v = 0; v < 2; v++) {
            const run *r = &results[s][v];
            if (!r->done)
                continue;
            char size[32], calls[32] = "-", pairs[32] = "-", ms[32] = "-";
            snprintf(size, sizeof size, "%dx%d", r->res, r->res);
            if (r->calls > 0) {
                snprintf(calls, sizeof calls, "%zu", r->calls);
                snprintf(pairs, sizeof pairs, "%.0f", r->pairs_per_call);
                snprintf(ms, sizeof ms, "%.3f", r->median_ms);
            }
            printf("%-7s %-10s %6d  %-14s  %17zu  %11s  %10s  %8s  %6.1f\n", names[s], size,
                   r->frames, v == 0 ? "on" : "off", r->interpenetrations, calls, pairs, ms,
                   r->seconds);
        }
    printf("\n");
    const char *sep = "ms/call: median wall time of one pleat_self_collide call (mean: ";
    for (int s = 0; s < 2; s++)
        if (results[s][0].done && results[s][0].calls > 0) {
            printf("%s%s %.3f", sep, names[s], results[s][0].mean_ms);
            sep = ", ";
        }
    if (sep[0] == ',')
        printf(")\n");
    printf("pairs/call: pairs a pleat_self_collide call found (pleat_stats), mean of the run\n"
           "run s: wall time of all frames of a run, cloth solver and pleat together\n"
           "interpenetrations: pairs of particles, not mesh neighbours, that end closer than\n"
           "half the collision distance (0.4 x edge), counted with pleat_find_pairs (a\n"
           "particle inside another layer's triangle, away from its corners, is not seen)\n\n");
    for (int s = 0; s < 2; s++) {
        if (!results[s][0].done || !results[s][1].done)
            continue;
        size_t with = results[s][0].interpenetrations, without = results[s][1].interpenetrations;
        printf("%-7s %zu interpenetrations without self-collision, %zu with", names[s], without,
               with);
        double ratio = with > 0 ? (double)without / (double)with : 0.0;
        if (with == 0)
            printf("\n");
        else if (without > with)
            printf(" (%.*fx fewer)\n", ratio < 10.0 ? 1 : 0, ratio);
        else
            printf(" (no fewer)\n");
    }
    printf("total time %.1f s\n", total_seconds);
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

    double start = portable_now_ms();
    pleat_context_desc desc = pleat_default_context_desc();
    desc.backend = o.backend;
    pleat_context *ctx = NULL;
    pleat_status status = pleat_context_create(&desc, &ctx);
    if (status != PLEAT_OK) {
        fprintf(stderr, "pleat-drape: cannot create a pleat context: %s\n",
                pleat_status_string(status));
        return 1;
    }
    printf("pleat-drape: pleat %s, backend: %s\n", pleat_version(), pleat_context_describe(ctx));
    fflush(stdout);

    const int show_progress = stderr_is_terminal();
    run results[2][2];                    /* [sphere, pile][with, without] */
    canvas rows[2];
    char files[5][1024];
    int num_files = 0, failed = 0;
    memset(results, 0, sizeof results);
    memset(rows, 0, sizeof rows);
    for (int s = 0; s < 2 && !failed; s++) {
        if (o.scene_mask >> s & 1)
            failed = run_scene(s == 0 ? CLOTH_SCENE_SPHERE : CLOTH_SCENE_PILE, &o, ctx,
                               show_progress, results[s], &rows[s], files, &num_files) != 0;
    }
    if (!failed && rows[0].rgb && rows[1].rgb) {
        char *png = files[num_files++];
        if (out_path(png, o.out_dir, -1, "png") != 0 || write_combined(png, rows) != 0) {
            fprintf(stderr, "pleat-drape: cannot write '%s'\n", png);
            failed = 1;
        }
    }
    canvas_free(&rows[0]);
    canvas_free(&rows[1]);
    pleat_context_destroy(ctx);
    if (failed)
        return 1;

    print_summary(results, (portable_now_ms() - start) * 1e-3);
    printf("wrote:");
    for (int k = 0; k < num_files; k++)
        printf(" %s", files[k]);
    printf("\n");
    return 0;
}
