/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdma/src/ofi.c -- the libfabric client backends "ofi+tcp" (tcp;ofi_rxm),
 * "ofi+shm" (shm) and "ofi+verbs" (verbs;ofi_rxm).
 *
 * Two ways to run a batch, each one round trip:
 *
 *   RMA path: every operation is handed to the provider back to back
 *   (fi_read, fi_writemsg, fi_compare_atomic FI_CSWAP, fi_fetch_atomic
 *   FI_SUM, all 8-byte FI_UINT64) and the batch completes when all of them
 *   have. The node's CPU does nothing but progress its endpoint.
 *
 *   Shipped path: the batch is encoded into one BATCH_REQ message, the node
 *   executes it in order with its CPU (rdma__serve_batch, the same executor
 *   as the local backend) and answers with one BATCH_REP.
 *
 * A batch takes the RMA path only when the provider itself guarantees the
 * batch's order, i.e. when the msg_order granted at endpoint open covers
 * every ordered pair of its operations (rdma__ofi_order_covers), the
 * batch has no persist, and it is no longer than the connection's
 * max_provider_ops (by default 1 on tcp and shm, whose RMA operations
 * complete one after another, so that a longer batch costs one message
 * instead of n sequential exchanges). Everything else is shipped, because:
 *   - Persistence of data that arrived over TCP (or through shm) can only be
 *     done by the node's CPU: the provider copies the bytes into the region
 *     with ordinary stores, and only a flush on the node (pm_persist) makes
 *     them durable. There is no fabric operation that flushes.
 *   - For the same reason "persist, then CAS" cannot be ordered by the
 *     provider: the flush is not a fabric operation the provider could
 *     order the CAS after, so "write, persist, CAS, persist" must run on the
 *     node to keep the CAS from becoming visible (or durable) before the
 *     write is durable.
 *   - tcp;ofi_rxm does not grant write-after-read at all, and with atomics
 *     enabled it orders RMA only against RMA and atomics only against
 *     atomics (FI_ORDER_RMA_* and FI_ORDER_ATOMIC_*, not the generic bits):
 *     "write buffer, CAS metadata" must be shipped there, or the CAS could
 *     overtake the write. shm grants full ordering, so on shm such a batch
 *     goes as RMA.
 *   - verbs;ofi_rxm is treated like tcp: it takes the RMA path for what its
 *     granted order covers, and a persist is shipped to the node's CPU. (A
 *     read after the writes on the same queue pair would also flush on an
 *     ADR/eADR target with DDIO off, as the raw "verbs" backend does, but
 *     ofi_rxm runs atomics as messages its peer executes in software, and
 *     hides which queue pair carries what, so that guarantee is not ours to
 *     rely on through it.)
 * Writes are posted with FI_DELIVERY_COMPLETE, so a completed write has
 * been placed in the node's memory (not merely sent) when the batch reports
 * completion; reads and fetching atomics complete only when their data is
 * back, which implies the same.
 *
 * Buffers. The caller's read and write buffers are used directly (we do not
 * accept FI_MR_LOCAL, so they need no registration; over verbs, ofi_rxm
 * registers them itself, per operation) and compare/operand
 * values are read from the batch itself, which the caller leaves alone while
 * it is in flight. One registered bounce buffer per connection holds the
 * outgoing BATCH_REQ and the incoming BATCH_REP; a receive into it is always
 * posted, so a reply never arrives unexpected.
 *
 * Liveness. A provider may never complete an operation to a dead node (shm
 * in particular), so poll also checks, at most once a millisecond, that the
 * node still holds our control connection open; conn.c enforces timeouts.
 * A node in this very process (rdma__ofi_local_has) is a harder case for
 * shm: libfabric 1.17 shares the region of an endpoint of the same process
 * instead of mapping it again, in both directions. Once that node closes,
 * touching its address crashes inside the provider (SIGSEGV in fi_read);
 * the node drops control connections before it stops its fabric servers,
 * so for an in-process shm node every post and poll first checks the
 * control connection (a nonblocking poll); a node closed concurrently with
 * a call in flight is still unsafe. The other way round, the node may touch
 * our endpoint's memory just after we saw the last completion, so close
 * waits for answers outstanding and then parks the endpoint with the node,
 * whose progress thread closes it once none of its replies is outstanding
 * (ofi_server.c, ofi_poll_once).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "control.h"
