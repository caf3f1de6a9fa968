/* xml.c - tlr_xml: a bounded read-only DOM built with expat.
 *
 * Nodes and strings live in one arena owned by the document.  While
 * parsing, the open elements form a stack; each keeps its text in a
 * tlr_buf until its end tag, when the text is copied into the arena.
 * A DOCTYPE stops the parse: AWS never sends one, and refusing it rules
 * out entity expansion attacks whatever expat's own defences are.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <expat.h>

#include "tlr_alloc.h"
#include "tlr_arena.h"
#include "tlr_buf.h"
#include "tlr_err.h"
#include "tlr_xml.h"

#define NS_SEP '\x01'

struct tlr_xml_node {
    const char *name;
    const char *text;
    tlr_xml_node *first, *last, *next;
    size_t nchildren;
};

struct tlr_xml_doc {
    tlr_arena *arena;
    tlr_xml_node *root;
};

typedef struct frame {
    tlr_xml_node *node;
    tlr_buf text;
} frame;

typedef struct parse_ctx {
    XML_Parser p;
    tlr_xml_doc *doc;
    frame *stack;
    size_t depth, max_depth;
    size_t nodes, max_nodes, max_text;
    int rc;             /* first error from a handler */
    const char *why;    /* its reason */
} parse_ctx;

static void stop(parse_ctx *c, int rc, const char *why)
{
    if (c->rc == TLR_OK) {
        c->rc = rc;
        c->why = why;
    }
    XML_StopParser(c->p, XML_FALSE);
}

static void on_start(void *ud, const XML_Char *name, const XML_Char **attrs)
{
    parse_ctx *c = ud;
    const char *local = strrchr(name, NS_SEP);
    const char *colon;
    tlr_xml_node *n;

    (void)attrs;
    if (c->rc != TLR_OK)
        return;
    if (c->depth >= c->max_depth) {
        stop(c, TLR_E_TOOBIG, "elements nested too deeply");
        return;
    }
    if (++c->nodes > c->max_nodes) {
        stop(c, TLR_E_TOOBIG, "too many elements");
        return;
    }
    local = local != NULL ? local + 1 : name;
    /* An undeclared prefix reaches us unsplit ("ns:item"). */
    if ((colon = strrchr(local, ':')) != NULL)
        local = colon + 1;
    n = tlr_arena_calloc(c->doc->arena, 1, sizeof(*n));
    n->name = tlr_arena_strdup(c->doc->arena, local);
    if (c->depth == 0) {
        c->doc->root = n;
    } else {
        tlr_xml_node *parent = c->stack[c->depth - 1].node;

        if (parent->last != NULL)
            parent->last->next = n;
        else
            parent->first = n;
        parent->last = n;
        parent->nchildren++;
    }
    c->stack[c->depth].node = n;
    tlr_buf_init(&c->stack[c->depth].text, c->max_text);
    c->depth++;
}

static void on_end(void *ud, const XML_Char *name)
{
    parse_ctx *c = ud;
    frame *f;

    (void)name;
    if (c->rc != TLR_OK || c->depth == 0)
        return;
    f = &c->stack[--c->depth];
    f->node->text = tlr_arena_strdup(c->doc->arena, tlr_buf_str(&f->text));
    tlr_buf_free(&f->text);
}

static void on_text(void *ud, const XML_Char *s, int len)
{
    parse_ctx *c = ud;

    if (c->rc != TLR_OK || c->depth == 0)
        return;
    if (tlr_buf_add(&c->stack[c->depth - 1].text, s, (size_t)len) != TLR_OK)
        stop(c, TLR_E_TOOBIG, "element text too long");
}

static void on_doctype(void *ud, const XML_Char *name, const XML_Char *sysid,
                       const XML_Char *pubid, int has_internal_subset)
{
    (void)name;
    (void)sysid;
    (void)pubid;
    (void)has_internal_subset;
    stop(ud, TLR_E_PARSE, "DOCTYPE not allowed");
}

