/* wdec.c - decode a watch stream one event at a time as bytes arrive.
 *
 * A watch response is a sequence of JSON documents, one per event
 * ({"type":"ADDED","object":{...}}), each followed by a newline, sent over
 * a chunked HTTP response that may stay open for minutes.  Chunk
 * boundaries have nothing to do with event boundaries: one read may hold
 * half an event, or three and a bit.  json-c's tokener is incremental -
 * it keeps its state between calls and says "continue" until a document
 * is complete - so we feed it every byte exactly once and never keep the
 * stream, only the event being decoded.  That event is capped: bytes fed
 * since the last complete event are counted, and passing max_event fails
 * with TLR_E_TOOBIG before json-c has to hold more than that.
 */
#include <stdlib.h>
#include <string.h>

#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_kube.h"

struct tlr_kube_wdec {
    json_tokener *tok;
    size_t pending;     /* bytes of the current, incomplete event */
    size_t max;
    bool   broken;      /* an error was returned; refuse further input */
};

int tlr_kube_wdec_create(size_t max_event, tlr_kube_wdec **out)
{
    if (out == NULL)
        return TLR_E_INVAL;
    tlr_kube_wdec *d = tlr_calloc(1, sizeof(*d));
    d->tok = json_tokener_new_ex(TLR_JSON_MAX_DEPTH);
    if (d->tok == NULL)
        abort();        /* only fails on allocation */
    json_tokener_set_flags(d->tok, JSON_TOKENER_STRICT | JSON_TOKENER_ALLOW_TRAILING_CHARS);
    d->max = max_event ? max_event : (64u << 20);
    *out = d;
    return TLR_OK;
}

void tlr_kube_wdec_free(tlr_kube_wdec *d)
{
    if (d == NULL)
        return;
    json_tokener_free(d->tok);
    free(d);
}

size_t tlr_kube_wdec_pending(const tlr_kube_wdec *d)
{
    return d->pending;
}

const char *tlr_kube_event_name(tlr_kube_event_type t)
{
    switch (t) {
    case TLR_KUBE_ADDED:        return "ADDED";
    case TLR_KUBE_MODIFIED:     return "MODIFIED";
    case TLR_KUBE_DELETED:      return "DELETED";
    case TLR_KUBE_BOOKMARK:     return "BOOKMARK";
    case TLR_KUBE_ERROR:        return "ERROR";
    case TLR_KUBE_RELIST_START: return "RELIST_START";
    case TLR_KUBE_RELIST_DONE:  return "RELIST_DONE";
    }
    return "UNKNOWN";
}

static int event_type(const char *s, tlr_kube_event_type *t)
{
    static const tlr_kube_event_type all[] = {
        TLR_KUBE_ADDED, TLR_KUBE_MODIFIED, TLR_KUBE_DELETED,
        TLR_KUBE_BOOKMARK, TLR_KUBE_ERROR,
    };
    for (size_t i = 0; s != NULL && i < sizeof(all) / sizeof(all[0]); i++)
        if (strcmp(s, tlr_kube_event_name(all[i])) == 0) {
            *t = all[i];
            return TLR_OK;
        }
    return TLR_E_PARSE;
}

static int deliver(json_object *ev, tlr_kube_event_cb cb, void *arg)
{
    tlr_kube_event_type t;
    json_object *obj = tlr_json_obj(ev, "object");
    if (!json_object_is_type(ev, json_type_object) ||
        event_type(tlr_json_str(ev, "type"), &t) != TLR_OK || obj == NULL)
        return TLR_E_PARSE;
    return cb(arg, t, obj);
}

static bool is_space(char c)
{
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

int tlr_kube_wdec_feed(tlr_kube_wdec *d, const char *buf, size_t len,
                       tlr_kube_event_cb cb, void *arg)
{
    if (d == NULL || (buf == NULL && len > 0) || cb == NULL)
        return TLR_E_INVAL;
    if (d->broken)
        return TLR_E_PARSE;
    int rc = TLR_OK;
    while (len > 0) {
        if (d->pending == 0) {
            while (len > 0 && is_space(*buf)) {
                buf++;
                len--;
            }
            if (len == 0)
                break;
        }
        /* Never hand json-c more than one byte past the ceiling. */
        size_t room = d->max - d->pending + 1;
        size_t n = len < room ? len : room;
        json_object *ev = json_tokener_parse_ex(d->tok, buf, (int)n);
        enum json_tokener_error je = json_tokener_get_error(d->tok);
        if (ev == NULL && je == json_tokener_continue) {
            d->pending += n;
            if (d->pending > d->max) {
                rc = TLR_E_TOOBIG;
                goto out;
            }
            buf += n;
            len -= n;
            continue;
        }
        if (ev == NULL) {
            rc = TLR_E_PARSE;
            goto out;
        }
        size_t used = json_tokener_get_parse_end(d->tok);
        json_tokener_reset(d->tok);
        if (d->pending + used > d->max) {
            json_object_put(ev);
            rc = TLR_E_TOOBIG;
            goto out;
        }
        d->pending = 0;
        buf += used;
        len -= used;
        rc = deliver(ev, cb, arg);
        json_object_put(ev);
        if (rc != TLR_OK)
            goto out;
    }
out:
    if (rc != TLR_OK)
        d->broken = true;
    return rc;
}
