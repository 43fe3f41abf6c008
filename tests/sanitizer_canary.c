/* docs/reliability.md test 27's canary: the suite's "0 sanitizer reports" means
 * something only if the sanitizer is live in that build. This program
 * makes the mistake its build's sanitizer exists to catch; ctest passes
 * when the report appears. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#if defined(WEFT_CANARY_TSAN)
static long counter;   /* plain: the two threads race on it */

static void *bump(void *arg)
{
    (void)arg;
    for (int i = 0; i < 100000; i++)
        counter++;
    return NULL;
}

int main(void)
{
    pthread_t a, b;
    pthread_create(&a, NULL, bump, NULL);
    pthread_create(&b, NULL, bump, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("counter %ld\n", counter);
    return 0;
}
#else
int main(int argc, char **argv)
{
    (void)argv;
    int *p = malloc(4 * sizeof *p);
    if (!p)
        return 1;
    volatile int v = p[4 + argc - 1];   /* one past the end */
    printf("read %d\n", v);
    free(p);
    return 0;
}
#endif
