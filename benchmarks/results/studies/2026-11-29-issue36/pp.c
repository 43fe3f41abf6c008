/* pp MODE N: event (MODE e) or channel (MODE c) ping-pong between two tasks on 2 workers, N round trips; prints seconds */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <weft.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static weft_event a, b; static weft_chan *ca, *cb; static long N; static int chan; static weft_waitgroup wg;
static void ping(void *x){(void)x; int v=0; for(long i=0;i<N;i++){ if(chan){weft_chan_send(ca,&v); weft_chan_recv(cb,&v);} else {weft_event_signal(&a); weft_event_wait(&b);} } weft_waitgroup_done(&wg);}
static void pong(void *x){(void)x; int v=0; for(long i=0;i<N;i++){ if(chan){weft_chan_recv(ca,&v); weft_chan_send(cb,&v);} else {weft_event_wait(&a); weft_event_signal(&b);} } weft_waitgroup_done(&wg);}
int main(int argc,char**argv){
  chan = argv[1][0]=='c'; N=atol(argv[2]);
  weft_config c; weft_config_init(&c); c.workers=2; weft_sched*s; if(weft_sched_create(&s,&c)) return 1;
  weft_event_init(&a,false,false); weft_event_init(&b,false,false);
  weft_chan_create(&ca,sizeof(int),0); weft_chan_create(&cb,sizeof(int),0);
  weft_waitgroup_init(&wg,2);
  weft_spawn_opts o0={.pinned=true,.thread=0}, o1={.pinned=true,.thread=1};
  double t0=now();
  weft_spawn_ex(s,ping,NULL,&o0); weft_spawn_ex(s,pong,NULL,&o1);
  weft_waitgroup_wait(&wg);
  printf("%.4f\n", now()-t0);
  weft_sched_destroy(s); return 0;}
