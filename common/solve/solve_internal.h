/* solve_internal.h - the solver engine's compiled model, shared by the
 * engine's files (compile.c, place.c, ffd.c, emit.c, solve.c).  Not a public
 * header: nothing outside common/solve includes it.
 *
 * A request is compiled once into compact structs living in one arena:
 *   - strings (label keys and values, zones) are interned to small ids;
 *   - resources are fixed vectors (cpu, memory, pods, ephemeral storage,
 *     then each distinct extended resource name of the request);
 *   - instance types carry their labels as a sorted (key, value) array and
 *     their offerings as (place, price) where a "place" is zone x capacity
 *     type packed in one bit of a 128-bit mask;
 *   - identical pending pods are grouped into classes; everything that
 *     depends only on what a pod asks for (which instance types of which
 *     NodePool it can use, at every relaxation level) is computed once per
 *     class, not per pod.
 * docs/solver.md explains the algorithm built on top.
 */
#ifndef SOLVE_INTERNAL_H
#define SOLVE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tailor/v1/solver.pb-c.h"
#include "tlr_arena.h"
#include "tlr_solve.h"

#define SV_NDIM      16   /* cpu, memory, pods, ephemeral + 12 extended */
#define SV_DIM_CPU   0
#define SV_DIM_MEM   1
#define SV_DIM_PODS  2
#define SV_DIM_EPH   3
#define SV_MAXZONE   32   /* places = zone * 4 + capacity type: 128 bits */
#define SV_NONE      (-1)
#define SV_MAXTMV    8    /* multi-valued instance-type label keys per pool */

/* Interned label keys and values are ids into the model's string table;
 * 0 is the empty string. */
typedef uint32_t sv_id;

typedef struct sv_res {
    int64_t v[SV_NDIM];
} sv_res;

/* A set of places (zone x capacity type). */
typedef struct sv_pmask {
    uint64_t w[2];
} sv_pmask;

static inline bool sv_pmask_any(sv_pmask m) { return (m.w[0] | m.w[1]) != 0; }
static inline sv_pmask sv_pmask_and(sv_pmask a, sv_pmask b)
{
    sv_pmask r = { { a.w[0] & b.w[0], a.w[1] & b.w[1] } };
    return r;
}
static inline bool sv_pmask_has(sv_pmask m, int place)
{
    return (m.w[place >> 6] >> (place & 63)) & 1;
}
static inline void sv_pmask_set(sv_pmask *m, int place)
{
    m->w[place >> 6] |= (uint64_t)1 << (place & 63);
}
#define SV_PLACE(zone, ct) ((zone) * 4 + (ct))

/* One label key with the values a node may carry for it (one value for a
 * concrete node; several for a NodePool requirement). nvals == 0 with
 * any == true: the key exists with a value not known in advance. */
typedef struct sv_dent {
    sv_id key;
    bool any;
    int nvals;
    sv_id *vals;
} sv_dent;

typedef struct sv_dom {
    sv_dent *e;          /* sorted by key */
    int n;
} sv_dom;

/* A compiled node selector requirement. */
typedef struct sv_req {
    sv_id key;
    int op;              /* TAILOR__V1__SELECTOR_OPERATOR__* */
    int nvals;
    sv_id *vals;
    int64_t num;         /* Gt/Lt/Gte/Lte operand */
    bool num_ok;
    int min_values;
    int kind;            /* SV_KEY_* */
    const Tailor__V1__NodeSelectorRequirement *src;   /* borrowed */
} sv_req;

enum { SV_KEY_LABEL = 0, SV_KEY_ZONE, SV_KEY_ZONE_ID, SV_KEY_CT };

typedef struct sv_reqset {
    sv_req *r;
    int n;
} sv_reqset;

typedef struct sv_offer {
    int place;
    double price;
} sv_offer;

typedef struct sv_type {
    const Tailor__V1__InstanceType *it;   /* borrowed from the request */
    sv_id name;
    sv_res alloc;
    sv_res cap;
    sv_dom labels;
    sv_offer *offers;    /* available ones only, cheapest first */
    int noffers;
} sv_type;

/* A taint, compiled. */
typedef struct sv_taint {
    const Tailor__V1__Taint *src;
} sv_taint;

