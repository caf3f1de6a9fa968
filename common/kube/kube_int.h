/* kube_int.h - shared between the files of common/kube; not public. */
#ifndef KUBE_INT_H
#define KUBE_INT_H

#include "tlr_kube.h"

/* tlr_kube_list with a cancel hook polled during each page request. */
int tlr_kube_list_cancelable(tlr_kube *kc, const tlr_kube_res *res, const char *ns,
                             const tlr_kube_list_opts *lo, tlr_kube_item_cb cb,
                             void *arg, char **rv, tlr_kube_status *st,
                             bool (*cancel)(void *), void *cancel_arg);

#endif
