/* This file is private to weft's tests: the strict JSON parser of
 * tjson.h. Recursive descent over a byte range; every value is one
 * malloc'd node, arrays and objects grow their member lists by doubling.
 * Allocation failure is a parse error ("out of memory"). */
#include "tjson.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct parser {
    const char *p, *end, *start;
    char *err;
    size_t errcap;
    bool failed;
} parser;

static void fail(parser *ps, const char *fmt, ...)
{
    if (ps->failed)
        return;
    ps->failed = true;
    if (!ps->err || ps->errcap == 0)
        return;
    int n = snprintf(ps->err, ps->errcap, "offset %zu: ", (size_t)(ps->p - ps->start));
    if (n < 0 || (size_t)n >= ps->errcap)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ps->err + n, ps->errcap - (size_t)n, fmt, ap);
    va_end(ap);
}

static void skip_ws(parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static tj_value *node(parser *ps, tj_type type)
{
    tj_value *v = calloc(1, sizeof *v);
    if (!v)
        fail(ps, "out of memory");
    else
        v->type = type;
    return v;
}

static bool literal(parser *ps, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
        return false;
    ps->p += n;
    return true;
}

/* ---- strings -------------------------------------------------------------- */

typedef struct buf {
    char *s;
    size_t n, cap;
} buf;

static bool buf_put(buf *b, const char *src, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 32;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s)
            return false;
        b->s = s;
        b->cap = cap;
    }
    memcpy(b->s + b->n, src, n);
    b->n += n;
    b->s[b->n] = '\0';
    return true;
}

