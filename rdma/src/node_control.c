/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdma/src/node_control.c -- the memory node's control side (rdma/node.h):
 * the TCP control listener and its clients (HELLO, STATUS_REQ), the fabric
 * servers it starts, the status counters and rdma_node_status_query(). The
 * pool and its region table are in node.c.
 *
 * Control listener. One thread polls the listening socket, an eventfd that
 * rdma_node_close() uses to stop it, and up to max_clients client sockets,
 * all non-blocking. Each client has its own receive buffer, so a message
 * may arrive in any number of pieces without holding up anyone else, and
 * two deadlines bound what one client can cost (see NODE_MSG_TIMEOUT_MS and
 * NODE_IDLE_TIMEOUT_MS). Answers are a few KiB at most and always fit in a
 * fresh socket's send buffer; a client that lets its buffer fill up (by
 * pipelining requests without reading answers) is disconnected instead of
 * being waited for. Admitted clients keep their connection: they notice the
 * node's death by its closing.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <pm/error.h>
#include <pm/pool.h>
#include <rdma/node.h>

#include "control.h"
#include "core.h"
#include "exec.h"
#include "node_internal.h"
#include "server.h"
#include "wire.h"

/* Each admitted client holds its control connection and its fabric
 * endpoint's sockets: 256 of them fit the usual 1024-descriptor limit
 * (dmkv-node raises its own limit to the hard one, and takes
 * --max-clients). SWARM-KV's experiments run 64 clients and more. */
#define NODE_DEFAULT_MAX_CLIENTS 256
/* More control connections than this would not fit the descriptor limit
 * of any ordinary process anyway. */
#define NODE_MAX_CLIENTS_LIMIT 65536
/* A message whose first byte arrived must be complete within this time, so
 * a client sending a few bytes at a time cannot keep its slot for long. */
#define NODE_MSG_TIMEOUT_MS 5000
/* A connection that was not admitted (status clients, strangers) is closed
 * when it sends no complete message for this long, and the oldest such
 * connection gives its slot to a new one when every slot is taken: idle
 * sockets must not use up max_clients. Admitted clients may stay idle for
 * ever. A client sends HELLO as soon as it connects. */
#define NODE_IDLE_TIMEOUT_MS 10000
/* After accept fails for lack of resources, wait this long before trying
 * again. */
#define NODE_ACCEPT_PAUSE_MS 100
/* At most this many messages of one client per poll round, so one client
 * streaming requests cannot starve the others. */
#define NODE_MSGS_PER_ROUND 4

/* node_now_ms -- monotonic milliseconds */
static uint64_t
node_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* node_count -- relaxed add to a counter rdma_node_get_status reads */
static inline void
node_count(uint64_t *counter)
{
	__atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
}

/* rdma_node_port -- the bound control port while serving */
uint16_t
rdma_node_port(const struct rdma_node *n)
{
	return n->serving ? n->port : 0;
}

/* rdma_node_serve_config_init -- documented defaults */
void
rdma_node_serve_config_init(struct rdma_node_serve_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->host = "127.0.0.1";
	cfg->port = RDMA_NODE_DEFAULT_PORT;
	cfg->backends = RDMA_NODE_SERVE_TCP | RDMA_NODE_SERVE_SHM;
	cfg->max_clients = NODE_DEFAULT_MAX_CLIENTS;
	cfg->poll = RDMA_NODE_POLL_ADAPTIVE;
}

/* ---- control listener ---- */

/* node_token_ok -- compare a presented token with the node's in time that
 * depends only on the lengths, so the bytes of the token do not leak */
static bool
node_token_ok(const struct rdma_node *n, const char *token, size_t len)
{
	unsigned diff = len != n->token_len;

	for (size_t i = 0; i < RDMA_TOKEN_MAX; i++) {
		unsigned char a = i < len ? (unsigned char)token[i] : 0;
		unsigned char b = i < n->token_len ? (unsigned char)n->token[i] : 0;

		diff |= (unsigned)(a ^ b);
	}
	return diff == 0;
}

/* node_client_next -- the slot is ready for the next message */
static void
node_client_next(struct node_client *c, uint64_t now)
{
	c->have = 0;
	c->idle_deadline = now + NODE_IDLE_TIMEOUT_MS;
}

