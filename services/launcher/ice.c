/* ice.c - the insufficient-capacity cache (see ice.h).
 *
 * A flat array: the cache is small (a handful of offerings fail at a
 * time) and read once per Solve, so a linear scan beats a hash table.
 */
#include "ice.h"

#include <stdlib.h>
#include <string.h>

#include "tlr_alloc.h"

typedef struct ice_entry {
    char *type, *zone, *reason;
    Tailor__V1__CapacityType ct;
    int64_t until_ms;
} ice_entry;

struct lc_ice {
    const tlr_clock *clock;
    int64_t ttl_ms;
    ice_entry *v;
    size_t n, cap;
};

void lc_ice_create(const tlr_clock *clock, int64_t ttl_ms, lc_ice **out)
{
    lc_ice *c = tlr_calloc(1, sizeof(*c));
    c->clock = clock;
    c->ttl_ms = ttl_ms > 0 ? ttl_ms : LC_ICE_TTL_MS;
    *out = c;
}

static void entry_clear(ice_entry *e)
{
    free(e->type);
    free(e->zone);
    free(e->reason);
}

void lc_ice_free(lc_ice *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++)
        entry_clear(&c->v[i]);
    free(c->v);
    free(c);
}

static int64_t now_ms(const lc_ice *c)
{
    return c->clock->wall_ms(c->clock->arg);
}

/* Drop expired entries (order is not kept: nothing depends on it). */
static void prune(lc_ice *c)
{
    int64_t now = now_ms(c);
    for (size_t i = 0; i < c->n;) {
        if (c->v[i].until_ms <= now) {
            entry_clear(&c->v[i]);
            c->v[i] = c->v[--c->n];
        } else {
            i++;
        }
    }
}

static ice_entry *find(lc_ice *c, const char *type, const char *zone,
                       Tailor__V1__CapacityType ct)
{
    for (size_t i = 0; i < c->n; i++) {
        ice_entry *e = &c->v[i];
        if (e->ct == ct && strcmp(e->type, type) == 0 && strcmp(e->zone, zone) == 0)
            return e;
    }
    return NULL;
}

static void put(lc_ice *c, const char *type, const char *zone, Tailor__V1__CapacityType ct,
                const char *reason, int64_t until_ms)
{
    prune(c);
    ice_entry *e = find(c, type, zone, ct);
    if (e) {
        if (until_ms > e->until_ms)
            e->until_ms = until_ms;
        return;
    }
    if (c->n == LC_ICE_MAX) {
        /* Full: replace the entry that would expire first. */
        size_t first = 0;
        for (size_t i = 1; i < c->n; i++)
            if (c->v[i].until_ms < c->v[first].until_ms)
                first = i;
        entry_clear(&c->v[first]);
        c->v[first] = c->v[--c->n];
    }
    TLR_GROW(c->v, c->cap, c->n + 1);
    e = &c->v[c->n++];
    e->type = tlr_strdup(type);
    e->zone = tlr_strdup(zone);
    e->reason = tlr_strdup(reason ? reason : "");
    e->ct = ct;
    e->until_ms = until_ms;
}

void lc_ice_mark(lc_ice *c, const char *type, const char *zone,
                 Tailor__V1__CapacityType ct, const char *reason)
{
    put(c, type, zone ? zone : "", ct, reason, now_ms(c) + c->ttl_ms);
}

void lc_ice_merge(lc_ice *c, const Tailor__V1__OfferingUnavailable *u)
{
    int64_t now = now_ms(c);
    if (!u->instance_type || !u->instance_type[0] || u->until_unix_ms <= now)
        return;
    /* A caller's expiry is capped at this cache's own TTL: an entry sent
     * with a far expiry must not take an offering away for good. */
    int64_t until = u->until_unix_ms - now > c->ttl_ms ? now + c->ttl_ms : u->until_unix_ms;
    put(c, u->instance_type, u->zone ? u->zone : "", u->capacity_type, u->reason, until);
}

bool lc_ice_unavailable(lc_ice *c, const char *type, const char *zone,
                        Tailor__V1__CapacityType ct)
{
    prune(c);
    /* An entry without a zone covers every zone of the type. */
    return find(c, type, zone ? zone : "", ct) != NULL || find(c, type, "", ct) != NULL;
}

size_t lc_ice_count(lc_ice *c)
{
    prune(c);
    return c->n;
}

void lc_ice_list(lc_ice *c, Tailor__V1__OfferingUnavailable ***out, size_t *n)
{
    prune(c);
    Tailor__V1__OfferingUnavailable **v = tlr_calloc(c->n ? c->n : 1, sizeof(*v));
    for (size_t i = 0; i < c->n; i++) {
        Tailor__V1__OfferingUnavailable *u = tlr_malloc(sizeof(*u));
        tailor__v1__offering_unavailable__init(u);
        u->instance_type = tlr_strdup(c->v[i].type);
        u->zone = tlr_strdup(c->v[i].zone);
        u->reason = tlr_strdup(c->v[i].reason);
        u->capacity_type = c->v[i].ct;
        u->until_unix_ms = c->v[i].until_ms;
        v[i] = u;
    }
    *out = v;
    *n = c->n;
}

void lc_ice_list_free(Tailor__V1__OfferingUnavailable **v, size_t n)
{
    if (!v)
        return;
    for (size_t i = 0; i < n; i++)
        protobuf_c_message_free_unpacked(&v[i]->base, NULL);
    free(v);
}