/* A NodePool with the instance types of its catalog. */
typedef struct sv_pool {
    const Tailor__V1__NodePool *np;       /* borrowed */
    int idx;                              /* position in the request */
    int *types;                           /* model type indices */
    int ntypes;
    bool no_catalog;
    sv_reqset reqs;
    sv_pmask pmask;                       /* places its requirements allow */
    sv_dom dom;                           /* labels + requirement keys */
    sv_res *ds;                           /* DaemonSet overhead per pool type */
    /* Limits: remaining capacity per dimension (INT64_MAX = unlimited). */
    sv_res limit_left;
    int64_t nodes_left;
    bool limited;                         /* some resource is limited */
    /* Multi-valued custom keys (In with >1 value, not a type or offering
     * key): claims narrow them with a value bitmask. */
    int ncustom;
    sv_id *custom_key;
    const sv_dent **custom_dent;
    bool has_min_values;
    int *rank;                            /* pool type -> rank by name (emit) */
    struct sv_prices *prices;             /* place.c: price per type, per mask */
    double *room;                         /* place.c: alloc - DaemonSets, per type x SV_NDIM */
    /* Per model tkey: how a claim gets its value (SV_TKM_*); for FIXED the
     * value index, for CUSTOM the custom key index; for TYPE, tk_tval gives
     * each pool type's value index (SV_NONE: the type has none). */
    int *tk_mode, *tk_arg;
    int **tk_tval;
    /* Instance-type label keys on which some type of the pool carries
     * several values (Karpenter's fake types: kubernetes.io/os In [linux,
     * windows, darwin]).  A claim narrows each to the values its pool and
     * its pods allow together, as Karpenter intersects a NodeClaim's
     * requirements with each pod's (nodeclaim.go, Add): a pod joins only
     * while some candidate type still shares a value.  In a mask, bit 0 is
     * "no label" and bit j+1 is tmv_vals[k][j].  AWS types carry one value
     * per label but instance-tenancy (default, dedicated), which few pods
     * ask for; until one does, claims use the level bitsets as they are. */
    int ntmv;
    sv_id tmv_key[SV_MAXTMV];
    sv_id *tmv_vals[SV_MAXTMV];
    int tmv_nvals[SV_MAXTMV];
    uint64_t *tmv_type;                   /* per pool type x ntmv: the values it carries */
    uint64_t tmv_pool[SV_MAXTMV];         /* the values the pool's requirements allow */
} sv_pool;

/* A pool's price per type (sv_type_price, -1 = no offering) for one place
 * mask, computed once per mask a level uses (place.c, pool_prices). */
typedef struct sv_prices {
    sv_pmask pm;
    double *price;                        /* per pool type */
    struct sv_prices *next;
} sv_prices;

/* What one relaxation level of a class asks of a node. */
typedef struct sv_level {
    sv_reqset reqs;          /* node selector + one affinity term (+ pref) */
    int nstrict;             /* reqs.r[0..nstrict): the required ones */
    /* The same level without its preferred node terms (lazy, see
     * sv_level_strict): what a spread counts as its domains. */
    struct sv_level *strict;
    bool soft_tsc;           /* ScheduleAnyway spreads still enforced */
    int paff_off, anti_off;  /* preferred pod (anti-)affinity terms dropped */
    bool prefer_noschedule;  /* PreferNoSchedule taints still enforced */
    /* Per pool: compatible pool-type bitset (fits one pod with DS
     * overhead, has an available offering in pmask), NULL if none. */
    uint64_t **compat;
    sv_pmask *pmask;         /* per pool */
    uint64_t **custom;       /* per pool: a mask per custom key */
    uint64_t **tmv;          /* per pool: a value mask per multi-valued type key (pool ∩ level) */
    char **why;              /* per pool: reason when compat is empty */
    uint32_t zmask;          /* zones a spread may count (lazy) */
    uint8_t ctmask;
    bool dmask_ok;
    uint64_t **tkdom;        /* per tkey x 4 policies: values a spread may count (lazy) */
} sv_level;

enum { SV_TK_ZONE = 0, SV_TK_HOST, SV_TK_CT, SV_TK_LABEL };

/* A topology key other than zone, hostname and capacity type (a NodePool
 * template label, a requirement key, an instance-type label such as
 * karpenter.k8s.aws/instance-family).  Its domains are the values the
 * NodePools (template labels, In values), the instance types and the
 * existing nodes and in-flight claims give it, found once at compile time
 * (compile.c, tkeys_build).  A new claim gets one of them: the value is
 * fixed by its pool (SV_TKM_FIXED), picked from the pool's In values
 * (SV_TKM_CUSTOM, narrowing its value mask) or picked through its
 * instance types (SV_TKM_TYPE, narrowing its candidates). */
