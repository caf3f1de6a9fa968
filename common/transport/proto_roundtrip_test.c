/* proto_roundtrip_test.c - the tailor.v1 contract survives protobuf-c.
 *
 * For each of the big messages the services exchange (SolveRequest,
 * SolveResponse, PendingBatch, LaunchRequest, ExplainResponse) the test
 * builds a FULLY populated instance -- every field of every nested message
 * set to a distinct non-default value, repeated fields with two elements,
 * oneofs rotating through their members -- by walking the protobuf-c
 * descriptors.  Filling by reflection keeps the test complete as fields are
 * added to the contract: a new field is populated and checked without
 * touching this file.
 *
 * Checks, per message:
 *   roundtrip      pack, unpack, deep-compare every field (the first
 *                  difference is reported as path: got/want), re-pack to
 *                  identical bytes, and spot-check a few deep fields by name
 *                  through the generated C structs;
 *   envelope       the same through an Envelope{contract_version, type,
 *                  payload}, the payload decoded by the descriptor that
 *                  Envelope.type names;
 *   unknown_fields bytes with extra, unknown field numbers still decode to
 *                  the same message (receivers ignore unknown fields);
 *   bad_input      truncated bytes and an absurd length prefix fail to
 *                  decode (NULL), never crash.
 * A last test proves the comparator itself finds a one-field change.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <protobuf-c/protobuf-c.h>

#include "tailor/v1/disruptor.pb-c.h"
#include "tailor/v1/envelope.pb-c.h"
#include "tailor/v1/launcher.pb-c.h"
#include "tailor/v1/solver.pb-c.h"
#include "tailor/v1/watcher.pb-c.h"

/* Elements per repeated field, and a guard against runaway nesting. */
#define FILL_REPEATED 2
#define FILL_MAX_DEPTH 16

typedef struct fill_state {
    uint32_t next;        /* source of distinct values */
} fill_state;

/* ---- reflection helpers ------------------------------------------------ */

static size_t elem_size(ProtobufCType t)
{
    switch (t) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_FLOAT:
    case PROTOBUF_C_TYPE_ENUM:
        return 4;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_DOUBLE:
        return 8;
    case PROTOBUF_C_TYPE_BOOL:
        return sizeof(protobuf_c_boolean);
    case PROTOBUF_C_TYPE_STRING:
        return sizeof(char *);
    case PROTOBUF_C_TYPE_BYTES:
        return sizeof(ProtobufCBinaryData);
    case PROTOBUF_C_TYPE_MESSAGE:
        return sizeof(ProtobufCMessage *);
    }
    fail_msg("unknown protobuf-c type %d", (int)t);
    return 0;
}

static void *member_at(const ProtobufCMessage *m, unsigned offset)
{
    return (char *)m + offset;
}

/* The oneof case of field f in m (only for ONEOF fields). */
static uint32_t oneof_case(const ProtobufCMessage *m,
                           const ProtobufCFieldDescriptor *f)
{
    return *(const uint32_t *)member_at(m, f->quantifier_offset);
}

static int is_oneof(const ProtobufCFieldDescriptor *f)
{
    return (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) != 0;
}

/* out = printf(fmt, ...), truncated to cap: paths are for messages only. */
static void path_fmt(char *out, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void path_fmt(char *out, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out, cap, fmt, ap);
    va_end(ap);
}

/* sub = path + "." + field name (no dot at the top). */
static void path_field(char *sub, size_t cap, const char *path,
                       const ProtobufCFieldDescriptor *f)
{
    path_fmt(sub, cap, "%s%s%s", path, *path ? "." : "", f->name);
}

/* ---- fill: every field non-default ------------------------------------- */

static ProtobufCMessage *fill_new(const ProtobufCMessageDescriptor *d,
                                  fill_state *fs, int depth);

