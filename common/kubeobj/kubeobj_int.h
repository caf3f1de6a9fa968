/* kubeobj_int.h - what the converters of common/kubeobj share: the error
 * context that prefixes every message with the object and field, and
 * readers for the Kubernetes types many objects embed (labels, resource
 * lists, taints, tolerations, selectors, conditions, times).
 *
 * Every reader takes the JSON borrowed, returns TLR_OK or an error already
 * written through the context, and on success hands over what it built.
 * A field that is absent or null is not an error unless said so.
 */
#ifndef KUBEOBJ_INT_H
#define KUBEOBJ_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "tailor/v1/cluster.pb-c.h"
#include "tailor/v1/node.pb-c.h"
#include "tailor/v1/nodeclaim.pb-c.h"
#include "tailor/v1/nodepool.pb-c.h"
#include "tailor/v1/pod.pb-c.h"
#include "tlr_kubeobj.h"

/* Field paths in messages are at most this long. */
#define KF 192

typedef struct kctx {
    char what[200];                /* "Pod default/web-0" */
    char *err;                     /* borrowed, may be NULL */
    size_t errlen;
    const tlr_kubeobj_opts *opts;  /* never NULL */
} kctx;

/* Set up c for o; kind is used when o has none (pod templates). */
void kctx_init(kctx *c, json_object *o, const char *kind, const tlr_kubeobj_opts *opts,
               char *err, size_t errlen);