#define SV_MAXTK 64
typedef struct sv_tkey {
    sv_id key;
    sv_id *vals;
    int nvals;
} sv_tkey;

enum { SV_TKM_NONE = 0, SV_TKM_FIXED, SV_TKM_CUSTOM, SV_TKM_TYPE };

/* Pods matching (namespaces, selector) counted per topology domain. */
typedef struct sv_group {
    int tk;                      /* SV_TK_* */
    const Tailor__V1__LabelSelector *sel;   /* borrowed; NULL matches none */
    sv_reqset extra;             /* match_label_keys, resolved */
    bool all_ns;
    sv_id *ns;
    int nns;
    /* counts of matching pods and of pods carrying this group as an
     * anti-affinity term ("owners"), per domain */
    int zone_match[SV_MAXZONE], zone_owner[SV_MAXZONE];
    int ct_match[4], ct_owner[4];
    int *host_match, *host_owner;    /* per bin */
    int nhost;
    int total_match;
    int tki;                         /* SV_TK_LABEL: index into model tkeys */
    int *lab_match, *lab_owner;      /* SV_TK_LABEL: per value of the key */
} sv_group;

/* A constraint of a class on one group. */
enum { SV_C_SPREAD = 0, SV_C_AFFINITY, SV_C_ANTI };
typedef struct sv_cons {
    int kind;                    /* SV_C_* */
    int group;
    int max_skew;
    int min_domains;
    bool soft;                   /* ScheduleAnyway */
    bool self_match;             /* the pod matches its own selector */
    int pref;                    /* 0: required; k > 0: the k-th heaviest
                                  * preferred term of its kind (affinity or
                                  * anti-affinity), dropped by relaxation */
    /* spreads on SV_TK_LABEL keys: nodeAffinityPolicy Ignore (domains of
     * every pool and node, not only those the pod may use) and
     * nodeTaintsPolicy Honor (existing nodes whose taints the pod does not
     * tolerate are no domain) */
    bool aff_ignore, taints_honor;
} sv_cons;

/* Is constraint cn enforced at level lv (preferred pod terms are dropped
 * heaviest first, affinity before anti-affinity, as Karpenter relaxes)? */
#define SV_CONS_ON(cn, lv) ((cn)->pref == 0 || (cn)->pref > ((cn)->kind == SV_C_ANTI ? (lv)->anti_off : (lv)->paff_off))

typedef struct sv_port {
    int port;
    int proto;
    sv_id ip;                    /* 0 = all */
} sv_port;

/* A group of identical pending pods. */
typedef struct sv_class {
    const Tailor__V1__Pod *pod;          /* the first pod: borrowed */
    sv_res req;
    double size;                         /* for ordering */
    int *pods;                           /* indices into model->pods */
    int npods;
    sv_id ns;
    sv_dom labels;
    const Tailor__V1__Toleration *const *tols;
    size_t ntols;
    sv_port *ports;
    int nports;
    sv_cons *cons;
    int ncons;
    int *match;                          /* groups whose selector matches */
    int nmatch;
    int *owns;                           /* groups it is anti-affine to */
    int nowns;
    bool pin_zone, pin_ct;               /* its placement needs a domain */
    sv_level *levels;
    int nlevels;
    int nreqterms;
    uint64_t pin_tk;                     /* SV_TK_LABEL keys its placement needs */
    char *bad;                           /* whole-class error, else NULL */
    bool ignored;                        /* bad: Karpenter's provisioner ignores it */
    int left;                            /* pods not placed yet */
    int level;                           /* tailor: the class's level */
    double unit;                         /* cheapest cost per pod, 0 = unknown */
    int host_cap;                        /* most pods of it one node takes */
    char **fail;                         /* per pool: why a new claim failed */
} sv_class;