/* Write one distinct non-default value of field f's type at dst. */
static void fill_value(const ProtobufCFieldDescriptor *f, void *dst,
                       fill_state *fs, int depth)
{
    uint32_t n = ++fs->next;
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
        *(int32_t *)dst = (int32_t)(n % 100000u) + 1;
        break;
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
        *(uint32_t *)dst = n;
        break;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
        /* Large enough to need more than 32 bits on the wire. */
        *(int64_t *)dst = ((int64_t)1 << 40) + n;
        break;
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        *(uint64_t *)dst = ((uint64_t)1 << 40) + n;
        break;
    case PROTOBUF_C_TYPE_FLOAT:
        *(float *)dst = (float)n + 0.5f;
        break;
    case PROTOBUF_C_TYPE_DOUBLE:
        *(double *)dst = (double)n + 0.125;
        break;
    case PROTOBUF_C_TYPE_BOOL:
        *(protobuf_c_boolean *)dst = 1;
        break;
    case PROTOBUF_C_TYPE_ENUM: {
        const ProtobufCEnumDescriptor *ed = f->descriptor;
        assert_true(ed->n_values >= 2);   /* UNSPECIFIED plus one */
        /* Skip value 0 (UNSPECIFIED, the default). */
        *(int *)dst = ed->values[1 + n % (ed->n_values - 1)].value;
        break;
    }
    case PROTOBUF_C_TYPE_STRING: {
        char buf[64];
        snprintf(buf, sizeof buf, "%s-%u", f->name, n);
        *(char **)dst = strdup(buf);
        assert_non_null(*(char **)dst);
        break;
    }
    case PROTOBUF_C_TYPE_BYTES: {
        ProtobufCBinaryData *b = dst;
        b->len = 3;
        b->data = malloc(b->len);
        assert_non_null(b->data);
        b->data[0] = (uint8_t)n;
        b->data[1] = 0;               /* an embedded NUL must survive */
        b->data[2] = 0xff;
        break;
    }
    case PROTOBUF_C_TYPE_MESSAGE:
        *(ProtobufCMessage **)dst = fill_new(f->descriptor, fs, depth + 1);
        break;
    }
}

/* Fill every field of m.  Oneofs: one member, chosen by fs->next so that
 * repeated elements rotate through the members. */
static void fill_message(ProtobufCMessage *m, fill_state *fs, int depth)
{
    const ProtobufCMessageDescriptor *d = m->descriptor;
    assert_true(depth < FILL_MAX_DEPTH);
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            size_t es = elem_size(f->type);
            char *arr = calloc(FILL_REPEATED, es);
            assert_non_null(arr);
            for (size_t k = 0; k < FILL_REPEATED; k++)
                fill_value(f, arr + k * es, fs, depth);
            *(size_t *)member_at(m, f->quantifier_offset) = FILL_REPEATED;
            *(void **)member_at(m, f->offset) = arr;
        } else if (is_oneof(f)) {
            /* Members of one oneof share quantifier_offset and are listed
             * in d->fields; pick one per group when meeting its first. */
            unsigned first = i, count = 0;
            while (first > 0 && is_oneof(&d->fields[first - 1]) &&
                   d->fields[first - 1].quantifier_offset == f->quantifier_offset)
                first--;
            if (first != i)
                continue;              /* group already handled */
            while (first + count < d->n_fields &&
                   is_oneof(&d->fields[first + count]) &&
                   d->fields[first + count].quantifier_offset ==
                       f->quantifier_offset)
                count++;
            const ProtobufCFieldDescriptor *pick =
                &d->fields[first + (fs->next % count)];
            fill_value(pick, member_at(m, pick->offset), fs, depth);
            *(uint32_t *)member_at(m, pick->quantifier_offset) = pick->id;
        } else {
            if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->quantifier_offset)
                *(protobuf_c_boolean *)member_at(m, f->quantifier_offset) = 1;
            fill_value(f, member_at(m, f->offset), fs, depth);
        }
    }
}

static ProtobufCMessage *fill_new(const ProtobufCMessageDescriptor *d,
                                  fill_state *fs, int depth)
{
    ProtobufCMessage *m = malloc(d->sizeof_message);
    assert_non_null(m);
    protobuf_c_message_init(d, m);
    fill_message(m, fs, depth);
    return m;
}

/* ---- compare: the first difference as "path: got X, want Y" ------------ */

