// SPDX-License-Identifier: BSD-3-Clause
// rdma/tests/verbs_fake_test.cc -- the verbs client (verbs.c) and server
// (verbs_server.c) end to end through a real node and its control port, on
// a FAKE rdma-core: this file defines the libibverbs and librdmacm entry
// points the backend calls, so they take precedence over the system
// libraries at link time. The fake "HCA" executes each work request at once
// on the registered memory it names (rkey, bounds, PD and access checked),
// completes only signalled requests, turns the first failing request into
// an error completion and flushes the rest, and enforces the send-queue
// depth; the fake rdma_cm routes connect requests, accepts, rejects and
// disconnects through event channels backed by pipes.
//
// What this proves: the backend's own logic (HELLO and tickets, resource
// creation and teardown order, posting, completion handling, errors,
// reconnect, no leaks under ASan). What it cannot prove: how a real device
// orders, fences, or persists -- that is verbs_integration_test's job on a
// machine with an RDMA device, and the argument in rdma/src/verbs_wr.h.
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <rdma/node.h>
#include <rdma/rdma.h>

#include "pm/tests/test_util.h"
#include "rdma/tests/node_proc.h"
#include "rdma/src/verbs_wr.h"

// ---------------------------------------------------------------------------
// The fake rdma-core.
// ---------------------------------------------------------------------------
namespace fake {

std::recursive_mutex mu; // protects everything in this namespace

// Knobs tests turn.
int ndevices = 1;
ibv_atomic_cap atomic_cap = IBV_ATOMIC_HCA;
uint32_t max_inline = 256;  // larger inline requests fail rdma_create_qp
bool bind_fails = false;    // rdma_bind_addr: the host is no RDMA address
bool rkeys_invalid = false; // every remote access fails (REM_ACCESS_ERR)

// What the HCA saw of the last post: opcode and flags per request.
struct Posted {
	ibv_wr_opcode opcode;
	unsigned flags;
	uint32_t length;
};
std::vector<Posted> last_post;
unsigned last_responder_resources;
unsigned last_initiator_depth;

struct Channel;
struct Id;

struct Event {
	rdma_cm_event ev; // first: rdma_ack_cm_event gets its address
	std::vector<uint8_t> priv;
};

struct Channel {
	rdma_event_channel ch; // ch.fd = read end of the pipe
	int wfd;
	std::deque<Event *> q;
};

struct Id {
	rdma_cm_id id;
	Channel *chan;
	Id *peer = nullptr;
	bool listening = false;
	bool connected = false;
	uint16_t port = 0;
	sockaddr_storage dst;
};

struct Cq {
	ibv_cq cq;
	std::deque<ibv_wc> wcs;
};

struct Qp {
	ibv_qp qp;
	Id *owner;
	ibv_qp_cap cap;
	bool error = false;
	unsigned outstanding = 0; // send-queue slots not yet retired
};

ibv_device device;
ibv_context context;
std::map<uint16_t, Id *> listeners;
std::map<uint32_t, ibv_mr *> mrs; // by key
std::map<uint32_t, int> mr_access;
std::map<ibv_qp *, Qp *> qps;
uint32_t next_key = 0x1000;
uint32_t next_qpn = 100;
uint16_t next_port = 20000;

// Live objects, so tests can check that close released everything.
int live_channels, live_ids, live_pds, live_cqs, live_mrs, live_qps, live_lists;

void Post(Channel *c, Id *id, rdma_cm_event_type type, Id *listen = nullptr,
	const void *priv = nullptr, size_t priv_len = 0, uint8_t depth = 0)
{
	Event *e = new Event();
	e->ev.id = &id->id;
	e->ev.listen_id = listen != nullptr ? &listen->id : nullptr;
	e->ev.event = type;
	if (priv != nullptr) {
		e->priv.assign((const uint8_t *)priv, (const uint8_t *)priv + priv_len);
		e->ev.param.conn.private_data = e->priv.data();
		e->ev.param.conn.private_data_len = (uint8_t)priv_len;
	}
	e->ev.param.conn.initiator_depth = depth;
	c->q.push_back(e);
	char one = 1;
	EXPECT_EQ(1, write(c->wfd, &one, 1));
}

void DestroyIdLocked(Id *id);

// Drop the queued events of @id (the kernel does when an id is destroyed),
// consuming their pipe bytes so the channel's count stays right.
void DropEvents(Channel *c, Id *id)
{
	for (auto it = c->q.begin(); it != c->q.end();) {
		Event *e = *it;
		if (id == nullptr || e->ev.id == &id->id ||
		    (e->ev.listen_id != nullptr && e->ev.listen_id == &id->id)) {
			it = c->q.erase(it);
			char b;
			EXPECT_EQ(read(c->ch.fd, &b, 1), 1); // one byte per queued event
			// A request never fetched: its child id dies with it.
			if (e->ev.event == RDMA_CM_EVENT_CONNECT_REQUEST && e->ev.id != &id->id)
				DestroyIdLocked(reinterpret_cast<Id *>(e->ev.id));
			delete e;
		} else {
			++it;
		}
	}
}

void DestroyIdLocked(Id *id)
{
	if (id->peer != nullptr)
		id->peer->peer = nullptr;
	if (id->listening)
		listeners.erase(id->port);
	DropEvents(id->chan, id);
	delete id;
	live_ids--;
}

// Execute one work request of @qp's owner against its peer's memory.
ibv_wc_status Execute(Qp *q, const ibv_send_wr *wr)
{
	Id *peer = q->owner->peer;
	if (peer == nullptr || !peer->connected || peer->id.qp == nullptr)
		return IBV_WC_RETRY_EXC_ERR;
	Qp *pq = qps.at(peer->id.qp);
	if (wr->num_sge != 1)
		return IBV_WC_LOC_QP_OP_ERR;
	const ibv_sge &s = wr->sg_list[0];
	if ((wr->send_flags & IBV_SEND_INLINE) &&
	    (wr->opcode != IBV_WR_RDMA_WRITE || s.length > q->cap.max_inline_data))
		return IBV_WC_LOC_QP_OP_ERR;
	if (!(wr->send_flags & IBV_SEND_INLINE)) {
		auto lm = mrs.find(s.lkey);
		if (lm == mrs.end() || lm->second->pd != q->qp.pd ||
		    s.addr < (uintptr_t)lm->second->addr ||
		    s.addr + s.length > (uintptr_t)lm->second->addr + lm->second->length)
			return IBV_WC_LOC_PROT_ERR;
	}
	bool atomic = wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
		wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD;
	uint64_t raddr = atomic ? wr->wr.atomic.remote_addr : wr->wr.rdma.remote_addr;
	uint32_t rkey = atomic ? wr->wr.atomic.rkey : wr->wr.rdma.rkey;
	int need = wr->opcode == IBV_WR_RDMA_READ ? IBV_ACCESS_REMOTE_READ :
		wr->opcode == IBV_WR_RDMA_WRITE ? IBV_ACCESS_REMOTE_WRITE :
		IBV_ACCESS_REMOTE_ATOMIC;
	auto rm = mrs.find(rkey);
	if (rkeys_invalid || rm == mrs.end() || rm->second->pd != pq->qp.pd ||
	    !(mr_access[rkey] & need) || raddr < (uintptr_t)rm->second->addr ||
	    raddr + s.length > (uintptr_t)rm->second->addr + rm->second->length)
		return IBV_WC_REM_ACCESS_ERR;
	void *remote = (void *)(uintptr_t)raddr;
	void *local = (void *)(uintptr_t)s.addr;
	switch (wr->opcode) {
	case IBV_WR_RDMA_READ:
		memcpy(local, remote, s.length);
		return IBV_WC_SUCCESS;
	case IBV_WR_RDMA_WRITE:
		memcpy(remote, local, s.length);
		return IBV_WC_SUCCESS;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD: {
		if (s.length != 8 || raddr % 8 != 0)
			return IBV_WC_REM_INV_REQ_ERR;
		uint64_t *w = (uint64_t *)remote, old;
		if (wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP) {
			old = wr->wr.atomic.compare_add;
			__atomic_compare_exchange_n(w, &old, wr->wr.atomic.swap, false,
				__ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
		} else {
			old = __atomic_fetch_add(w, wr->wr.atomic.compare_add, __ATOMIC_SEQ_CST);
		}
		memcpy(local, &old, 8); // host order, as the spec has it
		return IBV_WC_SUCCESS;
	}
	default:
		return IBV_WC_LOC_QP_OP_ERR;
	}
}

int PostSend(ibv_qp *qp, ibv_send_wr *wr, ibv_send_wr **bad)
{
	std::lock_guard<std::recursive_mutex> g(mu);
	Qp *q = qps.at(qp);
	Cq *cq = reinterpret_cast<Cq *>(qp->send_cq);
	unsigned n = 0;
	for (ibv_send_wr *w = wr; w != nullptr; w = w->next)
		n++;
	if (q->outstanding + n > q->cap.max_send_wr) {
		*bad = wr;
		return ENOMEM;
	}
	q->outstanding += n;
	last_post.clear();
	for (ibv_send_wr *w = wr; w != nullptr; w = w->next) {
		last_post.push_back({w->opcode, w->send_flags, w->sg_list[0].length});
		ibv_wc wc;
		memset(&wc, 0, sizeof(wc));
		wc.wr_id = w->wr_id;
		wc.qp_num = qp->qp_num;
		if (q->error) {
			wc.status = IBV_WC_WR_FLUSH_ERR; // every request completes
		} else {
			wc.status = Execute(q, w);
			if (wc.status != IBV_WC_SUCCESS)
				q->error = true;
			else if (!(w->send_flags & IBV_SEND_SIGNALED))
				continue; // unsignalled success: no completion
		}
		cq->wcs.push_back(wc);
	}
	return 0;
}

int PollCq(ibv_cq *c, int num, ibv_wc *wc)
{
	std::lock_guard<std::recursive_mutex> g(mu);
	Cq *cq = reinterpret_cast<Cq *>(c);
	int n = 0;
	while (n < num && !cq->wcs.empty()) {
		wc[n] = cq->wcs.front();
		cq->wcs.pop_front();
		// A completion retires its request and every earlier one.
		for (auto &kv : qps)
			if (kv.first->qp_num == wc[n].qp_num)
				kv.second->outstanding = 0;
		n++;
	}
	return n;
}

void Reset()
{
	std::lock_guard<std::recursive_mutex> g(mu);
	ndevices = 1;
	atomic_cap = IBV_ATOMIC_HCA;
	max_inline = 256;
	bind_fails = false;
	rkeys_invalid = false;
	last_post.clear();
	strcpy(device.name, "fake0");
	context.device = &device;
	context.ops.post_send = PostSend;
	context.ops.poll_cq = PollCq;
}

int Live()
{
	std::lock_guard<std::recursive_mutex> g(mu);
	return live_channels + live_ids + live_pds + live_cqs + live_mrs + live_qps +
		live_lists;
}

} // namespace fake

using fake::mu;

// libibverbs -----------------------------------------------------------------
extern "C" {

struct ibv_device **(ibv_get_device_list)(int *num)
{
	std::lock_guard<std::recursive_mutex> g(mu);
	auto **list = static_cast<ibv_device **>(calloc(2, sizeof(ibv_device *)));
	if (fake::ndevices > 0)
		list[0] = &fake::device;
	if (num != nullptr)
		*num = fake::ndevices > 0 ? 1 : 0;
	fake::live_lists++;
	return list;
}

void ibv_free_device_list(struct ibv_device **list)
{
	std::lock_guard<std::recursive_mutex> g(mu);
	fake::live_lists--;
	free(list);
}

const char *ibv_get_device_name(struct ibv_device *)
{
	return "fake0";
}

int ibv_query_device(struct ibv_context *, struct ibv_device_attr *attr)
{
	std::lock_guard<std::recursive_mutex> g(mu);
	memset(attr, 0, sizeof(*attr));
	attr->atomic_cap = fake::atomic_cap;
	attr->max_qp_rd_atom = 16;
	attr->max_qp_init_rd_atom = 16;
	attr->max_qp_wr = 1024;
	return 0;
}

struct ibv_pd *ibv_alloc_pd(struct ibv_context *ctx)
{
	std::lock_guard<std::recursive_mutex> g(mu);
	auto *pd = new ibv_pd();
	pd->context = ctx;
	fake::live_pds++;
	return pd;
}

int ibv_dealloc_pd(struct ibv_pd *pd)
{
	std::lock_guard<std::recursive_mutex> g(mu);
	for (auto &kv : fake::mrs)
		EXPECT_NE(pd, kv.second->pd) << "PD freed before its MR";
	delete pd;
	fake::live_pds--;
	return 0;
}

struct ibv_cq *ibv_create_cq(struct ibv_context *ctx, int cqe, void *, struct ibv_comp_channel *, int)
{
	std::lock_guard<std::recursive_mutex> g(mu);
	auto *c = new fake::Cq();
	c->cq.context = ctx;
	c->cq.cqe = cqe;
	fake::live_cqs++;
	return &c->cq;
}

int ibv_destroy_cq(struct ibv_cq *cq)
{
	std::lock_guard<std::recursive_mutex> g(mu);
	for (auto &kv : fake::qps)
		EXPECT_NE(cq, kv.first->send_cq) << "CQ freed before its QP";
	delete reinterpret_cast<fake::Cq *>(cq);
	fake::live_cqs--;
	return 0;
}

static struct ibv_mr *FakeRegMr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	std::lock_guard<std::recursive_mutex> g(mu);
	auto *mr = new ibv_mr();
	mr->context = pd->context;
	mr->pd = pd;
	mr->addr = addr;
	mr->length = length;
	mr->lkey = mr->rkey = fake::next_key++;
	fake::mrs[mr->lkey] = mr;
	fake::mr_access[mr->lkey] = access;
	fake::live_mrs++;
	return mr;
}

struct ibv_mr *(ibv_reg_mr)(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return FakeRegMr(pd, addr, length, access);
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length,
	uint64_t, unsigned int access)
{
	return FakeRegMr(pd, addr, length, (int)access);
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
	std::lock_guard<std::recursive_mutex> g(mu);
	fake::mrs.erase(mr->lkey);
	fake::mr_access.erase(mr->lkey);
	delete mr;
	fake::live_mrs--;
	return 0;
}

// librdmacm ------------------------------------------------------------------

struct rdma_event_channel *rdma_create_event_channel(void)
{
	std::lock_guard<std::recursive_mutex> g(mu);
	auto *c = new fake::Channel();
	int p[2];
	if (pipe2(p, O_CLOEXEC) != 0) {
		delete c;
		return nullptr;
	}
	c->ch.fd = p[0];
	c->wfd = p[1];
	fake::live_channels++;
	return &c->ch;
}

void rdma_destroy_event_channel(struct rdma_event_channel *ch)
{
	std::lock_guard<std::recursive_mutex> g(mu);
	auto *c = reinterpret_cast<fake::Channel *>(ch);
	fake::DropEvents(c, nullptr);
	close(c->ch.fd);
	close(c->wfd);
	delete c;
	fake::live_channels--;
}

int rdma_create_id(struct rdma_event_channel *ch, struct rdma_cm_id **id, void *ctx,
	enum rdma_port_space ps)
{
	std::lock_guard<std::recursive_mutex> g(mu);
	auto *i = new fake::Id();
	i->chan = reinterpret_cast<fake::Channel *>(ch);
	i->id.channel = ch;
	i->id.context = ctx;
	i->id.ps = ps;
	fake::live_ids++;
	*id = &i->id;
	return 0;
}

int rdma_destroy_id(struct rdma_cm_id *id)
{
	std::lock_guard<std::recursive_mutex> g(mu);
	EXPECT_EQ(nullptr, id->qp) << "id destroyed before its QP";
	fake::DestroyIdLocked(reinterpret_cast<fake::Id *>(id));
	return 0;
}

int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *)
{
	std::lock_guard<std::recursive_mutex> g(mu);
	if (fake::bind_fails) {
		errno = ENODEV;
		return -1;
	}
	auto *i = reinterpret_cast<fake::Id *>(id);
	i->port = fake::next_port++;
	id->verbs = &fake::context;
	return 0;
}

