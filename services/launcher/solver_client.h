/* solver_client.h - lc_solver_ops over a tlr_req client dialling every
 * solver replica (any replica answers any Solve: they are stateless). */
#ifndef LC_SOLVER_CLIENT_H
#define LC_SOLVER_CLIENT_H

#include "lc_ops.h"
#include "tlr_req.h"

/* req borrowed; must outlive the ops.  timeout_ms per attempt (0 = the
 * client's). */
typedef struct lc_solver_client {
    tlr_req_client *req;
    int timeout_ms;
    tlr_logger *log;
} lc_solver_client;

lc_solver_ops lc_solver_ops_of(lc_solver_client *c);

#endif