static void fmt_value(const ProtobufCFieldDescriptor *f, const void *v,
                      char *out, size_t cap)
{
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_ENUM:
        snprintf(out, cap, "%d", *(const int32_t *)v);
        break;
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
        snprintf(out, cap, "%u", *(const uint32_t *)v);
        break;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
        snprintf(out, cap, "%lld", (long long)*(const int64_t *)v);
        break;
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        snprintf(out, cap, "%llu", (unsigned long long)*(const uint64_t *)v);
        break;
    case PROTOBUF_C_TYPE_FLOAT:
        snprintf(out, cap, "%g", (double)*(const float *)v);
        break;
    case PROTOBUF_C_TYPE_DOUBLE:
        snprintf(out, cap, "%g", *(const double *)v);
        break;
    case PROTOBUF_C_TYPE_BOOL:
        snprintf(out, cap, "%s", *(const protobuf_c_boolean *)v ? "true" : "false");
        break;
    case PROTOBUF_C_TYPE_STRING: {
        const char *s = *(char *const *)v;
        snprintf(out, cap, "\"%s\"", s ? s : "(null)");
        break;
    }
    case PROTOBUF_C_TYPE_BYTES:
        snprintf(out, cap, "%zu bytes", ((const ProtobufCBinaryData *)v)->len);
        break;
    case PROTOBUF_C_TYPE_MESSAGE:
        snprintf(out, cap, "%s", *(ProtobufCMessage *const *)v ? "message" : "NULL");
        break;
    }
}

static int msg_diff(const ProtobufCMessage *got, const ProtobufCMessage *want,
                    const char *path, char *why, size_t cap);

/* Compare one value of field f; 0 = equal, else why is filled. */
static int value_diff(const ProtobufCFieldDescriptor *f, const void *g,
                      const void *w, const char *path, char *why, size_t cap)
{
    int differ = 0;
    switch (f->type) {
    case PROTOBUF_C_TYPE_STRING: {
        const char *gs = *(char *const *)g, *ws = *(char *const *)w;
        differ = (gs == NULL) != (ws == NULL) ||
                 (gs != NULL && strcmp(gs, ws) != 0);
        break;
    }
    case PROTOBUF_C_TYPE_BYTES: {
        const ProtobufCBinaryData *gb = g, *wb = w;
        differ = gb->len != wb->len ||
                 (gb->len > 0 && memcmp(gb->data, wb->data, gb->len) != 0);
        break;
    }
    case PROTOBUF_C_TYPE_MESSAGE: {
        const ProtobufCMessage *gm = *(ProtobufCMessage *const *)g;
        const ProtobufCMessage *wm = *(ProtobufCMessage *const *)w;
        if (gm == NULL || wm == NULL) {
            differ = gm != wm;
            break;
        }
        return msg_diff(gm, wm, path, why, cap);
    }
    default:
        differ = memcmp(g, w, elem_size(f->type)) != 0;
        break;
    }
    if (differ) {
        char gv[96], wv[96];
        fmt_value(f, g, gv, sizeof gv);
        fmt_value(f, w, wv, sizeof wv);
        path_fmt(why, cap, "%s: got %s, want %s", path, gv, wv);
    }
    return differ;
}

/* Deep-compare two messages of the same type, field by field (unknown
 * fields are ignored, as receivers ignore them). */
