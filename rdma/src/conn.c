/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdma/src/conn.c -- the backend-independent half of a connection: URI
 * dispatch, region table, batch validation, fault injection (RDMA_TESTING
 * only: testing.h), the in-flight
 * state machine, timeouts and counters (core.h). Backends only connect,
 * execute and report completion, so every backend gets the same checks and
 * the same accounting.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <pm/cost.h>

#include "core.h"

#define RDMA_DEFAULT_TIMEOUT_MS 5000

static const struct {
	const char *scheme;
	const struct rdma__backend *backend;
} schemes[] = {
	{ "local:", &rdma__backend_local },
	{ "ofi+tcp://", &rdma__backend_ofi_tcp },
	{ "ofi+shm://", &rdma__backend_ofi_shm },
	{ "ofi+verbs://", &rdma__backend_ofi_verbs },
	{ "verbs://", &rdma__backend_verbs },
};

void
rdma_conn_config_init(struct rdma_conn_config *cfg)
{
	cfg->token = "";
	cfg->timeout_ms = RDMA_DEFAULT_TIMEOUT_MS;
	cfg->max_provider_ops = 0;
}

/* The part of c->uri after the scheme. */
static const char *
conn_target(const struct rdma_conn *c)
{
	for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++)
		if (schemes[i].backend == c->backend)
			return c->uri + strlen(schemes[i].scheme);
	return c->uri;
}

int
rdma_conn_open(struct rdma_conn **out, const char *uri,
	const struct rdma_conn_config *cfg)
{
	struct rdma_conn_config defaults;
	struct rdma_conn *c;
	int ret;

	pm_error_clear();
	if (cfg == NULL) {
		rdma_conn_config_init(&defaults);
		cfg = &defaults;
	}
	if (out == NULL || uri == NULL || cfg->token == NULL ||
	    strlen(cfg->token) > RDMA_TOKEN_MAX || cfg->timeout_ms == 0)
		return pm_error_set(-EINVAL, "rdma_conn_open: no output or URI, a token longer "
			"than %d bytes, or timeout_ms 0", RDMA_TOKEN_MAX);
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return pm_error_set(-ENOMEM, "rdma_conn_open: out of memory");
	for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++)
		if (strncmp(uri, schemes[i].scheme, strlen(schemes[i].scheme)) == 0)
			c->backend = schemes[i].backend;
	c->uri = strdup(uri);
	if (c->backend == NULL || c->uri == NULL) {
		ret = c->uri == NULL ? -ENOMEM : -EINVAL;
		free(c->uri);
		free(c);
		return pm_error_set(ret, "rdma_conn_open: %s: %s", uri,
			ret == -ENOMEM ? "out of memory" : "unknown URI scheme");
	}
	strcpy(c->token, cfg->token);
	c->timeout_ms = cfg->timeout_ms;
	c->max_provider_ops = cfg->max_provider_ops;
	if (conn_target(c)[0] == '\0')
		ret = -EINVAL;
	else
		ret = c->backend->open(c, conn_target(c));
	if (ret != 0) {
		free(c->uri);
		free(c);
		return pm_error_set(ret, "rdma_conn_open: %s: %s", uri, pm_strerror(ret));
	}
	c->state = RDMA__IDLE;
	*out = c;
	return 0;
}

/* Bounded wait for a batch in flight before its buffers are released; 0 or
 * how that batch ended. */
static int
conn_drain(struct rdma_conn *c)
{
#ifdef RDMA_TESTING
	if (c->state == RDMA__DEFERRED || c->state == RDMA__SPLIT)
		return rdma_wait(c);
#endif
	if (c->state == RDMA__INFLIGHT)
		return rdma_wait(c);
	return 0;
}

int
rdma_conn_close(struct rdma_conn **cp)
{
	struct rdma_conn *c;
	int ret;

	if (cp == NULL || *cp == NULL)
		return 0;
	c = *cp;
	ret = conn_drain(c);
	if (c->be != NULL)
		c->backend->close(c);
#ifdef RDMA_TESTING
	free(c->split);
#endif
	free(c->uri);
	free(c);
	*cp = NULL;
	return ret;
}

