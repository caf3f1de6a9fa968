/* ctlfiles.h - reading manifest paths, shared by solve, convert, pdb-check
 * and patch-check: a path is a file or a directory read recursively (*.yaml,
 * *.yml, *.json in name order); each file is a YAML stream or JSON, Lists
 * flattened (tlr_kubeobj_decode).  Errors are printed on stderr as
 * "tailorctl CMD: PATH: reason". */
#ifndef CTLFILES_H
#define CTLFILES_H

#include <stddef.h>

#include <json-c/json.h>

#include "tlr_alloc.h"

#define CTL_FILE_MAX (64u << 20)

typedef tlr_strvec ctl_files;   /* owned paths */

/* Append path (borrowed) or the manifests under it to files.  TLR_E_IO
 * when it cannot be read, TLR_E_TOOBIG for directories nested too deep. */
int  ctl_files_collect(const char *cmd, const char *path, ctl_files *files);
void ctl_files_free(ctl_files *files);

/* Read and decode one file.  On TLR_OK *objs is a new JSON array of
 * objects, owned by the caller. */
int  ctl_files_decode(const char *cmd, const char *path, json_object **objs);

#endif
