/* names.c - Kubernetes name and label rules for converted objects.
 *
 * NodePool names end up as the karpenter.sh/nodepool label value and in
 * NodeClaim names, so they are kept to DNS-1123 labels (63 characters,
 * [a-z0-9-]), which satisfies the DNS-1123 subdomain rule the API server
 * applies to the object name and the label-value rule at once.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "nodegroup_int.h"
#include "tlr_hash.h"
#include "tlr_nodegroup.h"

uint64_t ng_hash(const char *s)
{
    return tlr_fnv1a64_str(TLR_FNV64_BASIS, s);   /* stable across builds */
}

void ng_hash_hex8(const char *s, char out[9])
{
    uint64_t h = ng_hash(s);
    snprintf(out, 9, "%08x", (unsigned)(h ^ (h >> 32)));
}

void tlr_ng_dns_label(const char *s, size_t max, char *out)
{
    size_t n = 0, full = 0;
    bool dash = false;
    char tmp[512];

    if (max > 63)
        max = 63;
    if (max < 10)
        max = 10;
    for (const char *p = s; *p && full < sizeof(tmp) - 1; p++) {
        unsigned char c = (unsigned char)tolower((unsigned char)*p);
        if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
            if (dash && full > 0)
                tmp[full++] = '-';
            dash = false;
            tmp[full++] = (char)c;
        } else {
            dash = true;
        }
    }
    tmp[full] = '\0';
    if (full == 0) {
        strcpy(out, "x");
        return;
    }
    if (full <= max) {
        memcpy(out, tmp, full + 1);
        return;
    }
    /* Cut, then "-" + hash of the whole input so long names stay distinct. */
    char hex[9];
    ng_hash_hex8(s, hex);
    n = max - 9;
    while (n > 0 && tmp[n - 1] == '-')
        n--;
    memcpy(out, tmp, n);
    out[n] = '-';
    memcpy(out + n + 1, hex, 9);
}

bool tlr_ng_is_dns_label(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (!alnum && (c != '-' || i == 0 || i == n - 1))
            return false;
    }
    return true;
}

static bool alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

bool tlr_ng_is_label_value(const char *s)
{
    size_t n = strlen(s);
    if (n == 0)
        return true;
    if (n > 63 || !alnum(s[0]) || !alnum(s[n - 1]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
            return false;
    return true;
}

/* A DNS-1123 subdomain: dot-separated labels, 253 characters at most. */
static bool dns_subdomain(const char *s, size_t n)
{
    if (n == 0 || n > 253)
        return false;
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || s[i] == '.') {
            char part[254];
            size_t l = i - start;
            if (l == 0 || l > 63)
                return false;
            memcpy(part, s + start, l);
            part[l] = '\0';
            if (!tlr_ng_is_dns_label(part))
                return false;
            start = i + 1;
        }
    }
    return true;
}

bool tlr_ng_is_label_key(const char *s)
{
    const char *slash = strchr(s, '/');
    const char *name = slash ? slash + 1 : s;
    if (slash && (strchr(name, '/') || !dns_subdomain(s, (size_t)(slash - s))))
        return false;
    return name[0] != '\0' && tlr_ng_is_label_value(name);
}