/* Where a pod can go: an existing node, an in-flight claim or a new claim. */
enum { SV_BIN_NODE = 0, SV_BIN_INFLIGHT, SV_BIN_NEW };
typedef struct sv_bin {
    int kind;
    int idx;                     /* request node / nodeclaim index */
    const char *name;
    sv_dom labels;               /* nodes and in-flight claims */
    const Tailor__V1__Taint *const *taints;
    size_t ntaints;
    const Tailor__V1__NodePool *np;  /* its NodePool when known */
    sv_res free;                 /* nodes and in-flight claims */
    sv_res alloc;                /* nodes and in-flight claims: allocatable (replay.c) */
    sv_port *ports;
    int nports, cports;
    int zone, ct;                /* domain or SV_NONE when not pinned */
    int *tkv;                    /* per tkey: value index, SV_NONE = none / not pinned */
    int npods;
    bool initialized;
    /* new claims */
    int pool;
    int level_class, level;      /* the first pod's class and level */
    uint64_t *cand;              /* candidate pool-type bitset */
    int ncand;
    int target;                  /* pool-type index (tailor) */
    sv_res used;
    int64_t qcpu, qmem;          /* tailor: cpu and memory left on the target */
    sv_pmask pmask;
    uint64_t *custom;
    uint64_t *tmv;               /* per multi-valued type key: values pool ∩ pods allow */
    sv_res charged;              /* what was charged to the pool limits */
    int *pods;
    int npods_cap;
    int *classes;                /* classes whose requirements it carries */
    int nclasses;
    int *lvls;
    bool min_values_relaxed;
    bool dead;                   /* merged away */
} sv_bin;

typedef struct sv_podst {
    const Tailor__V1__Pod *pod;  /* borrowed */
    int cls;
    int level;
    int bin;                     /* SV_NONE = not placed */
    int err;                     /* TLR_OK or the error code */
} sv_podst;

typedef struct sv_model {
    tlr_arena *ar;
    const Tailor__V1__ClusterState *cluster;   /* borrowed, may be NULL */
    int64_t now_ms;
    tlr_solve_strategy strategy;
    int max_types;
    bool ignore_prefs;
    bool best_effort_min_values;
    /* emit.c (sv_minv_room): does some pool requirement or some class level
     * carry minValues; scanned on first use */
    bool minv_scanned, minv_pools, minv_levels;
    int64_t deadline_ns;
    bool timed_out;

    /* strings */
    char **strs;
    int nstrs, cstrs;
    uint32_t *htab;
    int hcap;
    sv_id k_zone, k_zone_id, k_ct, k_host, k_type, k_pool, k_arch, k_os;

    int ndim;
    const char *dim_name[SV_NDIM];

    int nzones;
    sv_id zones[SV_MAXZONE];
    sv_id zone_ids[SV_MAXZONE];

    sv_type *types;
    int ntypes;
    sv_pool *pools;              /* weight order */
    int npools;
    int pwords_max;

    sv_class *classes;
    int nclasses;
    int *class_order;
    sv_podst *pods;
    int npods;

    sv_group *groups;
    int ngroups, cgroups;
    sv_tkey tkeys[SV_MAXTK];     /* topology keys of kind SV_TK_LABEL */
    int ntkeys;
    bool tk_built;               /* their domains are known (compile.c) */

    struct sv_cmemo *cmemo;      /* compile.c: shared compatibility bitsets */
    int cmemo_cap, cmemo_n;

    sv_bin *bins;
    int nbins, cbins;
    int *uid_tab;                /* place.c: pods by uid (lazy) */
    int *node_claim;             /* place.c: per request node, its NodeClaim index or SV_NONE */
    bool *claim_node;            /* place.c: per request NodeClaim, "its Node exists" */
    uint64_t *tmv_buf;           /* place.c: claim_compat's result (pwords_max words) */
    int uid_cap;
    int nexisting;               /* bins [0, nexisting) are nodes/in-flight */

    void *scratch;               /* emit.c: per-claim work arrays */
    tlr_arena *out;              /* the response's arena (borrowed) */
    const double *unit_hint;     /* per class, from an earlier run; may be NULL */
    /* tailor: the pods of the non-bad classes not placed yet, as summed
     * requests (integers held exactly in doubles), and the part of it owned
     * by the classes whose turn is over; choose_target uses the difference */
    double tot_all[SV_NDIM];
    double tot_done[SV_NDIM];
    /* the request's catalogs and ICE list (borrowed), for seed.c */
    const Tailor__V1__CatalogRef *const *cats;
    size_t ncats;
    const Tailor__V1__OfferingUnavailable *const *ice;
    size_t nice;
    bool seed;                   /* tailor: seed claims from the LP (seed.c) */
    bool ffd_sized;              /* ffd.c: the sized variant */
    int64_t seed_deadline_ns;    /* when the LP must stop generating columns */
    /* Simulate */
    bool allow_new;
    int max_new;
    int nnew;
    const char *const *removed;
    size_t nremoved;
    bool allow_uninit;           /* uninitialized nodes, in-flight claims (Solve: always) */
} sv_model;