int rdma_listen(struct rdma_cm_id *id, int)
{
	std::lock_guard<std::recursive_mutex> g(mu);
	auto *i = reinterpret_cast<fake::Id *>(id);
	i->listening = true;
	fake::listeners[i->port] = i;
	return 0;
}

__be16 rdma_get_src_port(struct rdma_cm_id *id)
{
	std::lock_guard<std::recursive_mutex> g(mu);
	return htons(reinterpret_cast<fake::Id *>(id)->port);
}

int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *, struct sockaddr *dst, int)
{
	std::lock_guard<std::recursive_mutex> g(mu);
	auto *i = reinterpret_cast<fake::Id *>(id);
	memcpy(&i->dst, dst, dst->sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6));
	id->verbs = &fake::context;
	fake::Post(i->chan, i, RDMA_CM_EVENT_ADDR_RESOLVED);
	return 0;
}

int rdma_resolve_route(struct rdma_cm_id *id, int)
{
	std::lock_guard<std::recursive_mutex> g(mu);
	auto *i = reinterpret_cast<fake::Id *>(id);
	fake::Post(i->chan, i, RDMA_CM_EVENT_ROUTE_RESOLVED);
	return 0;
}

int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	std::lock_guard<std::recursive_mutex> g(mu);
	EXPECT_EQ(IBV_QPT_RC, attr->qp_type);
	EXPECT_EQ(0, attr->sq_sig_all);
	EXPECT_EQ(id->verbs, pd->context) << "PD of another device";
	if (attr->cap.max_inline_data > fake::max_inline) {
		errno = EINVAL;
		return -1;
	}
	auto *q = new fake::Qp();
	q->qp.context = id->verbs;
	q->qp.pd = pd;
	q->qp.send_cq = attr->send_cq;
	q->qp.recv_cq = attr->recv_cq;
	q->qp.qp_num = fake::next_qpn++;
	q->qp.qp_type = IBV_QPT_RC;
	q->owner = reinterpret_cast<fake::Id *>(id);
	q->cap = attr->cap;
	fake::qps[&q->qp] = q;
	id->qp = &q->qp;
	fake::live_qps++;
	return 0;
}

