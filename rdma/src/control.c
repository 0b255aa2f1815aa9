/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdma/src/control.c -- the client side of the node's TCP control port.
 *
 * Every call is bounded by its timeout: sockets are polled against a
 * deadline taken from CLOCK_MONOTONIC (wall-clock steps must not stretch or
 * cut a wait), and each I/O call is non-blocking (MSG_DONTWAIT), so a peer
 * that stops reading or writing costs at most the timeout. A dead peer
 * surfaces as RDMA_E_CONN: sends use MSG_NOSIGNAL because a library must
 * not let SIGPIPE kill its host process.
 *
 * The fd returned by rdma__control_connect is left in blocking mode (the
 * caller may hand it to code of its own); the functions here never depend
 * on the mode since they poll first and pass MSG_DONTWAIT.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "control.h"

/* The answer to a HELLO: the larger of a full WELCOME and a full REFUSE. */
#define CONTROL_WELCOME_BODY_MAX \
	(16 + RDMA_WIRE_MAX_REGIONS * 24 + RDMA_WIRE_ADDR_MAX)
#define CONTROL_REFUSE_BODY_MAX (8 + RDMA_WIRE_REASON_MAX)
#define CONTROL_ANSWER_BODY_MAX \
	(CONTROL_WELCOME_BODY_MAX > CONTROL_REFUSE_BODY_MAX ? \
	 CONTROL_WELCOME_BODY_MAX : CONTROL_REFUSE_BODY_MAX)
/* A full HELLO. */
#define CONTROL_HELLO_MSG_MAX \
	(RDMA_WIRE_HEADER_SIZE + 6 + RDMA_TOKEN_MAX + RDMA_WIRE_ADDR_MAX)

/* control_now_ns -- monotonic clock in nanoseconds */
static uint64_t
control_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* control_deadline -- the monotonic instant @timeout_ms from now */
static uint64_t
control_deadline(unsigned timeout_ms)
{
	return control_now_ns() + (uint64_t)timeout_ms * 1000000u;
}

/* control_remaining_ms -- milliseconds left until @deadline, rounded up so
 * that a wait never ends before the deadline; 0 once it has passed */
static int
control_remaining_ms(uint64_t deadline)
{
	uint64_t now = control_now_ns();

	if (now >= deadline)
		return 0;
	uint64_t ms = (deadline - now + 999999u) / 1000000u;

	return ms > INT32_MAX ? INT32_MAX : (int)ms;
}

/* control_wait -- poll @fd for @events until @deadline. Return: 0 when
 * ready (or in error, which the caller's next I/O call reports);
 * -ETIMEDOUT; -errno if poll itself fails. */
static int
control_wait(int fd, short events, uint64_t deadline)
{
	for (;;) {
		int ms = control_remaining_ms(deadline);

		if (ms == 0)
			return -ETIMEDOUT;
		struct pollfd pfd = { .fd = fd, .events = events };
		int r = poll(&pfd, 1, ms);

		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
		/* r == 0: poll rounds to its own clock; recheck ours. */
	}
}

/* control_conn_errno -- map an errno of a connect/send/recv on a TCP
 * socket: what a dead or unreachable peer causes is RDMA_E_CONN, local
 * resource trouble stays -errno */
static int
control_conn_errno(int err)
{
	switch (err) {
	case ENOMEM:
	case ENOBUFS:
	case EMFILE:
	case ENFILE:
	case EBADF:
	case ENOTSOCK:
	case EINVAL:
	case EFAULT:
		return -err;
	default:
		return RDMA_E_CONN;
	}
}

/* control_parse_port -- decimal 1..65535, digits only */
static int
control_parse_port(const char *s, uint16_t *port)
{
	unsigned long v = 0;
	size_t n = strlen(s);

	if (n == 0 || n > 5)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	if (v == 0 || v > 65535)
		return -EINVAL;
	*port = (uint16_t)v;
	return 0;
}

/* control_host_char_ok -- characters a host name or address may contain
 * here; anything else (spaces, slashes, brackets, control bytes) is junk
 * that no resolver should be asked about */
static bool
control_host_char_ok(char c, bool v6)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_')
		return true;
	/* ':' separates v6 groups, '%' starts a zone id. */
	return v6 && (c == ':' || c == '%');
}