static int msg_diff(const ProtobufCMessage *got, const ProtobufCMessage *want,
                    const char *path, char *why, size_t cap)
{
    const ProtobufCMessageDescriptor *d = want->descriptor;
    if (got->descriptor != d) {
        snprintf(why, cap, "%s: got type %s, want %s", path,
                 got->descriptor->name, d->name);
        return 1;
    }
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        char sub[512];
        path_field(sub, sizeof sub, path, f);
        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            size_t gn = *(size_t *)member_at(got, f->quantifier_offset);
            size_t wn = *(size_t *)member_at(want, f->quantifier_offset);
            if (gn != wn) {
                snprintf(why, cap, "%s: got %zu elements, want %zu", sub, gn, wn);
                return 1;
            }
            const char *ga = *(char **)member_at(got, f->offset);
            const char *wa = *(char **)member_at(want, f->offset);
            size_t es = elem_size(f->type);
            for (size_t k = 0; k < wn; k++) {
                char el[512];
                path_fmt(el, sizeof el, "%s[%zu]", sub, k);
                if (value_diff(f, ga + k * es, wa + k * es, el, why, cap))
                    return 1;
            }
            continue;
        }
        if (is_oneof(f)) {
            uint32_t gc = oneof_case(got, f), wc = oneof_case(want, f);
            if (gc != wc && (gc == f->id || wc == f->id)) {
                snprintf(why, cap, "%s: oneof case got %u, want %u", sub, gc, wc);
                return 1;
            }
            if (wc != f->id)
                continue;
        }
        if (value_diff(f, member_at(got, f->offset), member_at(want, f->offset),
                       sub, why, cap))
            return 1;
    }
    return 0;
}

/* Record the first problem only. */
static void note_first(char *why, size_t cap, const char *path, const char *what)
{
    if (why[0] == '\0')
        path_fmt(why, cap, "%s %s", path, what);
}

/* Count fields left at their default anywhere in m (a oneof counts as set
 * when any member is); the path of the first one goes to why. */
static size_t count_unset(const ProtobufCMessage *m, const char *path,
                          char *why, size_t cap)
{
    static const char zero[sizeof(ProtobufCBinaryData)];
    const ProtobufCMessageDescriptor *d = m->descriptor;
    size_t unset = 0;
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        const void *v = member_at(m, f->offset);
        char sub[512];
        path_field(sub, sizeof sub, path, f);
        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            size_t n = *(size_t *)member_at(m, f->quantifier_offset);
            if (n == 0) {
                unset++;
                note_first(why, cap, sub, "is empty");
            }
            for (size_t k = 0; f->type == PROTOBUF_C_TYPE_MESSAGE && k < n; k++)
                unset += count_unset((*(ProtobufCMessage *const *const *)v)[k],
                                     sub, why, cap);
            continue;
        }
        if (is_oneof(f)) {
            if (oneof_case(m, f) == 0) {
                unset++;
                note_first(why, cap, sub, "oneof not set");
            }
            if (oneof_case(m, f) != f->id)
                continue;
        }
        int is_default;
        if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
            const ProtobufCMessage *sm = *(ProtobufCMessage *const *)v;
            if (sm != NULL) {
                unset += count_unset(sm, sub, why, cap);
                continue;
            }
            is_default = 1;
        } else if (f->type == PROTOBUF_C_TYPE_STRING) {
            is_default = *(char *const *)v == NULL || **(char *const *)v == '\0';
        } else if (f->type == PROTOBUF_C_TYPE_BYTES) {
            is_default = ((const ProtobufCBinaryData *)v)->len == 0;
        } else {
            is_default = memcmp(v, zero, elem_size(f->type)) == 0;
        }
        if (is_default) {
            unset++;
            note_first(why, cap, sub, "is default");
        }
    }
    return unset;
}

/* ---- the cases --------------------------------------------------------- */

typedef struct rt_case {
    const char *name;
    const ProtobufCMessageDescriptor *desc;
    /* Named checks of deep fields; got/want same type as desc. */
    void (*spot)(const ProtobufCMessage *got, const ProtobufCMessage *want);
} rt_case;

static void spot_solve_request(const ProtobufCMessage *g, const ProtobufCMessage *w)
{
    const Tailor__V1__SolveRequest *got = (const void *)g, *want = (const void *)w;
    assert_int_equal(got->n_pending_pods, 2);
    assert_int_equal(got->pending_pods[1]->requests->cpu_millis,
                     want->pending_pods[1]->requests->cpu_millis);
    assert_string_equal(got->cluster->nodes[1]->pods[0]->uid,
                        want->cluster->nodes[1]->pods[0]->uid);
    assert_true(got->catalogs[0]->catalog->instance_types[1]->offerings[0]
                    ->price_per_hour ==
                want->catalogs[0]->catalog->instance_types[1]->offerings[0]
                    ->price_per_hour);
    assert_int_equal(got->options->min_values_policy,
                     want->options->min_values_policy);
    assert_int_equal(got->cluster->nodepools[0]->limits->nodes,
                     want->cluster->nodepools[0]->limits->nodes);
    assert_int_equal(got->cluster->pdbs[1]->min_available->value_case,
                     want->cluster->pdbs[1]->min_available->value_case);
}

