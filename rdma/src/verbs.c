/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdma/src/verbs.c -- the verbs client backend (URI "verbs://host:port"):
 * one rdma-core RC queue pair per connection; a batch is one chain of work
 * requests posted with one doorbell (verbs_wr.h explains the chain, its
 * fences, persist-by-read and completion mapping).
 *
 * Connecting: HELLO on the node's control port (token checked there) gives
 * the regions' rkeys and addresses and, in WELCOME.addr, the node's rdma_cm
 * port and a one-use ticket; then rdma_cm resolves the same host at that
 * port and connects, presenting the ticket. The control socket stays open:
 * the node closes it when it stops or dies, which poll notices long before
 * the queue pair's retry timer would.
 *
 * The HELLO and the rdma_cm connection are each bounded by the
 * connection's timeout_ms. No RDMA device here means RDMA_E_NO_DEVICE
 * before anything is allocated or sent.
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "control.h"
#include "core.h"
#include "verbs_wr.h"
#include "wire.h"

/* WRITEs up to this size go inline (none do if the provider refuses
 * inline data; more may if it grants more). */
#define VERBS_MAX_INLINE 64
/* Reads and atomics in flight at once (the provider may grant less). */
#define VERBS_INITIATOR_DEPTH 16
/* How often a waiting poll checks that the node is still there. */
#define VERBS_ALIVE_CHECK_NS 1000000u
/* IB transport retries of a request the node does not acknowledge: 7 is
 * the most the 3-bit field holds. A dead node is noticed sooner through
 * the control connection (verbs_check_alive). */
#define VERBS_RETRY_COUNT 7
/* Receiver-not-ready retries: RNR needs SENDs, and neither side sends, so
 * any finite value will do; 7 would mean "retry forever". */
#define VERBS_RNR_RETRY_COUNT 6

struct verbs_conn {
	int ctl_fd;                      /* control connection, -1 if none */
	struct rdma_event_channel *ec;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	bool qp;                         /* id->qp was created */
	bool connected;                  /* rdma_connect succeeded */
	struct ibv_mr *mr;
	void *bounce;
	struct rdma__verbs_bounce bounce_desc;
	uint32_t max_inline;             /* granted by the provider */
	unsigned nregions;
	struct rdma__verbs_remote remote[RDMA__MAX_REGIONS];
	uint64_t seq;                    /* of the last batch posted */
	uint64_t alive_ns;               /* last liveness check */
	struct rdma__verbs_wrs wrs;      /* the batch in flight */
};

/*
 * verbs_device_present -- whether rdma-core sees at least one device.
 * The list is freed at once; libibverbs keeps its provider table in
 * globals, which is not a leak.
 */
static bool
verbs_device_present(void)
{
	struct ibv_device **list;
	int n = 0;

	list = ibv_get_device_list(&n);
	if (list == NULL)
		return false; /* ENOSYS: no kernel support at all */
	ibv_free_device_list(list);
	return n > 0;
}

/*
 * verbs_destroy -- release whatever @v holds, in reverse order of
 * creation: the queue pair before the CQ, PD and id it uses, the MR before
 * its PD, the id before its event channel.
 */
static void
verbs_destroy(struct verbs_conn *v)
{
	if (v == NULL)
		return;
	if (v->connected)
		(void)rdma_disconnect(v->id);
	if (v->qp)
		rdma_destroy_qp(v->id);
	if (v->mr != NULL)
		(void)ibv_dereg_mr(v->mr);
	free(v->bounce);
	if (v->cq != NULL)
		(void)ibv_destroy_cq(v->cq);
	if (v->pd != NULL)
		(void)ibv_dealloc_pd(v->pd);
	/* Events not yet fetched are dropped by the kernel with the id; every
	 * fetched one was acknowledged, so this does not block. */
	if (v->id != NULL)
		(void)rdma_destroy_id(v->id);
	if (v->ec != NULL)
		rdma_destroy_event_channel(v->ec);
	if (v->ctl_fd >= 0)
		(void)close(v->ctl_fd);
	free(v);
}

/*
 * remaining_ms -- milliseconds left until @deadline_ns (0 if passed).
 */
static int
remaining_ms(uint64_t deadline_ns)
{
	uint64_t now = rdma__now_ns();

	if (now >= deadline_ns)
		return 0;
	return (int)((deadline_ns - now + 999999) / 1000000);
}

/*
 * cm_wait -- wait until @deadline_ns for the next event of @ec and accept
 * it only if it is @want. Events are acknowledged at once (we keep nothing
 * from them).
 * Return: 0; -ETIMEDOUT; RDMA_E_CONN for an error event (address or route
 * not resolved, unreachable, rejected) or an unexpected one.
 */
