/* ctlfiles.c - manifest paths to decoded objects (ctlfiles.h). */
#include "ctlfiles.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tlr_alloc.h"
#include "tlr_buf.h"
#include "tlr_err.h"
#include "tlr_kubeobj.h"

#define DEPTH_MAX 16

static bool manifest(const char *n)
{
    size_t l = strlen(n);
    return (l > 5 && !strcmp(n + l - 5, ".yaml")) || (l > 4 && !strcmp(n + l - 4, ".yml")) ||
           (l > 5 && !strcmp(n + l - 5, ".json"));
}

static int collect(const char *cmd, const char *path, int depth, ctl_files *files)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "tailorctl %s: %s: %s\n", cmd, path, strerror(errno));
        return TLR_E_IO;
    }
    if (!S_ISDIR(st.st_mode)) {
        tlr_strvec_add(files, path);
        return TLR_OK;
    }
    if (depth > DEPTH_MAX) {
        fprintf(stderr, "tailorctl %s: %s: directories nested deeper than %d\n", cmd, path,
                DEPTH_MAX);
        return TLR_E_TOOBIG;
    }
    DIR *d = opendir(path);
    if (d == NULL) {
        fprintf(stderr, "tailorctl %s: %s: %s\n", cmd, path, strerror(errno));
        return TLR_E_IO;
    }
    ctl_files names = { 0 };
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.')
            tlr_strvec_add(&names, e->d_name);
    closedir(d);
    if (names.n > 1)
        qsort(names.v, names.n, sizeof(*names.v), tlr_cmp_strp);
    int rc = TLR_OK;
    for (size_t i = 0; i < names.n && rc == TLR_OK; i++) {
        size_t len = strlen(path) + strlen(names.v[i]) + 2;
        char *full = tlr_malloc(len);
        snprintf(full, len, "%s/%s", path, names.v[i]);
        if (stat(full, &st) == 0 && S_ISDIR(st.st_mode))
            rc = collect(cmd, full, depth + 1, files);
        else if (manifest(names.v[i]))
            tlr_strvec_add(files, full);
        free(full);
    }
    ctl_files_free(&names);
    return rc;
}

int ctl_files_collect(const char *cmd, const char *path, ctl_files *files)
{
    return collect(cmd, path, 0, files);
}

void ctl_files_free(ctl_files *f)
{
    tlr_strvec_free(f);
}

int ctl_files_decode(const char *cmd, const char *path, json_object **objs)
{
    FILE *f = fopen(path, "rb");
    tlr_buf b;
    char chunk[65536], err[512];
    size_t n;
    int rc = TLR_OK;

    if (f == NULL) {
        fprintf(stderr, "tailorctl %s: %s: %s\n", cmd, path, strerror(errno));
        return TLR_E_IO;
    }
    tlr_buf_init(&b, CTL_FILE_MAX);
    while (rc == TLR_OK && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        if (tlr_buf_add(&b, chunk, n) != TLR_OK) {
            fprintf(stderr, "tailorctl %s: %s: larger than %u MiB\n", cmd, path,
                    CTL_FILE_MAX >> 20);
            rc = TLR_E_TOOBIG;
        }
    if (rc == TLR_OK && ferror(f)) {
        fprintf(stderr, "tailorctl %s: %s: read error\n", cmd, path);
        rc = TLR_E_IO;
    }
    fclose(f);
    if (rc == TLR_OK) {
        rc = tlr_kubeobj_decode(b.data ? b.data : "", b.len, CTL_FILE_MAX, objs, err,
                                sizeof(err));
        if (rc != TLR_OK)
            fprintf(stderr, "tailorctl %s: %s: %s\n", cmd, path, err);
    }
    tlr_buf_free(&b);
    return rc;
}
