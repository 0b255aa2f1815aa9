/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdma/src/verbs_server.c -- the node's verbs server: registers every region
 * for remote read, write and atomics, listens with rdma_cm on the node's
 * host at an ephemeral port, and gives each admitted client a queue pair.
 *
 * Data never passes through this code: READ, WRITE, CAS, FAA and the
 * persist read are one-sided, executed by the HCA on the registered pool
 * memory. The server's thread only handles connection management events
 * (connect request, established, disconnect), so unlike the ofi server it
 * does not busy-poll.
 *
 * Admission: node_control.c checks the token of a HELLO and calls admit,
 * which issues a random one-use ticket (carried in WELCOME.addr with the cm
 * port, verbs_wr.h); a connect request must present an issued, unused
 * ticket, so only clients the control port admitted get a queue pair.
 *
 * Persistence: a client's persist is a read after its writes on the same
 * queue pair (verbs_wr.h). That makes writes durable only where placed data
 * is persistent: pool on a DAX mapping of NVDIMM/CXL memory, ADR or eADR
 * platform, DDIO off for the NIC. The server cannot check that, so it logs
 * it at start. Registering an fs-dax mapping needs ODP or device-dax; the
 * registration error says so when it fails.
 *
 * Locks: tickets_lock protects the ticket table only (admit runs on the
 * control thread, consumption on the CM thread); nothing else is shared.
 * The client list belongs to the CM thread until stop has joined it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "core.h"
#include "server.h"
#include "verbs_wr.h"

/* Tickets outstanding at once; the oldest unused one is dropped first. */
#define VS_TICKETS 64
/* Pending connection requests the listener queues. */
#define VS_BACKLOG 64

struct vs_client {
	struct rdma_cm_id *id;       /* owns the queue pair */
	struct vs_client *next;
};

struct verbs_server {
	const struct rdma__server_env *env;
	struct rdma_event_channel *ec;
	struct rdma_cm_id *listen;
	struct ibv_pd *pd;
	struct ibv_cq *cq;           /* shared by all queue pairs; one-sided
	                              * responder work never completes on it */
	struct ibv_mr *mr[RDMA__MAX_REGIONS];
	unsigned nmr;
	uint16_t port;               /* rdma_cm port, host order */
	uint8_t max_rd_atom;         /* responder resources per queue pair */
	int wake[2];                 /* pipe: stop wakes the CM thread */
	pthread_t thread;
	bool thread_started;
	pthread_mutex_t tickets_lock; /* protects tickets[], next_ticket */
	uint64_t tickets[VS_TICKETS]; /* 0 = free slot */
	unsigned next_ticket;
	struct vs_client *clients;   /* CM thread only */
};

/*
 * vs_device_present -- whether rdma-core sees at least one device.
 */
static bool
vs_device_present(void)
{
	struct ibv_device **list;
	int n = 0;

	list = ibv_get_device_list(&n);
	if (list == NULL)
		return false;
	ibv_free_device_list(list);
	return n > 0;
}

/*
 * vs_count_bad -- a connect request that did not present a valid ticket.
 */
static void
vs_count_bad(struct verbs_server *s)
{
	/* Relaxed: a statistic, read by rdma_node_get_status without ordering. */
	if (s->env->counters != NULL)
		__atomic_fetch_add(&s->env->counters->bad_messages, 1,
			__ATOMIC_RELAXED);
}

/*
 * vs_new_ticket -- a random non-zero ticket. GRND_NONBLOCK so the control
 * thread never waits: it fails only before the kernel's entropy pool is
 * initialised (early boot), and then the clock stands in -- guessable in
 * principle, but a ticket only keeps strangers from getting a queue pair
 * (verbs_wr.h), it guards no data.
 */
static uint64_t
vs_new_ticket(void)
{
	uint64_t t = 0;

	if (getrandom(&t, sizeof(t), GRND_NONBLOCK) != (ssize_t)sizeof(t))
		t = rdma__now_ns() * 0x9e3779b97f4a7c15ull;
	return t != 0 ? t : 1;
}

/*
 * vs_take_ticket -- consume @t if it was issued and not used yet.
 */
static bool
vs_take_ticket(struct verbs_server *s, uint64_t t)
{
	bool found = false;

	if (t == 0)
		return false;
	pthread_mutex_lock(&s->tickets_lock);
	for (unsigned i = 0; i < VS_TICKETS; i++) {
		if (s->tickets[i] == t) {
			s->tickets[i] = 0;
			found = true;
			break;
		}
	}
	pthread_mutex_unlock(&s->tickets_lock);
	return found;
}

