/* nodegroup_int.h - what the files of common/nodegroup share. */
#ifndef NODEGROUP_INT_H
#define NODEGROUP_INT_H

#include <stddef.h>
#include <stdint.h>

#include "tlr_nodegroup.h"

/* FNV-1a 64 of s; and 8 hex digits of it (out: 9 bytes). */
uint64_t ng_hash(const char *s);
void     ng_hash_hex8(const char *s, char out[9]);

/* A sorted set of owned strings. */
void ng_strset_add(char ***v, size_t *n, const char *s);   /* keeps it sorted, unique */
bool ng_strset_has(char *const *v, size_t n, const char *s);
void ng_strv_free(char **v, size_t n);

/* Sort key/value and taint lists. */
void ng_kv_sort(tlr_ng_kv *v, size_t n);
void ng_taint_sort(tlr_ng_taint *v, size_t n);

/* The catalog entry named name, or NULL (the catalog is sorted by name). */
const Tailor__V1__InstanceType *ng_catalog_find(const Tailor__V1__Catalog *c,
                                                const char *name);

#endif
