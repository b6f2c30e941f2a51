// legs_client PORT CONNS SECONDS OUT [SESSIONS [BODY_BYTES]]: closed-loop keep-alive load for
// examples/bench/legs/legs.py. CONNS connections on one thread (epoll), each sending a BODY_BYTES POST to
// /v1/completions with an X-Session-ID out of SESSIONS as soon as the answer to the previous one is in, as wrk does.
// Writes one line per answered request to OUT: start end rx conn backend_rx backend_tx, all CLOCK_REALTIME
// nanoseconds: start just before the request's write, end once the answer is complete, rx the kernel's receive
// timestamp of the answer's last segment (on loopback, when the proxy sent it), and the backend's X-T header
// (legs_backend: when the proxy's request reached it, and when it answered; 0 0 without the header).
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/net_tstamp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define ANSWER_BYTES 65536

typedef struct { int fd; char *buf; int got; long start, rx; } conn_t;

static long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static char **requests;
static int *request_lens;

static void build_requests(int sessions, int body_bytes, int port) {
    char *body = malloc(body_bytes + 1);
    int head = snprintf(body, body_bytes + 1, "{\"model\":\"mock\",\"max_tokens\":8,\"prompt\":\"");
    memset(body + head, 'x', body_bytes - head - 2);
    strcpy(body + body_bytes - 2, "\"}");
    requests = malloc(sessions * sizeof *requests);
    request_lens = malloc(sessions * sizeof *request_lens);
    for (int s = 0; s < sessions; s++) {
        requests[s] = malloc(body_bytes + 512);
        request_lens[s] = snprintf(requests[s], body_bytes + 512,
            "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
            "X-Session-ID: bench-%d\r\nContent-Length: %d\r\n\r\n%s", port, s + 1, body_bytes, body);
    }
    free(body);
}

// 1 when a whole answer (headers and Content-Length bytes of body) is in the buffer.
static int answer_complete(conn_t *c) {
    c->buf[c->got] = 0;
    char *end = strstr(c->buf, "\r\n\r\n");
    if (!end) return 0;
    char *cl = strcasestr(c->buf, "\r\ncontent-length:");
    if (!cl || cl > end) { fprintf(stderr, "legs_client: an answer without Content-Length:\n%.300s\n", c->buf); exit(1); }
    return (end + 4 - c->buf) + atol(cl + 17) <= c->got;
}

int main(int argc, char **argv) {
    if (argc < 5) { fprintf(stderr, "usage: legs_client PORT CONNS SECONDS OUT [SESSIONS [BODY_BYTES]]\n"); return 2; }
    int port = atoi(argv[1]), n = atoi(argv[2]), secs = atoi(argv[3]);
    int sessions = argc > 5 ? atoi(argv[5]) : 1000, body_bytes = argc > 6 ? atoi(argv[6]) : 2048;
    if (port <= 0 || port > 65535 || n < 1 || n > 4096 || secs < 1 || sessions < 1 || sessions > 999999
        || body_bytes < 64 || body_bytes > 262144 || (long)sessions * (body_bytes + 512) > 1L << 30) {
        fprintf(stderr, "legs_client: PORT 1-65535, CONNS 1-4096, SECONDS >= 1, SESSIONS 1-999999, BODY_BYTES 64-262144,"
                " and SESSIONS built requests within 1 GiB\n");
        return 2;
    }
    FILE *out = fopen(argv[4], "w");
    if (!out) { perror(argv[4]); return 1; }
    build_requests(sessions, body_bytes, port);
    srand(time(NULL) ^ getpid());
    int ep = epoll_create1(0);
    conn_t *cs = calloc(n, sizeof *cs);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    for (int i = 0; i < n; i++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1, stamping = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE;
        if (connect(fd, (void *)&a, sizeof a)) { fprintf(stderr, "legs_client: connect to port %d: %s\n", port, strerror(errno)); return 1; }
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING, &stamping, sizeof stamping);
        fcntl(fd, F_SETFL, O_NONBLOCK);
        cs[i].fd = fd;
        cs[i].buf = malloc(ANSWER_BYTES);
        struct epoll_event ev = { .events = EPOLLIN, .data.u32 = i };
        epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    }
    size_t cap = 1 << 23, count = 0;
    long *rec = malloc(cap * 6 * sizeof(long));
    long deadline = now_ns() + (long)secs * 1000000000L;
    for (int i = 0; i < n; i++) {
        int s = rand() % sessions;
        cs[i].start = now_ns();
        if (write(cs[i].fd, requests[s], request_lens[s]) != request_lens[s]) { perror("legs_client: write"); return 1; }
    }
    struct epoll_event evs[256];
    while (now_ns() < deadline) {
        int k = epoll_wait(ep, evs, 256, 100);
        for (int e = 0; e < k; e++) {
            conn_t *c = &cs[evs[e].data.u32];
            for (;;) {
                struct iovec iov = { c->buf + c->got, ANSWER_BYTES - 1 - c->got };
                char control[256];
                struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control };
                ssize_t r = recvmsg(c->fd, &mh, 0);
                if (r < 0 && errno == EAGAIN) break;
                if (r <= 0) { fprintf(stderr, "legs_client: the proxy closed a connection\n"); return 1; }
                c->got += r;
                for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
                    if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SO_TIMESTAMPING) {
                        struct timespec *ts = (struct timespec *)CMSG_DATA(cm);
                        c->rx = ts[0].tv_sec * 1000000000L + ts[0].tv_nsec;
                    }
                if (c->got >= ANSWER_BYTES - 1) { fprintf(stderr, "legs_client: an answer over %d bytes\n", ANSWER_BYTES); return 1; }
            }
            if (!answer_complete(c)) continue;
            long end = now_ns(), brx = 0, btx = 0;
            char *xt = strcasestr(c->buf, "\r\nx-t: ");
            if (xt) { brx = atol(xt + 7); char *sp = strchr(xt + 7, ' '); btx = sp ? atol(sp + 1) : 0; }
            if (count < cap) {
                long *r = rec + 6 * count++;
                r[0] = c->start; r[1] = end; r[2] = c->rx; r[3] = evs[e].data.u32; r[4] = brx; r[5] = btx;
            }
            c->got = 0;
            int s = rand() % sessions;
            c->start = now_ns();
            if (write(c->fd, requests[s], request_lens[s]) != request_lens[s]) { perror("legs_client: write"); return 1; }
        }
    }
    for (size_t i = 0; i < count; i++) {
        long *r = rec + 6 * i;
        fprintf(out, "%ld %ld %ld %ld %ld %ld\n", r[0], r[1], r[2], r[3], r[4], r[5]);
    }
    fclose(out);
    return 0;
}