#include "core.h"
#include "ofi_common.h"
#include "wire.h"

/* Least time close waits for a node in this process to finish answering. */
#define OFI_DRAIN_MIN_MS 5000u

/* How often poll looks at the control connection. */
#define OFI_ALIVE_EVERY_NS 1000000ull

/* Bytes of each half of the bounce buffer (request, reply). */
#define OFI_BOUNCE_HALF (((size_t)RDMA_WIRE_MSG_MAX + 4095) & ~(size_t)4095)

/*
 * Whether batches with CAS or FAA may take the RMA path at all. Provider
 * atomics run in the node's progress thread while shipped atomics run on
 * the node's CPU through exec.c; ofi_test's ProviderAndShippedFaaOnOneWord
 * checks that the two never lose each other's increments on the same word
 * (they do not: both are real atomic read-modify-writes).
 */
#define OFI_RMA_ATOMICS 1

enum ofi_path {
	OFI_PATH_NONE,
	OFI_PATH_RMA,
	OFI_PATH_SHIPPED,
};

struct ofi_region {
	uint64_t addr; /* the region's base at the node, added to offsets
	                * for accesses the provider addresses virtually */
	uint64_t key;
};

struct ofi_conn {
	enum rdma__ofi_prov prov;
	struct rdma__ofi ofi;
	int ctl_fd;                 /* control connection; closed by the
	                             * node when it stops or dies */
	fi_addr_t node;
	unsigned nregions;
	struct ofi_region regions[RDMA__MAX_REGIONS];
	uint8_t *bounce;            /* request half, then reply half */
	struct fid_mr *bounce_mr;
	void *bounce_desc;
	uint32_t seq;
	bool recv_posted;
	bool broken;
	bool same_process;          /* the node runs in this process */
	unsigned max_rma;           /* most ops of a batch on the RMA path */
	size_t node_name_len;
	uint8_t node_name[RDMA_WIRE_ADDR_MAX]; /* as the node announced it */
	/* what the node may still write into our memory: provider operations
	 * not yet completed (even of a failed or abandoned batch), and the
	 * reply to a request sent */
	unsigned rma_pending;
	bool awaiting_reply;
	bool probe_atomic;          /* the op in flight is ofi_probe's */
	uint64_t alive_ns;          /* last control check */

	/* the batch in flight */
	struct rdma_batch *b;
	enum ofi_path path;
	unsigned next;              /* RMA: next op to post */
	unsigned done;              /* RMA: ops completed */
	size_t req_len;             /* shipped: request size */
	bool sent;                  /* shipped: send posted */
	bool send_done;             /* shipped: send completed */
	bool rep_ready;             /* shipped: reply received */
	size_t rep_len;
	uint64_t scratch[RDMA_BATCH_MAX_OPS]; /* results nobody asked for */
	/* completion contexts: their addresses say what completed */
	char op_ctx[RDMA_BATCH_MAX_OPS];
	char send_ctx;
	char recv_ctx;
};

/*
 * ofi_batch_rma_ok -- whether @b can run as provider operations on @oc
 * with the order it promises (see the top of this file).
 */
static bool
ofi_batch_rma_ok(const struct ofi_conn *oc, const struct rdma_batch *b)
{
	if (b->n > oc->max_rma)
		return false;
	for (unsigned i = 0; i < b->n; i++) {
		unsigned t = b->ops[i].type;

		if (t == RDMA_OP_PERSIST)
			return false;
		if ((t == RDMA_OP_CAS || t == RDMA_OP_FAA) &&
				(!OFI_RMA_ATOMICS || !oc->ofi.atomics))
			return false;
		for (unsigned j = 0; j < i; j++)
			if (!rdma__ofi_order_covers(oc->ofi.order,
					b->ops[j].type, t))
				return false;
	}
	return true;
}

