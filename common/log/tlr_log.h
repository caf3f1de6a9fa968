/* tlr_log.h - structured JSON logging.
 *
 * One JSON object per line on the chosen stream:
 *   {"ts":"2026-12-02T15:04:05.123Z","level":"info","service":"solver",
 *    "msg":"solve done","pods":812,"ms":3.2}
 * Lines are built in a local buffer and written with one write(2), so lines
 * from different threads never interleave.  Values marked TLR_SECRET are
 * never written: credentials cannot reach the log by accident.
 *
 *   TLR_LOG(lg, TLR_LOG_INFO, "solve done", TLR_I("pods", n), TLR_F("ms", ms));
 */
#ifndef TLR_LOG_H
#define TLR_LOG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef enum tlr_log_level {
    TLR_LOG_DEBUG = 0,
    TLR_LOG_INFO  = 1,
    TLR_LOG_WARN  = 2,
    TLR_LOG_ERROR = 3,
    TLR_LOG_FATAL = 4,
} tlr_log_level;

typedef enum tlr_kv_type {
    TLR_KV_NONE = 0, TLR_KV_STR, TLR_KV_INT, TLR_KV_FLOAT, TLR_KV_BOOL,
    TLR_KV_ERR, TLR_KV_SECRET, TLR_KV_RAW,
} tlr_kv_type;

typedef struct tlr_kv {
    const char *key;
    tlr_kv_type type;
    union {
        const char *s;
        long long i;
        double f;
        bool b;
    } v;
} tlr_kv;

#define TLR_S(k, val)  ((tlr_kv){ .key = (k), .type = TLR_KV_STR,   .v.s = (val) })
#define TLR_I(k, val)  ((tlr_kv){ .key = (k), .type = TLR_KV_INT,   .v.i = (long long)(val) })
#define TLR_F(k, val)  ((tlr_kv){ .key = (k), .type = TLR_KV_FLOAT, .v.f = (double)(val) })
#define TLR_B(k, val)  ((tlr_kv){ .key = (k), .type = TLR_KV_BOOL,  .v.b = (val) })
/* An error code: writes "error":"<tlr_strerror>" and "code":"<NAME>". */
#define TLR_ERR(rc)    ((tlr_kv){ .key = "error", .type = TLR_KV_ERR, .v.i = (rc) })
/* A secret: the key is logged with the value "[redacted]". */
#define TLR_SECRET(k)  ((tlr_kv){ .key = (k), .type = TLR_KV_SECRET })
/* Pre-rendered JSON (an object or array built by the caller). */
#define TLR_RAW(k, json) ((tlr_kv){ .key = (k), .type = TLR_KV_RAW, .v.s = (json) })

typedef struct tlr_logger tlr_logger;

typedef struct tlr_log_opts {
    const char   *service;   /* "solver"; copied */
    tlr_log_level level;     /* lines below it are dropped */
    int           fd;        /* where lines go; 2 = stderr */
} tlr_log_opts;

/* On return *out is new and owned: free with tlr_logger_free(). */
void tlr_logger_create(const tlr_log_opts *o, tlr_logger **out);
void tlr_logger_free(tlr_logger *lg);                /* NULL is fine */
void tlr_logger_set_level(tlr_logger *lg, tlr_log_level level);
bool tlr_log_enabled(const tlr_logger *lg, tlr_log_level level);

/* "debug"/"info"/"warn"/"error" (case-insensitive) -> level. */
int  tlr_log_level_parse(const char *s, tlr_log_level *out);
const char *tlr_log_level_name(tlr_log_level level);

/* Write one line.  lg may be NULL (then the line goes to stderr at info). */
void tlr_log_emit(tlr_logger *lg, tlr_log_level level, const char *msg,
                  const tlr_kv *kv, int nkv);

#define TLR_LOG(lg, level, msg, ...)                                         \
    do {                                                                     \
        const tlr_kv tlr_kv_[] = { { 0 }, ##__VA_ARGS__ };                   \
        tlr_log_emit((lg), (level), (msg), tlr_kv_ + 1,                      \
                     (int)(sizeof(tlr_kv_) / sizeof(tlr_kv_[0])) - 1);       \
    } while (0)

#define TLR_DEBUG(lg, msg, ...) TLR_LOG(lg, TLR_LOG_DEBUG, msg, ##__VA_ARGS__)
#define TLR_INFO(lg, msg, ...)  TLR_LOG(lg, TLR_LOG_INFO, msg, ##__VA_ARGS__)
#define TLR_WARN(lg, msg, ...)  TLR_LOG(lg, TLR_LOG_WARN, msg, ##__VA_ARGS__)
#define TLR_ERROR(lg, msg, ...) TLR_LOG(lg, TLR_LOG_ERROR, msg, ##__VA_ARGS__)

#endif