int
rdma_conn_reconnect(struct rdma_conn *c)
{
	struct rdma_region_info old[RDMA__MAX_REGIONS];
	unsigned nold = c->nregions;
	int ret;

	pm_error_clear();
	memcpy(old, c->regions, sizeof(old));
	if (c->state == RDMA__INFLIGHT)
		c->state = RDMA__BROKEN; /* abandoned, as documented */
	if (c->be != NULL)
		c->backend->close(c);
	c->be = NULL;
	c->batch = NULL;
	c->state = RDMA__BROKEN;
	ret = c->backend->open(c, conn_target(c));
	if (ret != 0)
		return pm_error_set(ret, "rdma_conn_reconnect: %s: %s", c->uri, pm_strerror(ret));
	if (c->nregions != nold || memcmp(old, c->regions, nold * sizeof(old[0])) != 0) {
		/* Keep the old table: handles the caller holds stay meaningful. */
		c->nregions = nold;
		memcpy(c->regions, old, sizeof(old));
		return pm_error_set(RDMA_E_PROTO, "rdma_conn_reconnect: %s: the node's regions "
			"changed", c->uri);
	}
	c->state = RDMA__IDLE;
	return 0;
}

const char *
rdma_conn_backend(const struct rdma_conn *c)
{
	return c->backend->name;
}

unsigned
rdma_conn_region_count(const struct rdma_conn *c)
{
	return c->nregions;
}

int
rdma_conn_region(const struct rdma_conn *c, unsigned index,
	struct rdma_region_info *out)
{
	if (index >= c->nregions)
		return -EINVAL;
	*out = c->regions[index];
	return 0;
}

#ifdef RDMA_TESTING
int
rdma_conn_inject(struct rdma_conn *c, enum rdma_fault fault, uint32_t delay_us)
{
	if (fault > RDMA_FAULT_SPLIT)
		return -EINVAL;
	if (fault == RDMA_FAULT_SPLIT && c->split == NULL &&
		(c->split = calloc(2, sizeof(*c->split))) == NULL)
		return -ENOMEM;
	c->fault = fault;
	c->delay_us = delay_us;
	return 0;
}
#endif

/* Charge a posted batch to this thread's counters (rdma and pm/cost). */
static void
count_posted(const struct rdma_batch *b)
{
	static const enum pm_cost_counter cost_of[RDMA_OP_NTYPES] = {
		[RDMA_OP_READ] = PM_COST_REMOTE_READ,
		[RDMA_OP_WRITE] = PM_COST_REMOTE_WRITE,
		[RDMA_OP_CAS] = PM_COST_REMOTE_ATOMIC,
		[RDMA_OP_FAA] = PM_COST_REMOTE_ATOMIC,
		[RDMA_OP_PERSIST] = PM_COST_REMOTE_PERSIST,
	};

	rdma__stats.batches++;
	for (unsigned i = 0; i < b->n; i++) {
		const struct rdma_op *op = &b->ops[i];

		rdma__stats.ops[op->type]++;
		if (op->type == RDMA_OP_READ)
			rdma__stats.bytes_read += op->len;
		else if (op->type == RDMA_OP_WRITE)
			rdma__stats.bytes_written += op->len;
		pm_cost_add(cost_of[op->type], 1);
	}
}

#ifdef RDMA_TESTING
/* RDMA_FAULT_SPLIT: copy @b's operations before its last PERSIST into
 * c->split[0] and the rest into c->split[1]. Return: whether both parts
 * have operations (else @b runs whole). */
static bool
conn_split(struct rdma_conn *c, const struct rdma_batch *b)
{
	unsigned k = b->n;

	while (k > 0 && b->ops[k - 1].type != RDMA_OP_PERSIST)
		k--;
	if (k <= 1)
		return false; /* no persist, or the last one comes first */
	k--; /* the last persist starts the second part */
	rdma_batch_init(&c->split[0]);
	rdma_batch_init(&c->split[1]);
	for (unsigned i = 0; i < b->n; i++) {
		struct rdma_batch *part = &c->split[i >= k];

		part->ops[part->n++] = b->ops[i];
		if (b->ops[i].type != RDMA_OP_PERSIST) /* as batch_add counts */
			part->bytes += b->ops[i].len;
	}
	return true;
}
#endif

/* The batch in flight failed: the connection is broken until reconnected. */
static int
conn_fail(struct rdma_conn *c, int err)
{
	c->state = RDMA__BROKEN;
	c->batch = NULL;
	rdma__stats.failed++;
	return err;
}

