/* lease_test.c - who leads and until when: observed-time expiry, the
 * renew deadline, valid-until, and a renew thread that stalls. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tlr_err.h"
#include "tlr_lease.h"
#include "tlr_time.h"

static void test_decide(void **state)
{
    (void)state;
    /* seen: holder, when we saw the record change (mono). */
    struct { const char *holder; int64_t seen_at, now; tlr_lease_action want; } cases[] = {
        { "", 1000, 1000, TLR_LEASE_ACQUIRE },              /* free */
        { "me", 1000, 1000 + 60000, TLR_LEASE_RENEW },      /* ours: renew even if late */
        { "other", 1000, 1000 + 14999, TLR_LEASE_FOLLOW },  /* live */
        { "other", 1000, 1000 + 15000, TLR_LEASE_ACQUIRE }, /* unchanged for a lease duration */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        tlr_lease_seen s = { 0 };
        tlr_lease_observe(&s, cases[i].holder, "2026-01-01T00:00:00.000000Z", "7",
                          cases[i].seen_at);
        tlr_lease_action got = tlr_lease_decide(&s, 15000, "me", cases[i].now);
        if (got != cases[i].want)
            fail_msg("case %zu (%s): got %d want %d", i, cases[i].holder, got, cases[i].want);
    }
}

/* Expiry runs from when THIS replica saw the record change, whatever the
 * renewTime says: a holder whose clock is an hour behind is still live
 * while it keeps renewing, and one that stopped is taken over a lease
 * duration after its last change was seen, not at once. */
static void test_observed_time(void **state)
{
    (void)state;
    tlr_lease_seen s = { 0 };
    /* renewTime an hour in the past by our wall clock: irrelevant. */
    assert_true(tlr_lease_observe(&s, "other", "2020-01-01T00:00:00.000000Z", "10", 5000));
    assert_int_equal(tlr_lease_decide(&s, 15000, "me", 5000), TLR_LEASE_FOLLOW);
    /* The same record read again: no change, the clock keeps running. */
    assert_false(tlr_lease_observe(&s, "other", "2020-01-01T00:00:00.000000Z", "10", 12000));
    assert_int_equal(s.at_mono_ms, 5000);
    /* The holder renews (new renewTime, new resourceVersion): restart. */
    assert_true(tlr_lease_observe(&s, "other", "2020-01-01T00:00:02.000000Z", "11", 19000));
    assert_int_equal(tlr_lease_decide(&s, 15000, "me", 20000 + 5000), TLR_LEASE_FOLLOW);
    assert_int_equal(tlr_lease_decide(&s, 15000, "me", 19000 + 14999), TLR_LEASE_FOLLOW);
    assert_int_equal(tlr_lease_decide(&s, 15000, "me", 19000 + 15000), TLR_LEASE_ACQUIRE);
    /* Only the resourceVersion moved (someone wrote it): still a change. */
    assert_true(tlr_lease_observe(&s, "other", "2020-01-01T00:00:02.000000Z", "12", 40000));
    assert_int_equal(tlr_lease_decide(&s, 15000, "me", 40000 + 1000), TLR_LEASE_FOLLOW);
    /* A renewTime far in the future (a fast clock) does not make it live longer. */
    assert_true(tlr_lease_observe(&s, "fast", "2099-01-01T00:00:00.000000Z", "13", 50000));
    assert_int_equal(tlr_lease_decide(&s, 15000, "me", 65000), TLR_LEASE_ACQUIRE);
}

/* valid-until = send time + renew deadline; an answer after that proves
 * nothing. */
static void test_valid_until(void **state)
{
    (void)state;
    assert_int_equal(tlr_lease_valid_until(1000, 1050, 10000), 11000);
    assert_int_equal(tlr_lease_valid_until(1000, 10999, 10000), 11000);  /* slow but in time */
    assert_int_equal(tlr_lease_valid_until(1000, 11000, 10000), 0);      /* too late */
    tlr_fence f;
    tlr_fence_init(&f);
    assert_false(tlr_fence_valid(&f, 1));
    tlr_fence_set(&f, 11000);
    assert_true(tlr_fence_valid(&f, 10999));
    assert_int_equal(tlr_fence_left_ms(&f, 10000), 1000);
    assert_false(tlr_fence_valid(&f, 11000));   /* the deadline itself: stop */
    assert_true(tlr_fence_valid(NULL, 0));       /* unfenced */
    assert_int_equal(tlr_fence_left_ms(NULL, 0), INT64_MAX);
}

