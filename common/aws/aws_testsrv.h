/* aws_testsrv.h - a scripted HTTP server on loopback, for the aws unit
 * tests only (header-only so it stays out of tailor_common).
 *
 * It answers each connection with the next scripted response (status,
 * body) and records what it received (request line, headers, body), so a
 * test can assert both what the client sent and how it handled the
 * answer.  One request per connection ("Connection: close").  A response
 * with status 0 closes the connection without answering (a transport
 * error for the client).  A response may add header lines ("Retry-After:
 * 1\r\n") and wait delay_ms before answering (a slow endpoint).  A
 * response with hold set is a stream: no Content-Length, and the
 * connection stays open after the body -- silent -- until the client
 * closes it or testsrv_stop(); the next connection is served meanwhile.
 */
#ifndef AWS_TESTSRV_H
#define AWS_TESTSRV_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define TESTSRV_MAX 16

typedef struct testsrv_resp {
    int status;
    const char *body;
    const char *headers;   /* extra header lines, each ending "\r\n"; NULL = none */
    int delay_ms;          /* wait this long before answering */
    int hold;              /* a stream left open and silent after the body */
} testsrv_resp;

typedef struct testsrv {
    int fd;
    int port;
    pthread_t th;
    testsrv_resp resp[TESTSRV_MAX];
    int nresp;
    int served;              /* connections answered so far */
    char *req[TESTSRV_MAX];  /* raw requests received (head + body), owned */
    struct timespec at[TESTSRV_MAX];   /* when each was accepted (CLOCK_MONOTONIC) */
    int held[TESTSRV_MAX];   /* fds of held streams, closed by testsrv_stop */
    int nheld;
} testsrv;

static char *testsrv_read_request(int c)
{
    size_t cap = 65536, len = 0;
    char *buf = malloc(cap + 1);
    long body = -1;
    char *head_end = NULL;

    for (;;) {
        ssize_t n = read(c, buf + len, cap - len);

        if (n <= 0)
            break;
        len += (size_t)n;
        buf[len] = '\0';
        if (head_end == NULL && (head_end = strstr(buf, "\r\n\r\n")) != NULL) {
            const char *cl = strcasestr(buf, "\r\nContent-Length:");

            body = cl != NULL && cl < head_end ? strtol(cl + 17, NULL, 10) : 0;
        }
        if (head_end != NULL && (long)(len - (size_t)(head_end + 4 - buf)) >= body)
            break;
        if (len == cap)
            break;
    }
    buf[len] = '\0';
    return buf;
}

static void *testsrv_main(void *arg)
{
    testsrv *s = arg;

    while (s->served < s->nresp) {
        int c = accept(s->fd, NULL, NULL);
        const testsrv_resp *r;
        char head[512];

        if (c < 0)
            break;
        r = &s->resp[s->served];
        clock_gettime(CLOCK_MONOTONIC, &s->at[s->served]);
        s->req[s->served] = testsrv_read_request(c);
        s->served++;
        if (r->delay_ms > 0)
            usleep((useconds_t)r->delay_ms * 1000);
        if (r->status != 0 && r->hold) {
            snprintf(head, sizeof(head), "HTTP/1.1 %d X\r\nContent-Type: application/json\r\n"
                     "%sConnection: close\r\n\r\n", r->status,
                     r->headers != NULL ? r->headers : "");
        } else if (r->status != 0) {
            snprintf(head, sizeof(head),
                     "HTTP/1.1 %d X\r\nContent-Type: text/xml\r\nContent-Length: %zu\r\n"
                     "%sConnection: close\r\n\r\n", r->status, strlen(r->body),
                     r->headers != NULL ? r->headers : "");
        }
        /* MSG_NOSIGNAL: a client that gave up has closed its end. */
        if (r->status != 0 && (send(c, head, strlen(head), MSG_NOSIGNAL) < 0 ||
                               send(c, r->body, strlen(r->body), MSG_NOSIGNAL) < 0))
            perror("testsrv write");
        if (r->status != 0 && r->hold)
            s->held[s->nheld++] = c;
        else
            close(c);
    }
    return NULL;
}

/* Start serving the n scripted responses. */
static void testsrv_start(testsrv *s, const testsrv_resp *resp, int n)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t alen = sizeof(a);
    int one = 1;

    memset(s, 0, sizeof(*s));
    s->nresp = n < TESTSRV_MAX ? n : TESTSRV_MAX;
    memcpy(s->resp, resp, (size_t)s->nresp * sizeof(*resp));
    s->fd = socket(AF_INET, SOCK_STREAM, 0);
    setsockopt(s->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(s->fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(s->fd, 16) != 0 ||
        getsockname(s->fd, (struct sockaddr *)&a, &alen) != 0)
        abort();
    s->port = ntohs(a.sin_port);
    pthread_create(&s->th, NULL, testsrv_main, s);
}

/* Stop serving (unblocking accept); the recorded requests stay readable
 * until testsrv_free(). */
static void testsrv_stop(testsrv *s)
{
    shutdown(s->fd, SHUT_RDWR);
    close(s->fd);
    pthread_join(s->th, NULL);
    for (int i = 0; i < s->nheld; i++)
        close(s->held[i]);
}

static void testsrv_free(testsrv *s)
{
    for (int i = 0; i < TESTSRV_MAX; i++) {
        free(s->req[i]);
        s->req[i] = NULL;
    }
}

#endif