int tlr_xml_parse(const char *buf, size_t len, const tlr_xml_limits *lim,
                  tlr_xml_doc **out, char *err, size_t errlen)
{
    parse_ctx c = { 0 };
    tlr_xml_doc *doc = NULL;
    size_t max_bytes = lim && lim->max_bytes ? lim->max_bytes : (size_t)64 << 20;
    int rc = TLR_OK;

    if (err != NULL && errlen > 0)
        err[0] = '\0';
    if (buf == NULL || out == NULL)
        return TLR_E_INVAL;
    if (len > max_bytes) {
        if (err != NULL)
            snprintf(err, errlen, "%zu bytes, more than the limit of %zu", len, max_bytes);
        return TLR_E_TOOBIG;
    }
    if (len > (size_t)0x7fffffff)
        return TLR_E_TOOBIG;
    doc = tlr_calloc(1, sizeof(*doc));
    tlr_arena_create(0, &doc->arena);
    c.doc = doc;
    c.max_depth = lim && lim->max_depth ? lim->max_depth : 64;
    c.max_nodes = lim && lim->max_nodes ? lim->max_nodes : 1000000;
    c.max_text = max_bytes;
    c.stack = tlr_calloc(c.max_depth, sizeof(*c.stack));
    c.p = XML_ParserCreateNS("UTF-8", NS_SEP);
    if (c.p == NULL)
        abort();
    XML_SetUserData(c.p, &c);
    XML_SetElementHandler(c.p, on_start, on_end);
    XML_SetCharacterDataHandler(c.p, on_text);
    XML_SetStartDoctypeDeclHandler(c.p, on_doctype);

    if (XML_Parse(c.p, buf, (int)len, XML_TRUE) != XML_STATUS_OK || c.rc != TLR_OK) {
        rc = c.rc != TLR_OK ? c.rc : TLR_E_PARSE;
        if (err != NULL)
            snprintf(err, errlen, "line %lu, column %lu: %s",
                     (unsigned long)XML_GetCurrentLineNumber(c.p),
                     (unsigned long)XML_GetCurrentColumnNumber(c.p) + 1,
                     c.why != NULL ? c.why : XML_ErrorString(XML_GetErrorCode(c.p)));
        goto out;
    }
    if (doc->root == NULL) {
        rc = TLR_E_PARSE;
        if (err != NULL)
            snprintf(err, errlen, "no root element");
        goto out;
    }
    *out = doc;
    doc = NULL;
out:
    while (c.depth > 0)
        tlr_buf_free(&c.stack[--c.depth].text);
    free(c.stack);
    XML_ParserFree(c.p);
    tlr_xml_free(doc);
    return rc;
}

void tlr_xml_free(tlr_xml_doc *doc)
{
    if (doc == NULL)
        return;
    tlr_arena_free(doc->arena);
    free(doc);
}

const tlr_xml_node *tlr_xml_root(const tlr_xml_doc *doc)
{
    return doc != NULL ? doc->root : NULL;
}

const char *tlr_xml_name(const tlr_xml_node *n)
{
    return n != NULL ? n->name : NULL;
}

const char *tlr_xml_text(const tlr_xml_node *n)
{
    return n != NULL ? (n->text != NULL ? n->text : "") : NULL;
}

const tlr_xml_node *tlr_xml_first_child(const tlr_xml_node *n)
{
    return n != NULL ? n->first : NULL;
}

const tlr_xml_node *tlr_xml_next(const tlr_xml_node *n)
{
    return n != NULL ? n->next : NULL;
}

const tlr_xml_node *tlr_xml_next_named(const tlr_xml_node *n)
{
    if (n == NULL)
        return NULL;
    for (const tlr_xml_node *s = n->next; s != NULL; s = s->next)
        if (strcmp(s->name, n->name) == 0)
            return s;
    return NULL;
}

size_t tlr_xml_nchildren(const tlr_xml_node *n)
{
    return n != NULL ? n->nchildren : 0;
}

const tlr_xml_node *tlr_xml_find(const tlr_xml_node *n, const char *path)
{
    const char *p = path;

    if (n == NULL || path == NULL)
        return NULL;
    while (*p != '\0' && n != NULL) {
        size_t seg = strcspn(p, "/");
        const tlr_xml_node *c;

        for (c = n->first; c != NULL; c = c->next)
            if (strlen(c->name) == seg && memcmp(c->name, p, seg) == 0)
                break;
        n = c;
        p += seg;
        if (*p == '/')
            p++;
    }
    return n;
}

const char *tlr_xml_find_text(const tlr_xml_node *n, const char *path)
{
    return tlr_xml_text(tlr_xml_find(n, path));
}

char *tlr_xml_find_dup(const tlr_xml_node *n, const char *path)
{
    const char *t = tlr_xml_find_text(n, path);

    return tlr_strdup(t != NULL ? t : "");
}

const tlr_xml_node *tlr_xml_find_deep(const tlr_xml_node *n, const char *name)
{
    if (n == NULL || name == NULL)
        return NULL;
    if (strcmp(n->name, name) == 0)
        return n;
    for (const tlr_xml_node *c = n->first; c != NULL; c = c->next) {
        const tlr_xml_node *hit = tlr_xml_find_deep(c, name);

        if (hit != NULL)
            return hit;
    }
    return NULL;
}