void rdma_destroy_qp(struct rdma_cm_id *id)
{
	std::lock_guard<std::recursive_mutex> g(mu);
	auto *q = fake::qps.at(id->qp);
	fake::qps.erase(id->qp);
	delete q;
	id->qp = nullptr;
	fake::live_qps--;
}

int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *p)
{
	std::lock_guard<std::recursive_mutex> g(mu);
	auto *i = reinterpret_cast<fake::Id *>(id);
	EXPECT_NE(nullptr, id->qp);
	uint16_t port = ntohs(reinterpret_cast<sockaddr_in *>(&i->dst)->sin_port);
	auto l = fake::listeners.find(port);
	if (l == fake::listeners.end()) {
		fake::Post(i->chan, i, RDMA_CM_EVENT_REJECTED);
		return 0;
	}
	fake::last_initiator_depth = p->initiator_depth;
	rdma_cm_id *child_id;
	rdma_create_id(&l->second->chan->ch, &child_id, l->second->id.context, RDMA_PS_TCP);
	auto *child = reinterpret_cast<fake::Id *>(child_id);
	child_id->verbs = &fake::context;
	child->peer = i;
	i->peer = child;
	fake::Post(l->second->chan, child, RDMA_CM_EVENT_CONNECT_REQUEST, l->second,
		p->private_data, p->private_data_len, p->initiator_depth);
	return 0;
}

