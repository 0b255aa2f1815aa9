/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kv/src/index/group.c -- connections to a group's memory nodes and
 * parallel rounds (group.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <pm/error.h>

#include "kv/src/index/group.h"

/* How long a round spins before it yields on every poll. */
#define KV_IX_SPIN_NS 20000u

/* How often the reconnect thread retries a member that is down. */
#define KV_IX_RETRY_NS (50u * 1000000u)
/* How long a round waits for a member's background batch to complete. */
#define KV_IX_BACKGROUND_WAIT_NS (2u * 1000000u)

uint64_t
kv__ix_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void
kv__ix_pause(struct kv_ix_group *g)
{
	if (g->yield != NULL)
		g->yield(g->yield_arg);
	else
		__builtin_ia32_pause();
}

void
kv__ix_sleep(struct kv_ix_group *g, uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
	uint64_t until;

	if (g->yield == NULL) {
		nanosleep(&ts, NULL);
		return;
	}
	until = kv__ix_now_ns() + ns;
	while (kv__ix_now_ns() < until)
		g->yield(g->yield_arg);
}

static int
member_state(const struct kv_ix_member *m)
{
	return __atomic_load_n(&m->state, __ATOMIC_ACQUIRE);
}

#ifdef KV_IX_TESTING
void
kv__ix_member_fault(struct kv_ix_member *m)
{
	uint64_t req = __atomic_load_n(&m->fault_req, __ATOMIC_RELAXED);

	if (req != m->fault_applied && m->conn != NULL &&
		rdma_conn_inject(m->conn, (enum rdma_fault)(req >> 32 & 0xff),
			(uint32_t)req) == 0) {
		m->fault_applied = req;
		/* healed when the next round begins */
		if (req & KV_IX_FAULT_ONCE)
			__atomic_compare_exchange_n(&m->fault_req, &req, 0, false,
				__ATOMIC_RELAXED, __ATOMIC_RELAXED);
	}
}

int
kv__ix_fault_request(struct kv_ix_group *g, unsigned i, enum rdma_fault fault,
	uint32_t delay_us, uint64_t flags)
{
	/* Numbered, so a request equal to the one applied last (the same
	 * one-round fault again before the first was healed) is a change. */
	static uint64_t seq;
	uint64_t n = __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED) & 0xffff;

	if (i >= g->n)
		return -EINVAL;
	__atomic_store_n(&g->m[i].fault_req,
		n << 48 | (flags & KV_IX_FAULT_ONCE) | (uint64_t)fault << 32 | delay_us,
		__ATOMIC_RELAXED);
	return 0;
}
#endif

/* Batches of @m up to number @first may land until one operation timeout
 * from now (kv__ix_settled), except on the local backend, where a batch
 * ran inside rdma_post or never will. */
static void
member_unsettle(struct kv_ix_group *g, struct kv_ix_member *m, uint64_t first)
{
	uint64_t now = kv__ix_now_ns();

	/* The URI, not the connection: the reconnect thread may own that. */
	if (strncmp(m->uri, "local:", 6) == 0)
		return;
	if (now >= m->settle_ns)
		m->abandoned = first;
	m->abandoned_last = m->posts > first ? m->posts : first;
	m->settle_ns = now + (uint64_t)g->timeout_ms * 1000000u;
}

/* Hand @m to the reconnect thread (client thread). */
static void
member_down(struct kv_ix_group *g, struct kv_ix_member *m)
{
	/* What was in flight is abandoned, not known to be lost. */
	if (m->resolved != m->posts)
		member_unsettle(g, m, m->posts);
	m->resolved = m->posts;
	m->in_round = false;
	__atomic_store_n(&m->state, KV_IX_M_DOWN, __ATOMIC_RELEASE);
	pthread_mutex_lock(&g->lock);
	g->wake = true;
	pthread_cond_signal(&g->cond);
	pthread_mutex_unlock(&g->lock);
}

/* The length of region @id on @c's node, 0 if it has none. */
static uint64_t
region_len(const struct rdma_conn *c, uint32_t id)
{
	struct rdma_region_info info;

	for (unsigned i = 0; rdma_conn_region(c, i, &info) == 0; i++)
		if (info.id == id)
			return info.length;
	return 0;
}