static int
cm_wait(struct rdma_event_channel *ec, enum rdma_cm_event_type want,
	uint64_t deadline_ns)
{
	struct pollfd pfd = { .fd = ec->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	enum rdma_cm_event_type got;
	int ret;

	for (;;) {
		ret = poll(&pfd, 1, remaining_ms(deadline_ns));
		if (ret < 0 && errno == EINTR)
			continue;
		if (ret < 0)
			return -errno;
		if (ret == 0)
			return -ETIMEDOUT;
		break;
	}
	if (rdma_get_cm_event(ec, &ev) != 0)
		return RDMA_E_CONN;
	got = ev->event;
	(void)rdma_ack_cm_event(ev);
	return got == want ? 0 : RDMA_E_CONN;
}

/*
 * verbs_hello -- the control-port half of open: authenticate, learn the
 * regions (into @v only: c's table is replaced when the whole open has
 * succeeded, so a failed reconnect leaves it as it was) and where to
 * connect.
 */
static int
verbs_hello(struct rdma_conn *c, struct verbs_conn *v, const char *host,
	uint16_t port, uint16_t *cm_port, uint64_t *ticket)
{
	struct rdma_wire_hello hello;
	struct rdma_wire_welcome welcome;
	int ret;

	memset(&hello, 0, sizeof(hello));
	hello.backend = RDMA_WIRE_BACKEND_VERBS;
	hello.token_len = (uint16_t)strlen(c->token);
	memcpy(hello.token, c->token, hello.token_len);
	ret = rdma__control_hello(host, port, c->timeout_ms, &hello, &welcome,
		&v->ctl_fd);
	if (ret != 0) {
		v->ctl_fd = -1;
		return ret;
	}
	if (welcome.nregions == 0 || welcome.nregions > RDMA__MAX_REGIONS)
		return RDMA_E_PROTO;
	ret = rdma__verbs_addr_decode(welcome.addr, welcome.addr_len, cm_port,
		ticket);
	if (ret != 0)
		return ret;
	for (unsigned i = 0; i < welcome.nregions; i++) {
		const struct rdma_wire_region *r = &welcome.regions[i];

		/* rkeys are 32-bit; atomics need 8-aligned node addresses;
		 * the builder's address arithmetic must not wrap. */
		if (r->key > UINT32_MAX || r->addr % 8 != 0 ||
		    r->addr > UINT64_MAX - r->length)
			return RDMA_E_PROTO;
		v->remote[i].addr = r->addr;
		v->remote[i].length = r->length;
		v->remote[i].rkey = (uint32_t)r->key;
	}
	v->nregions = welcome.nregions;
	return 0;
}

/*
 * verbs_resources -- PD, CQ, queue pair and bounce buffer on the device
 * rdma_cm resolved the node's address to. Fills @depth with the reads and
 * atomics the device lets us keep in flight.
 */
static int
verbs_resources(struct verbs_conn *v, uint8_t *depth)
{
	struct ibv_device_attr attr;
	struct ibv_qp_init_attr qpa;
	struct ibv_context *ctx = v->id->verbs;

	if (ibv_query_device(ctx, &attr) != 0)
		return RDMA_E_NO_DEVICE;
	/* IBV_ATOMIC_NONE: no atomics, or (mlx5 on little-endian hosts with
	 * the HCA in big-endian atomic mode) old values that would come back
	 * byte-swapped. rdma.h promises CAS and FAA, so refuse the device. */
	if (attr.atomic_cap == IBV_ATOMIC_NONE)
		return RDMA_E_NO_DEVICE;
	*depth = (uint8_t)(attr.max_qp_init_rd_atom < VERBS_INITIATOR_DEPTH ?
		attr.max_qp_init_rd_atom : VERBS_INITIATOR_DEPTH);
	if (*depth == 0)
		return RDMA_E_NO_DEVICE; /* cannot issue reads or atomics */
	v->pd = ibv_alloc_pd(ctx);
	if (v->pd == NULL)
		return -ENOMEM;
	/* Only the last request of a batch is signalled, but a failing batch
	 * may complete every request (errors and flushes). */
	v->cq = ibv_create_cq(ctx, 2 * RDMA_BATCH_MAX_OPS, NULL, NULL, 0);
	if (v->cq == NULL)
		return -ENOMEM;
	for (uint32_t inl = VERBS_MAX_INLINE;; inl = 0) {
		memset(&qpa, 0, sizeof(qpa));
		qpa.send_cq = v->cq;
		qpa.recv_cq = v->cq;
		qpa.qp_type = IBV_QPT_RC;
		qpa.sq_sig_all = 0;
		qpa.cap.max_send_wr = RDMA_BATCH_MAX_OPS;
		qpa.cap.max_recv_wr = 1;
		qpa.cap.max_send_sge = 1;
		qpa.cap.max_recv_sge = 1;
		qpa.cap.max_inline_data = inl;
		if (rdma_create_qp(v->id, v->pd, &qpa) == 0)
			break;
		/* Some providers cannot inline at all: retry without. */
		if (inl == 0)
			return errno != 0 ? -errno : -ENOMEM;
	}
	v->qp = true;
	v->max_inline = qpa.cap.max_inline_data;
	if (posix_memalign(&v->bounce, 4096, RDMA__VERBS_BOUNCE_SIZE) != 0) {
		v->bounce = NULL;
		return -ENOMEM;
	}
	memset(v->bounce, 0, RDMA__VERBS_BOUNCE_SIZE);
	/* The HCA writes read data and atomic old values here. */
	v->mr = ibv_reg_mr(v->pd, v->bounce, RDMA__VERBS_BOUNCE_SIZE,
		IBV_ACCESS_LOCAL_WRITE);
	if (v->mr == NULL)
		return errno != 0 ? -errno : -ENOMEM;
	v->bounce_desc.base = v->bounce;
	v->bounce_desc.size = RDMA__VERBS_BOUNCE_SIZE;
	v->bounce_desc.lkey = v->mr->lkey;
	return 0;
}

/*
 * verbs_connect -- the rdma_cm half of open.
 */
static int
verbs_connect(struct rdma_conn *c, struct verbs_conn *v, const char *host,
	uint16_t cm_port, uint64_t ticket)
{
	uint64_t deadline = rdma__now_ns() + (uint64_t)c->timeout_ms * 1000000u;
	struct addrinfo hints, *ai = NULL;
	struct rdma_conn_param param;
	uint8_t priv[RDMA__VERBS_PRIV_LEN];
	char service[8];
	uint8_t depth = 0;
	int ret;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	snprintf(service, sizeof(service), "%u", (unsigned)cm_port);
	if (getaddrinfo(host, service, &hints, &ai) != 0 || ai == NULL)
		return -EINVAL;
	v->ec = rdma_create_event_channel();
	if (v->ec == NULL) {
		freeaddrinfo(ai);
		return RDMA_E_NO_DEVICE; /* no rdma_cm in this kernel */
	}
	if (rdma_create_id(v->ec, &v->id, v, RDMA_PS_TCP) != 0) {
		v->id = NULL;
		freeaddrinfo(ai);
		return errno != 0 ? -errno : -ENOMEM;
	}
	ret = rdma_resolve_addr(v->id, NULL, ai->ai_addr,
		remaining_ms(deadline) > 0 ? remaining_ms(deadline) : 1);
	freeaddrinfo(ai);
	if (ret != 0)
		return RDMA_E_CONN;
	ret = cm_wait(v->ec, RDMA_CM_EVENT_ADDR_RESOLVED, deadline);
	if (ret != 0)
		return ret;
	if (rdma_resolve_route(v->id, remaining_ms(deadline) > 0 ?
		remaining_ms(deadline) : 1) != 0)
		return RDMA_E_CONN;
	ret = cm_wait(v->ec, RDMA_CM_EVENT_ROUTE_RESOLVED, deadline);
	if (ret != 0)
		return ret;
	ret = verbs_resources(v, &depth);
	if (ret != 0)
		return ret;
	rdma__verbs_priv_encode(priv, ticket);
	memset(&param, 0, sizeof(param));
	param.private_data = priv;
	param.private_data_len = sizeof(priv);
	param.initiator_depth = depth;
	param.responder_resources = 0; /* the node never reads from us */
	param.retry_count = VERBS_RETRY_COUNT;
	param.rnr_retry_count = VERBS_RNR_RETRY_COUNT;
	if (rdma_connect(v->id, &param) != 0)
		return RDMA_E_CONN;
	ret = cm_wait(v->ec, RDMA_CM_EVENT_ESTABLISHED, deadline);
	if (ret != 0)
		return ret;
	v->connected = true;
	return 0;
}

/*
 * verbs_open -- device check, HELLO, rdma_cm connect. On failure nothing
 * is left allocated and c->be stays NULL.
 */
static int
verbs_open(struct rdma_conn *c, const char *target)
{
	char host[RDMA__HOST_MAX + 1];
	struct verbs_conn *v;
	uint16_t port, cm_port = 0;
	uint64_t ticket = 0;
	int ret;

	c->be = NULL;
	ret = rdma__parse_hostport(target, host, &port);
	if (ret != 0)
		return ret;
	if (!verbs_device_present())
		return RDMA_E_NO_DEVICE;
	v = calloc(1, sizeof(*v));
	if (v == NULL)
		return -ENOMEM;
	v->ctl_fd = -1;
	ret = verbs_hello(c, v, host, port, &cm_port, &ticket);
	if (ret == 0)
		ret = verbs_connect(c, v, host, cm_port, ticket);
	if (ret != 0) {
		verbs_destroy(v);
		return ret;
	}
	for (unsigned i = 0; i < v->nregions; i++) {
		c->regions[i].id = i;
		c->regions[i].length = v->remote[i].length;
	}
	c->nregions = v->nregions;
	v->alive_ns = rdma__now_ns();
	c->be = v;
	return 0;
}

/*
 * verbs_close -- tear down; a batch in flight is abandoned (its requests
 * are flushed when the queue pair is destroyed).
 */
static void
verbs_close(struct rdma_conn *c)
{
	verbs_destroy(c->be);
	c->be = NULL;
}

/*
 * verbs_post -- build the chain, stage the WRITE payloads, ring the
 * doorbell once.
 */
static int
verbs_post(struct rdma_conn *c, struct rdma_batch *b)
{
	struct verbs_conn *v = c->be;
	struct ibv_send_wr *bad = NULL;
	int ret;

	ret = rdma__verbs_wr_build(b, v->remote, v->nregions, &v->bounce_desc,
		v->max_inline, ++v->seq, &v->wrs);
	if (ret != 0)
		return ret;
	rdma__verbs_wr_stage(b, &v->wrs, v->bounce);
	ret = ibv_post_send(v->id->qp, &v->wrs.wr[0], &bad);
	if (ret != 0) {
		/* A prefix may have been posted (bad points past it); either
		 * way the queue pair's state is unknown: broken. */
		return RDMA_E_CONN;
	}
	rdma__stats.provider_ops += v->wrs.n;
	v->alive_ns = rdma__now_ns();
	return 0;
}

/*
 * verbs_check_alive -- without blocking: is the control connection open
 * and has rdma_cm not reported the queue pair's disconnection?
 */
static int
verbs_check_alive(struct verbs_conn *v)
{
	struct pollfd pfd = { .fd = v->ec->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	enum rdma_cm_event_type got;

	if (rdma__control_alive(v->ctl_fd) != 0)
		return RDMA_E_CONN;
	if (poll(&pfd, 1, 0) != 1)
		return 0;
	if (rdma_get_cm_event(v->ec, &ev) != 0)
		return 0;
	got = ev->event;
	(void)rdma_ack_cm_event(ev);
	if (got == RDMA_CM_EVENT_DISCONNECTED ||
	    got == RDMA_CM_EVENT_DEVICE_REMOVAL) {
		/* The id is no longer connected: nothing to disconnect. */
		v->connected = false;
		return RDMA_E_CONN;
	}
	return 0;
}

/*
 * verbs_poll -- reap completions without blocking; deliver on the last
 * request's success, fail on the first error completion.
 */
static int
verbs_poll(struct rdma_conn *c)
{
	struct verbs_conn *v = c->be;
	struct ibv_wc wc[8];
	uint64_t now;
	int n, ret;

	n = ibv_poll_cq(v->cq, (int)(sizeof(wc) / sizeof(wc[0])), wc);
	if (n < 0)
		return RDMA_E_CONN;
	for (int i = 0; i < n; i++) {
		ret = rdma__verbs_wc_classify(&wc[i], &v->wrs);
		if (ret == 1) {
			/* ibv_poll_cq orders the CQE read before our reads of
			 * the data the HCA wrote ahead of it. */
			rdma__verbs_wr_deliver(c->batch, &v->wrs, v->bounce);
			return 0;
		}
		if (ret < 0)
			return ret;
	}
	/* A syscall per empty poll would dominate a busy wait: check that the
	 * node lives once a millisecond. */
	now = rdma__now_ns();
	if (now - v->alive_ns >= VERBS_ALIVE_CHECK_NS) {
		v->alive_ns = now;
		ret = verbs_check_alive(v);
		if (ret != 0)
			return ret;
	}
	return -EINPROGRESS;
}

const struct rdma__backend rdma__backend_verbs = {
	.name = "verbs",
	.open = verbs_open,
	.close = verbs_close,
	.post = verbs_post,
	.poll = verbs_poll,
};