int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *p)
{
	std::lock_guard<std::recursive_mutex> g(mu);
	auto *i = reinterpret_cast<fake::Id *>(id);
	EXPECT_NE(nullptr, id->qp);
	fake::last_responder_resources = p->responder_resources;
	if (i->peer == nullptr)
		return -1;
	i->connected = i->peer->connected = true;
	fake::Post(i->peer->chan, i->peer, RDMA_CM_EVENT_ESTABLISHED);
	fake::Post(i->chan, i, RDMA_CM_EVENT_ESTABLISHED);
	return 0;
}

int rdma_reject(struct rdma_cm_id *id, const void *, uint8_t)
{
	std::lock_guard<std::recursive_mutex> g(mu);
	auto *i = reinterpret_cast<fake::Id *>(id);
	if (i->peer != nullptr) {
		fake::Post(i->peer->chan, i->peer, RDMA_CM_EVENT_REJECTED);
		i->peer->peer = nullptr;
		i->peer = nullptr;
	}
	return 0;
}

int rdma_disconnect(struct rdma_cm_id *id)
{
	std::lock_guard<std::recursive_mutex> g(mu);
	auto *i = reinterpret_cast<fake::Id *>(id);
	if (!i->connected)
		return 0;
	i->connected = false;
	fake::Post(i->chan, i, RDMA_CM_EVENT_DISCONNECTED);
	if (i->peer != nullptr && i->peer->connected) {
		i->peer->connected = false;
		fake::Post(i->peer->chan, i->peer, RDMA_CM_EVENT_DISCONNECTED);
	}
	return 0;
}