int
rdma__parse_hostport(const char *s, char host[RDMA__HOST_MAX + 1], uint16_t *port)
{
	const char *h, *h_end, *colon;
	bool v6;

	if (s == NULL)
		return -EINVAL;
	if (s[0] == '[') {
		h = s + 1;
		h_end = strchr(h, ']');
		if (h_end == NULL || h_end[1] != ':')
			return -EINVAL;
		colon = h_end + 1;
		v6 = true;
	} else {
		/* An unbracketed v6 address would be ambiguous, so exactly
		 * one colon is allowed. */
		colon = strchr(s, ':');
		if (colon == NULL || strchr(colon + 1, ':') != NULL)
			return -EINVAL;
		h = s;
		h_end = colon;
		v6 = false;
	}
	size_t len = (size_t)(h_end - h);

	if (len == 0 || len > RDMA__HOST_MAX)
		return -EINVAL;
	for (size_t i = 0; i < len; i++)
		if (!control_host_char_ok(h[i], v6))
			return -EINVAL;
	if (v6 && memchr(h, ':', len) == NULL)
		return -EINVAL;
	uint16_t p;

	if (control_parse_port(colon + 1, &p) != 0)
		return -EINVAL;
	memcpy(host, h, len);
	host[len] = '\0';
	*port = p;
	return 0;
}

/* control_connect_one -- connect to one resolved address before @deadline.
 * Return: the fd; RDMA_E_CONN; -ETIMEDOUT; -errno. */
static int
control_connect_one(const struct addrinfo *ai, uint64_t deadline)
{
	int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
		ai->ai_protocol);

	if (fd < 0)
		return -errno;
	int ret = 0;

	if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
		if (errno != EINPROGRESS) {
			ret = control_conn_errno(errno);
			goto fail;
		}
		ret = control_wait(fd, POLLOUT, deadline);
		if (ret != 0)
			goto fail;
		int err = 0;
		socklen_t elen = sizeof(err);

		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) != 0) {
			ret = -errno;
			goto fail;
		}
		if (err != 0) {
			ret = control_conn_errno(err);
			goto fail;
		}
	}
	/* Control messages are small request/answer pairs: Nagle would add
	 * a delayed-ACK round to each. */
	int one = 1;

	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0) {
		ret = -errno;
		goto fail;
	}
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
		ret = -errno;
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return ret;
}

int
rdma__control_connect(const char *host, uint16_t port, unsigned timeout_ms)
{
	uint64_t deadline = control_deadline(timeout_ms);
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
		.ai_protocol = IPPROTO_TCP,
		/* No AI_ADDRCONFIG: inside a network namespace with only
		 * loopback up it would hide 127.0.0.1 itself. */
		.ai_flags = AI_NUMERICSERV,
	};
	struct addrinfo *res = NULL;
	char service[8];

	if (host == NULL || host[0] == '\0' || port == 0)
		return -EINVAL;
	snprintf(service, sizeof(service), "%u", (unsigned)port);
	int gai = getaddrinfo(host, service, &hints, &res);

	if (gai != 0) {
		if (gai == EAI_MEMORY)
			return -ENOMEM;
		if (gai == EAI_SYSTEM && errno != 0)
			return -errno;
		return -EINVAL;
	}
	/* Try every address in the resolver's order under one deadline;
	 * report the last failure if none answers. */
	int ret = RDMA_E_CONN;

	for (const struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
		ret = control_connect_one(ai, deadline);
		if (ret >= 0 || ret == -ETIMEDOUT)
			break;
	}
	freeaddrinfo(res);
	return ret;
}

/* control_send_until -- write all of @msg before @deadline */
static int
control_send_until(int fd, const void *msg, size_t len, uint64_t deadline)
{
	const uint8_t *p = msg;

	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return control_conn_errno(errno);
		int ret = control_wait(fd, POLLOUT, deadline);

		if (ret != 0)
			return ret;
	}
	return 0;
}

/* control_recv_until -- read exactly @len bytes into @buf before
 * @deadline; end of stream is RDMA_E_CONN */
static int
control_recv_until(int fd, void *buf, size_t len, uint64_t deadline)
{
	uint8_t *p = buf;

	while (len > 0) {
		ssize_t n = recv(fd, p, len, MSG_DONTWAIT);

		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n == 0)
			return RDMA_E_CONN;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return control_conn_errno(errno);
		int ret = control_wait(fd, POLLIN, deadline);

		if (ret != 0)
			return ret;
	}
	return 0;
}

