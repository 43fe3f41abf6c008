/* rw W N: 32-task chain graph, N run+wait cycles from an unbound main thread, W workers.
   prints ns per cycle; also rusage of an idle 2 s wait when N==0 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <pthread.h>
#include <sys/resource.h>
#include <weft.h>
static void nop(void *a) { (*(volatile long *)a)++; }
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static double cpu(void){struct rusage r;getrusage(RUSAGE_SELF,&r);return r.ru_utime.tv_sec+r.ru_stime.tv_sec+(r.ru_utime.tv_usec+r.ru_stime.tv_usec)*1e-6;}
static weft_event ev;
static void sleeper(void *a){(void)a; weft_sleep(2000000000ull); weft_event_signal(&ev);}
int main(int argc,char**argv){
  int W=atoi(argv[1]); long N=atol(argv[2]);
  weft_config c; weft_config_init(&c); c.workers=W;
  weft_sched*s; if(weft_sched_create(&s,&c)) return 1;
  if(N==0){ /* idle: main waits 2 s on an event that a task signals */
    weft_event_init(&ev,true,false);
    weft_spawn(s,sleeper,NULL);
    double c0=cpu(),t0=now(); weft_event_wait(&ev); double c1=cpu(),t1=now();
    printf("idle wait %.2f s, cpu %.4f s = %.3f%% of a core (whole process)\n",t1-t0,c1-c0,100*(c1-c0)/(t1-t0));
    weft_sched_destroy(s); return 0;}
  long cnt=0; weft_graph*g; weft_graph_create(&g);
  weft_task*prev=NULL; for(int i=0;i<32;i++){weft_task*t=weft_graph_add(g,nop,&cnt); if(prev) weft_task_precede(prev,t); prev=t;}
  for(int i=0;i<1000;i++){weft_graph_run(s,g);weft_graph_wait(g);}
  double t0=now(),c0=cpu();
  for(long i=0;i<N;i++){weft_graph_run(s,g);weft_graph_wait(g);}
  double t1=now(),c1=cpu();
  if(cnt!=32*(N+1000)){printf("WRONG\n");return 1;}
  printf("W=%d %.0f ns/cycle cpu %.2f cores\n",W,(t1-t0)/N*1e9,(c1-c0)/(t1-t0));
  weft_graph_destroy(g); weft_sched_destroy(s); return 0;}