int rdma_get_cm_event(struct rdma_event_channel *ch, struct rdma_cm_event **ev)
{
	char b;
	ssize_t n = read(ch->fd, &b, 1); // blocks unless the fd is O_NONBLOCK
	if (n != 1)
		return -1;
	std::lock_guard<std::recursive_mutex> g(mu);
	auto *c = reinterpret_cast<fake::Channel *>(ch);
	if (c->q.empty()) {
		errno = EAGAIN;
		return -1;
	}
	*ev = &c->q.front()->ev;
	c->q.pop_front();
	return 0;
}

int rdma_ack_cm_event(struct rdma_cm_event *ev)
{
	delete reinterpret_cast<fake::Event *>(ev);
	return 0;
}

} // extern "C"

// ---------------------------------------------------------------------------
// The tests.
// ---------------------------------------------------------------------------
namespace {

constexpr uint64_t kRegion0 = 1 << 20;
constexpr uint64_t kRegion1 = 64 << 10;
constexpr const char *kToken = "fake-secret";

class FakeVerbs : public ::testing::Test {
protected:
	void SetUp() override
	{
		fake::Reset();
		base_live_ = fake::Live();
		path_ = pmtest::TempPath("verbs_fake.pool");
		StartNode();
	}

	void TearDown() override
	{
		rdma_conn_close(&c_);
		StopNode();
		EXPECT_EQ(base_live_, fake::Live()) << "fake rdma-core objects leaked";
	}

	void StartNode(bool expect_ok = true)
	{
		rdma_node_config cfg = rdmatest::TwoRegionNodeConfig(path_, kRegion0, kRegion1, kToken);
		ASSERT_EQ(0, rdma_node_open(&node_, &cfg));
		rdma_node_serve_config scfg = rdmatest::ServeConfig("127.0.0.1", RDMA_NODE_SERVE_VERBS);
		int ret = rdma_node_serve(node_, &scfg);
		if (!expect_ok) {
			EXPECT_EQ(RDMA_E_NO_DEVICE, ret) << pm_strerror(ret);
			return;
		}
		ASSERT_EQ(0, ret) << pm_strerror(ret);
		for (unsigned i = 0; i < 2; i++)
			ASSERT_EQ(0, rdma_node_region(node_, i, &info_[i], &mem_[i]));
		uri_ = "verbs://127.0.0.1:" + std::to_string(rdma_node_port(node_));
	}

	void StopNode()
	{
		if (node_ != nullptr) {
			EXPECT_EQ(0, rdma_node_close(&node_));
		}
	}

	int Open(rdma_conn **c, const char *token = kToken)
	{
		rdma_conn_config cfg;
		rdma_conn_config_init(&cfg);
		cfg.token = token;
		cfg.timeout_ms = 2000;
		return rdma_conn_open(c, uri_.c_str(), &cfg);
	}