/*
 * vs_client_destroy -- release a client's queue pair and id. The id's
 * events must all be acknowledged before (rdma_destroy_id waits for that).
 */
static void
vs_client_destroy(struct vs_client *cl)
{
	if (cl->id->qp != NULL)
		rdma_destroy_qp(cl->id);
	(void)rdma_destroy_id(cl->id);
	free(cl);
}

/*
 * vs_client_remove -- unlink and destroy the client of @id; false if @id
 * is not one of ours.
 */
static bool
vs_client_remove(struct verbs_server *s, struct rdma_cm_id *id)
{
	for (struct vs_client **p = &s->clients; *p != NULL; p = &(*p)->next) {
		struct vs_client *cl = *p;

		if (cl->id == id) {
			*p = cl->next;
			vs_client_destroy(cl);
			return true;
		}
	}
	return false;
}

/*
 * vs_on_request -- a client asks to connect: check its ticket, give it a
 * queue pair, accept with as many responder resources (reads and atomics
 * it may have in flight) as it asked for and the device allows.
 */
static void
vs_on_request(struct verbs_server *s, struct rdma_cm_id *id, bool ticket_ok,
	uint8_t depth)
{
	struct ibv_qp_init_attr qpa;
	struct rdma_conn_param param;
	struct vs_client *cl;

	if (!ticket_ok) {
		vs_count_bad(s);
		rdma__log(s->env, RDMA_NODE_LOG_WARN,
			"verbs: connect request without a valid ticket refused");
		goto reject;
	}
	/* The regions are registered on the listener's device; a request
	 * that arrived through another one could not use the rkeys. */
	if (id->verbs != s->listen->verbs) {
		rdma__log(s->env, RDMA_NODE_LOG_WARN,
			"verbs: connect request on another device refused");
		goto reject;
	}
	cl = calloc(1, sizeof(*cl));
	if (cl == NULL)
		goto reject;
	memset(&qpa, 0, sizeof(qpa));
	qpa.send_cq = s->cq;
	qpa.recv_cq = s->cq;
	qpa.qp_type = IBV_QPT_RC;
	/* The node posts nothing; providers want at least one of each. */
	qpa.cap.max_send_wr = 1;
	qpa.cap.max_recv_wr = 1;
	qpa.cap.max_send_sge = 1;
	qpa.cap.max_recv_sge = 1;
	if (rdma_create_qp(id, s->pd, &qpa) != 0) {
		rdma__log(s->env, RDMA_NODE_LOG_ERROR,
			"verbs: cannot create a queue pair: %s", strerror(errno));
		free(cl);
		goto reject;
	}
	memset(&param, 0, sizeof(param));
	param.responder_resources = depth < s->max_rd_atom ? depth : s->max_rd_atom;
	param.initiator_depth = 0; /* the node never reads from a client */
	param.rnr_retry_count = 6; /* no SENDs either way: RNR never happens */
	cl->id = id;
	if (rdma_accept(id, &param) != 0) {
		rdma__log(s->env, RDMA_NODE_LOG_ERROR, "verbs: accept failed: %s",
			strerror(errno));
		vs_client_destroy(cl);
		return;
	}
	cl->next = s->clients;
	s->clients = cl;
	return;
reject:
	(void)rdma_reject(id, NULL, 0);
	(void)rdma_destroy_id(id);
}

/*
 * vs_on_event -- one CM event. Everything needed is copied out and the
 * event acknowledged first, since destroying an id waits for its events'
 * acknowledgements.
 */
static void
vs_on_event(struct verbs_server *s, struct rdma_cm_event *ev)
{
	enum rdma_cm_event_type type = ev->event;
	struct rdma_cm_id *id = ev->id;
	uint64_t ticket = 0;
	bool ticket_ok = false;
	uint8_t depth = 0;

	if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
		ticket_ok = rdma__verbs_priv_decode(ev->param.conn.private_data,
			ev->param.conn.private_data_len, &ticket) == 0 &&
			vs_take_ticket(s, ticket);
		depth = ev->param.conn.initiator_depth;
	}
	(void)rdma_ack_cm_event(ev);
	switch (type) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		vs_on_request(s, id, ticket_ok, depth);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		rdma__log(s->env, RDMA_NODE_LOG_DEBUG, "verbs: client connected");
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		/* Complete the disconnection on our side too, then free. */
		(void)rdma_disconnect(id);
		if (vs_client_remove(s, id))
			rdma__log(s->env, RDMA_NODE_LOG_DEBUG,
				"verbs: client disconnected");
		break;
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
		/* Accepted but never established. */
		(void)vs_client_remove(s, id);
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		rdma__log(s->env, RDMA_NODE_LOG_ERROR,
			"verbs: the RDMA device was removed; verbs clients will fail");
		break;
	default:
		break;
	}
}

