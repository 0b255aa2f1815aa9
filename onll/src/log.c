/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * onll/src/log.c -- ONLL's persistent side: configuration and area layout,
 * checkpoints, the per-thread log rings, create, open with recovery (thesis
 * alg. 4.5) and close. The layout and the invariants are described at the
 * top of trace.c; the log helpers of the update path (reserve, fill,
 * checksum) are static inline in onll_internal.h.
 */
#include <errno.h>
#include <linux/membarrier.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <xxhash.h>

#include <onll/onll.h>
#include <pm/area.h>
#include <pm/error.h>
#include <pm/persist.h>
#include <pm/pool.h>

#include "onll_internal.h"

static const struct pm_area_type onll_area_type = {
	"ONLL", ONLL_MAGIC, ONLL_PMEM_VERSION, sizeof(struct onll_pmem_header)
};

/* ---- sizes and layout ---- */

/* onll_entry_size -- bytes of one log entry, a multiple of 64 */
static size_t
onll_entry_size(unsigned max_threads, unsigned max_op_size)
{
	return onll__round(sizeof(struct onll_entry_header) +
		(size_t)max_threads *
		(sizeof(struct onll_op_rec) + onll__round(max_op_size, 8)), 64);
}

/* onll_ckpt_slot_size -- bytes of one checkpoint slot: header line and state */
static size_t
onll_ckpt_slot_size(uint64_t capacity)
{
	return 64 + onll__round(capacity, 64);
}

/* onll_config_init -- documented defaults */
void
onll_config_init(struct onll_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->max_threads = 16;
	cfg->max_op_size = 64;
	cfg->log_entries = 64;
	cfg->checkpoint_every = 0; /* log_entries / 2 */
	cfg->checkpoint_capacity = 1 << 20;
}

/* onll_config_check -- validate @cfg (NULL: defaults) into @out */
static int
onll_config_check(const struct onll_config *cfg, struct onll_config *out)
{
	if (cfg == NULL)
		onll_config_init(out);
	else
		*out = *cfg;
	if (out->checkpoint_every == 0)
		out->checkpoint_every = out->log_entries / 2;
	if (out->max_threads < 1 || out->max_threads > ONLL_MAX_THREADS ||
	    out->max_op_size < 1 || out->max_op_size > ONLL_MAX_OP ||
	    out->log_entries < 4 || out->log_entries > (1u << 20) ||
	    out->checkpoint_every < 1 || out->checkpoint_every >= out->log_entries ||
	    out->checkpoint_capacity < 8 || out->checkpoint_capacity > (UINT64_C(1) << 40))
		return -EINVAL;
	return 0;
}

/* onll_area_size -- bytes of the persistent area @cfg needs; 0 if invalid */
size_t
onll_area_size(const struct onll_config *cfg)
{
	struct onll_config c;

	if (onll_config_check(cfg, &c) != 0)
		return 0;
	return 64 + 2 * onll_ckpt_slot_size(c.checkpoint_capacity) +
		(size_t)c.max_threads * c.log_entries *
		onll_entry_size(c.max_threads, c.max_op_size);
}

/* onll_type_id -- the type's identity in the header: XXH3 of its name */
static uint64_t
onll_type_id(const struct onll_type *type)
{
	return XXH3_64bits(type->name, strlen(type->name));
}

/* onll_type_ok -- whether @t names every callback ONLL calls */
static bool
onll_type_ok(const struct onll_type *t)
{
	return t != NULL && t->name != NULL && t->state_new != NULL && t->state_free != NULL &&
		t->apply != NULL && t->compute != NULL && t->snapshot_size != NULL &&
		t->snapshot_save != NULL && t->snapshot_load != NULL;
}

/* ---- checkpoints ---- */

/*
 * onll__ckpt_write -- save @state (execution index @index) into checkpoint
 * slot @s and flush it, without a fence: the caller's next fence makes it
 * durable, and until then a crash leaves it failing its checksum.
 */
