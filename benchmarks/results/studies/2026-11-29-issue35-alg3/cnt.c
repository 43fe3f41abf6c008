#include <weft.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <math.h>
static size_t calls;
static int cmp(const void *a, const void *b, void *arg){ (void)arg; calls++; uint64_t x=*(const uint64_t*)a,y=*(const uint64_t*)b; return (x>y)-(x<y);}
int main(int argc,char**argv){ size_t n=strtoul(argv[1],0,10); uint64_t *k=malloc(n*8); uint64_t s=88172645463325252ull;
 for(size_t i=0;i<n;i++){ s^=s<<13; s^=s>>7; s^=s<<17; k[i]=s;}
 weft_config c; weft_config_init(&c); c.workers=WEFT_WORKERS_NONE; weft_sched *sc; if(weft_sched_create(&sc,&c)) return 1;
 weft_parallel_sort(sc,k,n,8,cmp,0); for(size_t i=1;i<n;i++) if(k[i-1]>k[i]) {puts("BAD");return 1;}
 printf("n=%zu calls=%zu per n log2 n=%.3f per n=%.2f\n",n,calls,calls/(n*log2(n)),(double)calls/n); weft_sched_destroy(sc); return 0;}
