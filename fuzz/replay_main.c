/* A main() for the harnesses without libFuzzer (any compiler): runs every
 * file named on the command line, or every file in a named directory, once
 * through LLVMFuzzerTestOneInput. The corpus replay tests use it, so the
 * seed corpus and the regression inputs run in every build, under the
 * sanitizers of the asan preset too. Each file's path goes to stderr before
 * it runs, so that an abort (a broken invariant, a sanitizer's report)
 * follows the name of the input that caused it. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        return 1;
    }
    size_t cap = 4096, n = 0;
    uint8_t *data = malloc(cap);
    size_t got;
    while (data && (got = fread(data + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            uint8_t *more = realloc(data, cap *= 2);
            if (!more)
                free(data);
            data = more;
        }
    }
    fclose(f);
    if (!data) {
        fprintf(stderr, "out of memory reading %s\n", path);
        return 1;
    }
    fprintf(stderr, "%s\n", path);
    LLVMFuzzerTestOneInput(data, n);
    free(data);
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The paths of dir's entries (path/name, names not starting with '.'),
 * sorted, so every run takes the same order, into *names (n of them; the
 * caller frees each and the array). 0, or 1 after saying why. */
static int list_dir(const char *path, DIR *dir, char ***names, size_t *n)
{
    *names = NULL;
    *n = 0;
    struct dirent *e;
    while ((e = readdir(dir))) {
        if (e->d_name[0] == '.')
            continue;
        size_t len = strlen(path) + strlen(e->d_name) + 2;
        char **more = realloc(*names, (*n + 1) * sizeof **names);
        char *name = more ? malloc(len) : NULL;
        if (more)
            *names = more;
        if (!name) {
            fprintf(stderr, "out of memory listing %s\n", path);
            return 1;
        }
        snprintf(name, len, "%s/%s", path, e->d_name);
        (*names)[(*n)++] = name;
    }
    if (*n > 1) /* qsort's array may not be NULL, even for no items */
        qsort(*names, *n, sizeof **names, cmp_str);
    return 0;
}

static int run_path(const char *path, unsigned *runs)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "cannot stat %s\n", path);
        return 1;
    }
    if (!S_ISDIR(st.st_mode)) {
        ++*runs;
        return run_file(path);
    }
    DIR *dir = opendir(path);
    if (!dir)
        return 1;
    char **names;
    size_t n;
    int rc = list_dir(path, dir, &names, &n);
    closedir(dir);
    for (size_t k = 0; k < n; ++k) {
        rc |= run_path(names[k], runs);
        free(names[k]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    LLVMFuzzerInitialize(&argc, &argv);
    unsigned runs = 0;
    int rc = 0;
    for (int k = 1; k < argc; ++k)
        rc |= run_path(argv[k], &runs);
    printf("%u inputs ran\n", runs);
    return rc;
}