/*
 * ofi_post_recv -- keep a receive for the next reply posted.
 */
static int
ofi_post_recv(struct ofi_conn *oc)
{
	int ret;

	if (oc->recv_posted)
		return 0;
	ret = rdma__ofi_recv(&oc->ofi, oc->bounce + OFI_BOUNCE_HALF,
		OFI_BOUNCE_HALF, oc->bounce_desc, &oc->recv_ctx);
	if (ret == 0)
		oc->recv_posted = true;
	return ret == -EAGAIN ? 0 : ret;
}

/*
 * ofi_post_op -- hand operation @i of the batch in flight to the provider.
 * Return: 0; -EAGAIN (queue full); another negative code.
 */
static int
ofi_post_op(struct ofi_conn *oc, unsigned i)
{
	struct rdma_op *op = &oc->b->ops[i];
	const struct ofi_region *r = &oc->regions[op->region];
	bool atomic = op->type == RDMA_OP_CAS || op->type == RDMA_OP_FAA;
	uint64_t raddr = (atomic ? oc->ofi.atomic_virt : oc->ofi.rma_virt) ?
		r->addr + op->offset : op->offset;
	uint64_t *res = op->result != NULL ? op->result : &oc->scratch[i];
	void *ctx = &oc->op_ctx[i];
	struct fi_msg_rma msg;
	struct fi_rma_iov rma;
	struct iovec iov;
	ssize_t ret;

	switch (op->type) {
	case RDMA_OP_READ:
		ret = fi_read(oc->ofi.ep, op->local, op->len, NULL, oc->node,
			raddr, r->key, ctx);
		break;
	case RDMA_OP_WRITE:
		iov.iov_base = op->local;
		iov.iov_len = op->len;
		rma.addr = raddr;
		rma.len = op->len;
		rma.key = r->key;
		memset(&msg, 0, sizeof(msg));
		msg.msg_iov = &iov;
		msg.iov_count = 1;
		msg.addr = oc->node;
		msg.rma_iov = &rma;
		msg.rma_iov_count = 1;
		msg.context = ctx;
		/* complete only once placed at the node, not once sent */
		ret = fi_writemsg(oc->ofi.ep, &msg,
			FI_COMPLETION | FI_DELIVERY_COMPLETE);
		break;
	case RDMA_OP_CAS:
		ret = fi_compare_atomic(oc->ofi.ep, &op->operand, 1, NULL,
			&op->compare, NULL, res, NULL, oc->node, raddr, r->key,
			FI_UINT64, FI_CSWAP, ctx);
		break;
	case RDMA_OP_FAA:
		ret = fi_fetch_atomic(oc->ofi.ep, &op->operand, 1, NULL, res,
			NULL, oc->node, raddr, r->key, FI_UINT64,
			oc->probe_atomic && oc->ofi.atomic_read ?
			FI_ATOMIC_READ : FI_SUM, ctx);
		break;
	default:
		return -EINVAL;
	}
	return rdma__ofi_err(ret);
}

/*
 * ofi_push -- post whatever the provider refused so far.
 * Return: 0 (possibly with work left for the next poll); a negative code.
 */
static int
ofi_push(struct ofi_conn *oc)
{
	int ret = ofi_post_recv(oc);

	if (ret != 0)
		return ret;
	if (oc->path == OFI_PATH_RMA) {
		while (oc->next < oc->b->n) {
			ret = ofi_post_op(oc, oc->next);
			if (ret == -EAGAIN)
				return 0;
			if (ret != 0)
				return ret;
			oc->next++;
			oc->rma_pending++;
		}
	} else if (oc->path == OFI_PATH_SHIPPED && !oc->sent) {
		/* the reply must have somewhere to land before we ask */
		if (!oc->recv_posted)
			return 0;
		ret = rdma__ofi_send(&oc->ofi, oc->bounce, oc->req_len,
			oc->bounce_desc, oc->node, &oc->send_ctx);
		if (ret == -EAGAIN)
			return 0;
		if (ret != 0)
			return ret;
		oc->sent = true;
		oc->awaiting_reply = true;
	}
	return 0;
}