/* compile.c */
sv_id sv_intern(sv_model *m, const char *s);
const char *sv_str(const sv_model *m, sv_id id);
int  sv_model_build(sv_model *m, const Tailor__V1__Pod *const *pods, size_t npods,
                    const Tailor__V1__CatalogRef *const *cats, size_t ncats,
                    const Tailor__V1__OfferingUnavailable *const *ice, size_t nice,
                    char *err, size_t errlen);
const sv_dent *sv_dom_get(const sv_dom *d, sv_id key);
/* Can a node whose labels are d1 (then d2 for keys d1 lacks) satisfy r?
 * Offering keys (zone, capacity type) are answered by d1/d2 as labels. */
bool sv_req_ok(const sv_model *m, const sv_req *r, const sv_dom *d1, const sv_dom *d2);
bool sv_tolerates(const Tailor__V1__Toleration *const *tols, size_t ntols,
                  const Tailor__V1__Taint *t);
bool sv_selector_match(const sv_model *m, const Tailor__V1__LabelSelector *sel,
                       const sv_reqset *extra, const sv_dom *labels);
bool sv_group_ns_ok(const sv_group *g, sv_id ns);
int  sv_pool_type_fits(const sv_model *m, const sv_pool *p, int pt, const sv_res *used);
double sv_type_price(const sv_model *m, int t, sv_pmask pm, int *place);
static inline bool sv_bit(const uint64_t *b, int i) { return (b[i >> 6] >> (i & 63)) & 1; }
static inline void sv_bit_set(uint64_t *b, int i) { b[i >> 6] |= (uint64_t)1 << (i & 63); }
static inline void sv_bit_clr(uint64_t *b, int i) { b[i >> 6] &= ~((uint64_t)1 << (i & 63)); }

sv_dom sv_labels_dom(sv_model *m, Tailor__V1__Label *const *l, size_t n);
/* Groups pod p is anti-affine to (existing pods); returns the count. */
int  sv_pod_anti_groups(sv_model *m, const Tailor__V1__Pod *p, const sv_dom *labels, int *out, int max);
sv_dom sv_dom_extend(sv_model *m, const sv_dom *base, const char *const *k, const char *const *v, int n);
/* Level lv of class c as far as its required node terms go (nodeSelector,
 * volume requirements, its required affinity term): lv itself when it has
 * no preferred node term, else a level compiled once without them.  A
 * spread's domains come from it, as Karpenter counts a spread's domains by
 * the pod's strict requirements: a preferred node affinity never narrows
 * them (scheduler.go, StrictRequirements). */
sv_level *sv_level_strict(sv_model *m, sv_class *c, sv_level *lv);
/* The value index of labels d for tkey tki, SV_NONE when d has no single
 * known value for it. */
int  sv_tk_value(const sv_model *m, int tki, const sv_dom *d);
/* A fresh per-tkey value array for labels d (arena), NULL without tkeys. */
int *sv_tk_values(sv_model *m, const sv_dom *d);

/* place.c */
void sv_place_all(sv_model *m);
/* sv_place_all's first step alone: the existing nodes and in-flight claims
 * become bins, their pods (and the pending pods an in-flight claim already
 * plans) are counted in the groups; nothing else is placed. */
void sv_place_begin(sv_model *m);
/* The zones a spread of class c at level lv counts as its domains (bit z
 * for m->zones[z]): those of the offerings its required node terms can use
 * and of the existing capacity they accept.  Needs the bins (after
 * sv_place_begin). */
uint32_t sv_level_zones(sv_model *m, sv_class *c, sv_level *lv);
int  sv_bin_room(sv_model *m, int b, int c, int lv, int want);
/* For seed.c: room_at and place_n as they are; a new empty claim of pool
 * pi sized for pool type pt (SV_NONE when limits or the replacement cap
 * forbid it), committed once filled (charged to the limits; dropped when
 * it stayed empty); class c's pods placed on existing capacity only, at
 * its first level. */
int  sv_room_place(sv_model *m, int b, int c, int lv, int want, int *place);
void sv_place_pods(sv_model *m, int b, int c, int lv, const int *pods, int n, int place);
int  sv_claim_open_target(sv_model *m, int pi, int pt);
void sv_claim_commit(sv_model *m, int b);
void sv_place_existing(sv_model *m, int c);
/* For ffd.c, as the baseline uses them: has m's deadline passed (sets
 * m->timed_out); a cheap necessary test for bin b to take a pod of cl
 * (room_at gives the answer); open_claim for the candidate-keeping
 * strategies: a new claim of pool pi for up to want pods of class c at
 * level lv, keeping every type that still fits, charged to the limits;
 * returns the pods placed (0: nothing opened, cl->fail[pi] says why). */
