/* This file is private to weft: the brief mutex (base.h), a pthread mutex
 * whose waiters spin a little before they sleep.
 */
#define _GNU_SOURCE   /* PTHREAD_MUTEX_ADAPTIVE_NP */
#include <pthread.h>

#include "base.h"

int weft__mutex_init_brief(pthread_mutex_t *m)
{
#if defined(PTHREAD_MUTEX_ADAPTIVE_NP)
    pthread_mutexattr_t ma;
    if (pthread_mutexattr_init(&ma) == 0) {
        int rc = pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ADAPTIVE_NP);
        if (rc == 0)
            rc = pthread_mutex_init(m, &ma);
        pthread_mutexattr_destroy(&ma);
        if (rc == 0)
            return 0;
    }
#endif
    return pthread_mutex_init(m, NULL);   /* a plain mutex is correct, only slower */
}