/*
 * ofi_fail -- the connection is unusable from now on.
 */
static int
ofi_fail(struct ofi_conn *oc, int err)
{
	oc->broken = true;
	oc->b = NULL;
	oc->path = OFI_PATH_NONE;
	return err;
}

/*
 * ofi_take_reply -- the BATCH_REP arrived: check it answers our request
 * and deliver it. Return: the batch status; RDMA_E_PROTO; 1 if it was a
 * stale reply to some other request (keep waiting).
 */
static int
ofi_take_reply(struct ofi_conn *oc)
{
	const uint8_t *rep = oc->bounce + OFI_BOUNCE_HALF;
	struct rdma_wire_header h;
	int ret;

	ret = rdma_wire_header_decode(rep, oc->rep_len, &h);
	if (ret != 0)
		return ret;
	if (h.type != RDMA_WIRE_BATCH_REP ||
			(size_t)h.length + RDMA_WIRE_HEADER_SIZE != oc->rep_len)
		return RDMA_E_PROTO;
	if (h.seq != oc->seq)
		return 1;
	return rdma_wire_batch_rep_decode(rep + RDMA_WIRE_HEADER_SIZE,
		h.length, oc->b);
}

/*
 * ofi_reap -- read the completion queue and account for what completed.
 * Return: 0; the negative code of a failed operation.
 */
static int
ofi_reap(struct ofi_conn *oc)
{
	struct rdma__ofi_comp comps[16];
	int err = 0;
	int n;

	do {
		n = rdma__ofi_poll(&oc->ofi, comps, 16);
		if (n < 0)
			return n;
		for (int i = 0; i < n; i++) {
			const struct rdma__ofi_comp *cp = &comps[i];

			if (cp->context == &oc->recv_ctx) {
				oc->recv_posted = false;
				oc->awaiting_reply = false;
				oc->rep_ready = cp->status == 0;
				oc->rep_len = cp->len;
			} else if (cp->context == &oc->send_ctx) {
				oc->send_done = true;
			} else {
				oc->done++;
				if (oc->rma_pending > 0)
					oc->rma_pending--;
			}
			/* the provider lost the node or refused the access:
			 * nothing sane can follow */
			if (cp->status != 0 && err == 0)
				err = RDMA_E_CONN;
		}
	} while (n == 16);
	return err;
}

/*
 * ofi_check_alive -- RDMA_E_CONN once the node has dropped our control
 * connection (stopped, crashed, restarted). Rate-limited: one syscall per
 * millisecond of polling.
 */
static int
ofi_check_alive(struct ofi_conn *oc)
{
	uint64_t now = rdma__now_ns();

	if (now - oc->alive_ns < OFI_ALIVE_EVERY_NS)
		return 0;
	oc->alive_ns = now;
	return rdma__control_alive(oc->ctl_fd);
}

/*
 * ofi_conn_post -- start batch @b on the RMA path or ship it.
 */
static int
ofi_conn_post(struct rdma_conn *c, struct rdma_batch *b)
{
	struct ofi_conn *oc = c->be;
	int ret;

	if (oc->broken)
		return RDMA_E_CONN;
	if (oc->same_process && oc->prov == RDMA__OFI_SHM &&
			rdma__control_alive(oc->ctl_fd) != 0)
		return ofi_fail(oc, RDMA_E_CONN);
	if (oc->b != NULL)
		return -EBUSY;
	oc->b = b;
	oc->next = 0;
	oc->done = 0;
	oc->sent = false;
	oc->send_done = false;
	oc->rep_ready = false;
	if (ofi_batch_rma_ok(oc, b)) {
		oc->path = OFI_PATH_RMA;
		rdma__stats.provider_ops += b->n;
	} else {
		ret = rdma_wire_batch_req_encode(oc->bounce, OFI_BOUNCE_HALF,
			++oc->seq, b);
		if (ret < 0) {
			oc->b = NULL;
			return ret;
		}
		oc->req_len = (size_t)ret;
		oc->path = OFI_PATH_SHIPPED;
		rdma__stats.shipped++;
		rdma__stats.wire_messages++;
	}
	ret = ofi_push(oc);
	return ret != 0 ? ofi_fail(oc, ret) : 0;
}