int
onll__ckpt_write(struct onll *o, unsigned s, const void *state, uint64_t index)
{
	struct onll_ckpt_header *h = (void *)o->ckpt[s];
	size_t size = o->type->snapshot_size(o->type->ctx, state);

	if (size > o->checkpoint_capacity)
		return -ENOSPC;
	o->type->snapshot_save(o->type->ctx, state, o->ckpt[s] + 64);
	h->index = index;
	h->size = size;
	h->checksum = onll__ckpt_sum(h, o->ckpt[s] + 64);
	pm_flush(o->ckpt[s], 64 + size);
	return 0;
}

/*
 * onll__checkpoint_locked -- with ckpt_busy held: bring @t's view to the
 * newest available state, save it in the spare slot, fence, publish.
 */
int
onll__checkpoint_locked(struct onll_thread *t)
{
	struct onll *o = t->o;
	struct onll_node *latest = onll__latest_available(o);
	unsigned spare = 1 - o->ckpt_slot;
	int ret = 0;

	if (latest->idx > t->view)
		ret = onll__view_advance(t, latest);
	if (ret == 0)
		atomic_store_explicit(&t->slot->view, t->view, memory_order_release);
	if (ret == 0 && t->view > atomic_load_explicit(&o->ckpt_index, memory_order_relaxed)) {
		ret = onll__ckpt_write(o, spare, t->state, t->view);
		if (ret == 0) {
			pm_fence();
			o->ckpt_slot = spare;
			atomic_store_explicit(&o->ckpt_index, t->view, memory_order_release);
			onll__count(t->slot, ST_CKPTS, 1);
			onll__count(t->slot, ST_CKPT_FENCES, 1);
		}
	}
	return ret;
}

/* onll_checkpoint -- write a checkpoint now unless another thread is */
int
onll_checkpoint(struct onll_thread *t)
{
	int ret;

	if (t == NULL)
		return -EINVAL;
	ret = onll__op_enter(t);
	if (ret == 0 && !onll__ckpt_trylock(t->o))
		ret = -EBUSY;
	else if (ret == 0) {
		ret = onll__checkpoint_locked(t);
		onll__ckpt_unlock(t->o);
	}
	onll__op_exit(t);
	return ret;
}

/* ---- create, open (recovery, alg. 4.5), close ---- */

/* onll_free -- release the volatile object and its trace nodes */
static void
onll_free(struct onll *o)
{
	if (o == NULL)
		return;
	for (unsigned i = 0; o->slots != NULL && i < o->max_threads; i++) {
		struct onll_slot *slot = &o->slots[i];
		struct onll_node *n, *next;

		for (n = slot->oldest; n != NULL; n = next) {
			next = n->owned;
			free(n);
		}
		for (n = slot->free_nodes; n != NULL; n = next) {
			next = n->owned;
			free(n);
		}
		free(slot->log_index);
	}
	free(o->slots);
	free(o->sentinel);
	free(o);
}

/*
 * onll_start -- let @o run from execution index @index, the checkpoint in
 * slot @ckpt_slot: the trace holds one available sentinel at @index.
 */
static void
onll_start(struct onll *o, uint64_t index, unsigned ckpt_slot)
{
	o->recovered_index = index;
	o->ckpt_slot = ckpt_slot;
	atomic_store(&o->ckpt_index, index);
	o->sentinel->idx = index;
}

/*
 * onll_alloc -- the volatile object for header @hdr (whose body must be
 * set), started at index 0 from slot 0.
 */