/* node_client_close -- close a connection and free its slot */
static void
node_client_close(struct rdma_node *n, struct node_client *c, const char *why)
{
	rdma__node_log(n, RDMA_NODE_LOG_DEBUG, "client %s: closed (%s)", c->peer, why);
	close(c->fd);
	c->fd = -1;
	__atomic_fetch_sub(&n->clients_connected, 1, __ATOMIC_RELAXED);
}

/* node_send -- send a whole answer without blocking; false if the socket
 * cannot take it now (the caller then drops the client, see the top) */
static bool
node_send(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t k = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return false;
		p += k;
		len -= (size_t)k;
	}
	return true;
}

/* node_refuse -- send REFUSE(@code, @reason); false if it could not be sent */
static bool
node_refuse(struct node_client *c, uint32_t seq, int32_t code, const char *reason)
{
	uint8_t msg[RDMA_WIRE_HEADER_SIZE + 8 + RDMA_WIRE_REASON_MAX];
	int len = rdma_wire_refuse_encode(msg, sizeof(msg), seq, code, reason);

	return len > 0 && node_send(c->fd, msg, (size_t)len);
}

/* node_bad -- count a malformed message, tell the client if possible, and
 * drop it */
static void
node_bad(struct rdma_node *n, struct node_client *c, uint32_t seq, const char *what)
{
	uint8_t sink[4096];

	node_count(&n->counters.bad_messages);
	rdma__node_log(n, RDMA_NODE_LOG_WARN, "client %s: malformed message (%s)", c->peer, what);
	(void)node_refuse(c, seq, RDMA_E_PROTO, what);
	/* Closing with unread input sends a reset, which may overtake the
	 * REFUSE at the client; discard what already arrived (a bounded
	 * amount: a client still sending gets its reset). */
	for (int i = 0; i < 16 && recv(c->fd, sink, sizeof(sink), MSG_DONTWAIT) > 0; i++)
		;
	node_client_close(n, c, "malformed message");
}

/* node_backend_names -- "ofi+tcp,ofi+shm" or "none" */
static void
node_backend_names(const struct rdma_node *n, char *buf, size_t cap)
{
	size_t used = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < NODE_NSERVERS; i++) {
		if (!n->servers[i].started)
			continue;
		used += (size_t)snprintf(buf + used, cap - used, "%s%s", used ? "," : "",
			n->servers[i].srv->name);
		if (used >= cap)
			return;
	}
	if (used == 0)
		snprintf(buf, cap, "none");
}

/* node_status_text -- the STATUS body; never longer than @cap - 1 */
static size_t
node_status_text(const struct rdma_node *n, char *buf, size_t cap)
{
	struct rdma_node_status st;
	char backends[64];
	size_t used = 0;

#define NODE_APPEND(...)                                                              \
	do {                                                                          \
		if (used < cap)                                                       \
			used += (size_t)snprintf(buf + used, cap - used, __VA_ARGS__); \
	} while (0)

	rdma_node_get_status(n, &st);
	node_backend_names(n, backends, sizeof(backends));
	/* The path is cut so that every other line always fits. */
	NODE_APPEND("pool %.1024s\n", n->pool_path);
	NODE_APPEND("size %zu\n", pm_pool_size(n->pool));
	NODE_APPEND("durability %s\n", pm_durability_name(n->durability));
	NODE_APPEND("incarnation %" PRIu64 "\n", n->incarnation);
	NODE_APPEND("regions %u\n", n->nregions);
	for (unsigned i = 0; i < n->nregions; i++)
		NODE_APPEND("region.%u length %" PRIu64 "\n", i, n->info[i].length);
	NODE_APPEND("backends %s\n", backends);
	NODE_APPEND("port %u\n", (unsigned)n->port);
	/* "none": any client that reaches the port is admitted. */
	NODE_APPEND("token %s\n", n->token_len > 0 ? "required" : "none");
	NODE_APPEND("max_clients %u\n", n->max_clients);
	NODE_APPEND("clients_connected %u\n", st.clients_connected);
	NODE_APPEND("clients_admitted %" PRIu64 "\n", st.clients_admitted);
	NODE_APPEND("clients_refused %" PRIu64 "\n", st.clients_refused);
	NODE_APPEND("bad_messages %" PRIu64 "\n", st.bad_messages);
	NODE_APPEND("batches_shipped %" PRIu64 "\n", st.batches_shipped);
	NODE_APPEND("batches_rejected %" PRIu64 "\n", st.batches_rejected);
	NODE_APPEND("persists %" PRIu64 "\n", st.persists);
	NODE_APPEND("uptime_s %" PRIu64 "\n", (rdma__now_ns() - n->open_ns) / 1000000000u);
#undef NODE_APPEND
	return used < cap ? used : cap - 1;
}

