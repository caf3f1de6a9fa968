/* tlr_hash.h - the one FNV hash every module uses (header only).
 *
 * FNV-1a: for each byte, h ^= byte, then h *= prime.  Start from a basis
 * and chain calls to hash several fields: tlr_fnv1a64_str(tlr_fnv1a64_str(
 * TLR_FNV64_BASIS, a), b) is the hash of a's bytes followed by b's.
 *
 * Some values are persisted or visible, so these functions never change:
 * the disruptor's protection-room names (protect.c), tailorctl migrate's
 * state ConfigMap names (migrate/state.c, 32-bit), the converted node
 * groups' names (nodegroup/names.c) and the launcher's instance-profile
 * names (profile.c, FNV-1, as Karpenter names them).
 *
 * TLR_FNV64_BASIS_SHORT is the standard basis with its last digit missing
 * (1469598103934665603 for 14695981039346656037).  tailor's hashes have
 * started from it since the beginning; the protection-room names and the
 * order of the solver's tables depend on it, so it stays where it is used. */
#ifndef TLR_HASH_H
#define TLR_HASH_H

#include <stddef.h>
#include <stdint.h>

#define TLR_FNV64_BASIS       14695981039346656037ULL
#define TLR_FNV64_BASIS_SHORT 1469598103934665603ULL
#define TLR_FNV64_PRIME       1099511628211ULL
#define TLR_FNV32_BASIS       2166136261u
#define TLR_FNV32_PRIME       16777619u

/* FNV-1a 64 of n bytes at p, continuing from h. */
static inline uint64_t tlr_fnv1a64(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * TLR_FNV64_PRIME;
    return h;
}

/* FNV-1a 64 of the string s (NULL hashes as ""), continuing from h. */
static inline uint64_t tlr_fnv1a64_str(uint64_t h, const char *s)
{
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * TLR_FNV64_PRIME;
    return h;
}

/* One FNV-1a round over a whole 64-bit word (not its bytes): a cheap mix
 * for in-memory table keys made of numbers. */
static inline uint64_t tlr_fnv1a64_word(uint64_t h, uint64_t v)
{
    return (h ^ v) * TLR_FNV64_PRIME;
}

/* FNV-1a 32 of n bytes at p, continuing from h. */
static inline uint32_t tlr_fnv1a32(uint32_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * TLR_FNV32_PRIME;
    return h;
}

/* FNV-1a 32 of the string s (NULL hashes as ""), continuing from h. */
static inline uint32_t tlr_fnv1a32_str(uint32_t h, const char *s)
{
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * TLR_FNV32_PRIME;
    return h;
}

/* FNV-1 64 (multiply, then xor) of the string s, continuing from h: what
 * Go's hashstructure v2 uses, hence Karpenter's instance-profile names. */
static inline uint64_t tlr_fnv1_64_str(uint64_t h, const char *s)
{
    for (; s && *s; s++)
        h = (h * TLR_FNV64_PRIME) ^ (unsigned char)*s;
    return h;
}

#endif