/*
 * vs_thread -- wait for CM events or the stop signal; nothing else to do.
 */
static void *
vs_thread(void *arg)
{
	struct verbs_server *s = arg;
	struct rdma_cm_event *ev;

	for (;;) {
		struct pollfd pfd[2] = {
			{ .fd = s->ec->fd, .events = POLLIN },
			{ .fd = s->wake[0], .events = POLLIN },
		};

		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			rdma__log(s->env, RDMA_NODE_LOG_ERROR, "verbs: poll: %s",
				strerror(errno));
			break;
		}
		if (pfd[1].revents != 0)
			break;
		/* The channel is non-blocking: a spurious wake-up is EAGAIN. */
		while (rdma_get_cm_event(s->ec, &ev) == 0)
			vs_on_event(s, ev);
	}
	return NULL;
}

/*
 * vs_destroy -- release everything, in reverse order of creation. The
 * thread is joined first, so the client list is ours.
 */
static void
vs_destroy(struct verbs_server *s)
{
	if (s->thread_started) {
		char one = 1;

		while (write(s->wake[1], &one, 1) < 0 && errno == EINTR)
			;
		pthread_join(s->thread, NULL);
	}
	while (s->clients != NULL) {
		struct vs_client *cl = s->clients;

		s->clients = cl->next;
		(void)rdma_disconnect(cl->id);
		vs_client_destroy(cl);
	}
	for (unsigned i = 0; i < s->nmr; i++)
		(void)ibv_dereg_mr(s->mr[i]);
	if (s->cq != NULL)
		(void)ibv_destroy_cq(s->cq);
	if (s->pd != NULL)
		(void)ibv_dealloc_pd(s->pd);
	if (s->listen != NULL)
		(void)rdma_destroy_id(s->listen);
	if (s->ec != NULL)
		rdma_destroy_event_channel(s->ec);
	if (s->wake[0] >= 0)
		(void)close(s->wake[0]);
	if (s->wake[1] >= 0)
		(void)close(s->wake[1]);
	pthread_mutex_destroy(&s->tickets_lock);
	free(s);
}

/*
 * vs_listen -- bind the listener to env->host at an ephemeral port. The
 * bind also picks the device (the one owning that address; for loopback,
 * the first active one), which is where the regions get registered.
 */