/* node_on_status_req -- answer STATUS_REQ; false if the client was dropped */
static bool
node_on_status_req(struct rdma_node *n, struct node_client *c, const uint8_t *body)
{
	uint8_t msg[RDMA_WIRE_HEADER_SIZE + RDMA_WIRE_STATUS_MAX];
	char text[RDMA_WIRE_STATUS_MAX + 1];
	const char *token;
	uint16_t token_len;
	size_t len;
	int mlen;

	if (rdma_wire_status_req_decode(body, c->hdr.length, &token, &token_len) != 0) {
		node_bad(n, c, c->hdr.seq, "bad STATUS_REQ");
		return false;
	}
	if (!node_token_ok(n, token, token_len)) {
		rdma__node_log(n, RDMA_NODE_LOG_WARN,
			"client %s: status refused: wrong token", c->peer);
		(void)node_refuse(c, c->hdr.seq, RDMA_E_AUTH, "wrong token");
		node_client_close(n, c, "wrong token");
		return false;
	}
	len = node_status_text(n, text, sizeof(text));
	mlen = rdma_wire_status_encode(msg, sizeof(msg), c->hdr.seq, text, len);
	if (mlen < 0 || !node_send(c->fd, msg, (size_t)mlen)) {
		node_client_close(n, c, "cannot send STATUS");
		return false;
	}
	rdma__node_log(n, RDMA_NODE_LOG_DEBUG, "client %s: status sent", c->peer);
	return true;
}

/* node_on_hello -- admit or refuse; false if the client was dropped */
static bool
node_on_hello(struct rdma_node *n, struct node_client *c, const uint8_t *body)
{
	uint8_t msg[RDMA_WIRE_HEADER_SIZE + 16 + RDMA_WIRE_MAX_REGIONS * 24 +
		RDMA_WIRE_ADDR_MAX];
	struct rdma_wire_welcome welcome;
	struct rdma_wire_hello hello;
	struct node_server *s = NULL;
	int ret, mlen;

	if (rdma_wire_hello_decode(body, c->hdr.length, &hello) != 0) {
		node_bad(n, c, c->hdr.seq, "bad HELLO");
		return false;
	}
	if (!node_token_ok(n, hello.token, hello.token_len)) {
		node_count(&n->clients_refused);
		rdma__node_log(n, RDMA_NODE_LOG_WARN, "client %s: refused: wrong token", c->peer);
		(void)node_refuse(c, c->hdr.seq, RDMA_E_AUTH, "wrong token");
		node_client_close(n, c, "refused");
		return false;
	}
	for (unsigned i = 0; i < NODE_NSERVERS; i++)
		if (n->servers[i].started && n->servers[i].srv->wire_backend == hello.backend)
			s = &n->servers[i];
	if (s == NULL) {
		node_count(&n->clients_refused);
		rdma__node_log(n, RDMA_NODE_LOG_WARN,
			"client %s: refused: backend %u is not served here", c->peer,
			(unsigned)hello.backend);
		(void)node_refuse(c, c->hdr.seq, RDMA_E_NO_DEVICE,
			"backend not served by this node");
		node_client_close(n, c, "refused");
		return false;
	}
	memset(&welcome, 0, sizeof(welcome));
	welcome.incarnation = n->incarnation;
	welcome.nregions = n->nregions;
	for (unsigned i = 0; i < n->nregions; i++)
		welcome.regions[i].length = n->info[i].length;
	ret = s->srv->admit(s->state, &hello, &welcome);
	if (ret != 0) {
		node_count(&n->clients_refused);
		rdma__node_log(n, RDMA_NODE_LOG_WARN, "client %s: refused by %s: %s", c->peer,
			s->srv->name, pm_strerror(ret));
		(void)node_refuse(c, c->hdr.seq, ret, "backend could not admit the client");
		node_client_close(n, c, "refused");
		return false;
	}
	mlen = rdma_wire_welcome_encode(msg, sizeof(msg), c->hdr.seq, &welcome);
	if (mlen < 0) {
		rdma__node_log(n, RDMA_NODE_LOG_ERROR,
			"client %s: cannot encode WELCOME: %s", c->peer, pm_strerror(mlen));
		(void)node_refuse(c, c->hdr.seq, mlen, "cannot encode WELCOME");
		node_client_close(n, c, "cannot encode WELCOME");
		return false;
	}
	/* Counted before it is sent, so a client that has its WELCOME finds
	 * itself counted in the status. */
	node_count(&n->clients_admitted);
	if (!node_send(c->fd, msg, (size_t)mlen)) {
		rdma__node_log(n, RDMA_NODE_LOG_WARN, "client %s: cannot send WELCOME", c->peer);
		node_client_close(n, c, "cannot send WELCOME");
		return false;
	}
	c->admitted = true;
	rdma__node_log(n, RDMA_NODE_LOG_INFO, "client %s: admitted on %s", c->peer, s->srv->name);
	return true;
}

