/* This file is private to weft: what goes wrong, said: the error table's
 * strings (weft.h's WEFT_ERRNO_MAP gives each code its name and message),
 * the misuse report of a primitive used outside its life, and the panic
 * that ends the process on a broken internal invariant (panic.h).
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "errors.h"
#include "panic.h"
#include "weft.h"

const char *weft_strerror(int err)
{
    switch (err) {
    case WEFT_OK: return "success";
#define WEFT__ERR_MSG(name, value, msg) case WEFT_##name: return msg;
    WEFT_ERRNO_MAP(WEFT__ERR_MSG)
#undef WEFT__ERR_MSG
    default: return "unknown error";
    }
}

const char *weft_err_name(int err)
{
    switch (err) {
    case WEFT_OK: return "OK";
#define WEFT__ERR_NAME(name, value, msg) case WEFT_##name: return #name;
    WEFT_ERRNO_MAP(WEFT__ERR_NAME)
#undef WEFT__ERR_NAME
    default: return "UNKNOWN";
    }
}

void weft__misuse(const char *call, const char *kind, const void *obj, uint32_t tag)
{
    weft__panic("%s: %s %p %s", call, kind, obj,
                tag == WEFT__TAG_DEAD ? "used after it was destroyed"
                                      : "used before it was initialized (or overwritten)");
}

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
