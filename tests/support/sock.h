/*
 * sock.h - raw TCP sockets to a server under test on 127.0.0.1, for what libcurl hides: a
 * reader with a small receive buffer that stops reading, bytes sent exactly as written,
 * connections closed with a reset.
 *
 * Failures assert with Criterion: call these from a Test's thread, except sock_send_all and
 * sock_reset, which never assert and may run on any thread (the relay's).
 */
#ifndef KWP_SUPPORT_SOCK_H
#define KWP_SUPPORT_SOCK_H

#include <stdbool.h>
#include <stddef.h>

#include <netinet/in.h>

/* Fills <sa> with the address of <url>, which must be "http://127.0.0.1:PORT[/...]". */
void sock_addr_of(const char *url, struct sockaddr_in *sa);

/*
 * Connects to <url>'s address and returns the socket (the caller closes it). <rcvbuf> > 0 is
 * set as SO_RCVBUF before connecting, so that the window the server sees is that small.
 */
int sock_connect(const char *url, int rcvbuf);

/* Sends all <n> bytes of <p> (MSG_NOSIGNAL, restarted on EINTR). False when the peer is gone. */
bool sock_send_all(int fd, const char *p, size_t n);

/* Closes <fd> with an RST (SO_LINGER 0): the peer sees a broken connection, not an end. */
void sock_reset(int fd);

#endif