/*
 * ofi_conn_poll -- progress the batch in flight without blocking.
 */
static int
ofi_conn_poll(struct rdma_conn *c)
{
	struct ofi_conn *oc = c->be;
	int ret;

	if (oc->broken)
		return RDMA_E_CONN;
	if (oc->b == NULL)
		return -EINVAL;
	if (oc->same_process && oc->prov == RDMA__OFI_SHM &&
			rdma__control_alive(oc->ctl_fd) != 0)
		return ofi_fail(oc, RDMA_E_CONN);
	ret = ofi_push(oc);
	if (ret == 0)
		ret = ofi_reap(oc);
	if (ret != 0)
		return ofi_fail(oc, ret);

	if (oc->path == OFI_PATH_RMA && oc->done == oc->b->n) {
		oc->b = NULL;
		oc->path = OFI_PATH_NONE;
		return 0;
	}
	if (oc->path == OFI_PATH_SHIPPED && oc->rep_ready && oc->send_done) {
		ret = ofi_take_reply(oc);
		oc->rep_ready = false;
		/* ret 1: a reply to an abandoned request; the next push
		 * reposts the receive and we keep waiting for ours */
		if (ret != 1) {
			if (ret == RDMA_E_PROTO)
				return ofi_fail(oc, ret);
			oc->b = NULL;
			oc->path = OFI_PATH_NONE;
			/* the next request must find a receive posted */
			if (ofi_post_recv(oc) != 0)
				oc->broken = true;
			return ret;
		}
	}
	ret = ofi_check_alive(oc);
	if (ret != 0)
		return ofi_fail(oc, RDMA_E_CONN);
	return -EINPROGRESS;
}

/*
 * ofi_conn_free -- tear down @arg (a struct ofi_conn): endpoint, bounce
 * registration and buffer, control connection.
 */
static void
ofi_conn_free(void *arg)
{
	struct ofi_conn *oc = arg;

	/* the endpoint before the registration it may still use */
	if (oc->ofi.ep != NULL) {
		fi_close(&oc->ofi.ep->fid);
		oc->ofi.ep = NULL;
	}
	if (oc->bounce_mr != NULL)
		fi_close(&oc->bounce_mr->fid);
	rdma__ofi_close(&oc->ofi);
	if (oc->ctl_fd >= 0)
		close(oc->ctl_fd);
	free(oc->bounce);
	free(oc);
}

/*
 * ofi_conn_close -- release the connection's state (an operation in
 * flight is abandoned with the endpoint).
 */
static void
ofi_conn_close(struct rdma_conn *c)
{
	struct ofi_conn *oc = c->be;

	if (oc == NULL)
		return;
	c->be = NULL;
	if (oc->same_process && oc->prov == RDMA__OFI_SHM && oc->ofi.ep != NULL) {
		uint64_t start = rdma__now_ns();
		/* the caller's timeout may be what abandoned the batch */
		uint64_t limit = (uint64_t)(c->timeout_ms > OFI_DRAIN_MIN_MS ?
			c->timeout_ms : OFI_DRAIN_MIN_MS) * 1000000u;

		/*
		 * A node in this process writes answers straight into our
		 * endpoint's shm memory (see the top of this file): wait,
		 * bounded, until it has nothing left to answer (or is gone),
		 * then leave the endpoint to the node, which closes it when
		 * it cannot be touching it any more.
		 */
		while ((oc->rma_pending > 0 || oc->awaiting_reply) &&
				rdma__control_alive(oc->ctl_fd) == 0 &&
				rdma__now_ns() - start < limit) {
			/* error completions count as answered too */
			(void)ofi_reap(oc);
			rdma__cpu_relax();
		}
		/* the node sees us leave now, not when it releases us */
		close(oc->ctl_fd);
		oc->ctl_fd = -1;
		if (rdma__ofi_local_park(oc->node_name, oc->node_name_len,
				ofi_conn_free, oc))
			return;
	}
	ofi_conn_free(oc);
}