/*
 * Whether member @i's node holds a superblock of this group (reconnect
 * thread). The first valid superblock seen names the group; the others must
 * agree with it.
 */
static bool
member_check(struct kv_ix_group *g, unsigned i, bool require_super)
{
	struct kv_ix_member *m = &g->m[i];
	struct kv_ix_super s;
	struct rdma_batch b;
	uint64_t len = region_len(m->conn, g->region);
	bool ok;

	if (len == 0)
		return false;
	if (!require_super || (g->blank >> i & 1))
		return true;
	rdma_batch_init(&b);
	if (rdma_batch_read(&b, g->region, 0, &s, sizeof(s)) != 0 ||
		rdma_execute(m->conn, &b) != 0)
		return false;
	if (kv__ix_super_check(&s, len, g->n, i) != 0)
		return false;
	pthread_mutex_lock(&g->lock);
	if (!g->uuid_known) {
		memcpy(g->uuid, s.uuid, sizeof(g->uuid));
		g->super = s;
		g->uuid_known = true;
	}
	ok = memcmp(g->uuid, s.uuid, sizeof(g->uuid)) == 0 &&
		s.bucket_off == g->super.bucket_off && s.nbuckets == g->super.nbuckets &&
		s.rec_off == g->super.rec_off && s.mark_off == g->super.mark_off &&
		s.max_clients == g->super.max_clients &&
		s.recs_per_client == g->super.recs_per_client;
	pthread_mutex_unlock(&g->lock);
	if (!ok)
		pm_error_set(KV_E_GROUP, "kv_index: its superblock names another group");
	return ok && (g->admit == NULL || g->admit(g->admit_ctx, g, i));
}

/* One attempt to bring member @i back (reconnect thread). */
static void
member_revive(struct kv_ix_group *g, unsigned i, bool require_super)
{
	struct kv_ix_member *m = &g->m[i];
	bool again = m->conn != NULL; /* connected before: it may lag */
	int ret;

	pm_error_clear(); /* this thread's: what refuses the member says why */
	if (m->conn == NULL) {
		ret = rdma_conn_open(&m->conn, m->uri, &g->conn_cfg);
	} else {
		ret = rdma_conn_reconnect(m->conn);
		/* A node replaced on a new pool may have regions of other
		 * sizes (a bigger disk): that is for the superblock check
		 * below to judge, on a new connection. */
		if (ret == RDMA_E_PROTO) {
			(void)rdma_conn_close(&m->conn);
			ret = rdma_conn_open(&m->conn, m->uri, &g->conn_cfg);
		}
	}
#ifdef KV_IX_TESTING
	if (ret == 0)
		kv__ix_member_fault(m);
#endif
	if (ret != 0 || !member_check(g, i, require_super)) {
		pthread_mutex_lock(&g->lock);
		snprintf(g->refusal, sizeof(g->refusal), "%s: %s", m->uri,
			pm_errormsg()[0] != '\0' ? pm_errormsg() : "refused");
		pthread_mutex_unlock(&g->lock);
		__atomic_fetch_or(&g->refused, 1u << i, __ATOMIC_RELAXED);
		return;
	}
	__atomic_fetch_and(&g->refused, ~(1u << i), __ATOMIC_RELAXED);
	if (again)
		__atomic_fetch_add(&g->revivals, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&m->state, KV_IX_M_IDLE, __ATOMIC_RELEASE);
}

struct kv_ix_thread_arg {
	struct kv_ix_group *g;
	bool require_super;
};

struct kv_ix_revive_arg {
	struct kv_ix_group *g;
	unsigned i;
	bool require_super;
};

static void *
revive_main(void *p)
{
	struct kv_ix_revive_arg *a = p;

	member_revive(a->g, a->i, a->require_super);
	return NULL;
}

/* One attempt on every DOWN member, all at once: opening a connection
 * (the provider's setup, the node's token hash) takes tens to hundreds
 * of milliseconds, which one after the other would add up at every open
 * (reconnect thread). */
