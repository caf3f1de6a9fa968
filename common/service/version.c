/* version.c - what --version prints: the release, the commit and the
 * contract.  The only file that includes the generated tlr_commit.h, so a
 * new commit recompiles this file alone. */
#include <stdio.h>

#include "tlr_commit.h"
#include "tlr_service.h"

const char *tlr_build_commit(void)
{
    return TLR_COMMIT;
}

void tlr_version_print(FILE *out, const char *prog)
{
    fprintf(out, "%s %s (commit %s, contract tailor.v1)\n", prog, TLR_VERSION, TLR_COMMIT);
}
