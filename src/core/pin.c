/* This file is private to weft: thread ids, pinned tasks and priorities
 * (placement beyond hints), and bound threads pumping their pinned work.
 * (Placeholder while the scheduler side is built: placement is ignored.)
 */
#include "core.h"

bool weft__thread_valid(weft_sched *s, int id)
{
    if (id < 0)
        return false;
    if ((unsigned)id < s->nworkers)
        return true;
    pthread_mutex_lock(&s->bound_lock);
    bool ok = false;
    for (unsigned i = 0; i < s->nbound; i++)
        ok |= s->bound[i]->index == (unsigned)id;
    pthread_mutex_unlock(&s->bound_lock);
    return ok;
}

int weft__submit_placed(weft_sched *s, weft__worker *w, weft__task *t, int prio, int thread)
{
    (void)prio;
    if (thread >= 0 && !weft__thread_valid(s, thread))
        return WEFT_EINVAL;
    if (w && w->s == s) {
        weft__submit(s, w, t, WEFT_HINT_NONE);
        return WEFT_OK;
    }
    return weft__submit_external(s, t, WEFT_HINT_NONE);
}

int weft_thread_id(void)
{
    weft__worker *w = weft__tls_worker;
    return w ? (int)w->index : -1;
}

int weft_spawn_ex(weft_sched *s, weft_fn fn, void *arg, const weft_spawn_opts *o)
{
    if (!o)
        return weft_spawn(s, fn, arg);
    if (!s || !fn || (unsigned)o->priority > WEFT_PRIORITY_LOW || (unsigned)o->hint > WEFT_HINT_YIELD ||
        (o->pinned && o->thread < 0))
        return WEFT_EINVAL;
    if (!o->pinned)
        return weft_spawn_hint(s, fn, arg, o->hint);
    return WEFT_EINVAL;
}

int weft_run_pinned(uint64_t budget_ns)
{
    (void)budget_ns;
    weft__worker *w = weft__tls_worker;
    return w && w->bound ? 0 : WEFT_ENOTBOUND;
}

int weft_wait_pinned(uint64_t timeout_ns)
{
    (void)timeout_ns;
    weft__worker *w = weft__tls_worker;
    return w && w->bound ? WEFT_ETIMEDOUT : WEFT_ENOTBOUND;
}

int weft_sched_bind_ex(weft_sched *s, unsigned flags)
{
    if (flags & ~WEFT_BIND_NO_HELP)
        return WEFT_EINVAL;
    return weft_sched_bind(s);
}