int
rdma_post(struct rdma_conn *c, struct rdma_batch *b)
{
	int ret;

	pm_error_clear();
	switch (c->state) {
	case RDMA__IDLE:
		break;
	case RDMA__BROKEN:
		return pm_error_set(RDMA_E_CONN, "rdma_post: the connection is broken; reconnect");
	default:
		return pm_error_set(-EBUSY, "rdma_post: a batch is already in flight");
	}
#ifdef RDMA_TESTING
	if (c->fault == RDMA_FAULT_FAIL)
		return pm_error_set(RDMA_E_INJECTED, "rdma_post: injected failure");
#endif
	ret = rdma__batch_check(b, c->regions, c->nregions);
	if (ret != 0)
		return pm_error_set(ret, "rdma_post: the batch is invalid: %s", pm_strerror(ret));
	count_posted(b);
	c->batch = b;
	c->post_ns = rdma__now_ns();
#ifdef RDMA_TESTING
	if (c->fault == RDMA_FAULT_PARTITION) {
		c->state = RDMA__LOST;
		return 0;
	}
	if (c->fault == RDMA_FAULT_DELAY && c->delay_us > 0) {
		c->state = RDMA__DEFERRED;
		return 0;
	}
	if (c->fault == RDMA_FAULT_SPLIT && conn_split(c, b)) {
		c->state = RDMA__SPLIT;
		c->split_polls = 0;
		b = &c->split[0];
	} else {
		c->state = RDMA__INFLIGHT;
	}
#else
	c->state = RDMA__INFLIGHT;
#endif
	ret = c->backend->post(c, b);
	if (ret != 0)
		return pm_error_set(conn_fail(c, ret), "rdma_post: %s backend: %s",
			c->backend->name, pm_strerror(ret));
#ifdef RDMA_TESTING
	if (c->fault == RDMA_FAULT_DROP_REPLY) {
		/* Run it to the end on the node, then forget the answer. */
		while (c->backend->poll(c) == -EINPROGRESS &&
			rdma__now_ns() - c->post_ns <= (uint64_t)c->timeout_ms * 1000000u)
			rdma__cpu_relax();
		c->state = RDMA__LOST;
	}
#endif
	return 0;
}

int
rdma_poll(struct rdma_conn *c)
{
	int ret;

	switch (c->state) {
	case RDMA__IDLE:
		return -EINVAL;
	case RDMA__BROKEN:
		return RDMA_E_CONN;
#ifdef RDMA_TESTING
	case RDMA__LOST:
		return -EINPROGRESS;
	case RDMA__DEFERRED:
		if (rdma__now_ns() - c->post_ns < (uint64_t)c->delay_us * 1000)
			return -EINPROGRESS;
		c->state = RDMA__INFLIGHT;
		ret = c->backend->post(c, c->batch);
		if (ret != 0)
			return conn_fail(c, ret);
		break;
	case RDMA__SPLIT:
		/* The first part done, one poll answers "in progress" before
		 * the rest is handed over: the caller's chance to let another
		 * client run in between. */
		if (c->split_polls == 0) {
			ret = c->backend->poll(c);
			if (ret == -EINPROGRESS)
				return ret;
			if (ret != 0)
				return conn_fail(c, ret);
			c->split_polls = 1;
			return -EINPROGRESS;
		}
		c->state = RDMA__INFLIGHT;
		ret = c->backend->post(c, &c->split[1]);
		if (ret != 0)
			return conn_fail(c, ret);
		break;
#endif
	case RDMA__INFLIGHT:
		break;
	}
	ret = c->backend->poll(c);
	if (ret == -EINPROGRESS)
		return ret;
	if (ret != 0)
		return conn_fail(c, ret);
	c->state = RDMA__IDLE;
	c->batch = NULL;
	rdma__stats.round_trips++;
	pm_cost_add(PM_COST_ROUND_TRIP, 1);
	return 0;
}

int
rdma_wait(struct rdma_conn *c)
{
	/* The limit runs from the post (plus any injected delay), so a wait
	 * started late does not extend it. */
	uint64_t limit = (uint64_t)c->timeout_ms * 1000000u;

#ifdef RDMA_TESTING
	if (c->state == RDMA__DEFERRED)
		limit += (uint64_t)c->delay_us * 1000;
#endif

	for (;;) {
		int ret = rdma_poll(c);

		if (ret != -EINPROGRESS)
			return ret;
		if (rdma__now_ns() - c->post_ns > limit)
			return conn_fail(c, -ETIMEDOUT);
		rdma__cpu_relax();
	}
}

int
rdma_execute(struct rdma_conn *c, struct rdma_batch *b)
{
	int ret = rdma_post(c, b);

	return ret != 0 ? ret : rdma_wait(c);
}