static void test_durations_checked(void **state)
{
    (void)state;
    tlr_fence f;
    tlr_fence_init(&f);
    tlr_lease *l = NULL;
    char why[256] = "";
    tlr_lease_opts o = { .kc = (tlr_kube *)1, .ns = "default", .name = "x", .identity = "me",
                         .duration_ms = 10000, .renew_deadline_ms = 10000, .fence = &f };
    assert_int_equal(tlr_lease_start(&o, &l, why, sizeof(why)), TLR_E_INVAL);
    assert_non_null(strstr(why, "renew deadline"));
    o.renew_deadline_ms = 5000;
    o.retry_ms = 5000;
    assert_int_equal(tlr_lease_start(&o, &l, why, sizeof(why)), TLR_E_INVAL);
    assert_null(l);
}

/* A fenced Kubernetes client: no write once the fence has run out (not
 * even a connection attempt: nothing listens on the port, and the write
 * fails NotLeader, not with a transport error); reads are not fenced. */
static void test_kube_fence(void **state)
{
    (void)state;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t alen = sizeof(a);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
    close(fd);   /* a port nobody listens on */
    char yaml[512], err[256];
    snprintf(yaml, sizeof(yaml),
             "apiVersion: v1\nkind: Config\ncurrent-context: t\n"
             "clusters: [{name: t, cluster: {server: 'http://127.0.0.1:%d'}}]\n"
             "users: [{name: t, user: {}}]\n"
             "contexts: [{name: t, context: {cluster: t, user: t}}]\n", ntohs(a.sin_port));
    tlr_kube_config *cfg = NULL;
    assert_int_equal(tlr_kube_config_parse(yaml, strlen(yaml), NULL, NULL, &cfg, err,
                                           sizeof(err)), TLR_OK);
    tlr_fence f;
    tlr_fence_init(&f);
    tlr_kube *kc = NULL;
    tlr_kube_opts ko = { .fence = &f };
    assert_int_equal(tlr_kube_create(cfg, &ko, &kc), TLR_OK);
    tlr_kube_status st = { 0 };
    assert_int_equal(tlr_kube_delete(kc, &TLR_KUBE_RES_NODECLAIMS, NULL, "c1", NULL, &st),
                     TLR_E_CANCELED);
    assert_string_equal(st.reason, "NotLeader");
    assert_int_equal(tlr_kube_evict(kc, "default", "p1", &st), TLR_E_CANCELED);
    json_object *o = NULL;
    assert_int_equal(tlr_kube_get(kc, &TLR_KUBE_RES_NODECLAIMS, NULL, "c1", &o, &st), TLR_E_IO);
    /* Valid: the write is attempted (and meets the closed port). */
    tlr_fence_set(&f, tlr_mono_ms() + 5000);
    assert_int_equal(tlr_kube_delete(kc, &TLR_KUBE_RES_NODECLAIMS, NULL, "c1", NULL, &st),
                     TLR_E_IO);
    tlr_kube_free(kc);
}

/* --- a renew thread that stalls ------------------------------------------ */

/* An API server that answers the Lease GET with 404 and the create with
 * 201, then accepts every later request and never answers (a hung
 * connection: what a partition looks like to the client). */
typedef struct stallsrv {
    int fd, port;
    pthread_t th;
    atomic_int answered, held;
    int conns[32];
    int nconns;
} stallsrv;

static void read_request(int c)
{
    char buf[8192];
    size_t len = 0;
    for (;;) {
        ssize_t n = read(c, buf + len, sizeof(buf) - 1 - len);
        if (n <= 0)
            return;
        len += (size_t)n;
        buf[len] = '\0';
        char *end = strstr(buf, "\r\n\r\n");
        if (!end)
            continue;
        const char *cl = strcasestr(buf, "\r\nContent-Length:");
        long body = cl && cl < end ? strtol(cl + 17, NULL, 10) : 0;
        if ((long)(len - (size_t)(end + 4 - buf)) >= body || len >= sizeof(buf) - 1)
            return;
    }
}