/* node_client_read -- read what @c sent and handle each complete message */
static void
node_client_read(struct rdma_node *n, struct node_client *c, uint64_t now)
{
	for (unsigned msgs = 0; msgs < NODE_MSGS_PER_ROUND;) {
		size_t need = c->have < RDMA_WIRE_HEADER_SIZE ? RDMA_WIRE_HEADER_SIZE :
			RDMA_WIRE_HEADER_SIZE + c->hdr.length;
		ssize_t k;
		bool ok;

		/* Read only up to the end of the current message: the next one
		 * starts in a fresh buffer. */
		k = recv(c->fd, c->buf + c->have, need - c->have, MSG_DONTWAIT);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (k <= 0) {
			if (c->have > 0) {
				node_count(&n->counters.bad_messages);
				rdma__node_log(n, RDMA_NODE_LOG_WARN,
					"client %s: connection closed inside a message", c->peer);
			}
			node_client_close(n, c, k == 0 ? "closed by the client" : strerror(errno));
			return;
		}
		if (c->have == 0)
			c->msg_deadline = now + NODE_MSG_TIMEOUT_MS;
		c->have += (size_t)k;
		if (c->have < need)
			continue;
		if (c->have == RDMA_WIRE_HEADER_SIZE) {
			if (rdma_wire_header_decode(c->buf, c->have, &c->hdr) != 0) {
				node_bad(n, c, 0, "bad header");
				return;
			}
			if (c->hdr.type != RDMA_WIRE_HELLO && c->hdr.type != RDMA_WIRE_STATUS_REQ) {
				node_bad(n, c, c->hdr.seq, "unexpected message type");
				return;
			}
			if (c->hdr.length > NODE_CTL_BODY_MAX) {
				node_bad(n, c, c->hdr.seq, "control message too long");
				return;
			}
			if (c->hdr.length > 0)
				continue;
		}
		msgs++;
		if (c->hdr.type == RDMA_WIRE_HELLO)
			ok = node_on_hello(n, c, c->buf + RDMA_WIRE_HEADER_SIZE);
		else
			ok = node_on_status_req(n, c, c->buf + RDMA_WIRE_HEADER_SIZE);
		if (!ok)
			return;
		node_client_next(c, now);
	}
}

/* node_peer_name -- "host:port" of a connected socket, for the log */
static void
node_peer_name(int fd, char *buf, size_t cap)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char host[NI_MAXHOST], serv[NI_MAXSERV];

	if (getpeername(fd, (struct sockaddr *)&ss, &sl) != 0 ||
	    getnameinfo((struct sockaddr *)&ss, sl, host, sizeof(host), serv, sizeof(serv),
		    NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
		snprintf(buf, cap, "fd%d", fd);
		return;
	}
	snprintf(buf, cap, ss.ss_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host, serv);
}

/* node_free_slot -- a free client slot; if there is none, the slot of the
 * connection not admitted that has waited longest (closed now); NULL if
 * every slot holds an admitted client */
static struct node_client *
node_free_slot(struct rdma_node *n)
{
	struct node_client *oldest = NULL;

	for (unsigned i = 0; i < n->max_clients; i++) {
		struct node_client *c = &n->clients[i];

		if (c->fd < 0)
			return c;
		if (!c->admitted && c->have == 0 &&
			(oldest == NULL || c->idle_deadline < oldest->idle_deadline))
			oldest = c;
	}
	if (oldest != NULL) {
		rdma__node_log(n, RDMA_NODE_LOG_WARN,
			"client %s: closed, its slot given to a new connection (all %u taken)",
			oldest->peer, n->max_clients);
		node_client_close(n, oldest, "slot needed");
	}
	return oldest;
}

