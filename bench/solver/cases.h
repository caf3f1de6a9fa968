/* cases.h - bench-solver's cluster-like cases on the real catalog.
 *
 * Each builder returns a SolveRequest that looks like a real cluster's
 * scale-up: the real catalog (DATA/aws-instance-types.json, us-east-1,
 * zones a/b/c), NodePools as people write them, DaemonSets, and
 * Deployments / StatefulSets with the constraints they carry in
 * practice.  Deterministic: a fixed-seed PRNG, no clock.  See cases.c
 * for what each case holds.
 *
 * data (borrowed) is the shared data directory.  On success the request
 * is new and owned by the caller (free with
 * tailor__v1__solve_request__free_unpacked); NULL when the catalog cannot
 * be read (the reason is printed on stderr).
 */
#ifndef BENCH_SOLVER_CASES_H
#define BENCH_SOLVER_CASES_H

#include <stddef.h>

#include "tailor/v1/solver.pb-c.h"

/* Services spread over zones and hostnames, about n pods. */
Tailor__V1__SolveRequest *bench_case_zonespread(const char *data, size_t n);
/* StatefulSets (one replica per node, spread over zones) beside
 * Deployments, about n pods. */
Tailor__V1__SolveRequest *bench_case_statefulsets(const char *data, size_t n);
/* 20 Deployments, replicas heavy-tailed (Zipf), mixed shapes, n pods. */
Tailor__V1__SolveRequest *bench_case_mix20(const char *data, size_t n);
/* A GPU pool, an on-demand pool and a spot pool with weights and limits;
 * GPU and CPU workloads (442 pods). */
Tailor__V1__SolveRequest *bench_case_gpu_cpu_pools(const char *data);

#endif
