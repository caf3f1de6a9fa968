/* log.c - JSON lines, one write(2) each. */
#include "tlr_log.h"

#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "../base/tlr_alloc.h"
#include "../base/tlr_buf.h"
#include "../base/tlr_err.h"
#include "../base/tlr_time.h"

#define LOG_LINE_MAX (64 * 1024)
/* A string field longer than this is cut (with its length said), so one
 * huge value (a request's 2 MiB type name) cannot spoil the line. */
#define LOG_VALUE_MAX 2048

struct tlr_logger {
    char *service;
    _Atomic int level;
    int fd;
};

static const char *const level_names[] = { "debug", "info", "warn", "error", "fatal" };

void tlr_logger_create(const tlr_log_opts *o, tlr_logger **out)
{
    tlr_logger *lg = tlr_calloc(1, sizeof(*lg));
    lg->service = tlr_strdup(o && o->service ? o->service : "tailor");
    atomic_store(&lg->level, o ? (int)o->level : TLR_LOG_INFO);
    lg->fd = o ? o->fd : 2;
    *out = lg;
}

void tlr_logger_free(tlr_logger *lg)
{
    if (!lg)
        return;
    free(lg->service);
    free(lg);
}

void tlr_logger_set_level(tlr_logger *lg, tlr_log_level level)
{
    atomic_store(&lg->level, (int)level);
}

bool tlr_log_enabled(const tlr_logger *lg, tlr_log_level level)
{
    int cur = lg ? atomic_load(&((tlr_logger *)lg)->level) : TLR_LOG_INFO;
    return (int)level >= cur;
}

int tlr_log_level_parse(const char *s, tlr_log_level *out)
{
    if (!s)
        return TLR_E_INVAL;
    for (int i = 0; i < 5; i++) {
        if (!strcasecmp(s, level_names[i])) {
            *out = (tlr_log_level)i;
            return TLR_OK;
        }
    }
    if (!strcasecmp(s, "warning")) {
        *out = TLR_LOG_WARN;
        return TLR_OK;
    }
    return TLR_E_INVAL;
}

const char *tlr_log_level_name(tlr_log_level level)
{
    return (unsigned)level < 5 ? level_names[level] : "unknown";
}

static void add_kv(tlr_buf *b, const tlr_kv *kv)
{
    tlr_buf_addc(b, ',');
    tlr_buf_add_json_strn(b, kv->key ? kv->key : "?", LOG_VALUE_MAX);
    tlr_buf_addc(b, ':');
    switch (kv->type) {
    case TLR_KV_STR:
        if (kv->v.s)
            tlr_buf_add_json_strn(b, kv->v.s, LOG_VALUE_MAX);
        else
            tlr_buf_adds(b, "null");
        break;
    case TLR_KV_INT:
        tlr_buf_printf(b, "%lld", kv->v.i);
        break;
    case TLR_KV_FLOAT:
        if (isfinite(kv->v.f))
            tlr_buf_printf(b, "%.6g", kv->v.f);
        else
            tlr_buf_adds(b, "null");
        break;
    case TLR_KV_BOOL:
        tlr_buf_adds(b, kv->v.b ? "true" : "false");
        break;
    case TLR_KV_ERR:
        tlr_buf_add_json_str(b, tlr_strerror((int)kv->v.i));
        tlr_buf_adds(b, ",\"code\":");
        tlr_buf_add_json_str(b, tlr_errname((int)kv->v.i));
        break;
    case TLR_KV_SECRET:
        tlr_buf_adds(b, "\"[redacted]\"");
        break;
    case TLR_KV_RAW:
        tlr_buf_adds(b, kv->v.s && *kv->v.s ? kv->v.s : "null");
        break;
    default:
        tlr_buf_adds(b, "null");
    }
}

void tlr_log_emit(tlr_logger *lg, tlr_log_level level, const char *msg,
                  const tlr_kv *kv, int nkv)
{
    if (!tlr_log_enabled(lg, level))
        return;
    char ts[TLR_TIME_BUFLEN];
    tlr_time_format_ms(tlr_wall_ms(), ts);
    tlr_buf b;
    tlr_buf_init(&b, LOG_LINE_MAX);
    tlr_buf_printf(&b, "{\"ts\":\"%s\",\"level\":\"%s\",\"service\":", ts,
                   tlr_log_level_name(level));
    tlr_buf_add_json_str(&b, lg ? lg->service : "tailor");
    tlr_buf_adds(&b, ",\"msg\":");
    tlr_buf_add_json_strn(&b, msg ? msg : "", LOG_VALUE_MAX);
    for (int i = 0; i < nkv; i++)
        add_kv(&b, &kv[i]);
    if (tlr_buf_adds(&b, "}\n")) {
        /* An over-long line is cut, never dropped: say so in a valid line. */
        tlr_buf_free(&b);
        tlr_buf_init(&b, LOG_LINE_MAX);
        tlr_buf_printf(&b, "{\"ts\":\"%s\",\"level\":\"%s\",\"msg\":\"log line too long\"}\n",
                       ts, tlr_log_level_name(level));
    }
    int fd = lg ? lg->fd : 2;
    size_t off = 0;
    while (off < b.len) {
        ssize_t n = write(fd, b.data + off, b.len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        off += (size_t)n;
    }
    tlr_buf_free(&b);
}