/* node_accept -- take every pending connection */
static void
node_accept(struct rdma_node *n, uint64_t now)
{
	for (;;) {
		struct node_client *c = NULL;
		int one = 1;
		int fd = accept4(n->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			/* Out of descriptors or memory: the connection waits in
			 * the backlog. The listening socket stays readable, so
			 * stop polling it for a while instead of spinning. */
			if (errno != EAGAIN && errno != EWOULDBLOCK) {
				rdma__node_log(n, RDMA_NODE_LOG_WARN,
					"accept: %s", strerror(errno));
				n->accept_pause_until = now + NODE_ACCEPT_PAUSE_MS;
			}
			return;
		}
		c = node_free_slot(n);
		if (c == NULL) {
			/* Refused before its request is read, so with seq 0:
			 * the connection, not a request, is refused. */
			uint8_t msg[RDMA_WIRE_HEADER_SIZE + 64];
			int len = rdma_wire_refuse_encode(msg, sizeof(msg), 0, -EBUSY,
				"too many clients");

			rdma__node_log(n, RDMA_NODE_LOG_WARN,
				"refused a connection: %u clients already", n->max_clients);
			if (len > 0)
				(void)node_send(fd, msg, (size_t)len);
			close(fd);
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c->fd = fd;
		c->admitted = false;
		node_client_next(c, now);
		node_peer_name(fd, c->peer, sizeof(c->peer));
		__atomic_fetch_add(&n->clients_connected, 1, __ATOMIC_RELAXED);
		rdma__node_log(n, RDMA_NODE_LOG_DEBUG, "client %s: connected", c->peer);
	}
}

/* node_expire -- drop clients past a deadline; returns the nearest deadline
 * left (UINT64_MAX: none) */
static uint64_t
node_expire(struct rdma_node *n, uint64_t now)
{
	uint64_t next = UINT64_MAX;

	for (unsigned i = 0; i < n->max_clients; i++) {
		struct node_client *c = &n->clients[i];

		if (c->fd < 0)
			continue;
		if (c->have > 0 && now >= c->msg_deadline) {
			node_count(&n->counters.bad_messages);
			rdma__node_log(n, RDMA_NODE_LOG_WARN,
				"client %s: message incomplete after %d ms", c->peer,
				NODE_MSG_TIMEOUT_MS);
			node_client_close(n, c, "message timeout");
			continue;
		}
		if (!c->admitted && c->have == 0 && now >= c->idle_deadline) {
			node_client_close(n, c, "idle");
			continue;
		}
		if (c->have > 0 && c->msg_deadline < next)
			next = c->msg_deadline;
		if (!c->admitted && c->have == 0 && c->idle_deadline < next)
			next = c->idle_deadline;
	}
	return next;
}

/* node_listener -- the control thread (see the top of the file) */
static void *
node_listener(void *arg)
{
	struct rdma_node *n = arg;
	struct pollfd *pfd = n->pfd;
	unsigned *slot = n->pfd_slot;

	for (;;) {
		uint64_t now = node_now_ms(), next = node_expire(n, now);
		bool paused = now < n->accept_pause_until;
		nfds_t nfd = 2;
		int timeout, k;

		if (paused && n->accept_pause_until < next)
			next = n->accept_pause_until;
		timeout = next == UINT64_MAX ? -1 :
			(int)(next - now < INT_MAX ? next - now : INT_MAX);
		pfd[0] = (struct pollfd){ .fd = n->stop_fd, .events = POLLIN };
		/* poll ignores a negative fd: no accepting while paused. */
		pfd[1] = (struct pollfd){ .fd = paused ? -1 : n->listen_fd, .events = POLLIN };
		for (unsigned i = 0; i < n->max_clients; i++) {
			if (n->clients[i].fd < 0)
				continue;
			pfd[nfd] = (struct pollfd){ .fd = n->clients[i].fd, .events = POLLIN };
			slot[nfd++] = i;
		}
		k = poll(pfd, nfd, timeout);
		if (k < 0 && errno == ENOMEM) {
			/* Transient: the next round tries again. */
			n->accept_pause_until = node_now_ms() + NODE_ACCEPT_PAUSE_MS;
			poll(NULL, 0, NODE_ACCEPT_PAUSE_MS);
			continue;
		}
		if (k < 0 && errno != EINTR) {
			/* EFAULT or EINVAL: a bug; give up serving, loudly. */
			rdma__node_log(n, RDMA_NODE_LOG_ERROR, "control listener stopped: poll: %s",
				strerror(errno));
			break;
		}
		if (k <= 0)
			continue;
		if (pfd[0].revents != 0)
			break;
		now = node_now_ms();
		for (nfds_t i = 2; i < nfd; i++)
			if (pfd[i].revents != 0 && n->clients[slot[i]].fd >= 0)
				node_client_read(n, &n->clients[slot[i]], now);
		if (pfd[1].revents != 0)
			node_accept(n, now);
	}
	return NULL;
}

/* node_bind -- the listening socket for @host:@port; -EADDRINUSE,
 * -EADDRNOTAVAIL or another -errno */
static int
node_bind(struct rdma_node *n, const char *host, uint16_t port, int *out)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
		.ai_flags = AI_PASSIVE | AI_NUMERICSERV };
	struct addrinfo *res, *ai;
	char serv[8];
	int ret = -EADDRNOTAVAIL;

	snprintf(serv, sizeof(serv), "%u", (unsigned)port);
	if (getaddrinfo(host, serv, &hints, &res) != 0) {
		rdma__node_log(n, RDMA_NODE_LOG_ERROR, "cannot resolve listen address %s", host);
		return -EADDRNOTAVAIL;
	}
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		int one = 1;
		int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
			ai->ai_protocol);

		if (fd < 0) {
			ret = -errno;
			continue;
		}
		/* A restarted node must not wait for the TIME_WAIT of its
		 * predecessor's connections. */
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		/* listen() too can find the port taken: SO_REUSEADDR lets two
		 * sockets bind it as long as neither listens. */
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 64) == 0) {
			*out = fd;
			freeaddrinfo(res);
			return 0;
		}
		ret = -errno;
		close(fd);
		if (ret == -EADDRINUSE)
			break;
	}
	freeaddrinfo(res);
	rdma__node_log(n, RDMA_NODE_LOG_ERROR, "cannot listen on %s:%u: %s", host, (unsigned)port,
		strerror(-ret));
	return ret == -EADDRINUSE || ret == -EADDRNOTAVAIL ? ret :
		(ret == -EINVAL || ret == -EAFNOSUPPORT ? -EADDRNOTAVAIL : ret);
}