static void
revive_down(struct kv_ix_group *g, bool require_super)
{
	struct kv_ix_revive_arg a[KV_IX_MAX_N];
	pthread_t t[KV_IX_MAX_N];
	bool started[KV_IX_MAX_N] = { false };

	for (unsigned i = 0; i < g->n; i++) {
		if (member_state(&g->m[i]) != KV_IX_M_DOWN)
			continue;
		a[i] = (struct kv_ix_revive_arg){ g, i, require_super };
		started[i] = pthread_create(&t[i], NULL, revive_main, &a[i]) == 0;
		if (!started[i])
			member_revive(g, i, require_super);
	}
	for (unsigned i = 0; i < g->n; i++)
		if (started[i])
			pthread_join(t[i], NULL);
}

static void *
reconnect_main(void *p)
{
	struct kv_ix_group *g = ((struct kv_ix_thread_arg *)p)->g;
	bool require_super = ((struct kv_ix_thread_arg *)p)->require_super;

	free(p);
	for (;;) {
		struct timespec until;

		revive_down(g, require_super);
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += KV_IX_RETRY_NS;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		pthread_mutex_lock(&g->lock);
		while (!g->stop && !g->wake)
			if (pthread_cond_timedwait(&g->cond, &g->lock, &until) == ETIMEDOUT)
				break;
		g->wake = false;
		if (g->stop) {
			pthread_mutex_unlock(&g->lock);
			return NULL;
		}
		pthread_mutex_unlock(&g->lock);
	}
}

unsigned
kv__ix_group_up(const struct kv_ix_group *g)
{
	unsigned mask = 0;

	for (unsigned i = 0; i < g->n; i++) {
		int st = member_state(&g->m[i]);

		if (st == KV_IX_M_IDLE || st == KV_IX_M_BUSY)
			mask |= 1u << i;
	}
	return mask;
}

static unsigned
usable_members(const struct kv_ix_group *g)
{
	unsigned k = 0;

	for (unsigned i = 0; i < g->n; i++)
		k += member_state(&g->m[i]) == KV_IX_M_IDLE;
	return k;
}

int
kv__ix_group_open(struct kv_ix_group *g, const char *const *uris, unsigned n,
	uint32_t region, const struct rdma_conn_config *cfg, unsigned timeout_ms,
	const struct kv_ix_group_opts *opts)
{
	bool require_super = opts->require_super;
	size_t scratch = opts->scratch;
	struct kv_ix_thread_arg *arg;
	uint64_t deadline, quorum_at = 0;
	int ret;

	memset(g, 0, sizeof(*g));
	if (n == 0 || n % 2 == 0 || n > KV_IX_MAX_N || uris == NULL)
		return pm_error_set(-EINVAL, "kv_index: the group needs an odd number of nodes, 1..%u",
			KV_IX_MAX_N);
	if (scratch < KV_IX_SCRATCH || scratch % 64 != 0)
		return pm_error_set(-EINVAL, "kv_index: scratch of %zu bytes", scratch);
	g->n = n;
	g->f = n / 2;
	g->scratch = scratch;
	g->region = region;
	g->blank = opts->blank;
	g->admit = opts->admit;
	g->admit_ctx = opts->admit_ctx;
	g->yield = opts->yield;
	g->yield_arg = opts->yield_arg;
	g->timeout_ms = timeout_ms;
	g->grace_min_ns = 200u * 1000u;
	if (cfg != NULL)
		g->conn_cfg = *cfg;
	else
		rdma_conn_config_init(&g->conn_cfg);
	/* rdma_conn_open copies the token; keep one for the config we pass on
	 * every reconnect. */
	if (g->conn_cfg.token != NULL) {
		if (strlen(g->conn_cfg.token) > RDMA_TOKEN_MAX)
			return pm_error_set(-EINVAL, "kv_index: token too long");
		strcpy(g->token, g->conn_cfg.token);
		g->conn_cfg.token = g->token;
	}
	for (unsigned i = 0; i < n; i++) {
		g->m[i].state = KV_IX_M_DOWN;
		g->m[i].uri = uris[i] != NULL ? strdup(uris[i]) : NULL;
		g->m[i].buf = aligned_alloc(64, scratch);
		if (g->m[i].uri == NULL || g->m[i].buf == NULL) {
			ret = uris[i] == NULL ? -EINVAL : -ENOMEM;
			goto err_uris;
		}
	}
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->cond, NULL);
	arg = malloc(sizeof(*arg));
	if (arg == NULL) {
		ret = -ENOMEM;
		goto err_sync;
	}
	arg->g = g;
	arg->require_super = require_super;
	ret = -pthread_create(&g->thread, NULL, reconnect_main, arg);
	if (ret != 0) {
		free(arg);
		goto err_sync;
	}
	deadline = kv__ix_now_ns() + (uint64_t)timeout_ms * 1000000u;
	/* Creation needs every node; otherwise a majority serves, and the
	 * rest get up to a connection timeout to join (so a healthy group
	 * starts on the fast path). */
	for (;;) {
		unsigned up = usable_members(g);
		uint64_t now = kv__ix_now_ns();

		if (up == n)
			break;
		if (require_super && up >= g->f + 1) {
			/* The others refused (dead daemon, failed device,
			 * wrong pool): no reason to wait for them. */
			if (up + (unsigned)__builtin_popcount(
				__atomic_load_n(&g->refused, __ATOMIC_RELAXED)) >= n)
				break;
			if (quorum_at == 0)
				quorum_at = now;
			if (now - quorum_at >= (uint64_t)g->conn_cfg.timeout_ms * 1000000u)
				break;
		}
		if (now >= deadline) {
			/* A majority that came up late still serves. */
			if (require_super && up >= g->f + 1)
				break;
			char why[sizeof(g->refusal)];

			pthread_mutex_lock(&g->lock);
			memcpy(why, g->refusal, sizeof(why));
			pthread_mutex_unlock(&g->lock);
			kv__ix_group_close(g);
			return pm_error_set(KV_E_UNAVAILABLE,
				"kv_index: fewer than %u of %u nodes reachable with this group's superblocks%s%s",
				require_super ? g->f + 1 : n, n, why[0] != '\0' ? "; last refused: " : "", why);
		}
		struct timespec ms = { 0, 1000000 };
		nanosleep(&ms, NULL);
	}
	return 0;

