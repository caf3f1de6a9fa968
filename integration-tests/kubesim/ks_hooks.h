/* ks_hooks.h - what the API layer asks of the scheduler and PDB logic.
 *
 * The pods/binding and pods/eviction subresources are not plain storage:
 * binding is the scheduler's write (sched.c), eviction is the Eviction
 * API that honours PodDisruptionBudgets (pdb.c).  api.c calls these two
 * functions; exactly one implementation of each is linked into
 * kubesim_core.  hooks_default.c holds a minimal one (bind = set
 * spec.nodeName; evict = delete, no PDB check) until pdb.c/sched.c
 * provide the real ones; whoever adds them deletes hooks_default.c.
 */
#ifndef KS_HOOKS_H
#define KS_HOOKS_H

#include <json-c/json.h>

#include "ks_store.h"

/* POST pods/<name>/binding.  binding: the Binding object (borrowed):
 * {"apiVersion":"v1","kind":"Binding","metadata":{"name":...},
 *  "target":{"kind":"Node","name":"node-1"}}.
 * Sets spec.nodeName and the PodScheduled=True condition.  Errors as the
 * real API: 404 pod absent, 409 Conflict when already bound to a node,
 * 422 Invalid without a target name.  st filled on failure. */
int ks_pods_bind(ks_store *s, const char *ns, const char *name,
                 json_object *binding, ks_status *st);

/* POST pods/<name>/eviction.  eviction: the policy/v1 Eviction (borrowed;
 * may carry deleteOptions).  Deletes the pod when every PodDisruptionBudget
 * matching it allows a disruption (and decrements its
 * status.disruptionsAllowed); otherwise TLR_E_THROTTLED with st = 429
 * TooManyRequests "Cannot evict pod as it would violate the pod's
 * disruption budget." and details.causes DisruptionBudget.  404 when the
 * pod is absent.  st filled on failure. */
int ks_pods_evict(ks_store *s, const char *ns, const char *name,
                  json_object *eviction, ks_status *st);

#endif
