/* tools/config_table.c: README.md's table of weft_config defaults, made
 * from WEFT_CONFIG_TABLE (include/weft/config.h), so that the README says
 * what the code does. A test runs it with --check (tests/core).
 *
 *   weft_config_table                  prints the table
 *   weft_config_table --check README   exit 1 if README's table differs
 *   weft_config_table --write README   replaces README's table
 *
 * The table lies between the lines MARK_BEGIN and MARK_END. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft/config.h"

#define MARK_BEGIN "<!-- config-defaults -->\n"
#define MARK_END   "<!-- /config-defaults -->\n"

/* One row per field: what a 0 means, and the reasons of its rules
 * without the leading "field: ", "; " between them. */
struct row {
    const char *field;
    char zero[128];
    char refused[256];
};
static struct row rows[64];
static int nrows;
static char table[8192];

static void add_row(const char *field, const char *zero)
{
    struct row *r = &rows[nrows++];
    r->field = field;
    snprintf(r->zero, sizeof r->zero, "%s", zero);
    r->refused[0] = '\0';
}

/* A rule of the last row (its field). */
static void add_rule(const char *field, const char *refused)
{
    if (!refused)
        return;
    size_t n = strlen(field);
    if (strncmp(refused, field, n) == 0 && strncmp(refused + n, ": ", 2) == 0)
        refused += n + 2;
    struct row *r = &rows[nrows - 1];
    size_t have = strlen(r->refused);
    snprintf(r->refused + have, sizeof r->refused - have, "%s%s", have ? "; " : "", refused);
}

static void make(void)
{
    char num[64];
#define FIELD(f, dflt, min, max, none, zero_means, refused)       \
    snprintf(num, sizeof num, "%llu", (unsigned long long)(dflt)); \
    add_row(#f, (zero_means)[0] ? (const char *)(zero_means) : num); \
    add_rule(#f, refused);
#define RULE(f, broken, refused) add_rule(#f, refused);
#define OTHER(f, zero_means) add_row(#f, zero_means);
    WEFT_CONFIG_TABLE(FIELD, RULE, OTHER)
#undef FIELD
#undef RULE
#undef OTHER
    size_t n = (size_t)snprintf(table, sizeof table, "%s",
                                "| field | 0 (the default) means | refused otherwise |\n"
                                "|---|---|---|\n");
    for (int i = 0; i < nrows; i++)
        n += (size_t)snprintf(table + n, sizeof table - n, "| `%s` | %s | %s |\n", rows[i].field,
                              rows[i].zero, rows[i].refused[0] ? rows[i].refused : "-");
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) {
        buf[n] = '\0';
        *len = (size_t)n;
    }
    return buf;
}

int main(int argc, char **argv)
{
    make();
    if (argc == 1) {
        fputs(table, stdout);
        return 0;
    }
    if (argc != 3 || (strcmp(argv[1], "--check") != 0 && strcmp(argv[1], "--write") != 0)) {
        fprintf(stderr, "usage: %s [--check|--write README.md]\n", argv[0]);
        return 2;
    }
    size_t len = 0;
    char *doc = slurp(argv[2], &len);
    if (!doc) {
        fprintf(stderr, "%s: cannot read %s\n", argv[0], argv[2]);
        return 2;
    }
    char *begin = strstr(doc, MARK_BEGIN);
    char *end = begin ? strstr(begin, MARK_END) : NULL;
    if (!begin || !end) {
        fprintf(stderr, "%s: no %s ... %s in %s\n", argv[0], "<!-- config-defaults -->",
                "<!-- /config-defaults -->", argv[2]);
        return 1;
    }
    begin += strlen(MARK_BEGIN);
    size_t have = (size_t)(end - begin);
    if (strcmp(argv[1], "--check") == 0) {
        if (have == strlen(table) && memcmp(begin, table, have) == 0)
            return 0;
        fprintf(stderr, "%s: the defaults table in %s differs from WEFT_CONFIG_TABLE; "
                "run weft_config_table --write %s. Expected:\n%s", argv[0], argv[2], argv[2], table);
        return 1;
    }
    FILE *f = fopen(argv[2], "wb");
    if (!f || fwrite(doc, 1, (size_t)(begin - doc), f) != (size_t)(begin - doc) ||
        fputs(table, f) < 0 || fputs(end, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "%s: cannot write %s\n", argv[0], argv[2]);
        return 2;
    }
    return 0;
}
