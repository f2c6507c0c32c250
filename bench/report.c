#include "report.h"

#include <inttypes.h>

/* what samples/portable.c times with */
#ifdef _WIN32
#define CLOCK_NAME "QueryPerformanceCounter"
#else
#define CLOCK_NAME "CLOCK_MONOTONIC"
#endif

static int first_row;

static void json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; ++s) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c < 0x20)
            fprintf(out, "\\u%04x", c);
        else
            fputc(c, out);
    }
    fputc('"', out);
}

/* Column layout of the table: name, width, left aligned. */
static const struct {
    const char *name;
    int width;
    int left;
} columns[] = {
    {"scene", 8, 1},       {"n", 8, 0},       {"backend", 10, 1},  {"isa", 6, 1},
    {"threads", 7, 0},     {"ms/call", 9, 0}, {"ns/particle", 11, 0}, {"pairs", 9, 0},
    {"tests", 10, 0},      {"bounds+keys", 11, 0}, {"sort", 8, 0}, {"sweep", 8, 0},
    {"apply", 8, 0},       {"baseline", 9, 0}, {"speedup", 8, 0},
};
#define NUM_COLUMNS ((int)(sizeof columns / sizeof columns[0]))

static void cell(FILE *out, int col, const char *text)
{
    fprintf(out, columns[col].left ? "%-*s" : "%*s", columns[col].width, text);
    fputs(col + 1 < NUM_COLUMNS ? "  " : "\n", out);
}

void bench_report_begin(FILE *out, int json, const bench_header *h)
{
    first_row = 1;
    if (json) {
        fprintf(out, "{\n  \"tool\": \"pleat-bench\",\n  \"pleat_version\": ");
        json_string(out, h->pleat_version);
        fprintf(out, ",\n  \"machine\": {\"arch\": ");
        json_string(out, h->arch);
        fprintf(out, ", \"online_cores\": %d, \"cpu_model\": ", h->online_cores);
        json_string(out, h->cpu_model);
        fprintf(out, ", \"compiler\": ");
        json_string(out, h->compiler);
        fprintf(out, "},\n  \"timing\": {\"clock\": \"%s\", \"statistic\": %s, "
                     "\"rounds\": %d, \"profile\": %s, \"baseline\": %s, \"seed\": %" PRIu64
                     ", \"max_tests_per_particle\": %" PRIu32 "},\n",
                CLOCK_NAME, h->rounds > 1 ? "\"lowest median of the rounds\"" : "\"median\"",
                h->rounds,
                h->profile ? "true" : "false", h->baseline ? "true" : "false", h->seed,
                h->tests_per_particle);
        fprintf(out, "  \"skipped\": [");
        for (int i = 0; i < h->num_skips; ++i) {
            fprintf(out, "%s\n    {\"backend\": ", i ? "," : "");
            json_string(out, h->skips[i].backend);
            fprintf(out, ", \"isa\": ");
            if (h->skips[i].isa[0])
                json_string(out, h->skips[i].isa);
            else
                fputs("null", out);
            fprintf(out, ", \"reason\": ");
            json_string(out, h->skips[i].reason);
            fputc('}', out);
        }
        fprintf(out, "%s],\n  \"results\": [", h->num_skips ? "\n  " : "");
        fflush(out);
        return;
    }
    fprintf(out, "pleat-bench: pleat %s | %s, %d online cores, %s | %s\n", h->pleat_version,
            h->arch, h->online_cores, h->cpu_model, h->compiler);
    fprintf(out, "ms/call: median over repeats of a monotonic clock around pleat_self_collide "
                 "(start positions re-copied before each call, not timed)\n");
    if (h->tests_per_particle)
        fprintf(out, "test limit: params.max_tests = %" PRIu32 " x n in every call\n",
                h->tests_per_particle);
    if (h->rounds > 1)
        fprintf(out, "rounds: every row (and the baseline) timed %d times, rows taking turns; "
                     "each row shows its round with the lowest median\n",
                h->rounds);
    fprintf(out, "%s\n",
            h->profile ? "bounds+keys, sort, sweep, apply: stage medians in ms from "
                         "pleat_context_timings (profiling on: its clock reads are inside ms/call)"
                       : "profiling off: no stage times");
    if (h->baseline)
        fprintf(out, "baseline: ms per call (median) of a plain 27-cell uniform grid, 1 thread; "
                     "speedup = baseline / ms/call\n");
    for (int i = 0; i < h->num_skips; ++i) {
        if (h->skips[i].isa[0])
            fprintf(out, "skipped: %s isa %s (%s)\n", h->skips[i].backend, h->skips[i].isa,
                    h->skips[i].reason);
        else
            fprintf(out, "skipped: backend %s (%s)\n", h->skips[i].backend, h->skips[i].reason);
    }
    fputc('\n', out);
    for (int c = 0; c < NUM_COLUMNS; ++c)
        cell(out, c, columns[c].name);
    fflush(out);
}