static bool put_utf8(buf *b, uint32_t cp)
{
    char out[4];
    size_t n;
    if (cp < 0x80) {
        out[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        out[0] = (char)(0xF0 | (cp >> 18));
        out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    return buf_put(b, out, n);
}

static bool hex4(parser *ps, uint32_t *out)
{
    if (ps->end - ps->p < 4)
        return false;
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        char c = ps->p[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (uint32_t)(c - 'A' + 10);
        else
            return false;
    }
    ps->p += 4;
    *out = v;
    return true;
}

/* Length of the valid UTF-8 sequence at p (lead byte >= 0x80), 0 if invalid
 * (overlong forms, surrogates and code points above U+10FFFF included). */
static size_t utf8_len(const unsigned char *p, const unsigned char *end)
{
    unsigned char c = p[0];
    size_t n;
    uint32_t cp, min;
    if (c >= 0xC2 && c <= 0xDF) { n = 2; cp = c & 0x1F; min = 0x80; }
    else if (c >= 0xE0 && c <= 0xEF) { n = 3; cp = c & 0x0F; min = 0x800; }
    else if (c >= 0xF0 && c <= 0xF4) { n = 4; cp = c & 0x07; min = 0x10000; }
    else return 0;
    if ((size_t)(end - p) < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

/* At the opening quote; returns the decoded string (malloc'd) or NULL. */
static char *parse_string(parser *ps, size_t *len_out)
{
    buf b = { 0 };
    if (!buf_put(&b, "", 0))
        goto oom;
    ps->p++;   /* the opening quote */
    for (;;) {
        if (ps->p >= ps->end) {
            fail(ps, "unterminated string");
            goto out;
        }
        unsigned char c = (unsigned char)*ps->p;
        if (c == '"') {
            ps->p++;
            break;
        }
        if (c < 0x20) {
            fail(ps, "raw control character 0x%02x in a string", c);
            goto out;
        }
        if (c == '\\') {
            ps->p++;
            if (ps->p >= ps->end) {
                fail(ps, "unterminated escape");
                goto out;
            }
            char e = *ps->p++;
            const char *rep = NULL;
            switch (e) {
            case '"': rep = "\""; break;
            case '\\': rep = "\\"; break;
            case '/': rep = "/"; break;
            case 'b': rep = "\b"; break;
            case 'f': rep = "\f"; break;
            case 'n': rep = "\n"; break;
            case 'r': rep = "\r"; break;
            case 't': rep = "\t"; break;
            case 'u': {
                uint32_t cp;
                if (!hex4(ps, &cp)) {
                    fail(ps, "bad \\u escape");
                    goto out;
                }
                if (cp >= 0xDC00 && cp <= 0xDFFF) {
                    fail(ps, "lone low surrogate");
                    goto out;
                }
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    uint32_t lo;
                    if (ps->end - ps->p < 6 || ps->p[0] != '\\' || ps->p[1] != 'u') {
                        fail(ps, "high surrogate without a low one");
                        goto out;
                    }
                    ps->p += 2;
                    if (!hex4(ps, &lo) || lo < 0xDC00 || lo > 0xDFFF) {
                        fail(ps, "bad low surrogate");
                        goto out;
                    }
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                }
                if (!put_utf8(&b, cp))
                    goto oom;
                continue;
            }
            default:
                ps->p--;
                fail(ps, "unknown escape \\%c", e);
                goto out;
            }
            if (!buf_put(&b, rep, 1))
                goto oom;
            continue;
        }
        size_t n = 1;
        if (c >= 0x80 && (n = utf8_len((const unsigned char *)ps->p, (const unsigned char *)ps->end)) == 0) {
            fail(ps, "invalid UTF-8 in a string");
            goto out;
        }
        if (!buf_put(&b, ps->p, n))
            goto oom;
        ps->p += n;
    }
    *len_out = b.n;
    return b.s;
oom:
    fail(ps, "out of memory");
out:
    free(b.s);
    return NULL;
}

/* ---- numbers -------------------------------------------------------------- */

static bool is_digit(const parser *ps)
{
    return ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9';
}

static tj_value *parse_number(parser *ps)
{
    const char *s = ps->p;
    if (ps->p < ps->end && *ps->p == '-')
        ps->p++;
    if (!is_digit(ps)) {
        fail(ps, "bad number");
        return NULL;
    }
    if (*ps->p == '0') {
        ps->p++;
        if (is_digit(ps)) {
            fail(ps, "leading zero in a number");
            return NULL;
        }
    } else {
        while (is_digit(ps))
            ps->p++;
    }
    if (ps->p < ps->end && *ps->p == '.') {
        ps->p++;
        if (!is_digit(ps)) {
            fail(ps, "no digit after '.'");
            return NULL;
        }
        while (is_digit(ps))
            ps->p++;
    }
    if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
        ps->p++;
        if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-'))
            ps->p++;
        if (!is_digit(ps)) {
            fail(ps, "no digit in an exponent");
            return NULL;
        }
        while (is_digit(ps))
            ps->p++;
    }
    char tmp[128];
    size_t n = (size_t)(ps->p - s);
    if (n >= sizeof tmp) {
        fail(ps, "number longer than %zu characters", sizeof tmp - 1);
        return NULL;
    }
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    tj_value *v = node(ps, TJ_NUM);
    if (v)
        v->num = strtod(tmp, NULL);
    return v;
}

/* ---- values --------------------------------------------------------------- */

static tj_value *parse_value(parser *ps, int depth);

static bool push(parser *ps, tj_value *v, char *key, tj_value *item, size_t *cap)
{
    if (v->len == *cap) {
        size_t ncap = *cap ? *cap * 2 : 8;
        tj_value **items = realloc(v->items, ncap * sizeof *items);
        if (!items)
            goto oom;
        v->items = items;
        if (v->type == TJ_OBJ) {
            char **keys = realloc(v->keys, ncap * sizeof *keys);
            if (!keys)
                goto oom;
            v->keys = keys;
        }
        *cap = ncap;
    }
    v->items[v->len] = item;
    if (v->type == TJ_OBJ)
        v->keys[v->len] = key;
    v->len++;
    return true;
oom:
    fail(ps, "out of memory");
    return false;
}

/* Array or object, at its opening bracket. */
static tj_value *parse_container(parser *ps, int depth, bool obj)
{
    char close = obj ? '}' : ']';
    tj_value *v = node(ps, obj ? TJ_OBJ : TJ_ARR);
    size_t cap = 0;
    if (!v)
        return NULL;
    ps->p++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
        return v;
    }
    for (;;) {
        char *key = NULL;
        skip_ws(ps);
        if (obj) {
            size_t klen;
            if (ps->p >= ps->end || *ps->p != '"') {
                fail(ps, "expected a key");
                goto bad;
            }
            if (!(key = parse_string(ps, &klen)))
                goto bad;
            skip_ws(ps);
            if (ps->p >= ps->end || *ps->p != ':') {
                free(key);
                fail(ps, "expected ':'");
                goto bad;
            }
            ps->p++;
        }
        tj_value *item = parse_value(ps, depth + 1);
        if (!item || !push(ps, v, key, item, &cap)) {
            free(key);
            tj_free(item);
            goto bad;
        }
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == close) {
            ps->p++;
            return v;
        }
        fail(ps, obj ? "expected ',' or '}'" : "expected ',' or ']'");
        goto bad;
    }
bad:
    tj_free(v);
    return NULL;
}