	uint8_t *Mem(unsigned r, uint64_t off) { return static_cast<uint8_t *>(mem_[r]) + off; }
	uint64_t Word(unsigned r, uint64_t off)
	{
		uint64_t v;
		memcpy(&v, Mem(r, off), 8);
		return v;
	}
	struct rdma_node_status Status()
	{
		struct rdma_node_status st;
		rdma_node_get_status(node_, &st);
		return st;
	}

	int base_live_ = 0;
	std::string path_, uri_;
	rdma_node *node_ = nullptr;
	rdma_conn *c_ = nullptr;
	rdma_region_info info_[2];
	void *mem_[2];
};

TEST_F(FakeVerbs, ConnectAndEveryOperation)
{
	ASSERT_EQ(0, Open(&c_));
	EXPECT_STREQ("verbs", rdma_conn_backend(c_));
	ASSERT_EQ(2u, rdma_conn_region_count(c_));
	EXPECT_EQ(16u, fake::last_initiator_depth);
	EXPECT_EQ(16u, fake::last_responder_resources);

	std::vector<uint8_t> src(1000), dst(1000);
	for (size_t i = 0; i < src.size(); i++)
		src[i] = (uint8_t)(i * 13 + 5);
	uint64_t small = 0x1122334455667788ull, small_back = 0;
	rdma_batch b;
	rdma_batch_init(&b);
	ASSERT_EQ(0, rdma_batch_write(&b, 0, 24, src.data(), src.size()));
	ASSERT_EQ(0, rdma_batch_write(&b, 1, 8, &small, 8));
	ASSERT_EQ(0, rdma_batch_read(&b, 0, 24, dst.data(), dst.size()));
	ASSERT_EQ(0, rdma_batch_read(&b, 1, 8, &small_back, 8));
	ASSERT_EQ(0, rdma_execute(c_, &b));
	EXPECT_EQ(0, memcmp(Mem(0, 24), src.data(), src.size()));
	EXPECT_EQ(small, Word(1, 8));
	EXPECT_EQ(src, dst);
	EXPECT_EQ(small, small_back);
	ASSERT_EQ(4u, fake::last_post.size());
	EXPECT_EQ(0u, fake::last_post[0].flags);                     // 1000 B: not inline
	EXPECT_EQ((unsigned)IBV_SEND_INLINE, fake::last_post[1].flags); // 8 B inline
	EXPECT_EQ((unsigned)IBV_SEND_SIGNALED, fake::last_post[3].flags);

	uint64_t old1 = 1, old2 = 1, old3 = 1;
	rdma_batch_init(&b);
	ASSERT_EQ(0, rdma_batch_cas(&b, 1, 64, 0, 0xdeadbeefcafef00dull, &old1));
	ASSERT_EQ(0, rdma_batch_cas(&b, 1, 64, 0, 5, &old2));
	ASSERT_EQ(0, rdma_batch_faa(&b, 1, 72, 0x100, &old3));
	ASSERT_EQ(0, rdma_batch_faa(&b, 1, 72, 1, nullptr));
	ASSERT_EQ(0, rdma_execute(c_, &b));
	EXPECT_EQ(0u, old1);
	EXPECT_EQ(0xdeadbeefcafef00dull, old2);
	EXPECT_EQ(0u, old3);
	EXPECT_EQ(0xdeadbeefcafef00dull, Word(1, 64));
	EXPECT_EQ(0x101u, Word(1, 72));
}

TEST_F(FakeVerbs, WritePersistCasPersistIsOnePostOfFourRequests)
{
	ASSERT_EQ(0, Open(&c_));
	std::vector<uint8_t> buf(512, 0x3c);
	uint64_t old = 99;
	rdma_batch b;
	rdma_batch_init(&b);
	ASSERT_EQ(0, rdma_batch_write(&b, 0, 4096, buf.data(), buf.size()));
	ASSERT_EQ(0, rdma_batch_persist(&b, 0, 4096, buf.size()));
	ASSERT_EQ(0, rdma_batch_cas(&b, 0, 0, 0, 4096, &old));
	ASSERT_EQ(0, rdma_batch_persist(&b, 0, 0, 8));
	rdma_stats before, after, d;
	rdma_stats_read_thread(&before);
	ASSERT_EQ(0, rdma_execute(c_, &b));
	rdma_stats_read_thread(&after);
	rdma_stats_diff(&after, &before, &d);
	EXPECT_EQ(1u, d.round_trips);
	EXPECT_EQ(4u, d.provider_ops);
	EXPECT_EQ(0u, d.wire_messages);
	ASSERT_EQ(4u, fake::last_post.size());
	EXPECT_EQ(IBV_WR_RDMA_WRITE, fake::last_post[0].opcode);
	EXPECT_EQ(0u, fake::last_post[0].flags);
	EXPECT_EQ(IBV_WR_RDMA_READ, fake::last_post[1].opcode);
	EXPECT_EQ(0u, fake::last_post[1].flags);
	EXPECT_EQ(IBV_WR_ATOMIC_CMP_AND_SWP, fake::last_post[2].opcode);
	EXPECT_EQ((unsigned)IBV_SEND_FENCE, fake::last_post[2].flags);
	EXPECT_EQ(IBV_WR_RDMA_READ, fake::last_post[3].opcode);
	EXPECT_EQ((unsigned)(IBV_SEND_FENCE | IBV_SEND_SIGNALED), fake::last_post[3].flags);
	EXPECT_EQ(0u, old);
	EXPECT_EQ(4096u, Word(0, 0));
	EXPECT_EQ(0, memcmp(Mem(0, 4096), buf.data(), buf.size()));
}

// Full batches back to back: the send queue (32 deep) is retired by each
// signalled completion, sequence numbers move on.
TEST_F(FakeVerbs, ManyFullBatches)
{
	ASSERT_EQ(0, Open(&c_));
	rdma_batch b;
	uint64_t old = 0;
	for (uint64_t i = 0; i < 300; i++) {
		rdma_batch_init(&b);
		for (unsigned k = 0; k < RDMA_BATCH_MAX_OPS; k++)
			ASSERT_EQ(0, rdma_batch_faa(&b, 0, 128, 1,
				k + 1 == RDMA_BATCH_MAX_OPS ? &old : nullptr));
		ASSERT_EQ(0, rdma_execute(c_, &b)) << i;
		ASSERT_EQ((i + 1) * RDMA_BATCH_MAX_OPS - 1, old);
	}
}

TEST_F(FakeVerbs, InlineRefusedFallsBackToNone)
{
	fake::max_inline = 0;
	ASSERT_EQ(0, Open(&c_));
	uint64_t v = 5;
	rdma_batch b;
	rdma_batch_init(&b);
	ASSERT_EQ(0, rdma_batch_write(&b, 0, 0, &v, 8));
	ASSERT_EQ(0, rdma_execute(c_, &b));
	EXPECT_EQ((unsigned)IBV_SEND_SIGNALED, fake::last_post[0].flags);
	EXPECT_EQ(5u, Word(0, 0));
}

TEST_F(FakeVerbs, DeviceWithoutUsableAtomicsRefused)
{
	fake::atomic_cap = IBV_ATOMIC_NONE;
	EXPECT_EQ(RDMA_E_NO_DEVICE, Open(&c_));
	EXPECT_EQ(nullptr, c_);
}

TEST_F(FakeVerbs, WrongTokenRefusedAtControlPort)
{
	EXPECT_EQ(RDMA_E_AUTH, Open(&c_, "wrong"));
	EXPECT_EQ(nullptr, c_);
}

// A connect request without a ticket from an admitted HELLO gets no QP.
TEST_F(FakeVerbs, ConnectWithoutTicketRejected)
{
	uint64_t bad_before = Status().bad_messages;
	// Learn the cm port from a real admission, then forge the ticket.
	ASSERT_EQ(0, Open(&c_));
	uint16_t port = 0;
	{
		std::lock_guard<std::recursive_mutex> g(mu);
		ASSERT_EQ(1u, fake::listeners.size());
		port = fake::listeners.begin()->first;
	}
	rdma_event_channel *ec = rdma_create_event_channel();
	rdma_cm_id *id = nullptr;
	ASSERT_EQ(0, rdma_create_id(ec, &id, nullptr, RDMA_PS_TCP));
	sockaddr_in sin = {};
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ASSERT_EQ(0, rdma_resolve_addr(id, nullptr, (sockaddr *)&sin, 1000));
	rdma_cm_event *ev;
	ASSERT_EQ(0, rdma_get_cm_event(ec, &ev));
	rdma_ack_cm_event(ev);
	ibv_pd *pd = ibv_alloc_pd(id->verbs);
	ibv_cq *cq = ibv_create_cq(id->verbs, 4, nullptr, nullptr, 0);
	ibv_qp_init_attr qpa = {};
	qpa.send_cq = qpa.recv_cq = cq;
	qpa.qp_type = IBV_QPT_RC;
	qpa.cap.max_send_wr = qpa.cap.max_recv_wr = 1;
	ASSERT_EQ(0, rdma_create_qp(id, pd, &qpa));
	uint8_t priv[RDMA__VERBS_PRIV_LEN];
	rdma__verbs_priv_encode(priv, 0x1234); // never issued
	rdma_conn_param p = {};
	p.private_data = priv;
	p.private_data_len = sizeof(priv);
	ASSERT_EQ(0, rdma_connect(id, &p));
	pollfd pfd = {ec->fd, POLLIN, 0};
	ASSERT_EQ(1, poll(&pfd, 1, 2000));
	ASSERT_EQ(0, rdma_get_cm_event(ec, &ev));
	EXPECT_EQ(RDMA_CM_EVENT_REJECTED, ev->event);
	rdma_ack_cm_event(ev);
	EXPECT_EQ(bad_before + 1, Status().bad_messages);
	rdma_destroy_qp(id);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ec);