static void spot_solve_response(const ProtobufCMessage *g, const ProtobufCMessage *w)
{
    const Tailor__V1__SolveResponse *got = (const void *)g, *want = (const void *)w;
    assert_int_equal(got->n_bindings, 2);
    /* The two bindings take different oneof members. */
    assert_int_not_equal(want->bindings[0]->target_case,
                         want->bindings[1]->target_case);
    assert_int_equal(got->bindings[0]->target_case, want->bindings[0]->target_case);
    assert_int_equal(got->bindings[1]->target_case, want->bindings[1]->target_case);
    assert_string_equal(got->new_nodeclaims[1]->instance_type_options[1]->name,
                        want->new_nodeclaims[1]->instance_type_options[1]->name);
    assert_int_equal(got->pod_errors[0]->status->code,
                     want->pod_errors[0]->status->code);
    assert_true(got->total_cost_per_hour == want->total_cost_per_hour);
}

static void spot_pending_batch(const ProtobufCMessage *g, const ProtobufCMessage *w)
{
    const Tailor__V1__PendingBatch *got = (const void *)g, *want = (const void *)w;
    assert_true(got->sequence == want->sequence);
    assert_true(got->sequence > UINT32_MAX);   /* 64-bit survived */
    assert_string_equal(got->pending_pods[0]->topology_spread_constraints[1]
                            ->label_selector->match_labels[0]->value,
                        want->pending_pods[0]->topology_spread_constraints[1]
                            ->label_selector->match_labels[0]->value);
    assert_int_equal(got->cluster->daemonsets[0]->pod_template->requests->memory_bytes,
                     want->cluster->daemonsets[0]->pod_template->requests->memory_bytes);
}

static void spot_launch_request(const ProtobufCMessage *g, const ProtobufCMessage *w)
{
    const Tailor__V1__LaunchRequest *got = (const void *)g, *want = (const void *)w;
    assert_string_equal(got->nodeclaims[1]->name, want->nodeclaims[1]->name);
    assert_int_equal(got->nodeclaims[0]->status->phase,
                     want->nodeclaims[0]->status->phase);
    assert_int_not_equal(got->nodeclaims[0]->status->phase,
                         TAILOR__V1__NODE_CLAIM_PHASE__NODECLAIM_PHASE_UNSPECIFIED);
    assert_int_equal(got->unavailable_offerings[1]->until_unix_ms,
                     want->unavailable_offerings[1]->until_unix_ms);
}

static void spot_explain_response(const ProtobufCMessage *g, const ProtobufCMessage *w)
{
    const Tailor__V1__ExplainResponse *got = (const void *)g, *want = (const void *)w;
    assert_true(got->disruptable);
    assert_int_equal(got->blockers[1]->kind, want->blockers[1]->kind);
    assert_string_equal(got->blockers[0]->object->name, want->blockers[0]->object->name);
    assert_int_equal(got->decision->method, want->decision->method);
    assert_string_equal(got->decision->pods_to_move[1]->uid,
                        want->decision->pods_to_move[1]->uid);
    assert_true(got->savings_per_hour == want->savings_per_hour);
}

static rt_case cases[] = {
    {"SolveRequest", &tailor__v1__solve_request__descriptor, spot_solve_request},
    {"SolveResponse", &tailor__v1__solve_response__descriptor, spot_solve_response},
    {"PendingBatch", &tailor__v1__pending_batch__descriptor, spot_pending_batch},
    {"LaunchRequest", &tailor__v1__launch_request__descriptor, spot_launch_request},
    {"ExplainResponse", &tailor__v1__explain_response__descriptor,
     spot_explain_response},
};