/* Format a field path into dst (KF bytes), truncating if need be. */
void kpath(char *dst, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Write "<what>: <field>: <message>" and return rc. */
int kfail(kctx *c, int rc, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Report through opts->warn (when set) "<what>: <field>: <message>": a
 * valid field tailor does not act on.  Never fails the conversion. */
void kwarn(kctx *c, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* *field = a copy of s, when s is non-NULL and non-empty (else untouched). */
void kset(char **field, const char *s);

/* A string at path: TLR_OK and *s borrowed (NULL when absent); TLR_E_PARSE
 * when present but not a string. */
int kstr(kctx *c, json_object *o, const char *path, const char *field, const char **s);
/* An integer at path within [min, max]; *present false when absent. */
int kint(kctx *c, json_object *o, const char *path, const char *field, int64_t min,
         int64_t max, int64_t *v, bool *present);
int kbool(kctx *c, json_object *o, const char *path, const char *field,
          protobuf_c_boolean *v, protobuf_c_boolean *present);
/* An RFC 3339 time at path in Unix ms (0 when absent). */
int ktime(kctx *c, json_object *o, const char *path, const char *field, int64_t *ms);
/* A Go duration at path in ms.  never_ok: "Never" sets *never. */
int kduration(kctx *c, json_object *o, const char *path, const char *field, bool never_ok,
              int64_t *ms, protobuf_c_boolean *never, bool *present);
/* An array at path (NULL when absent); TLR_E_PARSE when of another type. */
int karr(kctx *c, json_object *o, const char *path, const char *field, json_object **arr);
int kobj(kctx *c, json_object *o, const char *path, const char *field, json_object **obj);

/* A map of string to string as sorted, unique Labels.  keep (may be NULL)
 * filters keys. */
int klabels(kctx *c, json_object *map, const char *field, bool (*keep)(const char *key),
            Tailor__V1__Label ***out, size_t *n);
/* A list of strings. */
int kstrings(kctx *c, json_object *arr, const char *field, char ***out, size_t *n);

/* Resource amounts being added up: what a ResourceList holds. */
typedef struct kres {
    int64_t cpu, mem, pods, eph;
    size_t n;
    struct kres_ext { char *name; int64_t v; } *ext;   /* sorted by name */
    size_t cap;
} kres;

void kres_free(kres *r);
void kres_add(kres *dst, const kres *src);
void kres_max(kres *dst, const kres *src);
/* Read a map of resource name -> quantity at field; refuses negatives
 * and values that are not quantities. */
int kres_read(kctx *c, json_object *map, const char *field, kres *out);
/* A CRD's map of x-kubernetes-int-or-string quantities (NodePool limits,
 * NodeClaim requests): refuses values that are neither an integer nor a
 * string, such as 1.5, which a Pod's resources would take. */
int kres_int_or_string(kctx *c, json_object *map, const char *field);
/* A new ResourceList holding r. */
Tailor__V1__ResourceList *kres_proto(const kres *r);
/* Read a ResourceList back (for adding protos together). */
void kres_from_proto(const Tailor__V1__ResourceList *p, kres *out);
/* Read a resource map straight into a new ResourceList. */
int kresources(kctx *c, json_object *map, const char *field, Tailor__V1__ResourceList **out);

int ktaints(kctx *c, json_object *arr, const char *field, Tailor__V1__Taint ***out,
            size_t *n);
int ktolerations(kctx *c, json_object *arr, const char *field,
                 Tailor__V1__Toleration ***out, size_t *n);
/* karpenter: also Gte/Lte and minValues. */
int knsreqs(kctx *c, json_object *arr, const char *field, bool karpenter,
            Tailor__V1__NodeSelectorRequirement ***out, size_t *n);
int knsterm(kctx *c, json_object *term, const char *field, Tailor__V1__NodeSelectorTerm **out);
/* A LabelSelector; *out stays NULL when absent (nil selector). */
int klabelselector(kctx *c, json_object *sel, const char *field,
                   Tailor__V1__LabelSelector **out);
int kconditions(kctx *c, json_object *arr, const char *field, Tailor__V1__Condition ***out,
                size_t *n);
int kowners(kctx *c, json_object *arr, const char *field, Tailor__V1__OwnerReference ***out,
            size_t *n);
/* An IntOrString; *out stays NULL when absent. */
int kintorstr(kctx *c, json_object *o, const char *path, const char *field,
              Tailor__V1__IntOrString **out);

/* The condition of type in a conditions array: its status string or NULL. */
const char *kcondition_status(json_object *conds, const char *type, const char **reason);

/* Convert a pod (or a pod template: status NULL) whose metadata and spec
 * are given apart; pre prefixes field names ("spec.template."). */
int kpod_convert(kctx *c, json_object *meta, json_object *spec, json_object *status,
                 const char *pre, Tailor__V1__Pod **out);
/* Strip p (modified) down to the compact form of pod.proto. */
void kpod_compact(Tailor__V1__Pod *p);

/* ---- Karpenter v1.14 CRD rules (karpenter.c) --------------------------
 * The OpenAPI patterns and CEL x-kubernetes-validations of the NodePool,
 * NodeClaim and EC2NodeClass CRDs, and the runtime checks Karpenter's
 * controllers make before a pool or class goes Ready.  Each returns TLR_OK
 * or an error already written through c. */

/* Does s match the POSIX extended regular expression ere? */
bool kmatch(const char *ere, const char *s);
/* The string at path (absent: fine) must match ere; else TLR_E_PARSE
 * "<field>: "<s>" <what>". */
int kpattern(kctx *c, json_object *o, const char *path, const char *field, const char *ere,
             const char *what);
/* A label key / taint key: the CRD's qualified-name pattern, at most 316
 * characters, name part at most 63 and prefix at most 253. */
bool kqualified_name(const char *s);
/* A label value: empty, or at most 63 of [-A-Za-z0-9_.] with alphanumeric
 * ends. */
bool klabel_value(const char *s);
/* spec.template.metadata.labels (map, borrowed). */
int kkarp_labels(kctx *c, json_object *map, const char *field);
/* Requirements already read by knsreqs(): key pattern and restricted keys,
 * value syntax, Gt/Lt/Gte/Lte a single non-negative integer, well-known
 * values (karpenter.sh/capacity-type, karpenter.k8s.aws/instance-tenancy). */
int kkarp_reqs(kctx *c, Tailor__V1__NodeSelectorRequirement **r, size_t n, const char *field,
               bool nodepool_key_ok);
/* taints and startupTaints already read by ktaints(): key and value
 * syntax, and no key/effect pair twice across both lists. */
int kkarp_taints(kctx *c, Tailor__V1__Taint **t, size_t nt, const char *tfield,
                 Tailor__V1__Taint **st, size_t nst, const char *stfield);
/* nodeClassRef (object at path ref_path in o): group, kind and name all
 * required and non-empty, group without '/'.  The strings are borrowed. */
int kkarp_nodeclassref(kctx *c, json_object *o, const char *path, const char *field,
                       const char **group, const char **kind, const char **name);
/* expireAfter / consolidateAfter ("Never" allowed) or terminationGracePeriod
 * at path: the CRD's pattern (whole s, m, h units only), then kduration(). */
int kkarp_duration(kctx *c, json_object *o, const char *path, const char *field,
                   bool never_ok, int64_t *ms, protobuf_c_boolean *never, bool *present);
/* An EC2 selector term's tags: at most 20, no empty key or value. */
int kkarp_tags(kctx *c, json_object *map, const char *field);

/* Deep copy of a message through pack/unpack; never NULL. */
void *kcopy(const void *msg);

#endif
