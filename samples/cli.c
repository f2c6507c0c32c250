#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int cli_parse_long(const char *text, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int cli_name_index(const char *name, const char *const *names, int count)
{
    int k = 0;
    while (k < count && strcmp(name, names[k]))
        ++k;
    return k;
}