err_sync:
	pthread_cond_destroy(&g->cond);
	pthread_mutex_destroy(&g->lock);
err_uris:
	for (unsigned i = 0; i < n; i++) {
		free(g->m[i].uri);
		free(g->m[i].buf);
	}
	return pm_error_set(ret, "kv_index: cannot set up the group: %s", pm_strerror(ret));
}

void
kv__ix_group_unformat(struct kv_ix_group *g, uint32_t region, unsigned mask)
{
	static const uint64_t zero;
	/* rdma_post clears the message; the create's failure must stay. */
	char *why = strdup(pm_errormsg());

	for (unsigned i = 0; i < g->n; i++) {
		struct kv_ix_member *m = &g->m[i];

		if (!(mask >> i & 1) || m->conn == NULL)
			continue;
		rdma_batch_init(&m->batch);
		if (rdma_batch_write(&m->batch, region, 0, &zero, sizeof(zero)) == 0 &&
			rdma_batch_persist(&m->batch, region, 0, sizeof(zero)) == 0)
			(void)rdma_execute(m->conn, &m->batch);
	}
	if (why != NULL)
		pm_error_set(0, "%s", why);
	free(why);
}

void
kv__ix_group_close(struct kv_ix_group *g)
{
	/* Closing connections clears the thread's message; a close on an
	 * error path must leave the error's (kv_index_create, kv_rebuild).
	 * On the stack: a close allocates nothing (kv_fault_test). */
	char why[256];

	snprintf(why, sizeof(why), "%s", pm_errormsg());

	pthread_mutex_lock(&g->lock);
	g->stop = true;
	pthread_cond_signal(&g->cond);
	pthread_mutex_unlock(&g->lock);
	pthread_join(g->thread, NULL);
	for (unsigned i = 0; i < g->n; i++) {
		/* A batch still in flight is abandoned; its error is moot. */
		(void)rdma_conn_close(&g->m[i].conn);
		free(g->m[i].uri);
		free(g->m[i].buf);
		g->m[i].state = KV_IX_M_CLOSED;
	}
	pthread_cond_destroy(&g->cond);
	pthread_mutex_destroy(&g->lock);
	if (why[0] != '\0')
		pm_error_set(0, "%s", why);
}

