/* alloc.c - abort-on-failure allocators. */
#include "tlr_alloc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void oom(size_t n)
{
    fprintf(stderr, "{\"level\":\"fatal\",\"msg\":\"out of memory\",\"bytes\":%zu}\n", n);
    abort();
}

void *tlr_malloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        oom(n);
    return p;
}

void *tlr_calloc(size_t count, size_t size)
{
    if (size && count > SIZE_MAX / size)
        oom(SIZE_MAX);
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p)
        oom(count * size);
    return p;
}

void *tlr_realloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        oom(n);
    return q;
}

char *tlr_strdup(const char *s)
{
    return s ? tlr_strndup(s, strlen(s)) : NULL;
}

char *tlr_strdup0(const char *s)
{
    return tlr_strdup(s ? s : "");
}

int tlr_cmp_strp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

char *tlr_strndup(const char *s, size_t n)
{
    if (!s)
        return NULL;
    size_t len = strnlen(s, n);
    char *d = tlr_malloc(len + 1);
    memcpy(d, s, len);
    d[len] = '\0';
    return d;
}

char *tlr_vstrdupf(const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        n = 0;
    char *d = tlr_malloc((size_t)n + 1);
    if (vsnprintf(d, (size_t)n + 1, fmt, ap) < 0)
        d[0] = '\0';
    return d;
}

char *tlr_strdupf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *d = tlr_vstrdupf(fmt, ap);
    va_end(ap);
    return d;
}

void tlr_strv_vaddf(char ***v, size_t *n, const char *fmt, va_list ap)
{
    *v = tlr_realloc(*v, (*n + 1) * sizeof(**v));
    (*v)[(*n)++] = tlr_vstrdupf(fmt, ap);
}

void tlr_grow(void **arr, size_t *cap, size_t need, size_t sz)
{
    if (need <= *cap)
        return;
    size_t ncap = *cap ? *cap : 8;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2 / sz)
            oom(SIZE_MAX);
        ncap *= 2;
    }
    *arr = tlr_realloc(*arr, ncap * sz);
    *cap = ncap;
}

void tlr_move_onto(void **arr, size_t *len, void *src, size_t n, size_t sz)
{
    if (n > 0) {
        if (*len > SIZE_MAX / sz - n)
            oom(SIZE_MAX);
        *arr = tlr_realloc(*arr, (*len + n) * sz);
        memcpy((char *)*arr + *len * sz, src, n * sz);
        *len += n;
    }
    free(src);
}

void tlr_strvec_add(tlr_strvec *l, const char *s)
{
    TLR_GROW(l->v, l->cap, l->n + 1);
    l->v[l->n++] = tlr_strdup(s);
}

int tlr_strvec_find(const tlr_strvec *l, const char *s)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->v[i], s) == 0)
            return (int)i;
    return -1;
}

void tlr_strvec_free(tlr_strvec *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    *l = (tlr_strvec){ 0 };
}
