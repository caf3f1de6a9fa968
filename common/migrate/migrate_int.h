/* migrate_int.h - what the files of common/migrate share and nobody else
 * needs. */
#ifndef MIGRATE_INT_H
#define MIGRATE_INT_H

#include "tlr_migrate.h"

/* Drop the current batch's owners and restart baseline. */
void mig_baseline_clear(tlr_mig_state *s);

/* The view of node name among nodes[0..n), or NULL. */
const tlr_mig_nodev *mig_nodev(const tlr_mig_nodev *nodes, size_t n, const char *name);

#endif