int
rdma__control_send(int fd, const void *msg, size_t len, unsigned timeout_ms)
{
	return control_send_until(fd, msg, len, control_deadline(timeout_ms));
}

/* control_recv_msg -- rdma__control_recv under a deadline */
static int
control_recv_msg(int fd, struct rdma_wire_header *h, void *body, size_t cap,
	uint64_t deadline)
{
	uint8_t hdr[RDMA_WIRE_HEADER_SIZE];
	int ret = control_recv_until(fd, hdr, sizeof(hdr), deadline);

	if (ret != 0)
		return ret;
	ret = rdma_wire_header_decode(hdr, sizeof(hdr), h);
	if (ret != 0)
		return ret;
	/* The body is not read: the stream is out of step after this, and
	 * the caller closes it. */
	if (h->length > cap)
		return RDMA_E_PROTO;
	return control_recv_until(fd, body, h->length, deadline);
}

int
rdma__control_recv(int fd, struct rdma_wire_header *h, void *body,
	size_t cap, unsigned timeout_ms)
{
	return control_recv_msg(fd, h, body, cap, control_deadline(timeout_ms));
}

int
rdma__control_hello(const char *host, uint16_t port, unsigned timeout_ms,
	const struct rdma_wire_hello *hello, struct rdma_wire_welcome *welcome,
	int *fd)
{
	/* One deadline for the whole exchange: the caller's timeout bounds
	 * the connect, the send and the wait for the answer together. */
	uint64_t deadline = control_deadline(timeout_ms);
	uint8_t msg[CONTROL_HELLO_MSG_MAX];
	_Alignas(8) uint8_t body[CONTROL_ANSWER_BODY_MAX];
	struct rdma_wire_header h = { 0 };
	const uint32_t seq = 1;

	*fd = -1;
	int len = rdma_wire_hello_encode(msg, sizeof(msg), seq, hello);

	if (len < 0)
		return len;
	int s = rdma__control_connect(host, port, timeout_ms);

	if (s < 0)
		return s;
	/* A full node refuses and closes without reading the HELLO, so the
	 * send may fail on a reset while the REFUSE already waits to be
	 * read: look for it before reporting the dead connection. */
	int sent = control_send_until(s, msg, (size_t)len, deadline);
	int ret = sent;

	if (sent == 0 || sent == RDMA_E_CONN) {
		ret = control_recv_msg(s, &h, body, sizeof(body), deadline);
		if (sent != 0 && (ret != 0 || h.type != RDMA_WIRE_REFUSE))
			ret = sent;
	}
	/* A REFUSE with seq 0 refuses the connection itself: the node sends
	 * it before reading any request when it is full (node_control.c). */
	if (ret == 0 && h.seq != seq && !(h.type == RDMA_WIRE_REFUSE && h.seq == 0))
		ret = RDMA_E_PROTO;
	if (ret == 0) {
		if (h.type == RDMA_WIRE_WELCOME) {
			ret = rdma_wire_welcome_decode(body, h.length, welcome);
			if (ret == 0) {
				*fd = s;
				return 0;
			}
		} else if (h.type == RDMA_WIRE_REFUSE) {
			struct rdma_wire_refuse refuse;

			ret = rdma_wire_refuse_decode(body, h.length, &refuse);
			/* The decoder guarantees a negative code. */
			if (ret == 0)
				ret = refuse.code;
		} else {
			ret = RDMA_E_PROTO;
		}
	}
	close(s);
	return ret;
}

int
rdma__control_alive(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int r;

	do {
		r = poll(&pfd, 1, 0);
	} while (r < 0 && errno == EINTR);
	if (r < 0)
		return RDMA_E_CONN;
	if (r == 0)
		return 0;
	if (pfd.revents & (POLLERR | POLLHUP | POLLNVAL))
		return RDMA_E_CONN;
	/* Readable: either the node closed (EOF, reset) or it sent
	 * something; peek so nothing is consumed. */
	uint8_t c;
	ssize_t n;

	do {
		n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
	} while (n < 0 && errno == EINTR);
	if (n > 0)
		return 0;
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	return RDMA_E_CONN;
}