static int
onll_alloc(struct onll **out, struct pm_pool *pool, struct onll_pmem_header *hdr,
	const struct onll_type *type)
{
	/* aligned_alloc: the tail and checkpoint words have lines of their own. */
	struct onll *o = aligned_alloc(64, onll__round(sizeof(*o), 64));
	unsigned char *base = (unsigned char *)hdr;
	unsigned char *logs;

	if (o == NULL)
		return -ENOMEM;
	memset(o, 0, sizeof(*o));
	o->pool = pool;
	o->type = type;
	o->hdr = hdr;
	o->max_threads = hdr->max_threads;
	o->max_op_size = hdr->max_op_size;
	o->log_entries = hdr->log_entries;
	o->checkpoint_every = hdr->checkpoint_every;
	o->entry_size = onll_entry_size(o->max_threads, o->max_op_size);
	o->checkpoint_capacity = hdr->checkpoint_capacity;
	o->node_size = sizeof(struct onll_node) + o->max_op_size;
	o->ckpt[0] = base + 64;
	o->ckpt[1] = o->ckpt[0] + onll_ckpt_slot_size(o->checkpoint_capacity);
	logs = o->ckpt[1] + onll_ckpt_slot_size(o->checkpoint_capacity);
	atomic_init(&o->ckpt_index, 0);
	atomic_init(&o->floor, 0);
	o->reclaim_lag = (uint64_t)o->max_threads * o->log_entries;
#ifdef ONLL_NO_MEMBARRIER
	/* Test builds only (//onll:onll_seqcst): the seq_cst handshake, so its
	 * tests run that path on kernels that have membarrier(2). */
	o->membarrier = false;
#else
	o->membarrier = syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
#endif
	atomic_init(&o->ckpt_busy, 0);
	o->slots = aligned_alloc(64, sizeof(*o->slots) * o->max_threads);
	o->sentinel = calloc(1, o->node_size);
	if (o->slots == NULL || o->sentinel == NULL) {
		free(o->slots);
		o->slots = NULL;
		onll_free(o);
		return -ENOMEM;
	}
	memset(o->slots, 0, sizeof(*o->slots) * o->max_threads);
	for (unsigned i = 0; i < o->max_threads; i++) {
		struct onll_slot *slot = &o->slots[i];

		atomic_init(&slot->view, ONLL_VIEW_NONE);
		slot->log = logs + (size_t)i * o->log_entries * o->entry_size;
		slot->log_index = calloc(o->log_entries, sizeof(uint64_t));
		if (slot->log_index == NULL) {
			onll_free(o);
			return -ENOMEM;
		}
	}
	atomic_init(&o->sentinel->available, true);
	atomic_init(&o->tail, o->sentinel);
	*out = o;
	return 0;
}

/* onll_create -- format the area at @area_off and open it */
int
onll_create(struct onll **out, struct pm_pool *pool, uint64_t area_off,
	const struct onll_config *cfg, const struct onll_type *type)
{
	struct onll_config c;
	struct onll_pmem_header *hdr;
	struct onll_ckpt_header *ck;
	struct onll *o = NULL;
	void *area, *state = NULL;
	int ret;

	pm_error_clear();
	if (out == NULL || pool == NULL || !onll_type_ok(type) || onll_config_check(cfg, &c) != 0)
		return pm_error_set(-EINVAL, "onll_create: %s", pm_strerror(-EINVAL));
	ret = pm_pool_area(pool, area_off, onll_area_size(&c), 64, "onll_create", &area);
	if (ret != 0)
		return ret;
	hdr = area;

	/* Invalidate the header first, so a crash while formatting a reused
	 * area reads as "no object", never as the old object half-reset; the
	 * body describes the layout the object is built on (sealed last). */
	pm_area_invalidate(&hdr->area);
	hdr->max_threads = c.max_threads;
	hdr->max_op_size = c.max_op_size;
	hdr->log_entries = c.log_entries;
	hdr->checkpoint_every = c.checkpoint_every;
	hdr->checkpoint_capacity = c.checkpoint_capacity;
	hdr->type_id = onll_type_id(type);
	ret = onll_alloc(&o, pool, hdr, type);
	if (ret != 0)
		return pm_error_set(ret, "onll_create: %s", pm_strerror(ret));

	ret = type->state_new(type->ctx, &state);
	if (ret == 0) {
		ret = onll__ckpt_write(o, 0, state, 0);
		type->state_free(type->ctx, state);
	}
	if (ret != 0) {
		onll_free(o);
		return pm_error_set(ret, "onll_create: %s", pm_strerror(ret));
	}
	/* Slot 1 and every log entry start invalid (a stale entry from an
	 * earlier use of the area would be replayed otherwise). */
	ck = (void *)o->ckpt[1];
	ck->index = 0;
	ck->size = UINT64_MAX;
	ck->checksum = 0;
	pm_flush(ck, sizeof(*ck));
	for (unsigned i = 0; i < o->max_threads; i++) {
		for (uint64_t pos = 0; pos < o->log_entries; pos++) {
			struct onll_entry_header *e = (void *)onll__log_entry(o, &o->slots[i], pos);

			memset(e, 0, sizeof(*e));
			pm_flush(e, sizeof(*e));
		}
	}
	pm_fence();

	pm_area_seal(&hdr->area, &onll_area_type, onll_area_size(&c));
	*out = o;
	return 0;
}

