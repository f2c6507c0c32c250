/* What the command lines of the samples and pleat-bench share (in the
 * pleat_scenes library). */
#ifndef PLEAT_SAMPLES_CLI_H
#define PLEAT_SAMPLES_CLI_H

/* A whole decimal number (nothing after it) in [lo, hi] into *out: 0, or -1
 * for anything else (junk, a number out of range or past a long), when
 * *out is left as it was. */
int cli_parse_long(const char *text, long lo, long hi, long *out);

/* The index of name in names[0 .. count), or count when it is none of them. */
int cli_name_index(const char *name, const char *const *names, int count);

#endif