	// The real client still works.
	uint64_t v = 9;
	rdma_batch b;
	rdma_batch_init(&b);
	ASSERT_EQ(0, rdma_batch_write(&b, 0, 0, &v, 8));
	EXPECT_EQ(0, rdma_execute(c_, &b));
}

// The node's memory is no longer reachable with the client's rkeys: the
// batch fails with RDMA_E_BOUNDS, the connection is broken until reconnect.
TEST_F(FakeVerbs, RemoteAccessErrorBreaksUntilReconnect)
{
	ASSERT_EQ(0, Open(&c_));
	uint64_t v = 3, r = 0;
	rdma_batch b;
	rdma_batch_init(&b);
	ASSERT_EQ(0, rdma_batch_write(&b, 0, 0, &v, 8));
	ASSERT_EQ(0, rdma_batch_read(&b, 0, 0, &r, 8));
	fake::rkeys_invalid = true;
	EXPECT_EQ(RDMA_E_BOUNDS, rdma_execute(c_, &b));
	EXPECT_EQ(RDMA_E_CONN, rdma_post(c_, &b));
	fake::rkeys_invalid = false;
	ASSERT_EQ(0, rdma_conn_reconnect(c_));
	EXPECT_EQ(0, rdma_execute(c_, &b));
	EXPECT_EQ(3u, r);
}

