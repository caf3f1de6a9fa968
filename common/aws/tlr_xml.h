/* tlr_xml.h - a small read-only DOM on expat, for AWS Query responses.
 *
 * Elements keep their local name (the namespace is dropped: EC2 answers
 * in xmlns="http://ec2.amazonaws.com/doc/2016-11-15/", STS and IAM in
 * their own), their text (character data directly inside the element,
 * concatenated) and their children in document order.  Attributes,
 * comments and processing instructions are dropped: AWS Query responses
 * do not use them.
 *
 * Parsing is bounded: a ceiling on the input size, the number of
 * elements and the depth, and expat's own protection against entity
 * expansion (no DTD entities are accepted at all).
 *
 * Paths are element names separated by '/': tlr_xml_find(resp,
 * "reservationSet/item") is the first <item> of the first
 * <reservationSet> child.  Lists iterate with tlr_xml_next_named():
 *
 *     for (const tlr_xml_node *it = tlr_xml_find(r, "instancesSet/item");
 *          it != NULL; it = tlr_xml_next_named(it))
 *
 * Every node pointer is borrowed from its document: valid until
 * tlr_xml_free().
 */
#ifndef TLR_XML_H
#define TLR_XML_H

#include <stddef.h>

typedef struct tlr_xml_doc tlr_xml_doc;
typedef struct tlr_xml_node tlr_xml_node;

typedef struct tlr_xml_limits {
    size_t max_bytes;    /* input ceiling; 0 = 64 MiB */
    size_t max_nodes;    /* element ceiling; 0 = 1,000,000 */
    size_t max_depth;    /* nesting ceiling; 0 = 64 */
} tlr_xml_limits;

/* Parse buf[0..len) (borrowed).  lim may be NULL for the defaults.
 * On TLR_OK *out is new and owned by the caller: tlr_xml_free().
 * TLR_E_TOOBIG: a ceiling was passed.  TLR_E_PARSE: not well-formed XML
 * (or a DTD); err (errlen bytes, may be NULL) then says where and why,
 * e.g. "line 3, column 7: mismatched tag". */
int  tlr_xml_parse(const char *buf, size_t len, const tlr_xml_limits *lim,
                   tlr_xml_doc **out, char *err, size_t errlen);
void tlr_xml_free(tlr_xml_doc *doc);   /* NULL is fine */

const tlr_xml_node *tlr_xml_root(const tlr_xml_doc *doc);

const char *tlr_xml_name(const tlr_xml_node *n);   /* local name */
const char *tlr_xml_text(const tlr_xml_node *n);   /* "" when none; NULL n -> NULL */
const tlr_xml_node *tlr_xml_first_child(const tlr_xml_node *n);
const tlr_xml_node *tlr_xml_next(const tlr_xml_node *n);        /* next sibling */
const tlr_xml_node *tlr_xml_next_named(const tlr_xml_node *n);  /* same name */
size_t tlr_xml_nchildren(const tlr_xml_node *n);

/* The first element along path under n (n itself for ""); NULL if absent
 * or n is NULL. */
const tlr_xml_node *tlr_xml_find(const tlr_xml_node *n, const char *path);
/* Its text; NULL if absent. */
const char *tlr_xml_find_text(const tlr_xml_node *n, const char *path);
/* A copy of its text, new and owned by the caller (free()); "" if absent. */
char *tlr_xml_find_dup(const tlr_xml_node *n, const char *path);
/* The first element named name anywhere below n (depth first), n
 * included; NULL if none. */
const tlr_xml_node *tlr_xml_find_deep(const tlr_xml_node *n, const char *name);

#endif
