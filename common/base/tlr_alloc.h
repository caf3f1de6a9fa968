/* tlr_alloc.h - allocation that never returns NULL.
 *
 * Services restart cheaply, so allocation failure aborts with a message
 * instead of threading ENOMEM through every caller (docs/STYLE.md, "Errors").
 */
#ifndef TLR_ALLOC_H
#define TLR_ALLOC_H

#include <stdarg.h>
#include <stddef.h>

void *tlr_malloc(size_t n);                  /* owned by the caller */
void *tlr_calloc(size_t count, size_t size); /* zeroed; overflow aborts */
void *tlr_realloc(void *p, size_t n);
char *tlr_strdup(const char *s);             /* NULL in, NULL out */
char *tlr_strdup0(const char *s);            /* NULL in, "" out */
char *tlr_strndup(const char *s, size_t n);
/* printf into a new string of the length it needs (owned: free). */
char *tlr_strdupf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *tlr_vstrdupf(const char *fmt, va_list ap);
/* Append tlr_vstrdupf(fmt, ap) to the array *v of *n owned strings. */
void  tlr_strv_vaddf(char ***v, size_t *n, const char *fmt, va_list ap);
/* Grow *arr so it holds at least need elements of size sz; *cap updated. */
void  tlr_grow(void **arr, size_t *cap, size_t need, size_t sz);

#define TLR_GROW(arr, cap, need) \
    tlr_grow((void **)&(arr), &(cap), (need), sizeof(*(arr)))
/* Move the n elements of array src (size sz each) onto the end of *arr,
 * which holds *len, and free src: a page of results joining what the
 * caller already has. */
void  tlr_move_onto(void **arr, size_t *len, void *src, size_t n, size_t sz);

#define TLR_MOVE_ONTO(arr, len, src, n) \
    tlr_move_onto((void **)&(arr), &(len), (src), (n), sizeof(*(arr)))

/* A growing list of owned strings; { 0 } is empty. */
typedef struct tlr_strvec {
    char **v;
    size_t n, cap;
} tlr_strvec;
void tlr_strvec_add(tlr_strvec *l, const char *s);      /* copies s */
int  tlr_strvec_find(const tlr_strvec *l, const char *s);  /* index or -1 */
void tlr_strvec_free(tlr_strvec *l);                    /* contents; empty after */

/* qsort/bsearch comparison of two char * elements, by strcmp. */
int tlr_cmp_strp(const void *a, const void *b);

#endif
