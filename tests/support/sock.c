/* sock.c - raw loopback TCP sockets for integration tests (see sock.h). */
#include "tests/support/sock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <criterion/criterion.h>

#define SOCK_URL_PREFIX "http://127.0.0.1:"

void sock_addr_of(const char *url, struct sockaddr_in *sa)
{
    const char *port = url + strlen(SOCK_URL_PREFIX);
    char *end = NULL;
    unsigned long p;

    cr_assert(strncmp(url, SOCK_URL_PREFIX, strlen(SOCK_URL_PREFIX)) == 0, "url %s", url);
    p = strtoul(port, &end, 10);
    cr_assert(end != port && (*end == '\0' || *end == '/') && p > 0 && p <= 65535, "url %s", url);
    memset(sa, 0, sizeof(*sa));
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)p);
    sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
}

int sock_connect(const char *url, int rcvbuf)
{
    struct sockaddr_in sa;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    cr_assert_geq(fd, 0, "socket: %s", strerror(errno));
    sock_addr_of(url, &sa);
    if (rcvbuf > 0) {
        cr_assert_eq(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)), 0);
    }
    cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0, "connect %s: %s", url,
                 strerror(errno));
    return fd;
}

bool sock_send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);

        if (k == -1 && errno == EINTR) {
            continue;
        }
        if (k <= 0) {
            return false;
        }
        p += k;
        n -= (size_t)k;
    }
    return true;
}

void sock_reset(int fd)
{
    struct linger lg = {1, 0};

    (void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    close(fd);
}
