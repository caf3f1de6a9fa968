/* par.c - a fork/join of blocking calls (par.h). */
#include "par.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "tlr_cancel.h"

typedef struct job {
    size_t n;
    atomic_size_t next;
    lc_par_fn fn;
    void *arg;
    int64_t deadline;   /* the caller's (tlr_cancel.h), for every worker */
} job;

typedef struct worker {
    job *j;
    int id;
} worker;

static void drain(job *j, int id)
{
    for (;;) {
        size_t i = atomic_fetch_add(&j->next, 1);
        if (i >= j->n)
            return;
        j->fn(j->arg, i, id);
    }
}

static void *thread_main(void *arg)
{
    worker *w = arg;
    tlr_deadline_set(w->j->deadline);
    drain(w->j, w->id);
    return NULL;
}

void lc_par_run(size_t n, int threads, lc_par_fn fn, void *arg)
{
    job j = { .n = n, .fn = fn, .arg = arg, .deadline = tlr_deadline_get() };
    atomic_init(&j.next, 0);
    if (threads > LC_PAR_MAX)
        threads = LC_PAR_MAX;
    if ((size_t)threads > n)
        threads = (int)n;
    pthread_t th[LC_PAR_MAX];
    worker w[LC_PAR_MAX];
    int started = 0;
    for (int t = 1; t < threads; t++) {
        w[t] = (worker){ &j, t };
        if (pthread_create(&th[t], NULL, thread_main, &w[t]) != 0)
            break;   /* fewer threads: the others share the work */
        started = t;
    }
    drain(&j, 0);
    for (int t = 1; t <= started; t++)
        pthread_join(th[t], NULL);
}