// The node stops: the connection breaks (never hangs), reconnecting fails
// while it is down and works once a node serves the same regions again.
TEST_F(FakeVerbs, NodeStopAndRestart)
{
	ASSERT_EQ(0, Open(&c_));
	uint64_t v = 1;
	rdma_batch b;
	rdma_batch_init(&b);
	ASSERT_EQ(0, rdma_batch_write(&b, 0, 0, &v, 8));
	ASSERT_EQ(0, rdma_execute(c_, &b));
	StopNode();
	int ret = rdma_execute(c_, &b);
	EXPECT_EQ(RDMA_E_CONN, ret) << pm_strerror(ret);
	EXPECT_NE(0, rdma_conn_reconnect(c_));
	// A failed reconnect leaves the region table as it was.
	ASSERT_EQ(2u, rdma_conn_region_count(c_));
	rdma_region_info r;
	ASSERT_EQ(0, rdma_conn_region(c_, 1, &r));
	EXPECT_EQ(kRegion1, r.length);
	// Restart on a new port: the old URI no longer reaches it, so open a
	// fresh connection (the pool, its regions and data persist).
	rdma_conn_close(&c_);
	StartNode();
	ASSERT_EQ(0, Open(&c_));
	uint64_t back = 0;
	rdma_batch_init(&b);
	ASSERT_EQ(0, rdma_batch_read(&b, 0, 0, &back, 8));
	ASSERT_EQ(0, rdma_execute(c_, &b));
	EXPECT_EQ(1u, back);
}

TEST_F(FakeVerbs, ReconnectHealthyConnection)
{
	ASSERT_EQ(0, Open(&c_));
	for (int i = 0; i < 5; i++)
		ASSERT_EQ(0, rdma_conn_reconnect(c_));
	uint64_t v = 77;
	rdma_batch b;
	rdma_batch_init(&b);
	ASSERT_EQ(0, rdma_batch_faa(&b, 1, 0, v, nullptr));
	ASSERT_EQ(0, rdma_execute(c_, &b));
	EXPECT_EQ(77u, Word(1, 0));
}

TEST_F(FakeVerbs, SeveralClients)
{
	std::vector<rdma_conn *> cs(4, nullptr);
	for (auto &c : cs)
		ASSERT_EQ(0, Open(&c));
	for (unsigned k = 0; k < 10; k++)
		for (auto *c : cs) {
			rdma_batch b;
			rdma_batch_init(&b);
			ASSERT_EQ(0, rdma_batch_faa(&b, 0, 256, 1, nullptr));
			ASSERT_EQ(0, rdma_execute(c, &b));
		}
	EXPECT_EQ(40u, Word(0, 256));
	for (auto &c : cs)
		rdma_conn_close(&c);
}

// No device at all: both sides say RDMA_E_NO_DEVICE and allocate nothing.
TEST_F(FakeVerbs, NoDevice)
{
	StopNode();
	fake::ndevices = 0;
	StartNode(false);
	EXPECT_EQ(0u, Status().backends);
	uri_ = "verbs://127.0.0.1:1";
	EXPECT_EQ(RDMA_E_NO_DEVICE, Open(&c_));
	EXPECT_EQ(nullptr, c_);
}

// The host is not an address of an RDMA device: the server does not start.
TEST_F(FakeVerbs, BindFailureIsNoDevice)
{
	StopNode();
	fake::bind_fails = true;
	StartNode(false);
	EXPECT_EQ(0u, Status().backends);
}

} // namespace
