/* tlr_err.h - tailor's error codes: one table, one enum, one strerror.
 *
 * Every fallible function returns 0 (TLR_OK) or one of these codes.  The
 * numbers are part of the wire contract: proto Status.code carries them
 * across processes, so a code is never renumbered or reused.  Add new codes
 * at the end of the table.
 */
#ifndef TLR_ERR_H
#define TLR_ERR_H

/* X(NAME, number, message) */
#define TLR_ERR_MAP(X)                                                       \
    X(OK,            0,  "success")                                          \
    X(NOMEM,         1,  "out of memory")                                    \
    X(INVAL,         2,  "invalid argument")                                 \
    X(PARSE,         3,  "malformed input")                                  \
    X(RANGE,         4,  "value out of range")                               \
    X(NOTFOUND,      5,  "not found")                                        \
    X(EXISTS,        6,  "already exists")                                   \
    X(TIMEOUT,       7,  "timed out")                                        \
    X(CLOSED,        8,  "closed")                                           \
    X(IO,            9,  "input/output error")                               \
    X(DECODE,        10, "malformed protobuf message")                       \
    X(VERSION,       11, "unsupported contract version")                     \
    X(UNKNOWN_TYPE,  12, "unknown message type")                             \
    X(TOOBIG,        13, "message or input too large")                       \
    X(UNAVAILABLE,   14, "no peer available")                                \
    X(REMOTE,        15, "remote peer reported an error")                    \
    X(UNIMPLEMENTED, 16, "not implemented")                                  \
    X(CONFLICT,      17, "conflict: object changed")                         \
    X(AUTH,          18, "authentication or authorization failed")           \
    X(THROTTLED,     19, "request throttled")                                \
    X(CAPACITY,      20, "insufficient capacity")                            \
    X(UNSCHEDULABLE, 21, "pod cannot be scheduled")                          \
    X(INTERNAL,      22, "internal error")                                   \
    X(BUSY,          23, "busy")                                             \
    X(GONE,          24, "resource version too old")                         \
    X(NOTREADY,      25, "not ready")                                        \
    X(CANCELED,      26, "canceled")

typedef enum tlr_err {
#define TLR_ERR_ENUM(name, num, msg) TLR_E_##name = num,
    TLR_ERR_MAP(TLR_ERR_ENUM)
#undef TLR_ERR_ENUM
} tlr_err;

#define TLR_OK TLR_E_OK

/* A static, human-readable message for code; "unknown error" for codes not
 * in the table (e.g. from a newer peer). */
const char *tlr_strerror(int code);

/* The symbolic name ("TIMEOUT") for code, or "UNKNOWN". */
const char *tlr_errname(int code);

#endif
