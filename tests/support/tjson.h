/* This file is private to weft's tests: a small strict JSON parser (RFC
 * 8259) that makes a tree, for the tests that read weft's trace output.
 *
 * Strict: one value and nothing but whitespace after it; no trailing
 * commas, comments, single quotes, NaN or Infinity; numbers as the RFC
 * spells them (no leading zeros, no leading '+', digits after a '.');
 * strings must be valid UTF-8 with no raw control characters, escapes
 * are the RFC's eight plus \uXXXX (surrogates must pair). Depth is capped
 * at TJ_MAX_DEPTH. Strings are decoded to UTF-8 and NUL-terminated (an
 * escaped \u0000 is kept; len says where the string ends).
 *
 * Not thread-safe per tree; trees do not share state. */
#ifndef WEFT_TEST_TJSON_H
#define WEFT_TEST_TJSON_H

#include <stdbool.h>
#include <stddef.h>

#define TJ_MAX_DEPTH 256

typedef enum tj_type {
    TJ_NULL = 0,
    TJ_BOOL,
    TJ_NUM,
    TJ_STR,
    TJ_ARR,
    TJ_OBJ
} tj_type;

typedef struct tj_value tj_value;
struct tj_value {
    tj_type type;
    bool b;                 /* TJ_BOOL */
    double num;             /* TJ_NUM */
    char *str;              /* TJ_STR: decoded, NUL-terminated */
    size_t len;             /* TJ_STR: bytes in str; TJ_ARR/TJ_OBJ: members */
    tj_value **items;       /* TJ_ARR, TJ_OBJ: the values, in order */
    char **keys;            /* TJ_OBJ: the keys, decoded, parallel to items */
};

/* Parses text[0, len). NULL on error, with a message naming the byte
 * offset in err (err may be NULL). The tree is freed with tj_free. */
tj_value *tj_parse(const char *text, size_t len, char *err, size_t errcap);
void tj_free(tj_value *v);

/* The member `key` of object o (the first if repeated); NULL if o is not
 * an object or has no such member. */
const tj_value *tj_get(const tj_value *o, const char *key);
/* Element i of array a; NULL if a is not an array or i is out of range. */
const tj_value *tj_at(const tj_value *a, size_t i);
/* The string of v, or NULL if v is NULL or not a string. */
const char *tj_str(const tj_value *v);
/* *out = v's number; false if v is NULL or not a number. */
bool tj_num(const tj_value *v, double *out);
/* Shorthands: tj_str(tj_get(o, key)), tj_num(tj_get(o, key), out). */
const char *tj_get_str(const tj_value *o, const char *key);
bool tj_get_num(const tj_value *o, const char *key, double *out);
/* true if a and b are equal JSON values (numbers compared as doubles,
 * objects member by member in order). */
bool tj_equal(const tj_value *a, const tj_value *b);

#endif /* WEFT_TEST_TJSON_H */
