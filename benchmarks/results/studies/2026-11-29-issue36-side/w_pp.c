/* Row 5, weft: event (MODE e) or channel (MODE c) ping-pong between two
 * tasks pinned to workers 0 and 1 of 2, N round trips; the main thread
 * (never bound) waits on a waitgroup. Prints the seconds the process's
 * round trips took, last on its line.  w_pp MODE N */
#include <string.h>
#include <weft.h>
#include "kit.h"

static weft_event a, b;
static weft_chan *ca, *cb;
static long N, got;
static int chan;
static weft_waitgroup wg;

static void ping(void *x)
{
    (void)x;
    int v = 0;
    for (long i = 0; i < N; i++) {
        if (chan) {
            v = (int)i;
            weft_chan_send(ca, &v);
            weft_chan_recv(cb, &v);
            got += v == (int)i;
        } else {
            weft_event_signal(&a);
            weft_event_wait(&b);
            got++;
        }
    }
    weft_waitgroup_done(&wg);
}

static void pong(void *x)
{
    (void)x;
    int v = 0;
    for (long i = 0; i < N; i++) {
        if (chan) {
            weft_chan_recv(ca, &v);
            weft_chan_send(cb, &v);
        } else {
            weft_event_wait(&a);
            weft_event_signal(&b);
        }
    }
    weft_waitgroup_done(&wg);
}

int main(int argc, char **argv)
{
    chan = argc > 1 && argv[1][0] == 'c';
    N = argc > 2 ? atol(argv[2]) : 5000;
    weft_config c;
    weft_config_init(&c);
    c.workers = 2;
    weft_sched *s;
    if (weft_sched_create(&s, &c) != WEFT_OK)
        kit_wrong("create");
    weft_event_init(&a, false, false);
    weft_event_init(&b, false, false);
    weft_chan_create(&ca, sizeof(int), 0);
    weft_chan_create(&cb, sizeof(int), 0);
    weft_waitgroup_init(&wg, 2);
    weft_spawn_opts o0 = {.pinned = true, .thread = 0}, o1 = {.pinned = true, .thread = 1};
    double t0 = kit_now();
    if (weft_spawn_ex(s, ping, NULL, &o0) != WEFT_OK || weft_spawn_ex(s, pong, NULL, &o1) != WEFT_OK)
        kit_wrong("spawn");
    weft_waitgroup_wait(&wg);
    double sec = (kit_now() - t0) * 1e-9;
    if (got != N)
        kit_wrong("count");
    printf("weft_pp_%c %.4f\n", chan ? 'c' : 'e', sec);
    weft_sched_destroy(s);
    return 0;
}
