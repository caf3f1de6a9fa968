/* shape.c - which instance types "differ only in size or generation".
 *
 * An EC2 family name is category + generation + attribute letters:
 * m6idn = m, 6, {i: Intel, d: local NVMe, n: network}.  The processor
 * letter (i, a, g) is redundant with the catalog's CPU maker, and m5 has
 * none at all while m6i and m7i do, so it is dropped; what remains, with
 * the category, architecture, CPU maker and GPU, is the shape.  m5, m6i
 * and m7i are one shape (m-intel); m6a (m-amd), m7g (m-graviton), m5d
 * (m-intel-d) and m7i-flex (m-intel-flex) are others.  A family whose
 * name does not follow the pattern (u-6tb1, mac2-m2pro) is a shape of its
 * own.
 *
 * Also the small helpers the other files share (string sets, sorting,
 * catalog look-up).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nodegroup_int.h"
#include "tlr_alloc.h"

static const char *maker_name(const char *m)
{
    if (!strcmp(m, "aws"))
        return "graviton";
    return m[0] ? m : "cpu";
}

void tlr_ng_shape(const Tailor__V1__InstanceType *t, char *key, size_t keylen, char *name,
                  size_t namelen)
{
    char prefix[64], caps[64] = "", gpu[96] = "";
    const char *fam = t->family, *suffix = NULL;
    size_t pl;

    snprintf(prefix, sizeof(prefix), "%s%d", t->category, t->generation);
    pl = strlen(prefix);
    if (t->category[0] && t->generation > 0 && !strncmp(fam, prefix, pl))
        suffix = fam + pl;
    if (suffix) {
        const char *s = suffix;
        const char *m = t->cpu_manufacturer;
        if ((*s == 'i' && !strcmp(m, "intel")) || (*s == 'a' && !strcmp(m, "amd")) ||
            (*s == 'g' && !strcmp(m, "aws")))
            s++;
        size_t n = 0;
        for (; *s && n + 1 < sizeof(caps); s++)
            if (*s != '-')
                caps[n++] = *s;
        caps[n] = '\0';
    }
    if (t->gpu_count > 0)
        snprintf(gpu, sizeof(gpu), "%s-%s", t->gpu_manufacturer, t->gpu_name);
    else if (t->n_accelerators > 0)
        snprintf(gpu, sizeof(gpu), "%s-%s", t->accelerators[0]->manufacturer,
                 t->accelerators[0]->name);
    if (suffix)
        snprintf(key, keylen, "%s|%s|%s|%s|%s", t->category, t->arch, t->cpu_manufacturer,
                 caps, gpu);
    else
        snprintf(key, keylen, "family:%s|%s", fam, t->arch);
    char raw[256];
    if (!suffix)
        snprintf(raw, sizeof(raw), "%s", fam);
    else if (gpu[0])
        snprintf(raw, sizeof(raw), "%s-%s%s%s", t->category, gpu, caps[0] ? "-" : "", caps);
    else
        snprintf(raw, sizeof(raw), "%s-%s%s%s", t->category, maker_name(t->cpu_manufacturer),
                 caps[0] ? "-" : "", caps);
    tlr_ng_dns_label(raw, namelen - 1 < 40 ? namelen - 1 : 40, name);
}

/* ---- helpers ---------------------------------------------------------- */

bool ng_strset_has(char *const *v, size_t n, const char *s)
{
    return n > 0 && bsearch(&s, v, n, sizeof(*v), tlr_cmp_strp) != NULL;
}

void ng_strset_add(char ***v, size_t *n, const char *s)
{
    if (ng_strset_has(*v, *n, s))
        return;
    *v = tlr_realloc(*v, (*n + 1) * sizeof(**v));
    (*v)[(*n)++] = tlr_strdup(s);
    qsort(*v, *n, sizeof(**v), tlr_cmp_strp);
}

void ng_strv_free(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static int cmp_kv(const void *a, const void *b)
{
    return strcmp(((const tlr_ng_kv *)a)->key, ((const tlr_ng_kv *)b)->key);
}

void ng_kv_sort(tlr_ng_kv *v, size_t n)
{
    if (n > 1)
        qsort(v, n, sizeof(*v), cmp_kv);
}

static int cmp_taint(const void *a, const void *b)
{
    const tlr_ng_taint *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : strcmp(x->effect, y->effect);
}

void ng_taint_sort(tlr_ng_taint *v, size_t n)
{
    if (n > 1)
        qsort(v, n, sizeof(*v), cmp_taint);
}

static int cmp_type(const void *key, const void *elem)
{
    return strcmp(key, (*(Tailor__V1__InstanceType *const *)elem)->name);
}

const Tailor__V1__InstanceType *ng_catalog_find(const Tailor__V1__Catalog *c, const char *name)
{
    if (c == NULL || c->n_instance_types == 0)
        return NULL;
    Tailor__V1__InstanceType *const *p =
        bsearch(name, c->instance_types, c->n_instance_types, sizeof(*c->instance_types),
                cmp_type);
    return p ? *p : NULL;
}