unsigned
kv__ix_round_begin(struct kv_ix_group *g)
{
	uint64_t now = kv__ix_now_ns();
	uint64_t stuck_ns = (uint64_t)g->conn_cfg.timeout_ms * 1000000u;
	unsigned mask = 0;

	for (unsigned i = 0; i < g->n; i++) {
		struct kv_ix_member *m = &g->m[i];
		int st = member_state(m);

		if (st == KV_IX_M_BUSY) {
			int rc = rdma_poll(m->conn);

			/* A background commit was posted one step ago: give
			 * it a moment rather than lose this member for the
			 * round (and the fast path with it). */
			while (rc == -EINPROGRESS && m->background &&
				kv__ix_now_ns() - now < KV_IX_BACKGROUND_WAIT_NS) {
				kv__ix_pause(g);
				rc = rdma_poll(m->conn);
			}

			if (rc == -EINPROGRESS && now - m->posted_ns <= stuck_ns)
				continue;
			if (rc != 0) {
				/* Failed, or silent past the connection's
				 * timeout (a partition, a stopped node):
				 * reconnecting abandons the batch. */
				member_down(g, m);
				continue;
			}
			__atomic_store_n(&m->state, KV_IX_M_IDLE, __ATOMIC_RELAXED);
			m->resolved = m->posts;
			m->background = false;
			st = KV_IX_M_IDLE;
		}
		if (st != KV_IX_M_IDLE)
			continue;
#ifdef KV_IX_TESTING
		kv__ix_member_fault(m);
#endif
		rdma_batch_init(&m->batch);
		m->in_round = false;
		mask |= 1u << i;
	}
	return mask;
}

/*
 * Post member @i's batch at @now (read once per round: a clock read per
 * post was a tenth of a local operation's time); false if it could not be
 * posted. The fence is checked against @now: the posts of one round
 * follow it by microseconds, within the pause between a fence check and
 * its post that the lease tolerates anyway (lease.c, Spin m10_gap).
 */
static bool
member_post(struct kv_ix_group *g, unsigned i, uint64_t now)
{
	struct kv_ix_member *m = &g->m[i];
	int rc;

	if (g->fence != NULL && !g->fence_open) {
		uint64_t until = *g->fence;

		if (until != 0 && now >= until) {
			g->fenced_posts++;
			return false;
		}
	}
	if (g->crash_left != NULL) {
		if (*g->crash_left == 0)
			return false;
		(*g->crash_left)--;
	}
	/* Counted before: a post that fails may have sent part of it. */
	m->posts++;
	rc = rdma_post(m->conn, &m->batch);
	if (rc != 0) {
		member_down(g, m);
		return false;
	}
	m->posted_ns = now;
	m->background = false;
	__atomic_store_n(&m->state, KV_IX_M_BUSY, __ATOMIC_RELAXED);
	return true;
}

void
kv__ix_round_post(struct kv_ix_group *g, unsigned mask)
{
	const uint64_t now = kv__ix_now_ns();

	for (unsigned i = 0; i < g->n; i++)
		if ((mask >> i & 1) && g->m[i].batch.n > 0 && member_post(g, i, now))
			g->m[i].background = true;
}

void
kv__ix_round_start(struct kv_ix_group *g, unsigned mask, struct kv_ix_round *r)
{
	r->start = kv__ix_now_ns();
	r->pending = 0;
	r->ok = 0;
	for (unsigned i = 0; i < g->n; i++) {
		if (!(mask >> i & 1))
			continue;
		if (g->m[i].batch.n == 0) {
			r->ok |= 1u << i; /* nothing to do counts as done */
			continue;
		}
		if (member_post(g, i, r->start)) {
			g->m[i].in_round = true;
			r->pending |= 1u << i;
		}
	}
}

