/* This file is private to weft: a broken internal invariant ends the
 * process, saying which (panic.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "panic.h"

void weft__panic(const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "weft: %s\n", buf);
    fflush(stderr);
    abort();
}
