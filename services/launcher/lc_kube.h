/* lc_kube.h - the real lc_kube_ops over common/kube (tlr_kube): NodeClaims
 * (karpenter.sh/v1), Nodes, EC2NodeClass status, core/v1 Events.
 *
 * Calls block, and are made from the launcher's loop thread, except:
 *   - the batch verbs (claims_create_n, claims_status_n) fan out on up
 *     to `parallel` threads (tlr_kube is thread-safe), so writing a
 *     burst's hundreds of NodeClaims waits for the slowest write, not
 *     their sum;
 *   - Events are queued and written by background threads, like
 *     client-go's event broadcaster: a burst nominates thousands of pods
 *     and the launch must not wait for their Events.  The queue is bounded
 *     (events_max); past it Events are dropped and counted.  Freeing the
 *     client flushes the queue for up to 2 s (common/kube tlr_kube_writeq).
 */
#ifndef LC_KUBE_H
#define LC_KUBE_H

#include "lc_ops.h"
#include "tlr_kube.h"
#include "tlr_log.h"

typedef struct lc_kube_opts {
    tlr_kube *kc;            /* borrowed; outlives the client */
    tlr_logger *log;         /* borrowed; may be NULL */
    int parallel;            /* batch verbs; 0 = 8 */
    size_t events_max;       /* queued Events; 0 = 50000 */
    int event_threads;       /* 0 = 2 */
} lc_kube_opts;

typedef struct lc_kube lc_kube;

void lc_kube_create(const lc_kube_opts *o, lc_kube **out);   /* owned */
void lc_kube_free(lc_kube *k);                                /* NULL fine */
lc_kube_ops lc_kube_ops_of(lc_kube *k);                       /* arg = k */
size_t lc_kube_events_dropped(lc_kube *k);

#endif