bool sv_timed_out(sv_model *m);
bool sv_bin_quick_ok(const sv_model *m, int b, const sv_class *cl);
int  sv_claim_open(sv_model *m, int c, int lv, int pi, const int *pods, int want);
/* No spread, affinity, anti-affinity, host ports; no group selects it. */
bool sv_class_movable(const sv_class *c);
/* The topology values new claim b was narrowed to that its requirements
 * do not already carry (SV_TKM_CUSTOM and SV_TKM_TYPE keys): up to max
 * (key, value) pairs into keys/vals; returns the count.  emit.c adds each
 * as "key In [value]" so the node gets the label. */
int  sv_claim_topo_labels(const sv_model *m, int b, sv_id *keys, sv_id *vals, int max);

/* seed.c: with m->seed set, opens the new claims of the configuration
 * LP's rounded-down solution for the movable pods left after existing
 * capacity (see seed.c). */
void sv_seed(sv_model *m);

/* ffd.c: TLR_SOLVE_FFD's placement of the pods existing capacity and
 * claims in flight leave (after place.c has set up their bins). */
void sv_ffd_all(sv_model *m);
/* zonepin.c: zone pre-assignment (see zonepin.c).  Does some pod carry a
 * zone topology spread? */
bool sv_zone_spread_any(const Tailor__V1__Pod *const *pods, size_t npods);
/* Could sv_zone_pin pin anything: is there a zone spread group whose
 * pending pods all carry it alone?  Read-only on a model of the same
 * request (placed or not), so that the fresh compile sv_zone_pin needs is
 * spent only when it may pay. */
bool sv_zone_pin_worth(const sv_model *m);
/* On m, compiled from the request and not placed yet (it gets its bins of
 * existing capacity): the pending pods in the model's order, each spread
 * group's pods replaced by copies pinned to the zone dealt to them (in
 * m's arena, so they live as long as it does; the rest borrowed from the
 * request), or NULL when no pod gets pinned. */
const Tailor__V1__Pod **sv_zone_pin(sv_model *m);
/* Did plan m, placed from sv_zone_pin's pods, place every pinned pod
 * (those that are not orig[i])?  Only then does it keep the spreads. */
bool sv_zone_pin_held(const sv_model *m, const Tailor__V1__Pod *const *orig);
/* The same pinned pods (n of them, from sv_zone_pin) copied anew into ar,
 * for a run in another arena; the rest borrowed from orig. */
const Tailor__V1__Pod **sv_zone_pin_copy(tlr_arena *ar, const Tailor__V1__Pod *const *pinned,
                                         const Tailor__V1__Pod *const *orig, size_t n);

/* replay.c: kube-scheduler's placement of a plan (see replay.c).  On m, compiled and not placed, with allow_new off: places the pending
 * pods on the existing bins as the scheduler would; returns how many it
 * left without a bin (bad classes aside).  m->timed_out when it stopped. */
int  sv_replay_all(sv_model *m);

/* emit.c */
void sv_emit_bindings(sv_model *m, Tailor__V1__Binding ***out, size_t *n);
/* pod's binding (in oa) to x: its node, else its claim in flight. */
Tailor__V1__Binding *sv_binding_new(tlr_arena *oa, const Tailor__V1__Pod *pod, const sv_bin *x);
void sv_emit_claims(sv_model *m, Tailor__V1__NodeClaim ***out, size_t *n, double *cost);
void sv_emit_errors(sv_model *m, Tailor__V1__PodError ***out, size_t *n);
double sv_claim_cost(sv_model *m, int b);
/* minValues while placing (Strict policy; Karpenter refuses a pod whose
 * addition leaves a NodeClaim too few instance types for minValues).  Of
 * want pods of class c at level lv, how many new claim b may take so that
 * the types still holding its pods (and the DaemonSets) keep every minValues
 * requirement in force; place is the place room_at would pin (SV_NONE: no
 * pin).  Returns want unchanged for other bins, under BestEffort, or when no
 * minValues is in force. */
int  sv_minv_room(sv_model *m, int b, int c, int lv, int want, int place);
/* Why one pod of class c at level lv cannot go on new claim b because of
 * minValues (in m's arena), or NULL when minValues is not what stops it. */
char *sv_minv_why(sv_model *m, int b, int c, int lv);
char *sv_ostrdup(tlr_arena *oa, const char *s);   /* NULL -> "" */
char *sv_arena_printf(tlr_arena *ar, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
