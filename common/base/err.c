/* err.c - strerror for the table in tlr_err.h. */
#include "tlr_err.h"

const char *tlr_strerror(int code)
{
    switch (code) {
#define TLR_ERR_STR(name, num, msg) case num: return msg;
        TLR_ERR_MAP(TLR_ERR_STR)
#undef TLR_ERR_STR
    }
    return "unknown error";
}

const char *tlr_errname(int code)
{
    switch (code) {
#define TLR_ERR_NAME(name, num, msg) case num: return #name;
        TLR_ERR_MAP(TLR_ERR_NAME)
#undef TLR_ERR_NAME
    }
    return "UNKNOWN";
}