/*
 * ofi_fix_wildcard -- a node bound to the wildcard address announces
 * 0.0.0.0 (or ::), which means "this host" to us: use the address we reach
 * its control port at instead.
 */
static void
ofi_fix_wildcard(const struct ofi_conn *oc, struct rdma_wire_welcome *w)
{
	struct sockaddr_storage peer;
	socklen_t pl = sizeof(peer);

	if (!rdma__ofi_prov_ip(oc->prov) ||
			getpeername(oc->ctl_fd, (struct sockaddr *)&peer, &pl) != 0)
		return;
	if (w->addr_len == sizeof(struct sockaddr_in) &&
			peer.ss_family == AF_INET) {
		struct sockaddr_in sin;

		memcpy(&sin, w->addr, sizeof(sin));
		if (sin.sin_family != AF_INET ||
				sin.sin_addr.s_addr != htonl(INADDR_ANY))
			return;
		sin.sin_addr = ((struct sockaddr_in *)&peer)->sin_addr;
		memcpy(w->addr, &sin, sizeof(sin));
	} else if (w->addr_len == sizeof(struct sockaddr_in6) &&
			peer.ss_family == AF_INET6) {
		struct sockaddr_in6 sin6;

		memcpy(&sin6, w->addr, sizeof(sin6));
		if (sin6.sin6_family != AF_INET6 ||
				!IN6_IS_ADDR_UNSPECIFIED(&sin6.sin6_addr))
			return;
		sin6.sin6_addr = ((struct sockaddr_in6 *)&peer)->sin6_addr;
		memcpy(w->addr, &sin6, sizeof(sin6));
	}
}

/*
 * ofi_attempt -- one connection attempt: endpoint, bounce buffer, HELLO,
 * node address, receive posted. Remote addresses will be formed with
 * @rma_virt / @atomic_virt (see ofi_conn_open). On success *@out holds the
 * state and *@welcome the node's answer.
 */
static int
ofi_attempt(struct rdma_conn *c, const char *host, uint16_t port,
	enum rdma__ofi_prov prov, bool rma_virt, bool atomic_virt,
	struct ofi_conn **out, struct rdma_wire_welcome *welcome)
{
	size_t token_len = strlen(c->token);
	struct rdma_wire_hello hello;
	struct rdma_conn tmp;
	struct ofi_conn *oc;
	char src[64];
	uint64_t key;
	int ret;

	*out = NULL;
	if (token_len > RDMA_TOKEN_MAX)
		return -EINVAL;
	oc = calloc(1, sizeof(*oc));
	if (oc == NULL)
		return -ENOMEM;
	oc->prov = prov;
	oc->ctl_fd = -1;
	/* libfabric's tcp and shm run a batch's RMA one operation at a
	 * time, so past one operation shipping is cheaper (rdma.h) */
	oc->max_rma = c->max_provider_ops != 0 ? c->max_provider_ops :
		prov == RDMA__OFI_VERBS ? RDMA_BATCH_MAX_OPS : 1;

	/* tcp, verbs: bind where the route to the node starts, so the
	 * address we announce is one the node can answer */
	ret = rdma__ofi_open(&oc->ofi, prov,
		rdma__ofi_prov_ip(prov) &&
		rdma__ofi_route_source(host, src, sizeof(src)) == 0 ? src : NULL,
		0);
	if (ret != 0)
		goto fail;
	oc->ofi.rma_virt = rma_virt;
	oc->ofi.atomic_virt = atomic_virt;

	oc->bounce = aligned_alloc(4096, 2 * OFI_BOUNCE_HALF);
	if (oc->bounce == NULL) {
		ret = -ENOMEM;
		goto fail;
	}
	ret = rdma__ofi_mr_reg(&oc->ofi, oc->bounce, 2 * OFI_BOUNCE_HALF,
		FI_SEND | FI_RECV | FI_READ | FI_WRITE, &oc->bounce_mr, &key);
	if (ret != 0)
		goto fail;
	oc->bounce_desc = fi_mr_desc(oc->bounce_mr);