/* Collect the members of @r whose batches completed. */
static void
round_poll(struct kv_ix_group *g, struct kv_ix_round *r)
{
	for (unsigned i = 0; i < g->n; i++) {
		struct kv_ix_member *m = &g->m[i];
		int rc;

		if (!(r->pending >> i & 1))
			continue;
		rc = rdma_poll(m->conn);
		if (rc == -EINPROGRESS)
			continue;
		r->pending &= ~(1u << i);
		m->in_round = false;
		m->rc = rc;
		if (rc != 0) {
			member_down(g, m);
			continue;
		}
		__atomic_store_n(&m->state, KV_IX_M_IDLE, __ATOMIC_RELAXED);
		m->resolved = m->posts;
		r->ok |= 1u << i;
	}
}

unsigned
kv__ix_round_wait(struct kv_ix_group *g, struct kv_ix_round *r, unsigned need,
	uint64_t deadline_ns)
{
	uint64_t stuck_ns = (uint64_t)g->conn_cfg.timeout_ms * 1000000u, quorum_at = 0;

	while (r->pending != 0) {
		uint64_t now;

		round_poll(g, r);
		if (r->pending == 0)
			break;
		now = kv__ix_now_ns();
		if (now >= deadline_ns)
			break;
		/* A node's progress thread may need this core (more spinning
		 * threads than cores: daemons on the client's machine, a busy
		 * host): past a short spin, offer it on every poll. A yield
		 * with nothing else runnable returns at once. */
		if (g->yield == NULL && now - r->start > KV_IX_SPIN_NS)
			sched_yield();
		if (now - r->start > stuck_ns) {
			/* Silent past the connection timeout (cut off,
			 * stopped): hand them over, and let the caller try a
			 * new round with the members that came back. */
			for (unsigned i = 0; i < g->n; i++)
				if (r->pending >> i & 1)
					member_down(g, &g->m[i]);
			r->pending = 0;
			break;
		}
		if ((unsigned)__builtin_popcount(r->ok) >= need) {
			/* Wait for stragglers as long again as the quorum
			 * took, at least grace_min_ns: a healthy node
			 * answers in about the same time, a dead one never. */
			uint64_t grace;

			if (quorum_at == 0)
				quorum_at = now;
			grace = quorum_at - r->start;
			if (grace < g->grace_min_ns)
				grace = g->grace_min_ns;
			if (now - quorum_at >= grace)
				break;
		}
		kv__ix_pause(g);
	}
	for (unsigned i = 0; i < g->n; i++)
		if (r->pending >> i & 1)
			g->m[i].in_round = false; /* stays busy; drained later */
	r->pending = 0;
	return r->ok;
}

unsigned
kv__ix_round_done(struct kv_ix_group *g, struct kv_ix_round *r)
{
	round_poll(g, r);
	return r->ok;
}

unsigned
kv__ix_round_run(struct kv_ix_group *g, unsigned mask, unsigned need,
	uint64_t deadline_ns)
{
	struct kv_ix_round r;

	kv__ix_round_start(g, mask, &r);
	return kv__ix_round_wait(g, &r, need, deadline_ns);
}

void
kv__ix_posted(const struct kv_ix_group *g, struct kv_ix_posted *p)
{
	for (unsigned i = 0; i < KV_IX_MAX_N; i++)
		p->n[i] = i < g->n ? g->m[i].posts : 0;
}

bool
kv__ix_settled(const struct kv_ix_group *g, const struct kv_ix_posted *since,
	const struct kv_ix_posted *upto)
{
	uint64_t now = kv__ix_now_ns();

	for (unsigned i = 0; i < g->n; i++) {
		const struct kv_ix_member *m = &g->m[i];
		uint64_t after = since != NULL ? since->n[i] : 0;

		if (m->resolved < upto->n[i])
			return false;
		/* Abandoned batches in (after, upto] still within reach. */
		if (m->abandoned != 0 && now < m->settle_ns && m->abandoned <= upto->n[i] &&
			m->abandoned_last > after)
			return false;
	}
	return true;
}

/* The deadline passed while fewer than f+1 members answered. */
static int
group_unavailable(const struct kv_ix_group *g, const char *what)
{
	return pm_error_set(KV_E_UNAVAILABLE, "kv: %s: fewer than %u of %u nodes answered in time",
		what, g->f + 1, g->n);
}

