/* arena.c - bump allocator with block reuse. */
#include "tlr_arena.h"

#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_alloc.h"

typedef struct block {
    struct block *next;
    size_t size;
    size_t used;
    alignas(max_align_t) unsigned char mem[];
} block;

struct tlr_arena {
    block *head;      /* current block; earlier blocks follow */
    block *spare;     /* blocks freed by reset, reused first */
    size_t block_size;
    size_t used;
};

void tlr_arena_create(size_t block_size, tlr_arena **out)
{
    tlr_arena *a = tlr_calloc(1, sizeof(*a));
    a->block_size = block_size ? block_size : 64 * 1024;
    *out = a;
}

static void free_list(block *b)
{
    while (b) {
        block *n = b->next;
        free(b);
        b = n;
    }
}

void tlr_arena_free(tlr_arena *a)
{
    if (!a)
        return;
    free_list(a->head);
    free_list(a->spare);
    free(a);
}

void *tlr_arena_alloc(tlr_arena *a, size_t n)
{
    const size_t align = alignof(max_align_t);
    n = (n + align - 1) & ~(align - 1);
    if (!a->head || a->head->size - a->head->used < n) {
        block *b = NULL;
        if (a->spare && a->spare->size >= n) {
            b = a->spare;
            a->spare = b->next;
        } else {
            size_t size = n > a->block_size ? n : a->block_size;
            b = tlr_malloc(sizeof(*b) + size);
            b->size = size;
        }
        b->used = 0;
        b->next = a->head;
        a->head = b;
    }
    void *p = a->head->mem + a->head->used;
    a->head->used += n;
    a->used += n;
    return p;
}

void *tlr_arena_calloc(tlr_arena *a, size_t count, size_t size)
{
    if (size && count > SIZE_MAX / size)
        abort();
    void *p = tlr_arena_alloc(a, count * size);
    memset(p, 0, count * size);
    return p;
}

char *tlr_arena_strdup(tlr_arena *a, const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = tlr_arena_alloc(a, n);
    memcpy(d, s, n);
    return d;
}

void tlr_arena_reset(tlr_arena *a)
{
    /* Keep regular-sized blocks for reuse; oversized ones go back to malloc
     * so one huge pass does not pin its memory forever. */
    block *b = a->head;
    while (b) {
        block *n = b->next;
        if (b->size == a->block_size) {
            b->next = a->spare;
            a->spare = b;
        } else {
            free(b);
        }
        b = n;
    }
    a->head = NULL;
    a->used = 0;
}

size_t tlr_arena_used(const tlr_arena *a)
{
    return a->used;
}