/* node_bound_port -- the port a listening socket got */
static uint16_t
node_bound_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0)
		return 0;
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return 0;
}

/* node_stop_servers -- stop every started server */
static void
node_stop_servers(struct rdma_node *n)
{
	for (unsigned i = 0; i < NODE_NSERVERS; i++) {
		struct node_server *s = &n->servers[i];

		if (!s->started)
			continue;
		s->srv->stop(s->state);
		s->started = false;
		s->state = NULL;
		rdma__node_log(n, RDMA_NODE_LOG_INFO, "stopped %s", s->srv->name);
	}
	n->backends = 0;
}

/* node_start_servers -- start a server per requested backend, progressing
 * as @poll says; 0 if at least one started or none was requested */
static int
node_start_servers(struct rdma_node *n, unsigned backends, enum rdma_node_poll poll)
{
	const struct rdma__server *all[NODE_NSERVERS] = {
		&rdma__server_ofi_tcp, &rdma__server_ofi_shm, &rdma__server_verbs,
		&rdma__server_ofi_verbs,
	};
	int first_err = 0;

	for (unsigned i = 0; i < NODE_NSERVERS; i++) {
		struct node_server *s = &n->servers[i];
		int ret;

		s->srv = all[i];
		if (!(backends & all[i]->serve_flag))
			continue;
		s->env = (struct rdma__server_env){
			.nregions = n->nregions,
			.regions = n->regions,
			.info = n->info,
			.host = n->host,
			.counters = &n->counters,
			.log = n->log,
			.log_arg = n->log_arg,
			.poll = poll,
		};
		ret = all[i]->start(&s->state, &s->env);
		if (ret == 0) {
			s->started = true;
			n->backends |= all[i]->serve_flag;
			rdma__node_log(n, RDMA_NODE_LOG_INFO,
				"serving %s on %s", all[i]->name, n->host);
			continue;
		}
		s->state = NULL;
		if (ret == RDMA_E_NO_DEVICE) {
			rdma__node_log(n, RDMA_NODE_LOG_WARN, "not serving %s: %s", all[i]->name,
				pm_strerror(ret));
		} else {
			rdma__node_log(n, RDMA_NODE_LOG_ERROR, "cannot serve %s: %s", all[i]->name,
				pm_strerror(ret));
			if (first_err == 0)
				first_err = ret;
		}
	}
	if (backends == 0 || n->backends != 0)
		return 0;
	return first_err != 0 ? first_err : RDMA_E_NO_DEVICE;
}

