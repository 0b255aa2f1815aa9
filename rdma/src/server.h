/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdma/src/server.h -- what the node (node.c, node_control.c) and its
 * fabric servers (ofi_server.c, verbs_server.c) share. Not installed.
 *
 * node.c owns the pool and the region table, node_control.c the control
 * listener; when a client's HELLO names a backend, node_control.c checks
 * the token and asks that backend's server to admit the client (fill in
 * keys and the fabric address of the WELCOME). Each server runs its own
 * progress thread.
 */
#ifndef RDMA_SRC_SERVER_H
#define RDMA_SRC_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include <rdma/node.h>

#include "exec.h"
#include "wire.h"

/* Counters every server updates (relaxed atomic adds). */
struct rdma__server_counters {
	uint64_t bad_messages;
	uint64_t batches_shipped;
	uint64_t batches_rejected;
	uint64_t persists;
};

/* What the node gives a server; valid until the server's stop returns. */
struct rdma__server_env {
	unsigned nregions;
	const struct rdma__exec_region *regions;   /* where they are mapped */
	const struct rdma_region_info *info;       /* ids and lengths */
	const char *host;                          /* address to bind data to */
	struct rdma__server_counters *counters;
	rdma_node_log_fn log;
	void *log_arg;
	enum rdma_node_poll poll;                  /* how an ofi progress thread
	                                            * waits (verbs' thread only
	                                            * sees connection events and
	                                            * always sleeps) */
};

struct rdma__server {
	const char *name;        /* "ofi+tcp", "ofi+shm", "verbs" */
	unsigned serve_flag;     /* RDMA_NODE_SERVE_* */
	uint8_t wire_backend;    /* enum rdma_wire_backend */
	/* Start serving (registration, progress thread). RDMA_E_NO_DEVICE if
	 * the backend cannot run on this machine. */
	int (*start)(void **state, const struct rdma__server_env *env);
	/* Admit the client of @hello: fill welcome->regions[i].key and .addr
	 * and welcome->addr/addr_len (nregions and lengths are filled by the
	 * caller). Thread-safety: called from the control thread only. */
	int (*admit)(void *state, const struct rdma_wire_hello *hello,
		struct rdma_wire_welcome *welcome);
	/* Stop the progress thread and release everything. */
	void (*stop)(void *state);
};

extern const struct rdma__server rdma__server_ofi_tcp;
extern const struct rdma__server rdma__server_ofi_shm;
extern const struct rdma__server rdma__server_ofi_verbs;
extern const struct rdma__server rdma__server_verbs;

/**
 * rdma__serve_batch -- handle one BATCH_REQ message @msg (@len bytes,
 * header included) for @env: decode, check against the region table,
 * execute in order with rdma__exec_batch, and encode the reply into @rep
 * (@cap >= RDMA_WIRE_MSG_MAX). A malformed request counts as a bad message
 * and a rejected one (bounds, region) as rejected; both get an error reply
 * when the header was readable. Return: reply size, or RDMA_E_PROTO when
 * the header itself is unreadable (no reply can be addressed).
 */
int rdma__serve_batch(const struct rdma__server_env *env, const void *msg,
	size_t len, void *rep, size_t cap);

/**
 * rdma__log -- format a line and hand it to env->log (if any).
 */
void rdma__log(const struct rdma__server_env *env, enum rdma_node_log_level level,
	const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif /* RDMA_SRC_SERVER_H */
