// legs_backend PORT... -w WORKERS: an HTTP/1.1 keep-alive backend for examples/bench/legs/legs.py. It answers every
// request with a fixed completion and a header "X-T: <rx> <tx>" (CLOCK_REALTIME nanoseconds): rx is the kernel's
// receive timestamp of the request's last segment (SO_TIMESTAMPING), so on loopback the moment the proxy sent it;
// tx is taken just before the answer is written. WORKERS processes share the listening sockets, as nginx's do.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/net_tstamp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define MAX_FDS 65536
#define BUF_BYTES (1 << 20)

static const char BODY[] = "{\"id\":\"cmpl-legs\",\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\" ok\","
                           "\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":8,"
                           "\"total_tokens\":16}}";

typedef struct { char *buf; int got; long rx; } conn_t;

static long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static int listen_on(int port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    if (bind(fd, (void *)&a, sizeof a) || listen(fd, 4096)) {
        fprintf(stderr, "legs_backend: cannot listen on 127.0.0.1:%d: %s\n", port, strerror(errno));
        exit(1);
    }
    return fd;
}

// The length of the first complete request in the buffer, 0 while it is incomplete, -1 when it cannot be parsed.
static int request_len(conn_t *c) {
    c->buf[c->got] = 0;
    char *end = strstr(c->buf, "\r\n\r\n");
    if (!end) return c->got >= BUF_BYTES - 1 ? -1 : 0;
    long body = 0;
    char *cl = strcasestr(c->buf, "\r\ncontent-length:");
    if (cl && cl < end) body = atol(cl + 17);
    if (body < 0 || body > BUF_BYTES / 2) return -1;
    long total = (end + 4 - c->buf) + body;
    return total <= c->got ? (int)total : 0;
}

static void serve(int *listeners, int n) {
    int ep = epoll_create1(0);
    for (int i = 0; i < n; i++) {
        // Listeners are told apart from connections by the low bit.
        struct epoll_event ev = { .events = EPOLLIN | EPOLLEXCLUSIVE, .data.u64 = (unsigned long)listeners[i] << 1 | 1 };
        epoll_ctl(ep, EPOLL_CTL_ADD, listeners[i], &ev);
    }
    conn_t **conns = calloc(MAX_FDS, sizeof *conns);
    struct epoll_event evs[256];
    for (;;) {
        int k = epoll_wait(ep, evs, 256, -1);
        for (int e = 0; e < k; e++) {
            int fd = evs[e].data.u64 >> 1;
            if (evs[e].data.u64 & 1) {
                int cfd;
                while ((cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
                    if (cfd >= MAX_FDS) { close(cfd); continue; }
                    int one = 1, stamping = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE;
                    setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    setsockopt(cfd, SOL_SOCKET, SO_TIMESTAMPING, &stamping, sizeof stamping);
                    conns[cfd] = calloc(1, sizeof(conn_t));
                    conns[cfd]->buf = malloc(BUF_BYTES);
                    struct epoll_event cev = { .events = EPOLLIN, .data.u64 = (unsigned long)cfd << 1 };
                    epoll_ctl(ep, EPOLL_CTL_ADD, cfd, &cev);
                }
                continue;
            }
            conn_t *c = conns[fd];
            int closed = 0;
            for (;;) {
                struct iovec iov = { c->buf + c->got, BUF_BYTES - 1 - c->got };
                char control[256];
                struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control };
                ssize_t r = iov.iov_len ? recvmsg(fd, &mh, 0) : 0;
                if (r < 0) { closed = errno != EAGAIN; break; }
                if (r == 0) { closed = 1; break; }
                c->got += r;
                for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
                    if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SO_TIMESTAMPING) {
                        struct timespec *ts = (struct timespec *)CMSG_DATA(cm);
                        c->rx = ts[0].tv_sec * 1000000000L + ts[0].tv_nsec;
                    }
                if ((size_t)r < iov.iov_len) break;
            }
            int len;
            while (!closed && (len = request_len(c)) != 0) {
                if (len < 0) { closed = 1; break; }
                char out[1024];
                int n = snprintf(out, sizeof out, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-T: %ld %ld\r\n"
                                 "Content-Length: %zu\r\n\r\n%s", c->rx, now_ns(), sizeof BODY - 1, BODY);
                if (write(fd, out, n) != n) { closed = 1; break; }
                memmove(c->buf, c->buf + len, c->got - len);
                c->got -= len;
            }
            if (closed) { close(fd); free(c->buf); free(c); conns[fd] = NULL; }
        }
    }
}

int main(int argc, char **argv) {
    int listeners[16], n = 0, workers = 2;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-w") && i + 1 < argc) { workers = atoi(argv[++i]); continue; }
        int port = atoi(argv[i]);
        if (port <= 0 || port > 65535 || n == 16) { fprintf(stderr, "usage: legs_backend PORT... [-w WORKERS]\n"); return 2; }
        listeners[n++] = listen_on(port);
    }
    if (n == 0 || workers < 1 || workers > 64) { fprintf(stderr, "usage: legs_backend PORT... [-w WORKERS 1-64]\n"); return 2; }
    signal(SIGPIPE, SIG_IGN);
    for (int w = 1; w < workers; w++) {
        pid_t pid = fork();
        if (pid == 0) break;
    }
    serve(listeners, n);
}
