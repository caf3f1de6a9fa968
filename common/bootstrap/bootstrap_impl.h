/* bootstrap_impl.h - what bootstrap.c shares with the per-family writers
 * (nodeadm.c, al2.c, bottlerocket.c).  Private to common/bootstrap. */
#ifndef TLR_BOOTSTRAP_IMPL_H
#define TLR_BOOTSTRAP_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "tlr_bootstrap.h"
#include "tlr_mime.h"

#define BS_BOUNDARY "//"
#define BS_CT_SHELL "text/x-shellscript; charset=\"us-ascii\""
#define BS_CT_NODECONFIG "application/node.eks.aws"

/* Write a one-line reason to err (errlen bytes; may be 0) and return rc. */
int bs_fail(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Quantities as the kubelet reads them: cpu "1500m" or "2"; bytes "512Mi",
 * "1Gi", "1Ki" when that is exact, else plain bytes "1500". */
void bs_cpu_str(int64_t milli, char *buf, size_t len);
void bs_bytes_str(int64_t bytes, char *buf, size_t len);
/* A duration in milliseconds as Go's time.Duration prints it: "1m30s",
 * "500ms", "1h0m0s", "1.5s", "0s". */
void bs_duration_str(int64_t ms, char *buf, size_t len);
/* "NoSchedule", "PreferNoSchedule", "NoExecute"; NULL for anything else. */
const char *bs_effect_name(int effect);

/* The max pods to configure: in->max_pods, else spec.kubelet.maxPods, else
 * 0 (leave it to the node). */
int32_t bs_max_pods(const tlr_bootstrap_in *in);
/* The cluster DNS IPs: spec.kubelet.clusterDNS, else [cluster->dns_ip];
 * *n = 0 when neither.  Borrowed from in. */
const char *const *bs_cluster_dns(const tlr_bootstrap_in *in, size_t *n);

/* New JSON objects, keys sorted, or NULL when there is nothing to say:
 * a ResourceList as name -> quantity string (zeros left out); Labels as
 * key -> value; SignalDurations as signal -> duration string. */
json_object *bs_resource_map(const Tailor__V1__ResourceList *rl);
json_object *bs_label_map(Tailor__V1__Label *const *l, size_t n);
json_object *bs_duration_map(Tailor__V1__SignalDuration *const *d, size_t n);
/* A copy of o (borrowed) with its top-level keys sorted; values shared. */
json_object *bs_sorted(json_object *o);
/* in's labels sorted by key: a new array of n borrowed pointers (free()). */
const Tailor__V1__Label **bs_sorted_labels(const tlr_bootstrap_in *in);

/* The user's userData read as MIME parts for AL2023 and AL2: a MIME
 * document gives its parts; otherwise one part of content type
 * yaml_ct when yaml_ct is not NULL and the text is a YAML mapping, else a
 * shell script part.  Empty or NULL userData gives no parts.  On TLR_OK
 * *doc is filled (tlr_mime_doc_free).  TLR_E_PARSE with "userData: ..."
 * in err. */
int bs_user_parts(const char *user_data, const char *yaml_ct, tlr_mime_doc *doc, char *err,
                  size_t errlen);
/* Append a part (content type and body copied) to doc. */
void bs_doc_add(tlr_mime_doc *doc, const char *ct, const char *body, size_t len);

/* The family writers: *out new on TLR_OK. */
int bs_nodeadm(const tlr_bootstrap_in *in, char **out, char *err, size_t errlen);
int bs_al2(const tlr_bootstrap_in *in, char **out, char *err, size_t errlen);
int bs_bottlerocket(const tlr_bootstrap_in *in, char **out, char *err, size_t errlen);

#endif
