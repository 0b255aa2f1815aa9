/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdma/src/server.c -- what every fabric server does with a shipped batch,
 * and the node's log helper.
 *
 * A shipped batch comes from a client the node does not trust: it is
 * decoded (wire.c checks its shape and limits), checked against the region
 * table (bounds, region ids), and only then executed, by the same in-order
 * executor the local backend uses. The reply is laid out before execution
 * so the executor writes READ data and CAS/FAA old values straight into it:
 * no second copy of up to RDMA_BATCH_MAX_BYTES per batch.
 */
#include <stdarg.h>
#include <stdio.h>

#include "core.h"
#include "server.h"

/* Longest log line handed to env->log; longer lines are cut. */
#define SERVER_LOG_LINE_MAX 512

/* count -- add @n to a shared counter. Relaxed: the counters are
 * statistics that order nothing, read by rdma_node_get_status() snapshots. */
static void
count(uint64_t *c, uint64_t n)
{
	__atomic_fetch_add(c, n, __ATOMIC_RELAXED);
}

/* serve_error -- encode an error reply for a request whose header was
 * readable */
static int
serve_error(void *rep, size_t cap, uint32_t seq, uint32_t nops, int status)
{
	return rdma_wire_batch_rep_encode_error(rep, cap, seq, nops, status);
}

int
rdma__serve_batch(const struct rdma__server_env *env, const void *msg,
	size_t len, void *rep, size_t cap)
{
	struct rdma__server_counters *ctr = env->counters;
	struct rdma_wire_header h;
	struct rdma_batch batch;

	if (rdma_wire_header_decode(msg, len, &h) != 0) {
		count(&ctr->bad_messages, 1);
		return RDMA_E_PROTO;
	}
	/* Only a request whose body is exactly what the header announces
	 * is read: a short message is truncated, a long one carries bytes
	 * of something else. */
	if (h.type != RDMA_WIRE_BATCH_REQ ||
	    len - RDMA_WIRE_HEADER_SIZE != h.length ||
	    rdma_wire_batch_req_decode((const uint8_t *)msg + RDMA_WIRE_HEADER_SIZE,
		    h.length, &batch) != 0) {
		count(&ctr->bad_messages, 1);
		rdma__log(env, RDMA_NODE_LOG_DEBUG,
			"malformed batch request (type %u, length %u, %zu bytes)",
			(unsigned)h.type, (unsigned)h.length, len);
		/* The request's nops is unknown; 0 tells the client this
		 * answers no batch of its own (wire.h). */
		return serve_error(rep, cap, h.seq, 0, RDMA_E_PROTO);
	}
	/* The node trusts no client: everything executes only after every
	 * access is known to lie inside its region. */
	int ret = rdma__batch_check(&batch, env->info, env->nregions);

	if (ret != 0) {
		count(&ctr->batches_rejected, 1);
		rdma__log(env, RDMA_NODE_LOG_DEBUG, "batch rejected: %d", ret);
		return serve_error(rep, cap, h.seq, batch.n, ret);
	}
	int size = rdma_wire_batch_rep_prepare(rep, cap, h.seq, &batch);

	if (size < 0)
		return size;
	unsigned persists = rdma__exec_batch(&batch, env->regions);

	count(&ctr->persists, persists);
	count(&ctr->batches_shipped, 1);
	return size;
}

void
rdma__log(const struct rdma__server_env *env, enum rdma_node_log_level level,
	const char *fmt, ...)
{
	char line[SERVER_LOG_LINE_MAX];
	va_list ap;

	if (env == NULL || env->log == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	env->log(env->log_arg, level, line);
}