/* node_free_clients -- release the listener's tables */
static void
node_free_clients(struct rdma_node *n)
{
	free(n->clients);
	free(n->pfd);
	free(n->pfd_slot);
	n->clients = NULL;
	n->pfd = NULL;
	n->pfd_slot = NULL;
}

/* rdma_node_serve -- bind, start the servers, then the control thread */
int
rdma_node_serve(struct rdma_node *n, const struct rdma_node_serve_config *cfg)
{
	struct rdma_node_serve_config def;
	const char *host;
	int ret;

	pm_error_clear();
	if (n == NULL)
		return pm_error_set(-EINVAL, "rdma_node_serve: no node");
	if (n->serving)
		return -EALREADY;
	if (cfg == NULL) {
		rdma_node_serve_config_init(&def);
		cfg = &def;
	}
	host = cfg->host != NULL && cfg->host[0] != '\0' ? cfg->host : "127.0.0.1";
	if (strlen(host) > NODE_HOST_MAX ||
	    (cfg->backends & ~(unsigned)(RDMA_NODE_SERVE_TCP | RDMA_NODE_SERVE_SHM |
		RDMA_NODE_SERVE_VERBS | RDMA_NODE_SERVE_OFI_VERBS)) != 0)
		return -EINVAL;
	if (cfg->max_clients > NODE_MAX_CLIENTS_LIMIT ||
	    (cfg->poll != RDMA_NODE_POLL_ADAPTIVE && cfg->poll != RDMA_NODE_POLL_BUSY))
		return -EINVAL;
	strcpy(n->host, host);
	n->max_clients = cfg->max_clients != 0 ? cfg->max_clients : NODE_DEFAULT_MAX_CLIENTS;
	n->clients = calloc(n->max_clients, sizeof(*n->clients));
	n->pfd = calloc((size_t)n->max_clients + 2, sizeof(*n->pfd));
	n->pfd_slot = calloc((size_t)n->max_clients + 2, sizeof(*n->pfd_slot));
	n->accept_pause_until = 0;
	if (n->clients == NULL || n->pfd == NULL || n->pfd_slot == NULL) {
		ret = -ENOMEM;
		goto fail;
	}
	for (unsigned i = 0; i < n->max_clients; i++)
		n->clients[i].fd = -1;
	memset(&n->counters, 0, sizeof(n->counters));
	n->clients_admitted = n->clients_refused = 0;
	n->clients_connected = 0;

	/* Bind first so a taken port is reported here, synchronously, before
	 * anything else starts. */
	ret = node_bind(n, host, cfg->port, &n->listen_fd);
	if (ret != 0)
		goto fail;
	n->port = node_bound_port(n->listen_fd);
	n->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (n->stop_fd < 0) {
		ret = -errno;
		goto fail;
	}
	ret = node_start_servers(n, cfg->backends, cfg->poll);
	if (ret != 0) {
		rdma__node_log(n, RDMA_NODE_LOG_ERROR, "no requested backend could start");
		goto fail;
	}
	ret = -pthread_create(&n->thread, NULL, node_listener, n);
	if (ret != 0) {
		node_stop_servers(n);
		goto fail;
	}
	n->serving = true;
	rdma__node_log(n, RDMA_NODE_LOG_INFO, "control port listening on %s:%u", host,
		(unsigned)n->port);
	return 0;
fail:
	if (n->stop_fd >= 0)
		close(n->stop_fd);
	if (n->listen_fd >= 0)
		close(n->listen_fd);
	n->stop_fd = n->listen_fd = -1;
	node_free_clients(n);
	return ret;
}
/* rdma__node_stop_serving -- stop the listener, drop the clients, stop the servers */
void
rdma__node_stop_serving(struct rdma_node *n)
{
	uint64_t one = 1;

	if (!n->serving)
		return;
	while (write(n->stop_fd, &one, sizeof(one)) < 0 && errno == EINTR)
		;
	pthread_join(n->thread, NULL);
	/* Closing the control connections is how clients learn the node is
	 * gone. */
	for (unsigned i = 0; i < n->max_clients; i++)
		if (n->clients[i].fd >= 0)
			node_client_close(n, &n->clients[i], "node stopping");
	close(n->listen_fd);
	close(n->stop_fd);
	n->listen_fd = n->stop_fd = -1;
	node_free_clients(n);
	rdma__node_log(n, RDMA_NODE_LOG_INFO, "control port %u closed", (unsigned)n->port);
	node_stop_servers(n);
	n->serving = false;
}