static int
vs_listen(struct verbs_server *s)
{
	struct addrinfo hints, *ai = NULL;
	int ret;

	s->ec = rdma_create_event_channel();
	if (s->ec == NULL) {
		rdma__log(s->env, RDMA_NODE_LOG_WARN,
			"verbs: no rdma_cm (%s)", strerror(errno));
		return RDMA_E_NO_DEVICE;
	}
	ret = fcntl(s->ec->fd, F_GETFL);
	if (ret < 0 || fcntl(s->ec->fd, F_SETFL, ret | O_NONBLOCK) < 0)
		return -errno;
	if (rdma_create_id(s->ec, &s->listen, s, RDMA_PS_TCP) != 0) {
		s->listen = NULL;
		return errno != 0 ? -errno : -ENOMEM;
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE;
	if (getaddrinfo(s->env->host, "0", &hints, &ai) != 0 || ai == NULL)
		return -EADDRNOTAVAIL;
	ret = rdma_bind_addr(s->listen, ai->ai_addr);
	freeaddrinfo(ai);
	if (ret != 0 || s->listen->verbs == NULL) {
		/* An address no RDMA device owns -- loopback included, which
		 * rdma_cm can connect to but not bind to a device -- or a
		 * wildcard, which leaves the device open: nothing to register
		 * the regions on. Serving verbs takes the address of the RDMA
		 * netdev (for Soft-RoCE, of the netdev rxe is attached to). */
		rdma__log(s->env, RDMA_NODE_LOG_WARN,
			"verbs: %s is not an address of an RDMA device (%s); serve "
			"on the RDMA netdev's address", s->env->host,
			ret != 0 ? strerror(errno) : "no device bound");
		return RDMA_E_NO_DEVICE;
	}
	if (rdma_listen(s->listen, VS_BACKLOG) != 0)
		return errno != 0 ? -errno : -EIO;
	s->port = ntohs(rdma_get_src_port(s->listen));
	return 0;
}

/*
 * vs_register -- PD, CQ, and one MR per region with remote read, write
 * and atomic access.
 */
static int
vs_register(struct verbs_server *s)
{
	const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
		IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
	struct ibv_context *ctx = s->listen->verbs;
	struct ibv_device_attr attr;

	if (ibv_query_device(ctx, &attr) != 0)
		return RDMA_E_NO_DEVICE;
	if (attr.atomic_cap == IBV_ATOMIC_NONE)
		rdma__log(s->env, RDMA_NODE_LOG_WARN,
			"verbs: device %s has no usable atomics; verbs clients will "
			"refuse it", ibv_get_device_name(ctx->device));
	s->max_rd_atom = (uint8_t)(attr.max_qp_rd_atom > 255 ? 255 :
		attr.max_qp_rd_atom);
	s->pd = ibv_alloc_pd(ctx);
	if (s->pd == NULL)
		return -ENOMEM;
	s->cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	if (s->cq == NULL)
		return -ENOMEM;
	for (unsigned i = 0; i < s->env->nregions; i++) {
		const struct rdma__exec_region *r = &s->env->regions[i];

		s->mr[i] = ibv_reg_mr(s->pd, r->base, r->length, access);
		if (s->mr[i] == NULL) {
			int err = errno != 0 ? errno : ENOMEM;

			rdma__log(s->env, RDMA_NODE_LOG_ERROR,
				"verbs: cannot register region %u (%llu bytes): %s%s", i,
				(unsigned long long)r->length, strerror(err),
				err == EOPNOTSUPP ? " (fs-dax memory needs ODP or "
				"device-dax)" : "");
			return -err;
		}
		s->nmr = i + 1;
	}
	return 0;
}

/*
 * verbs_server_start -- RDMA_E_NO_DEVICE without an RDMA device
 * (node_control.c logs it and serves the other backends).
 */
static int
verbs_server_start(void **state, const struct rdma__server_env *env)
{
	struct verbs_server *s;
	int ret;

	*state = NULL;
	if (env->nregions > RDMA__MAX_REGIONS)
		return -EINVAL;
	if (!vs_device_present())
		return RDMA_E_NO_DEVICE;
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return -ENOMEM;
	s->env = env;
	s->wake[0] = s->wake[1] = -1;
	pthread_mutex_init(&s->tickets_lock, NULL);
	if (pipe2(s->wake, O_CLOEXEC) != 0) {
		ret = -errno;
		goto fail;
	}
	ret = vs_listen(s);
	if (ret == 0)
		ret = vs_register(s);
	if (ret != 0)
		goto fail;
	ret = pthread_create(&s->thread, NULL, vs_thread, s);
	if (ret != 0) {
		ret = -ret;
		goto fail;
	}
	s->thread_started = true;
	rdma__log(env, RDMA_NODE_LOG_INFO,
		"verbs: rdma_cm port %u on %s (device %s); persist is a read after "
		"write: durable only with the pool on DAX, ADR/eADR and DDIO off",
		(unsigned)s->port, env->host,
		ibv_get_device_name(s->listen->verbs->device));
	*state = s;
	return 0;
fail:
	vs_destroy(s);
	return ret;
}

/*
 * verbs_server_admit -- rkeys and node addresses of the regions, and the
 * cm port plus a fresh ticket in WELCOME.addr.
 */
static int
verbs_server_admit(void *state, const struct rdma_wire_hello *hello,
	struct rdma_wire_welcome *welcome)
{
	struct verbs_server *s = state;
	uint64_t ticket = vs_new_ticket();

	(void)hello;
	for (unsigned i = 0; i < s->nmr; i++) {
		welcome->regions[i].key = s->mr[i]->rkey;
		welcome->regions[i].addr = (uintptr_t)s->env->regions[i].base;
	}
	_Static_assert(RDMA__VERBS_ADDR_LEN <= RDMA_WIRE_ADDR_MAX,
		"the verbs address fits WELCOME.addr");
	rdma__verbs_addr_encode(welcome->addr, s->port, ticket);
	welcome->addr_len = RDMA__VERBS_ADDR_LEN;
	pthread_mutex_lock(&s->tickets_lock);
	s->tickets[s->next_ticket] = ticket;
	s->next_ticket = (s->next_ticket + 1) % VS_TICKETS;
	pthread_mutex_unlock(&s->tickets_lock);
	return 0;
}

/*
 * verbs_server_stop -- disconnect every client and release everything.
 */
static void
verbs_server_stop(void *state)
{
	if (state != NULL)
		vs_destroy(state);
}

const struct rdma__server rdma__server_verbs = {
	.name = "verbs",
	.serve_flag = RDMA_NODE_SERVE_VERBS,
	.wire_backend = RDMA_WIRE_BACKEND_VERBS,
	.start = verbs_server_start,
	.admit = verbs_server_admit,
	.stop = verbs_server_stop,
};
