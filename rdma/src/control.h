/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdma/src/control.h -- the client side of the node's TCP control port,
 * shared by the remote backends (ofi.c, verbs.c) and rdma_node_status_query.
 * Not installed. Every call is bounded by a timeout; none blocks forever.
 */
#ifndef RDMA_SRC_CONTROL_H
#define RDMA_SRC_CONTROL_H

#include <stddef.h>
#include <stdint.h>

#include "wire.h"

/* Longest host name accepted in a "host:port" target. */
#define RDMA__HOST_MAX 255

/**
 * rdma__parse_hostport -- split "host:port" or "[v6addr]:port" into @host
 * (NUL-terminated, at most RDMA__HOST_MAX chars) and @port (1..65535).
 * Return: 0; -EINVAL.
 */
int rdma__parse_hostport(const char *s, char host[RDMA__HOST_MAX + 1], uint16_t *port);

/**
 * rdma__control_connect -- TCP connection to @host:@port within @timeout_ms.
 * Return: a file descriptor (close-on-exec, TCP_NODELAY); RDMA_E_CONN if
 * refused or unreachable; -ETIMEDOUT; -EINVAL for a host that does not
 * resolve.
 */
int rdma__control_connect(const char *host, uint16_t port, unsigned timeout_ms);

/**
 * rdma__control_send -- write all @len bytes of @msg within @timeout_ms.
 * Return: 0; RDMA_E_CONN; -ETIMEDOUT.
 */
int rdma__control_send(int fd, const void *msg, size_t len, unsigned timeout_ms);

/**
 * rdma__control_recv -- read one message: its header into *@h and its body
 * (at most @cap bytes, else RDMA_E_PROTO) into @body, within @timeout_ms.
 * Return: 0; RDMA_E_PROTO; RDMA_E_CONN (peer closed); -ETIMEDOUT.
 */
int rdma__control_recv(int fd, struct rdma_wire_header *h, void *body,
	size_t cap, unsigned timeout_ms);

/**
 * rdma__control_hello -- connect to @host:@port, send @hello, and read the
 * answer: WELCOME into *@welcome (returns 0 and the open socket in *@fd,
 * which the caller keeps to notice the node's death and closes), or REFUSE
 * (returns its code, e.g. RDMA_E_AUTH; no socket is left open).
 */
int rdma__control_hello(const char *host, uint16_t port, unsigned timeout_ms,
	const struct rdma_wire_hello *hello, struct rdma_wire_welcome *welcome,
	int *fd);

/**
 * rdma__control_alive -- without blocking, whether the control connection
 * @fd is still open (the node closes it when it stops or dies).
 * Return: 0; RDMA_E_CONN.
 */
int rdma__control_alive(int fd);

#endif /* RDMA_SRC_CONTROL_H */