static tj_value *parse_value(parser *ps, int depth)
{
    if (depth > TJ_MAX_DEPTH) {
        fail(ps, "nested deeper than %d", TJ_MAX_DEPTH);
        return NULL;
    }
    skip_ws(ps);
    if (ps->p >= ps->end) {
        fail(ps, "unexpected end of input");
        return NULL;
    }
    tj_value *v;
    switch (*ps->p) {
    case '{':
        return parse_container(ps, depth, true);
    case '[':
        return parse_container(ps, depth, false);
    case '"': {
        size_t len;
        char *s = parse_string(ps, &len);
        if (!s)
            return NULL;
        if (!(v = node(ps, TJ_STR))) {
            free(s);
            return NULL;
        }
        v->str = s;
        v->len = len;
        return v;
    }
    case 't':
    case 'f': {
        bool t = *ps->p == 't';
        if (literal(ps, t ? "true" : "false")) {
            if ((v = node(ps, TJ_BOOL)))
                v->b = t;
            return v;
        }
        break;
    }
    case 'n':
        if (literal(ps, "null"))
            return node(ps, TJ_NULL);
        break;
    default:
        if (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9'))
            return parse_number(ps);
        break;
    }
    fail(ps, "unexpected character '%c'", *ps->p);
    return NULL;
}

tj_value *tj_parse(const char *text, size_t len, char *err, size_t errcap)
{
    parser ps = { .p = text, .end = text + len, .start = text, .err = err, .errcap = errcap };
    if (err && errcap)
        err[0] = '\0';
    if (!text) {
        fail(&ps, "no text");
        return NULL;
    }
    tj_value *v = parse_value(&ps, 0);
    if (!v)
        return NULL;
    skip_ws(&ps);
    if (ps.p != ps.end) {
        fail(&ps, "text after the value");
        tj_free(v);
        return NULL;
    }
    return v;
}

void tj_free(tj_value *v)
{
    if (!v)
        return;
    for (size_t i = 0; (v->type == TJ_ARR || v->type == TJ_OBJ) && i < v->len; i++) {
        tj_free(v->items[i]);
        if (v->type == TJ_OBJ)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->str);
    free(v);
}

/* ---- lookups -------------------------------------------------------------- */

const tj_value *tj_get(const tj_value *o, const char *key)
{
    if (!o || o->type != TJ_OBJ)
        return NULL;
    for (size_t i = 0; i < o->len; i++)
        if (strcmp(o->keys[i], key) == 0)
            return o->items[i];
    return NULL;
}

const tj_value *tj_at(const tj_value *a, size_t i)
{
    return a && a->type == TJ_ARR && i < a->len ? a->items[i] : NULL;
}

const char *tj_str(const tj_value *v)
{
    return v && v->type == TJ_STR ? v->str : NULL;
}

bool tj_num(const tj_value *v, double *out)
{
    if (!v || v->type != TJ_NUM)
        return false;
    *out = v->num;
    return true;
}

const char *tj_get_str(const tj_value *o, const char *key)
{
    return tj_str(tj_get(o, key));
}

bool tj_get_num(const tj_value *o, const char *key, double *out)
{
    return tj_num(tj_get(o, key), out);
}

bool tj_equal(const tj_value *a, const tj_value *b)
{
    if (!a || !b || a->type != b->type)
        return a == b;
    switch (a->type) {
    case TJ_NULL: return true;
    case TJ_BOOL: return a->b == b->b;
    case TJ_NUM: return a->num == b->num;
    case TJ_STR: return a->len == b->len && memcmp(a->str, b->str, a->len) == 0;
    case TJ_ARR:
    case TJ_OBJ:
        if (a->len != b->len)
            return false;
        for (size_t i = 0; i < a->len; i++) {
            if (a->type == TJ_OBJ && strcmp(a->keys[i], b->keys[i]) != 0)
                return false;
            if (!tj_equal(a->items[i], b->items[i]))
                return false;
        }
        return true;
    }
    return false;
}