/* A packed, fully populated instance of c->desc. */
typedef struct packed {
    ProtobufCMessage *msg;   /* owned */
    uint8_t *buf;            /* owned */
    size_t len;
} packed;

static void packed_make(const rt_case *c, packed *p)
{
    fill_state fs = {0};
    char why[600] = "";
    p->msg = fill_new(c->desc, &fs, 0);
    size_t unset = count_unset(p->msg, "", why, sizeof why);
    if (unset != 0)
        fail_msg("%s: %zu fields not populated (first: %s)", c->name, unset, why);
    p->len = protobuf_c_message_get_packed_size(p->msg);
    p->buf = malloc(p->len + 64);   /* room for appended unknown fields */
    assert_non_null(p->buf);
    assert_int_equal(protobuf_c_message_pack(p->msg, p->buf), p->len);
}

static void packed_free(packed *p)
{
    protobuf_c_message_free_unpacked(p->msg, NULL);
    free(p->buf);
}

static void assert_same(const rt_case *c, const ProtobufCMessage *got,
                        const ProtobufCMessage *want)
{
    char why[600] = "";
    if (msg_diff(got, want, "", why, sizeof why) != 0)
        fail_msg("%s: %s", c->name, why);
}

/* ---- tests ------------------------------------------------------------- */

static void test_roundtrip(void **state)
{
    const rt_case *c = *state;
    packed p;
    packed_make(c, &p);
    assert_true(p.len > 1000);   /* sanity: really populated */

    ProtobufCMessage *got = protobuf_c_message_unpack(c->desc, NULL, p.len, p.buf);
    if (got == NULL)
        fail_msg("%s: unpack of %zu packed bytes failed", c->name, p.len);
    assert_same(c, got, p.msg);
    c->spot(got, p.msg);

    /* Re-packing what was unpacked gives the same bytes. */
    size_t len2 = protobuf_c_message_get_packed_size(got);
    assert_int_equal(len2, p.len);
    uint8_t *buf2 = malloc(len2);
    assert_non_null(buf2);
    protobuf_c_message_pack(got, buf2);
    assert_memory_equal(buf2, p.buf, p.len);

    free(buf2);
    protobuf_c_message_free_unpacked(got, NULL);
    packed_free(&p);
}

static void test_envelope(void **state)
{
    const rt_case *c = *state;
    packed p;
    packed_make(c, &p);

    Tailor__V1__Envelope env = TAILOR__V1__ENVELOPE__INIT;
    env.contract_version = 1;
    env.type = (char *)c->desc->name;
    env.payload.data = p.buf;
    env.payload.len = p.len;
    env.request_id = "r-1";
    env.sender = "proto_roundtrip_test";
    env.sent_unix_ms = 1767225600000;
    size_t elen = tailor__v1__envelope__get_packed_size(&env);
    uint8_t *ebuf = malloc(elen);
    assert_non_null(ebuf);
    tailor__v1__envelope__pack(&env, ebuf);

    Tailor__V1__Envelope *e = tailor__v1__envelope__unpack(NULL, elen, ebuf);
    assert_non_null(e);
    assert_int_equal(e->contract_version, 1);
    assert_string_equal(e->request_id, "r-1");
    assert_true(e->sent_unix_ms == 1767225600000);
    assert_null(e->status);
    /* The full protobuf name, as docs/contracts.md says. */
    char want_type[128];
    snprintf(want_type, sizeof want_type, "tailor.v1.%s", c->name);
    assert_string_equal(e->type, want_type);

    ProtobufCMessage *got = protobuf_c_message_unpack(c->desc, NULL,
                                                      e->payload.len,
                                                      e->payload.data);
    assert_non_null(got);
    assert_same(c, got, p.msg);

    protobuf_c_message_free_unpacked(got, NULL);
    tailor__v1__envelope__free_unpacked(e, NULL);
    free(ebuf);
    packed_free(&p);
}