	memset(&hello, 0, sizeof(hello));
	hello.backend = rdma__ofi_wire_backend(prov);
	hello.token_len = (uint16_t)token_len;
	memcpy(hello.token, c->token, token_len);
	hello.addr_len = (uint16_t)oc->ofi.name_len;
	memcpy(hello.addr, oc->ofi.name, oc->ofi.name_len);
	memset(welcome, 0, sizeof(*welcome));
	ret = rdma__control_hello(host, port, c->timeout_ms, &hello, welcome,
		&oc->ctl_fd);
	if (ret != 0) {
		oc->ctl_fd = -1;
		goto fail;
	}
	if (welcome->nregions == 0 || welcome->nregions > RDMA__MAX_REGIONS) {
		ret = RDMA_E_PROTO;
		goto fail;
	}
	/* before the address is rewritten: the registry has it as is */
	oc->same_process = rdma__ofi_local_has(welcome->addr,
		welcome->addr_len);
	memcpy(oc->node_name, welcome->addr, welcome->addr_len);
	oc->node_name_len = welcome->addr_len;
	ofi_fix_wildcard(oc, welcome);
	ret = rdma__ofi_insert(&oc->ofi, welcome->addr, welcome->addr_len,
		&oc->node);
	if (ret != 0)
		goto fail;
	oc->nregions = welcome->nregions;
	for (unsigned i = 0; i < welcome->nregions; i++) {
		oc->regions[i].addr = welcome->regions[i].addr;
		oc->regions[i].key = welcome->regions[i].key;
	}
	ret = ofi_post_recv(oc);
	if (ret != 0)
		goto fail;
	oc->alive_ns = rdma__now_ns();
	*out = oc;
	return 0;

fail:
	tmp = *c; /* for its timeout */
	tmp.be = oc;
	ofi_conn_close(&tmp);
	return ret;
}

/*
 * ofi_probe -- one 8-byte read of region 0, offset 0, as RMA (@atomic
 * false) or as an atomic read (@atomic true), waited for: whether remote
 * addresses are formed the way the target expects.
 * Return: 0; RDMA_E_CONN if the access failed; -ETIMEDOUT.
 */
static int
ofi_probe(struct rdma_conn *c, struct ofi_conn *oc, bool atomic)
{
	struct rdma_batch b;
	uint64_t word = 0;
	uint64_t start = rdma__now_ns();
	int ret;

	rdma_batch_init(&b);
	b.n = 1;
	b.bytes = 8;
	b.ops[0].type = atomic ? RDMA_OP_FAA : RDMA_OP_READ;
	b.ops[0].region = 0;
	b.ops[0].offset = 0;
	b.ops[0].len = 8;
	b.ops[0].local = &word;
	b.ops[0].result = &word;
	b.ops[0].operand = 0;
	oc->b = &b;
	oc->path = OFI_PATH_RMA;
	oc->next = 0;
	oc->done = 0;
	/* an atomic read changes nothing; where the provider cannot do
	 * one, adding 0 does not either */
	oc->probe_atomic = atomic;
	ret = ofi_push(oc);
	if (ret != 0)
		ret = ofi_fail(oc, ret);
	for (;;) {
		struct rdma_conn tmp = *c;

		if (ret != 0)
			break;
		tmp.be = oc;
		ret = ofi_conn_poll(&tmp);
		if (ret != -EINPROGRESS)
			break;
		if (rdma__now_ns() - start > (uint64_t)c->timeout_ms * 1000000u) {
			ret = -ETIMEDOUT;
			break;
		}
		ret = 0;
		rdma__cpu_relax();
	}
	oc->probe_atomic = false;
	oc->b = NULL;
	oc->path = OFI_PATH_NONE;
	return ret;
}