/*
 * onll_entry_valid -- whether @e is a whole log entry of @o whose op
 * records all lie inside it.
 */
static bool
onll_entry_valid(const struct onll *o, const unsigned char *e)
{
	const struct onll_entry_header *h = (const void *)e;
	size_t off = 0;

	if (h->index == 0 || h->nops == 0 || h->nops > o->max_threads ||
	    h->bytes > o->entry_size - sizeof(*h) || h->checksum != onll__entry_sum(h))
		return false;
	for (uint32_t k = 0; k < h->nops; k++) {
		const struct onll_op_rec *rec = (const void *)(e + sizeof(*h) + off);

		if (off + sizeof(*rec) > h->bytes || rec->len == 0 || rec->len > o->max_op_size ||
		    off + sizeof(*rec) + onll__round(rec->len, 8) > h->bytes)
			return false;
		off += sizeof(*rec) + onll__round(rec->len, 8);
	}
	return off == h->bytes;
}

/*
 * onll_recover -- alg. 4.5 from the newest valid checkpoint: gather from
 * every valid log entry the ops after it by execution index, and replay
 * them in order until the first index no log holds. A later index after
 * such a gap cannot occur (an entry holds every op back to an available
 * one, and an available op's own entry was durable), so it means damage.
 */
static int
onll_recover(struct onll *o, unsigned *ckpt_slot, void **state_out, uint64_t *index_out)
{
	const struct onll_type *type = o->type;
	const struct onll_op_rec **ops = NULL;
	unsigned char *logs = o->ckpt[1] + onll_ckpt_slot_size(o->checkpoint_capacity);
	size_t nentries = (size_t)o->max_threads * o->log_entries;
	const struct onll_ckpt_header *ck;
	uint64_t c, last = 0, n;
	void *state = NULL;
	int valid0 = onll__ckpt_valid(o, 0), valid1 = onll__ckpt_valid(o, 1);
	int ret;

	if (!valid0 && !valid1)
		return PM_E_CORRUPT;
	*ckpt_slot = (!valid0 || (valid1 &&
		((const struct onll_ckpt_header *)o->ckpt[1])->index >
		((const struct onll_ckpt_header *)o->ckpt[0])->index)) ? 1 : 0;
	ck = (const void *)o->ckpt[*ckpt_slot];
	c = ck->index;
	ret = type->snapshot_load(type->ctx, o->ckpt[*ckpt_slot] + 64, (size_t)ck->size, &state);
	if (ret != 0)
		return ret == -EINVAL ? PM_E_CORRUPT : ret;

	for (size_t i = 0; i < nentries; i++) {
		const struct onll_entry_header *h = (const void *)(logs + i * o->entry_size);

		if (onll_entry_valid(o, (const void *)h) && h->index > last)
			last = h->index;
	}
	if (last > c) {
		/* At most every entry's ops are after c: the array is bounded. */
		if (last - c > (uint64_t)nentries * o->max_threads) {
			ret = PM_E_CORRUPT;
			goto out;
		}
		ops = calloc((size_t)(last - c), sizeof(*ops));
		if (ops == NULL) {
			ret = -ENOMEM;
			goto out;
		}
	}
	for (size_t i = 0; i < nentries && last > c; i++) {
		const unsigned char *e = logs + i * o->entry_size;
		const struct onll_entry_header *h = (const void *)e;
		size_t off = sizeof(*h);

		if (!onll_entry_valid(o, e))
			continue;
		for (uint32_t k = 0; k < h->nops && h->index - k > c; k++) {
			const struct onll_op_rec *rec = (const void *)(e + off);

			ops[h->index - k - c - 1] = rec;
			off += sizeof(*rec) + onll__round(rec->len, 8);
		}
	}
	for (n = c; n < last && ops[n - c] != NULL; n++) {
		ret = type->apply(type->ctx, state, ops[n - c]->bytes, ops[n - c]->len, NULL);
		if (ret != 0)
			goto out;
	}
	if (n < last)
		ret = PM_E_CORRUPT;
out:
	free(ops);
	if (ret != 0) {
		type->state_free(type->ctx, state);
		return ret;
	}
	*state_out = state;
	*index_out = n;
	return 0;
}