/* Row r as one JSON object of the results array (ns: ns a particle). */
static void json_row(FILE *out, const bench_row *r, double ns, double speedup)
{
    fprintf(out, "%s\n    {\"scene\": ", first_row ? "" : ",");
    first_row = 0;
    json_string(out, r->scene);
    fprintf(out, ", \"n\": %" PRIu32 ", \"distance\": %.9g, \"rest_positions\": %s, "
                 "\"backend\": ",
            r->n, (double)r->distance, r->rest ? "true" : "false");
    json_string(out, r->backend);
    fprintf(out, ", \"isa\": ");
    json_string(out, r->isa);
    fprintf(out, ", \"threads\": %d, \"describe\": ", r->threads);
    json_string(out, r->describe);
    fprintf(out, ",\n     \"repeats\": %d, \"ms_per_call\": %.6f, \"ms_min\": %.6f, "
                 "\"ms_max\": %.6f, \"ns_per_particle\": %.3f, \"pairs\": %" PRIu64
                 ", \"tests\": %" PRIu64 ",\n",
            r->repeats, r->ms, r->ms_min, r->ms_max, ns, r->pairs, r->tests);
    if (r->bounds_keys_ms + r->sort_ms + r->sweep_ms + r->apply_ms > 0.0)
        fprintf(out, "     \"stages_ms\": {\"bounds_keys\": %.6f, \"sort\": %.6f, "
                     "\"sweep\": %.6f, \"apply\": %.6f},\n",
                r->bounds_keys_ms, r->sort_ms, r->sweep_ms, r->apply_ms);
    else /* not profiled, as the table's "-" */
        fprintf(out, "     \"stages_ms\": null,\n");
    if (r->has_baseline) {
        fprintf(out, "     \"baseline\": {\"ms_per_call\": %.6f, \"pairs\": %" PRIu64
                     ", \"tests\": %" PRIu64 ", \"grid\": \"%s\"}, \"speedup\": ",
                r->baseline_ms, r->baseline_pairs, r->baseline_tests,
                r->baseline_hashed ? "hashed" : "dense");
        /* no speedup over a baseline that did other work */
        if (r->pairs_match)
            fprintf(out, "%.4f, \"pairs_match\": true}", speedup);
        else
            fprintf(out, "null, \"pairs_match\": false}");
    } else
        fprintf(out, "     \"baseline\": null, \"speedup\": null, \"pairs_match\": null}");
}

/* Row r as a line of the table's columns. */
static void table_row(FILE *out, const bench_row *r, double ns, double speedup)
{
    char buf[NUM_COLUMNS][32];
    snprintf(buf[0], 32, "%s", r->scene);
    snprintf(buf[1], 32, "%" PRIu32, r->n);
    snprintf(buf[2], 32, "%s", r->backend);
    snprintf(buf[3], 32, "%s", r->isa);
    if (r->threads > 0)
        snprintf(buf[4], 32, "%d", r->threads);
    else
        snprintf(buf[4], 32, "-");
    snprintf(buf[5], 32, "%.3f", r->ms);
    snprintf(buf[6], 32, "%.1f", ns);
    snprintf(buf[7], 32, "%" PRIu64, r->pairs);
    snprintf(buf[8], 32, "%" PRIu64, r->tests);
    double stage[4] = {r->bounds_keys_ms, r->sort_ms, r->sweep_ms, r->apply_ms};
    int profiled = stage[0] + stage[1] + stage[2] + stage[3] > 0.0;
    for (int s = 0; s < 4; ++s) {
        if (profiled)
            snprintf(buf[9 + s], 32, "%.3f", stage[s]);
        else
            snprintf(buf[9 + s], 32, "-");
    }
    if (r->has_baseline) {
        snprintf(buf[13], 32, "%.3f", r->baseline_ms);
        if (r->pairs_match)
            snprintf(buf[14], 32, "%.2fx", speedup);
        else
            snprintf(buf[14], 32, "MISMATCH");
    } else {
        snprintf(buf[13], 32, "-");
        snprintf(buf[14], 32, "-");
    }
    for (int c = 0; c < NUM_COLUMNS; ++c)
        cell(out, c, buf[c]);
}

void bench_report_row(FILE *out, int json, const bench_row *r)
{
    double ns = r->n ? r->ms * 1e6 / r->n : 0.0;
    double speedup = r->has_baseline && r->ms > 0.0 ? r->baseline_ms / r->ms : 0.0;
    if (json)
        json_row(out, r, ns, speedup);
    else
        table_row(out, r, ns, speedup);
    fflush(out);
}

void bench_report_end(FILE *out, int json, int rows, int mismatches)
{
    if (json) {
        fprintf(out, "%s],\n  \"rows\": %d,\n  \"pair_mismatches\": %d\n}\n", rows ? "\n  " : "",
                rows, mismatches);
        fflush(out);
        return;
    }
    if (mismatches)
        fprintf(out, "\n!!! %d row(s) found other pairs than the baseline "
                     "(marked MISMATCH) !!!\n",
                mismatches);
}