int
kv__ix_word_load(struct kv_ix_group *g, uint32_t region, uint64_t off, uint64_t deadline_ns,
	uint64_t *max)
{
	while (kv__ix_now_ns() < deadline_ns) {
		unsigned mask = kv__ix_round_begin(g), ok;

		for (unsigned i = 0; i < g->n; i++)
			if ((mask >> i & 1) &&
				rdma_batch_read(&g->m[i].batch, region, off, g->m[i].buf, 8) != 0)
				mask &= ~(1u << i);
		ok = kv__ix_round_run(g, mask, g->n, deadline_ns);
		if ((unsigned)__builtin_popcount(ok) >= g->f + 1) {
			*max = 0;
			for (unsigned i = 0; i < g->n; i++) {
				uint64_t w;

				memcpy(&w, g->m[i].buf, 8);
				if ((ok >> i & 1) && w > *max)
					*max = w;
			}
			return 0;
		}
	}
	return group_unavailable(g, "reading a mark");
}

int
kv__ix_word_store(struct kv_ix_group *g, uint32_t region, uint64_t off, uint64_t value,
	uint64_t deadline_ns)
{
	while (kv__ix_now_ns() < deadline_ns) {
		unsigned mask = kv__ix_round_begin(g), ok;

		for (unsigned i = 0; i < g->n; i++) {
			if (!(mask >> i & 1))
				continue;
			memcpy(g->m[i].buf, &value, 8);
			if (rdma_batch_write(&g->m[i].batch, region, off, g->m[i].buf, 8) != 0 ||
				rdma_batch_persist(&g->m[i].batch, region, off, 8) != 0)
				mask &= ~(1u << i);
		}
		ok = kv__ix_round_run(g, mask, g->f + 1, deadline_ns);
		if ((unsigned)__builtin_popcount(ok) >= g->f + 1)
			return 0;
	}
	return group_unavailable(g, "raising a mark");
}

/* CAS @from -> @to, persisted, at @off on every usable member; the mask of
 * members that answered, and in *@held those whose word is @to now. */
static unsigned
group_cas_all(struct kv_ix_group *g, uint32_t region, uint64_t off, uint64_t from,
	uint64_t to, uint64_t deadline_ns, unsigned *held)
{
	unsigned mask = kv__ix_round_begin(g), ok;

	for (unsigned i = 0; i < g->n; i++)
		if ((mask >> i & 1) &&
			(rdma_batch_cas(&g->m[i].batch, region, off, from, to, &g->m[i].old[0]) != 0 ||
				rdma_batch_persist(&g->m[i].batch, region, off, 8) != 0))
			mask &= ~(1u << i);
	ok = kv__ix_round_run(g, mask, g->n, deadline_ns);
	*held = 0;
	for (unsigned i = 0; i < g->n; i++)
		if ((ok >> i & 1) && (g->m[i].old[0] == from || g->m[i].old[0] == to))
			*held |= 1u << i;
	return ok;
}

int
kv__ix_claim(struct kv_ix_group *g, uint32_t region, uint64_t off, uint64_t owner,
	uint64_t deadline_ns, bool *won)
{
	unsigned got = 0;

	*won = false;
	while (kv__ix_now_ns() < deadline_ns) {
		unsigned held, ok = group_cas_all(g, region, off, 0, owner, deadline_ns, &held);

		got |= held;
		/* A member holding another owner never changes; decide once
		 * f+1 answered, or every member did. */
		if ((unsigned)__builtin_popcount(got) >= g->f + 1) {
			*won = true;
			return 0;
		}
		if ((unsigned)__builtin_popcount(ok) >= g->f + 1)
			return 0;
	}
	return group_unavailable(g, "claiming a word");
}

int
kv__ix_unclaim(struct kv_ix_group *g, uint32_t region, uint64_t off, uint64_t owner,
	uint64_t deadline_ns)
{
	while (kv__ix_now_ns() < deadline_ns) {
		unsigned held, ok = group_cas_all(g, region, off, owner, 0, deadline_ns, &held);

		if ((unsigned)__builtin_popcount(ok) >= g->f + 1)
			return 0;
	}
	return group_unavailable(g, "releasing a word");
}