/* rdma_node_get_status -- relaxed snapshot of the counters */
void
rdma_node_get_status(const struct rdma_node *n, struct rdma_node_status *out)
{
	memset(out, 0, sizeof(*out));
	out->clients_admitted = __atomic_load_n(&n->clients_admitted, __ATOMIC_RELAXED);
	out->clients_refused = __atomic_load_n(&n->clients_refused, __ATOMIC_RELAXED);
	out->bad_messages = __atomic_load_n(&n->counters.bad_messages, __ATOMIC_RELAXED);
	out->batches_shipped = __atomic_load_n(&n->counters.batches_shipped, __ATOMIC_RELAXED);
	out->batches_rejected = __atomic_load_n(&n->counters.batches_rejected,
		__ATOMIC_RELAXED);
	out->persists = __atomic_load_n(&n->counters.persists, __ATOMIC_RELAXED);
	out->clients_connected = __atomic_load_n(&n->clients_connected, __ATOMIC_RELAXED);
	out->backends = n->backends;
}

/* node_left_ms -- time left until @deadline (at least 1 ms, so a step
 * that finds its deadline passed still fails by timing out) */
static unsigned
node_left_ms(uint64_t deadline)
{
	uint64_t now = node_now_ms();

	return now < deadline ? (unsigned)(deadline - now) : 1u;
}

/* rdma_node_status_query -- STATUS_REQ over the control port */
int
rdma_node_status_query(const char *host, uint16_t port, const char *token,
	unsigned timeout_ms, char *text, size_t cap)
{
	uint8_t msg[RDMA_WIRE_HEADER_SIZE + 4 + RDMA_TOKEN_MAX];
	uint8_t body[RDMA_WIRE_STATUS_MAX + RDMA_WIRE_REASON_MAX];
	char buf[RDMA_WIRE_STATUS_MAX + 1];
	struct rdma_wire_header h;
	struct rdma_wire_refuse refuse;
	size_t token_len;
	uint64_t deadline;
	int fd, len, ret;

	pm_error_clear();
	if (host == NULL || text == NULL || cap == 0)
		return pm_error_set(-EINVAL, "rdma_node_status_query: %s",
			host == NULL ? "no host" : "no room for the status text");
	token = token != NULL ? token : "";
	token_len = strnlen(token, RDMA_TOKEN_MAX + 1);
	if (token_len > RDMA_TOKEN_MAX)
		return pm_error_set(-EINVAL, "rdma_node_status_query: the token is longer than %u bytes",
			(unsigned)RDMA_TOKEN_MAX);
	text[0] = '\0';
	len = rdma_wire_status_req_encode(msg, sizeof(msg), 1, token, (uint16_t)token_len);
	if (len < 0)
		return len;
	/* One limit for the whole exchange, not one per step. */
	deadline = node_now_ms() + timeout_ms;
	fd = rdma__control_connect(host, port, timeout_ms);
	if (fd < 0)
		return fd;
	ret = rdma__control_send(fd, msg, (size_t)len, node_left_ms(deadline));
	if (ret == 0)
		ret = rdma__control_recv(fd, &h, body, sizeof(body), node_left_ms(deadline));
	close(fd);
	if (ret != 0)
		return ret;
	/* A REFUSE with seq 0 refuses the connection itself, sent before the
	 * request was read (the node is full). */
	if (h.seq != 1 && !(h.type == RDMA_WIRE_REFUSE && h.seq == 0))
		return RDMA_E_PROTO;
	if (h.type == RDMA_WIRE_REFUSE) {
		if (rdma_wire_refuse_decode(body, h.length, &refuse) != 0 || refuse.code >= 0)
			return RDMA_E_PROTO;
		return refuse.code;
	}
	if (h.type != RDMA_WIRE_STATUS ||
	    rdma_wire_status_decode(body, h.length, buf, sizeof(buf)) != 0)
		return RDMA_E_PROTO;
	snprintf(text, cap, "%s", buf);
	return 0;
}