static void *stall_main(void *arg)
{
    stallsrv *s = arg;
    for (;;) {
        int c = accept(s->fd, NULL, NULL);
        if (c < 0)
            return NULL;
        read_request(c);
        int k = atomic_load(&s->answered);
        if (k < 2) {
            const char *body = k == 0 ? "{\"kind\":\"Status\",\"reason\":\"NotFound\",\"code\":404}"
                                      : "{\"kind\":\"Lease\"}";
            char head[256];
            snprintf(head, sizeof(head),
                     "HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n", k == 0 ? 404 : 201, strlen(body));
            if (write(c, head, strlen(head)) < 0 || write(c, body, strlen(body)) < 0)
                perror("stallsrv write");
            close(c);
            atomic_fetch_add(&s->answered, 1);
        } else if (s->nconns < 32) {
            s->conns[s->nconns++] = c;   /* never answered */
            atomic_fetch_add(&s->held, 1);
        } else {
            close(c);
        }
    }
}

static void test_stalled_renewal(void **state)
{
    (void)state;
    stallsrv s = { 0 };
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t alen = sizeof(a);
    s.fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_int_equal(bind(s.fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(s.fd, 16), 0);
    assert_int_equal(getsockname(s.fd, (struct sockaddr *)&a, &alen), 0);
    s.port = ntohs(a.sin_port);
    pthread_create(&s.th, NULL, stall_main, &s);

    char yaml[512], err[256];
    snprintf(yaml, sizeof(yaml),
             "apiVersion: v1\nkind: Config\ncurrent-context: t\n"
             "clusters: [{name: t, cluster: {server: 'http://127.0.0.1:%d'}}]\n"
             "users: [{name: t, user: {}}]\n"
             "contexts: [{name: t, context: {cluster: t, user: t, namespace: default}}]\n", s.port);
    tlr_kube_config *cfg = NULL;
    assert_int_equal(tlr_kube_config_parse(yaml, strlen(yaml), NULL, NULL, &cfg, err,
                                           sizeof(err)), TLR_OK);
    tlr_kube *kc = NULL;
    /* A request timeout far longer than the renew deadline: the thread
     * hangs in its GET, and validity must run out regardless. */
    tlr_kube_opts ko = { .timeout_ms = 30000 };
    assert_int_equal(tlr_kube_create(cfg, &ko, &kc), TLR_OK);
    tlr_fence f;
    tlr_fence_init(&f);
    tlr_lease *l = NULL;
    char why[256];
    tlr_lease_opts o = { .kc = kc, .ns = "default", .name = "t", .identity = "me",
                         .duration_ms = 1500, .renew_deadline_ms = 800, .retry_ms = 200,
                         .fence = &f };
    assert_int_equal(tlr_lease_start(&o, &l, why, sizeof(why)), TLR_OK);

    int64_t t0 = tlr_mono_ms();
    while (!tlr_lease_leading(l) && tlr_mono_ms() - t0 < 3000)
        usleep(5000);
    int64_t led_at = tlr_mono_ms();
    assert_true(tlr_lease_leading(l));
    assert_int_equal(tlr_lease_term(l), 1);
    int64_t until = tlr_fence_until(&f);
    assert_true(until > led_at && until <= led_at + 800);
    /* Now the renewals hang.  The fence must run out at valid-until,
     * with the thread still stuck in its request. */
    while (tlr_lease_leading(l) && tlr_mono_ms() - led_at < 3000)
        usleep(5000);
    int64_t stopped = tlr_mono_ms();
    assert_false(tlr_lease_leading(l));
    if (stopped > until + 50)
        fail_msg("stopped acting %lld ms after valid-until", (long long)(stopped - until));
    assert_true(atomic_load(&s.held) >= 1);       /* a renewal was hanging */
    assert_int_equal(atomic_load(&s.answered), 2);

    /* Unblock the thread (the hung connections close) and stop. */
    shutdown(s.fd, SHUT_RDWR);
    close(s.fd);
    pthread_join(s.th, NULL);
    for (int i = 0; i < s.nconns; i++)
        close(s.conns[i]);
    tlr_lease_stop(l);
    assert_false(tlr_fence_valid(&f, tlr_mono_ms()));
    tlr_kube_free(kc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decide),
        cmocka_unit_test(test_observed_time),
        cmocka_unit_test(test_valid_until),
        cmocka_unit_test(test_durations_checked),
        cmocka_unit_test(test_kube_fence),
        cmocka_unit_test(test_stalled_renewal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