static void test_unknown_fields(void **state)
{
    const rt_case *c = *state;
    packed p;
    packed_make(c, &p);

    /* A newer peer's fields: 1000 varint 7, 1001 length-delimited "hi".
     * Tag = (field << 3) | wire type, as a varint. */
    static const uint8_t extra[] = {
        0xc0, 0x3e, 0x07,                   /* (1000 << 3) | 0 */
        0xca, 0x3e, 0x02, 'h', 'i',         /* (1001 << 3) | 2 */
    };
    memcpy(p.buf + p.len, extra, sizeof extra);
    ProtobufCMessage *got = protobuf_c_message_unpack(c->desc, NULL,
                                                      p.len + sizeof extra, p.buf);
    if (got == NULL)
        fail_msg("%s: unknown fields made unpack fail", c->name);
    assert_same(c, got, p.msg);
    protobuf_c_message_free_unpacked(got, NULL);
    packed_free(&p);
}

static void test_bad_input(void **state)
{
    const rt_case *c = *state;
    packed p;
    packed_make(c, &p);

    /* Dropping the last byte always cuts the last field short. */
    ProtobufCMessage *got = protobuf_c_message_unpack(c->desc, NULL, p.len - 1, p.buf);
    if (got != NULL) {
        protobuf_c_message_free_unpacked(got, NULL);
        fail_msg("%s: truncated input decoded", c->name);
    }
    /* Field 1, length-delimited, announcing ~4 GiB. */
    static const uint8_t huge[] = {0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 'x'};
    got = protobuf_c_message_unpack(c->desc, NULL, sizeof huge, huge);
    if (got != NULL) {
        protobuf_c_message_free_unpacked(got, NULL);
        fail_msg("%s: absurd length prefix decoded", c->name);
    }
    packed_free(&p);
}

/* The comparator must see a single changed deep field, and name it. */
static void test_diff_finds_change(void **state)
{
    (void)state;
    packed p;
    packed_make(&cases[0], &p);
    Tailor__V1__SolveRequest *got = (Tailor__V1__SolveRequest *)
        protobuf_c_message_unpack(cases[0].desc, NULL, p.len, p.buf);
    assert_non_null(got);

    char why[600] = "";
    got->cluster->nodes[1]->pods[0]->requests->cpu_millis += 1;
    assert_int_equal(msg_diff(&got->base, p.msg, "", why, sizeof why), 1);
    const char *want = "cluster.nodes[1].pods[0].requests.cpu_millis: got ";
    if (strncmp(why, want, strlen(want)) != 0)
        fail_msg("diff: got \"%s\", want prefix \"%s\"", why, want);
    got->cluster->nodes[1]->pods[0]->requests->cpu_millis -= 1;
    assert_int_equal(msg_diff(&got->base, p.msg, "", why, sizeof why), 0);

    /* A dropped repeated element is a difference too. */
    got->n_pending_pods = 1;
    assert_int_equal(msg_diff(&got->base, p.msg, "", why, sizeof why), 1);
    assert_string_equal(why, "pending_pods: got 1 elements, want 2");
    got->n_pending_pods = 2;

    protobuf_c_message_free_unpacked(&got->base, NULL);
    packed_free(&p);
}

/* One test per case, named "<check>/<message>" so a failure says which. */
#define ONE_CASE(fn, check, i, msg) {check "/" msg, fn, NULL, NULL, &cases[i]}
#define PER_CASE(fn, check)                                                  \
    ONE_CASE(fn, check, 0, "SolveRequest"),                                  \
    ONE_CASE(fn, check, 1, "SolveResponse"),                                 \
    ONE_CASE(fn, check, 2, "PendingBatch"),                                  \
    ONE_CASE(fn, check, 3, "LaunchRequest"),                                 \
    ONE_CASE(fn, check, 4, "ExplainResponse")

int main(void)
{
    _Static_assert(sizeof cases / sizeof cases[0] == 5,
                   "PER_CASE lists the cases in table order");
    const struct CMUnitTest tests[] = {
        PER_CASE(test_roundtrip, "roundtrip"),
        PER_CASE(test_envelope, "envelope"),
        PER_CASE(test_unknown_fields, "unknown_fields"),
        PER_CASE(test_bad_input, "bad_input"),
        cmocka_unit_test(test_diff_finds_change),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
