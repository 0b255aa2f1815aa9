/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdma/src/node_internal.h -- what the two parts of the memory node
 * (rdma/node.h) share: the node object and its log. Private to the rdma
 * module.
 *   node.c          the pool and its region table, the node file, open and
 *                   close
 *   node_control.c  the TCP control listener, client handling, the fabric
 *                   servers it starts, status
 * Each file's top comment describes its part.
 */
#ifndef RDMA_NODE_INTERNAL_H
#define RDMA_NODE_INTERNAL_H

#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <pm/pool.h>
#include <rdma/node.h>

#include "core.h"
#include "exec.h"
#include "server.h"
#include "wire.h"

/* Longest host name for serving. */
#define NODE_HOST_MAX 255
/* The largest control message body a client may send: a HELLO with the
 * longest token and fabric address. Anything longer is malformed here even
 * though the wire format allows longer bodies for batches. */
#define NODE_CTL_BODY_MAX (6 + RDMA_TOKEN_MAX + RDMA_WIRE_ADDR_MAX)

struct node_root; /* the pool's root object (node.c) */

/* One fabric server the node may run. */
struct node_server {
	const struct rdma__server *srv;
	void *state;
	bool started;
	struct rdma__server_env env; /* must outlive the server: it keeps it */
};

enum { NODE_NSERVERS = 4 };

/* One control connection. */
struct node_client {
	int fd;                 /* -1: slot free */
	bool admitted;          /* WELCOME sent: no idle timeout */
	size_t have;            /* bytes of the current message in buf */
	uint64_t msg_deadline;  /* ms; valid while have > 0 */
	uint64_t idle_deadline; /* ms; valid while !admitted */
	struct rdma_wire_header hdr; /* decoded once have >= header size */
	char peer[64];
	uint8_t buf[RDMA_WIRE_HEADER_SIZE + NODE_CTL_BODY_MAX];
};

struct rdma_node {
	struct pm_pool *pool;
	struct node_root *root;
	char *pool_path;            /* realpath of the pool */
	char *file_path;            /* "<pool_path as given>.node" */
	char token[RDMA_TOKEN_MAX + 1];
	size_t token_len;
	rdma_node_log_fn log;
	void *log_arg;
	enum pm_durability durability;
	uint64_t incarnation;
	uint64_t open_ns;
	unsigned nregions;
	struct rdma_region_info info[RDMA_NODE_MAX_REGIONS];
	struct rdma__exec_region regions[RDMA_NODE_MAX_REGIONS];

	/* Serving. Written by rdma_node_serve/close; the counters are updated
	 * with relaxed atomics by the listener and the servers and read the
	 * same way by rdma_node_get_status, which needs no ordering among them. */
	bool serving;
	uint16_t port;
	unsigned backends;          /* RDMA_NODE_SERVE_* actually serving */
	char host[NODE_HOST_MAX + 1];
	struct rdma__server_counters counters;
	uint64_t clients_admitted;
	uint64_t clients_refused;
	unsigned clients_connected;
	struct node_server servers[NODE_NSERVERS];
	int listen_fd;
	int stop_fd;
	pthread_t thread;
	unsigned max_clients;
	struct node_client *clients; /* max_clients slots; listener thread only */
	uint64_t accept_pause_until; /* ms; listener thread only */
	struct pollfd *pfd;          /* max_clients + 2; listener thread only */
	unsigned *pfd_slot;          /* client slot of each pfd entry */
};

/* rdma__node_log -- format a line and hand it to the configured log function */
void rdma__node_log(const struct rdma_node *n, enum rdma_node_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* rdma__node_stop_serving -- stop the listener, drop the clients, stop the servers */
void rdma__node_stop_serving(struct rdma_node *n);

#endif /* RDMA_NODE_INTERNAL_H */
