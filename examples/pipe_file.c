/* pipe_file: a pipeline that reads a file in chunks, transforms them and
 * writes them out in order (weft/flow.h).
 *
 * Three stages over `lines` lines (at most that many chunks in flight):
 *   read       serial: the next chunk of the input into this line's buffer;
 *              at the end of the input it stops the pipeline
 *   transform  parallel: rot13 of the chunk's letters, and a count of its
 *              words, in place, on any worker, in any order
 *   write      serial: the chunk to the output, in the order it was read
 * A line's buffer belongs to its token from the read to the write, so no
 * stage takes a lock. The read and the write call the C library's stdio,
 * which blocks its thread: they go through weft_call_blocking, so a
 * worker's fiber waits while a pool thread does the I/O and the worker
 * runs the transform of other chunks meanwhile.
 *
 *   pipe_file IN OUT [lines [chunk]]    defaults: 4 lines, 65536 bytes
 *   pipe_file                           a self-check: 4 MiB of generated
 *                                       text through the pipeline into a
 *                                       temporary file, compared with the
 *                                       same transform done in one loop
 * Prints the chunks, bytes and words; WRONG and exit 1 on a mismatch.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft.h>

#define MAX_LINES 64

typedef struct chunk {
    char *buf;
    size_t len;
    size_t words;
} chunk;

typedef struct job {
    weft_sched *s;
    FILE *in, *out;
    size_t size;                 /* bytes per chunk */
    chunk line[MAX_LINES];
    size_t chunks, bytes, words;
    int io_error;
    char last;                   /* the byte before the chunk being written */
} job;

/* ---- the blocking calls ------------------------------------------------ */

typedef struct io_call {
    job *j;
    chunk *c;
} io_call;

static void do_read(void *arg)
{
    io_call *io = arg;
    io->c->len = fread(io->c->buf, 1, io->j->size, io->j->in);
    if (io->c->len < io->j->size && ferror(io->j->in))
        io->j->io_error = 1;
}

static void do_write(void *arg)
{
    io_call *io = arg;
    if (fwrite(io->c->buf, 1, io->c->len, io->j->out) != io->c->len)
        io->j->io_error = 1;
}

/* ---- the stages ---------------------------------------------------------- */

static void read_stage(weft_pipe *pf, void *arg)
{
    job *j = arg;
    io_call io = { j, &j->line[weft_pipe_line(pf)] };
    if (weft_call_blocking(j->s, do_read, &io) != WEFT_OK)
        j->io_error = 1;
    if (io.c->len == 0 || j->io_error)
        weft_pipe_stop(pf);
}

static int is_space(char ch)
{
    return ch == ' ' || ch == '\n' || ch == '\t' || ch == '\r';
}

static char rot13(char ch)
{
    if (ch >= 'a' && ch <= 'z')
        return (char)('a' + (ch - 'a' + 13) % 26);
    if (ch >= 'A' && ch <= 'Z')
        return (char)('A' + (ch - 'A' + 13) % 26);
    return ch;
}

/* Counts the words that start in the chunk (a word that began in the chunk
 * before is the write stage's to settle: it knows the byte before). */
static void transform_stage(weft_pipe *pf, void *arg)
{
    job *j = arg;
    chunk *c = &j->line[weft_pipe_line(pf)];
    size_t words = 0;
    for (size_t i = 0; i < c->len; i++) {
        if (!is_space(c->buf[i]) && (i == 0 || is_space(c->buf[i - 1])))
            words++;
        c->buf[i] = rot13(c->buf[i]);
    }
    c->words = words;
}

static void write_stage(weft_pipe *pf, void *arg)
{
    job *j = arg;
    chunk *c = &j->line[weft_pipe_line(pf)];
    io_call io = { j, c };
    /* A word that runs across the boundary was counted in both chunks. */
    if (j->chunks && c->len && !is_space(c->buf[0]) && !is_space(j->last))
        c->words--;
    j->words += c->words;
    j->bytes += c->len;
    j->chunks++;
    if (c->len)
        j->last = c->buf[c->len - 1];   /* rot13 keeps spaces spaces */
    if (weft_call_blocking(j->s, do_write, &io) != WEFT_OK)
        j->io_error = 1;
}

