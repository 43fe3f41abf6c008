/* This file is private to weft: how a broken internal invariant ends the
 * process.
 */
#ifndef WEFT_PANIC_H
#define WEFT_PANIC_H

/* Broken internal invariant: prints "weft: <message>" and aborts. The
 * message starts with the function's name: weft__panic("deque_steal: ..."). */
_Noreturn void weft__panic(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* WEFT_PANIC_H */
