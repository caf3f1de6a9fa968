/* tlr_arena.h - bump allocator for per-pass memory.
 *
 * One solve, one parsed response: allocate freely from the arena, then
 * reset it at the end of the pass.  Blocks are kept across resets so a
 * steady-state pass allocates nothing from malloc.
 */
#ifndef TLR_ARENA_H
#define TLR_ARENA_H

#include <stddef.h>

typedef struct tlr_arena tlr_arena;

/* On return *out is new and owned: free with tlr_arena_free(). block_size
 * is the default block size (0 = 64 KiB). */
void  tlr_arena_create(size_t block_size, tlr_arena **out);
void  tlr_arena_free(tlr_arena *a);                 /* NULL is fine */
/* Memory valid until the next reset; aligned for any type; never NULL. */
void *tlr_arena_alloc(tlr_arena *a, size_t n);
void *tlr_arena_calloc(tlr_arena *a, size_t count, size_t size);
char *tlr_arena_strdup(tlr_arena *a, const char *s); /* NULL in, NULL out */
void  tlr_arena_reset(tlr_arena *a);
size_t tlr_arena_used(const tlr_arena *a);          /* bytes handed out */

#endif