/* ---- running it ---------------------------------------------------------- */

static int run(weft_sched *s, FILE *in, FILE *out, size_t lines, size_t size, job *j)
{
    memset(j, 0, sizeof *j);
    j->s = s;
    j->in = in;
    j->out = out;
    j->size = size;
    for (size_t l = 0; l < lines; l++)
        if (!(j->line[l].buf = malloc(size)))
            return WEFT_ENOMEM;
    weft_pipe_stage stages[3] = {
        { WEFT_PIPE_SERIAL, read_stage, j },
        { WEFT_PIPE_PARALLEL, transform_stage, j },
        { WEFT_PIPE_SERIAL, write_stage, j },
    };
    weft_pipeline *pl;
    int rc = weft_pipeline_create(lines, stages, 3, &pl);
    if (rc == WEFT_OK) {
        rc = weft_pipeline_run(s, pl);
        weft_pipeline_destroy(pl);
    }
    for (size_t l = 0; l < lines; l++)
        free(j->line[l].buf);
    return rc;
}

/* The self-check's input: words of 1 to 12 letters, spaces and newlines. */
static size_t make_text(char *p, size_t n)
{
    uint64_t x = 0x9e3779b97f4a7c15ull;
    size_t words = 0, i = 0;
    while (i < n) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t len = 1 + x % 12;
        for (size_t k = 0; k < len && i < n; k++)
            p[i++] = (char)((x >> (8 + k)) & 1 ? 'a' + (x >> (16 + k)) % 26 : 'A' + (x >> (24 + k)) % 26);
        words++;
        if (i < n)
            p[i++] = x % 9 == 0 ? '\n' : ' ';
    }
    return words;
}

int main(int argc, char **argv)
{
    size_t lines = argc > 3 ? strtoul(argv[3], NULL, 10) : 4;
    size_t size = argc > 4 ? strtoul(argv[4], NULL, 10) : 65536;
    if (argc == 2 || argc > 5 || lines == 0 || lines > MAX_LINES || size == 0) {
        fprintf(stderr, "usage: pipe_file [IN OUT [lines (1-%d) [chunk bytes]]]\n", MAX_LINES);
        return 2;
    }
    weft_sched *s;
    if (weft_sched_create(&s, NULL) != WEFT_OK)
        return 1;
    static job j;
    int wrong = 0;
    if (argc >= 3) {
        FILE *in = fopen(argv[1], "rb"), *out = fopen(argv[2], "wb");
        if (!in || !out) {
            fprintf(stderr, "pipe_file: cannot open %s\n", !in ? argv[1] : argv[2]);
            return 1;
        }
        int rc = run(s, in, out, lines, size, &j);
        wrong = rc != WEFT_OK || j.io_error;
        fclose(in);
        if (fclose(out))
            wrong = 1;
    } else {
        /* The self-check, with a chunk size that cuts words in two. */
        size_t n = (size_t)4 << 20;
        char *text = malloc(n), *back = malloc(n);
        FILE *in = tmpfile(), *out = tmpfile();
        if (!text || !back || !in || !out)
            return 1;
        size_t words = make_text(text, n);
        fwrite(text, 1, n, in);
        rewind(in);
        size = 65521;
        int rc = run(s, in, out, lines, size, &j);
        rewind(out);
        size_t got = fread(back, 1, n + 1, out);
        for (size_t i = 0; i < n; i++)
            text[i] = rot13(text[i]);
        wrong = rc != WEFT_OK || j.io_error || got != n || memcmp(text, back, n) != 0 || j.words != words;
        if (wrong)
            printf("WRONG: rc %d, %zu of %zu bytes back, %zu words of %zu\n", rc, got, n, j.words, words);
        fclose(in);
        fclose(out);
        free(text);
        free(back);
    }
    printf("pipe_file: %zu chunks of up to %zu bytes on %zu lines: %zu bytes, %zu words%s\n",
           j.chunks, size, lines, j.bytes, j.words, wrong ? " (WRONG)" : "");
    weft_sched_destroy(s);
    return wrong;
}