/* onll_open -- check the header, recover (alg. 4.5) and open */
int
onll_open(struct onll **out, struct pm_pool *pool, uint64_t area_off,
	const struct onll_type *type)
{
	struct onll_pmem_header *hdr;
	struct onll_config c;
	struct onll *o = NULL;
	unsigned ckpt_slot;
	uint64_t index;
	void *area, *state;
	int ret;

	pm_error_clear();
	if (out == NULL || pool == NULL || !onll_type_ok(type))
		return pm_error_set(-EINVAL, "onll_open: %s", pm_strerror(-EINVAL));
	ret = pm_pool_area(pool, area_off, sizeof(*hdr), 64, "onll_open", &area);
	if (ret != 0)
		return ret;
	hdr = area;
	ret = pm_area_check(&hdr->area, &onll_area_type, "onll_open");
	if (ret != 0)
		return ret;
	if (hdr->type_id != onll_type_id(type))
		return pm_error_set(PM_E_LAYOUT, "onll_open: the area holds an object of "
			"another type than %s", type->name);
	onll_config_init(&c);
	c.max_threads = hdr->max_threads;
	c.max_op_size = hdr->max_op_size;
	c.log_entries = hdr->log_entries;
	c.checkpoint_every = hdr->checkpoint_every;
	c.checkpoint_capacity = hdr->checkpoint_capacity;
	if (onll_config_check(&c, &c) != 0 || hdr->area.area_size != onll_area_size(&c) ||
	    pm_pool_ptr(pool, area_off, hdr->area.area_size, &area) != 0)
		return pm_error_set(PM_E_CORRUPT, "onll_open: %s", pm_strerror(PM_E_CORRUPT));

	ret = onll_alloc(&o, pool, hdr, type);
	if (ret != 0)
		return pm_error_set(ret, "onll_open: %s", pm_strerror(ret));
	ret = onll_recover(o, &ckpt_slot, &state, &index);
	if (ret == 0) {
		const struct onll_ckpt_header *ck = (const void *)o->ckpt[ckpt_slot];

		/* Make the recovered state the checkpoint, so every log entry
		 * is covered and the logs start empty. Written to the other
		 * slot: a crash now leaves the old checkpoint and logs intact
		 * and recovery finds the same state again. */
		if (index > ck->index) {
			ckpt_slot = 1 - ckpt_slot;
			ret = onll__ckpt_write(o, ckpt_slot, state, index);
			if (ret == 0)
				pm_fence();
		}
		type->state_free(type->ctx, state);
	}
	if (ret != 0) {
		onll_free(o);
		return pm_error_set(ret, "onll_open: %s", pm_strerror(ret));
	}
	onll_start(o, index, ckpt_slot);
	*out = o;
	return 0;
}

/* onll_close -- release @o unless a thread is still registered */
int
onll_close(struct onll **op)
{
	struct onll *o;

	pm_error_clear();
	if (op == NULL || *op == NULL)
		return 0;
	o = *op;
	for (unsigned i = 0; i < o->max_threads; i++)
		if (atomic_load(&o->slots[i].in_use))
			return pm_error_set(-EBUSY, "onll_close: %s", pm_strerror(-EBUSY));
	onll_free(o);
	*op = NULL;
	return 0;
}