/*
 * ofi_conn_open -- HELLO to the node at @target ("host:port") over its
 * control port and set up the fabric side.
 *
 * Addressing. Whether the target takes remote addresses as virtual
 * addresses or as offsets from the registered base is not reliably what
 * the provider reports: tcp;ofi_rxm (libfabric 1.17) reports offsets (mr_mode
 * 0) and takes offsets from a client in another process, yet takes virtual
 * addresses for RMA (offsets for atomics, which rxm executes itself) from a
 * client in the node's own process. The node sends every region's base, the
 * first guess is the report (virtual for tcp RMA to a node in this process,
 * which rdma__ofi_local_has recognises), and each connection checks it:
 * one RMA read and one atomic read of region 0. A failed probe may break
 * the connection, so the next attempt reconnects (a second HELLO) with the
 * other convention for that kind. Where the base is 0 there is nothing to
 * find out.
 */
static int
ofi_conn_open(struct rdma_conn *c, const char *target, enum rdma__ofi_prov prov)
{
	char host[RDMA__HOST_MAX + 1];
	struct rdma_wire_welcome welcome;
	struct ofi_conn *oc = NULL;
	bool rma_virt = false, atomic_virt = false;
	bool rma_known = false, atomic_known = false;
	uint16_t port;
	int ret;

	c->be = NULL;
	ret = rdma__parse_hostport(target, host, &port);
	if (ret != 0)
		return ret;
	for (unsigned attempt = 0; attempt < 4; attempt++) {
		struct rdma_conn tmp;

		ret = ofi_attempt(c, host, port, prov, rma_virt, atomic_virt,
			&oc, &welcome);
		if (ret != 0)
			return ret;
		if (attempt == 0) {
			/* start from what the provider reports, except where
			 * it is known to do otherwise (above) */
			rma_virt = atomic_virt = oc->ofi.reported_virt;
			if (prov == RDMA__OFI_TCP && oc->same_process)
				rma_virt = true;
			oc->ofi.rma_virt = rma_virt;
			oc->ofi.atomic_virt = atomic_virt;
		}
		/* a base of 0 reads the same either way */
		if (welcome.regions[0].addr == 0)
			rma_known = atomic_known = true;
		if (!oc->ofi.atomics)
			atomic_known = true;
		ret = 0;
		if (!rma_known) {
			ret = ofi_probe(c, oc, false);
			if (ret == 0)
				rma_known = true;
			else if (ret == RDMA_E_CONN)
				rma_virt = !rma_virt;
		}
		if (ret == 0 && !atomic_known) {
			ret = ofi_probe(c, oc, true);
			if (ret == 0)
				atomic_known = true;
			else if (ret == RDMA_E_CONN)
				atomic_virt = !atomic_virt;
		}
		if (ret == 0)
			break;
		tmp = *c; /* for its timeout */
		tmp.be = oc;
		ofi_conn_close(&tmp);
		oc = NULL;
		if (ret != RDMA_E_CONN)
			return ret;
	}
	if (oc == NULL)
		return RDMA_E_PROTO; /* neither convention works */

	c->nregions = welcome.nregions;
	for (unsigned i = 0; i < welcome.nregions; i++) {
		c->regions[i].id = i;
		c->regions[i].length = welcome.regions[i].length;
	}
	c->be = oc;
	return 0;
}

/*
 * ofi_tcp_open / ofi_shm_open / ofi_verbs_open -- open on one provider.
 */
static int
ofi_tcp_open(struct rdma_conn *c, const char *target)
{
	return ofi_conn_open(c, target, RDMA__OFI_TCP);
}

static int
ofi_shm_open(struct rdma_conn *c, const char *target)
{
	return ofi_conn_open(c, target, RDMA__OFI_SHM);
}

static int
ofi_verbs_open(struct rdma_conn *c, const char *target)
{
	return ofi_conn_open(c, target, RDMA__OFI_VERBS);
}

const struct rdma__backend rdma__backend_ofi_tcp = {
	"ofi+tcp", ofi_tcp_open, ofi_conn_close, ofi_conn_post, ofi_conn_poll,
};
const struct rdma__backend rdma__backend_ofi_shm = {
	"ofi+shm", ofi_shm_open, ofi_conn_close, ofi_conn_post, ofi_conn_poll,
};
const struct rdma__backend rdma__backend_ofi_verbs = {
	"ofi+verbs", ofi_verbs_open, ofi_conn_close, ofi_conn_post, ofi_conn_poll,
};
