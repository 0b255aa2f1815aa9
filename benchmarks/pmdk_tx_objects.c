/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * benchmarks/pmdk_tx_objects.c -- the PMDK-transaction baseline of
 * benchmarks/onll_bench (see pmdk_tx_objects.h), and the wrappers that
 * count PMDK's fences.
 *
 * Every update is
 *	pthread_rwlock_wrlock(); TX_BEGIN(pop) { TX_ADD ranges; write }
 *	TX_ONABORT { ret = -errno } TX_END; pthread_rwlock_unlock();
 * (txobj_tx()) with pmemobj_tx_add_range_direct() as TX_ADD (the data is
 * addressed by pointer inside the area, not by PMEMoid).
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <libpmem.h>
#include <libpmemobj.h>

#include <pm/error.h>
#include <pm/pool.h>

#include "benchmarks/pmdk_tx_objects.h"

/* ------------------------------------------------------------------ */
/* Fence counting: interposed libpmem entry points                     */
/* ------------------------------------------------------------------ */

/*
 * Method. This program defines pmem_drain() and pmem_msync(). The static
 * linker exports them from the executable because libpmemobj.so and
 * libpmem.so reference them, so the dynamic linker binds every reference
 * by name to these definitions first: libpmemobj stores &pmem_drain in its
 * per-pool ops table (read through its GOT), and libpmem's pmem_persist(),
 * pmem_memcpy() etc. call pmem_drain through libpmem's own PLT (checked
 * with objdump on Debian 12's libpmem 1.12.1: JUMP_SLOT relocations for
 * pmem_drain and pmem_msync). Each wrapper counts one fence on the calling
 * thread and calls the real function (dlsym(RTLD_NEXT)). Counting only the
 * drain points, not pmem_persist()/pmem_memcpy(), counts every sfence once.
 * txobj_fence_counting_works() verifies at run time that PMDK's calls
 * arrive here.
 */
static __thread uint64_t txobj_tls_fences;

typedef void (*txobj_drain_fn)(void);
typedef int (*txobj_msync_fn)(const void *, size_t);

static txobj_drain_fn txobj_real_drain;
static txobj_msync_fn txobj_real_msync;

/* txobj_sfence_fallback -- what pmem_drain() does on x86 without eADR */
static void
txobj_sfence_fallback(void)
{
	__builtin_ia32_sfence();
}

/* pmem_drain -- counting wrapper of libpmem's pmem_drain() */
void
pmem_drain(void)
{
	txobj_drain_fn f = __atomic_load_n(&txobj_real_drain, __ATOMIC_ACQUIRE);

	if (f == NULL) {
		void *sym = dlsym(RTLD_NEXT, "pmem_drain");
		f = sym != NULL ? (txobj_drain_fn)sym : txobj_sfence_fallback;
		__atomic_store_n(&txobj_real_drain, f, __ATOMIC_RELEASE);
	}
	txobj_tls_fences++;
	f();
}

/* txobj_msync_fallback -- msync(2) of the pages holding [addr, addr+len) */
static int
txobj_msync_fallback(const void *addr, size_t len)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = (uintptr_t)addr & ~(page - 1);

	return msync((void *)a, (uintptr_t)addr + len - a, MS_SYNC);
}

/* pmem_msync -- counting wrapper of libpmem's pmem_msync() */
int
pmem_msync(const void *addr, size_t len)
{
	txobj_msync_fn f = __atomic_load_n(&txobj_real_msync, __ATOMIC_ACQUIRE);

	if (f == NULL) {
		void *sym = dlsym(RTLD_NEXT, "pmem_msync");
		f = sym != NULL ? (txobj_msync_fn)sym : txobj_msync_fallback;
		__atomic_store_n(&txobj_real_msync, f, __ATOMIC_RELEASE);
	}
	txobj_tls_fences++;
	return f(addr, len);
}

uint64_t
txobj_fences_thread(void)
{
	return txobj_tls_fences;
}

int
txobj_fence_counting_works(struct pm_pool *pool)
{
	PMEMobjpool *pop = (PMEMobjpool *)pm_pool_pmemobj(pool);
	uint64_t before = txobj_tls_fences;

	/* Flushing changes no data; the drain (or msync) must come here. */
	pmemobj_persist(pop, pm_pool_root(pool), 8);
	return txobj_tls_fences > before;
}

/* ------------------------------------------------------------------ */
/* Persistent layout                                                   */
/* ------------------------------------------------------------------ */

#define TXOBJ_MAGIC 0x314a424f58545844ull /* "DXTXOBJ1" */
#define TXOBJ_VERSION 1u
#define TXOBJ_MAX_CAPACITY ((uint64_t)1 << 32)

struct txobj_hdr {
	uint64_t magic;    /* written last at creation */
	uint32_t kind;     /* enum txobj_kind */
	uint32_t version;
	uint64_t capacity; /* as given to txobj_create() */
	uint64_t slots;    /* queue: ring slots; map: table slots (power of 2) */
	uint64_t pad[4];
};

/* The words updates change, on their own cache line after the header. */
struct txobj_meta {
	union {
		int64_t counter;
		struct {
			uint64_t head; /* values dequeued so far */
			uint64_t tail; /* values enqueued so far */
		} q;
		uint64_t count; /* map: keys present */
	} u;
	uint64_t pad[6];
};

struct txobj_slot {
	uint64_t used; /* 1 if the slot holds a key */
	uint64_t key;
	uint64_t value;
	uint64_t pad; /* two slots per cache line */
};

_Static_assert(sizeof(struct txobj_hdr) == 64, "header is one cache line");
_Static_assert(sizeof(struct txobj_meta) == 64, "meta is one cache line");

struct txobj {
	PMEMobjpool *pop;
	struct txobj_hdr *hdr;
	struct txobj_meta *meta;
	void *data; /* queue: uint64_t[slots]; map: struct txobj_slot[slots] */
	uint64_t capacity;
	uint64_t slots;
	enum txobj_kind kind;
	pthread_rwlock_t lock;
};

/* txobj_slots -- ring or table slots for @kind and @capacity; 0 if invalid */
static uint64_t
txobj_slots(enum txobj_kind kind, uint64_t capacity)
{
	uint64_t n = 8;

	switch (kind) {
	case TXOBJ_COUNTER:
		return 0;
	case TXOBJ_QUEUE:
		return capacity == 0 || capacity > TXOBJ_MAX_CAPACITY ? 0 : capacity;
	case TXOBJ_MAP:
		if (capacity == 0 || capacity > TXOBJ_MAX_CAPACITY)
			return 0;
		while (n < 2 * capacity)
			n <<= 1;
		return n;
	}
	return 0;
}

/* txobj_data_size -- bytes after the header and meta lines */
static size_t
txobj_data_size(enum txobj_kind kind, uint64_t slots)
{
	switch (kind) {
	case TXOBJ_COUNTER:
		return 0;
	case TXOBJ_QUEUE:
		return (size_t)slots * sizeof(uint64_t);
	case TXOBJ_MAP:
		return (size_t)slots * sizeof(struct txobj_slot);
	}
	return 0;
}

size_t
txobj_area_size(enum txobj_kind kind, uint64_t capacity)
{
	uint64_t slots = txobj_slots(kind, capacity);

	if (kind != TXOBJ_COUNTER && slots == 0)
		return 0; /* bad kind or capacity */
	return sizeof(struct txobj_hdr) + sizeof(struct txobj_meta) +
		((txobj_data_size(kind, slots) + 63) & ~(size_t)63);
}

/* txobj_bind -- a DRAM handle on the area at @base */
static int
txobj_bind(struct txobj **out, struct pm_pool *pool, char *base, enum txobj_kind kind,
	uint64_t capacity, uint64_t slots)
{
	struct txobj *o = calloc(1, sizeof(*o));

	if (o == NULL)
		return -ENOMEM;
	if (pthread_rwlock_init(&o->lock, NULL) != 0) {
		free(o);
		return -ENOMEM;
	}
	o->pop = (PMEMobjpool *)pm_pool_pmemobj(pool);
	o->hdr = (struct txobj_hdr *)base;
	o->meta = (struct txobj_meta *)(base + sizeof(struct txobj_hdr));
	o->data = base + sizeof(struct txobj_hdr) + sizeof(struct txobj_meta);
	o->capacity = capacity;
	o->slots = slots;
	o->kind = kind;
	*out = o;
	return 0;
}

/* txobj_area -- checked address of the area at @area_off */
static int
txobj_area(struct pm_pool *pool, uint64_t area_off, size_t len, char **base)
{
	void *p;
	int ret;

	if (area_off % 64 != 0)
		return -EINVAL;
	ret = pm_pool_ptr(pool, area_off, len, &p);
	if (ret != 0)
		return ret;
	*base = p;
	return 0;
}

int
txobj_create(struct txobj **out, struct pm_pool *pool, uint64_t area_off,
	enum txobj_kind kind, uint64_t capacity)
{
	size_t len = txobj_area_size(kind, capacity);
	uint64_t slots = txobj_slots(kind, capacity);
	struct txobj_hdr *hdr;
	PMEMobjpool *pop;
	char *base;
	int ret;

	if (out == NULL || pool == NULL || len == 0)
		return -EINVAL;
	ret = txobj_area(pool, area_off, len, &base);
	if (ret != 0)
		return ret;
	pop = (PMEMobjpool *)pm_pool_pmemobj(pool);
	hdr = (struct txobj_hdr *)base;
	/* Zero the area (the magic first, so a crash leaves no header),
	 * describe it, then make the magic durable last. */
	hdr->magic = 0;
	pmemobj_persist(pop, &hdr->magic, sizeof(hdr->magic));
	pmemobj_memset_persist(pop, base, 0, len);
	hdr->kind = (uint32_t)kind;
	hdr->version = TXOBJ_VERSION;
	hdr->capacity = kind == TXOBJ_COUNTER ? 0 : capacity;
	hdr->slots = slots;
	pmemobj_persist(pop, hdr, sizeof(*hdr));
	hdr->magic = TXOBJ_MAGIC;
	pmemobj_persist(pop, &hdr->magic, sizeof(hdr->magic));
	return txobj_bind(out, pool, base, kind, hdr->capacity, slots);
}

int
txobj_open(struct txobj **out, struct pm_pool *pool, uint64_t area_off, enum txobj_kind kind)
{
	struct txobj_hdr *hdr;
	char *base;
	size_t len;
	int ret;

	if (out == NULL || pool == NULL)
		return -EINVAL;
	ret = txobj_area(pool, area_off, sizeof(*hdr), &base);
	if (ret != 0)
		return ret;
	hdr = (struct txobj_hdr *)base;
	if (hdr->magic != TXOBJ_MAGIC || hdr->kind != (uint32_t)kind)
		return PM_E_LAYOUT;
	if (hdr->version != TXOBJ_VERSION)
		return PM_E_VERSION;
	len = txobj_area_size(kind, kind == TXOBJ_COUNTER ? 1 : hdr->capacity);
	if (len == 0 || hdr->slots != txobj_slots(kind, hdr->capacity))
		return PM_E_CORRUPT;
	ret = txobj_area(pool, area_off, len, &base);
	if (ret != 0)
		return ret;
	return txobj_bind(out, pool, base, kind, hdr->capacity, hdr->slots);
}

int
txobj_close(struct txobj **o)
{
	if (o == NULL || *o == NULL)
		return 0;
	pthread_rwlock_destroy(&(*o)->lock);
	free(*o);
	*o = NULL;
	return 0;
}

uint64_t
txobj_capacity(const struct txobj *o)
{
	return o->capacity;
}

/*
 * txobj_tx -- the write of one update, called with the write lock held
 * (the caller took it and checked the update can be made): @write(@o,
 * @arg) inside one libpmemobj transaction, adding every range it writes;
 * then releases the lock. Returns @ok, or -errno if the transaction
 * aborted. @write returns its results through @arg, which stays in memory
 * across TX_END's longjmp; only @ret needs to be volatile.
 */
static int
txobj_tx(struct txobj *o, void (*write)(struct txobj *o, void *arg), void *arg, int ok)
{
	volatile int ret = ok;

	TX_BEGIN(o->pop) {
		write(o, arg);
	} TX_ONABORT {
		ret = -errno;
	} TX_END
	pthread_rwlock_unlock(&o->lock);
	return ret;
}

/* ------------------------------------------------------------------ */
/* Counter                                                             */
/* ------------------------------------------------------------------ */

/* txobj_counter_write -- *@arg: the delta in, the value after it out */
static void
txobj_counter_write(struct txobj *o, void *arg)
{
	int64_t *v = &o->meta->u.counter;
	int64_t *delta = arg;

	pmemobj_tx_add_range_direct(v, sizeof(*v));
	*v = (int64_t)((uint64_t)*v + (uint64_t)*delta);
	*delta = *v;
}

int
txobj_counter_add(struct txobj *o, int64_t delta, int64_t *value)
{
	int64_t arg = delta;
	int ret;

	pthread_rwlock_wrlock(&o->lock);
	ret = txobj_tx(o, txobj_counter_write, &arg, 0);
	if (ret == 0 && value != NULL)
		*value = arg;
	return ret;
}

int
txobj_counter_get(struct txobj *o, int64_t *value)
{
	pthread_rwlock_rdlock(&o->lock);
	*value = o->meta->u.counter;
	pthread_rwlock_unlock(&o->lock);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Queue: ring buffer                                                  */
/* ------------------------------------------------------------------ */

/* txobj_enqueue_write -- *@arg: the value to append */
static void
txobj_enqueue_write(struct txobj *o, void *arg)
{
	uint64_t *tail = &o->meta->u.q.tail;
	uint64_t *slot = &((uint64_t *)o->data)[*tail % o->slots];

	pmemobj_tx_add_range_direct(slot, sizeof(*slot));
	pmemobj_tx_add_range_direct(tail, sizeof(*tail));
	*slot = *(const uint64_t *)arg;
	*tail += 1;
}

int
txobj_queue_enqueue(struct txobj *o, uint64_t value)
{
	pthread_rwlock_wrlock(&o->lock);
	if (o->meta->u.q.tail - o->meta->u.q.head >= o->slots) {
		pthread_rwlock_unlock(&o->lock);
		return -ENOSPC;
	}
	return txobj_tx(o, txobj_enqueue_write, &value, 0);
}

/* txobj_dequeue_write -- *@arg: the value removed from the front, out */
static void
txobj_dequeue_write(struct txobj *o, void *arg)
{
	uint64_t *head = &o->meta->u.q.head;

	pmemobj_tx_add_range_direct(head, sizeof(*head));
	*(uint64_t *)arg = ((const uint64_t *)o->data)[*head % o->slots];
	*head += 1;
}

int
txobj_queue_dequeue(struct txobj *o, uint64_t *value)
{
	uint64_t front = 0;
	int ret;

	pthread_rwlock_wrlock(&o->lock);
	if (o->meta->u.q.head == o->meta->u.q.tail) {
		pthread_rwlock_unlock(&o->lock);
		return 0;
	}
	ret = txobj_tx(o, txobj_dequeue_write, &front, 1);
	if (ret == 1 && value != NULL)
		*value = front;
	return ret;
}

int
txobj_queue_front(struct txobj *o, uint64_t *value)
{
	const uint64_t *ring = o->data;
	int ret = 0;

	pthread_rwlock_rdlock(&o->lock);
	if (o->meta->u.q.head != o->meta->u.q.tail) {
		if (value != NULL)
			*value = ring[o->meta->u.q.head % o->slots];
		ret = 1;
	}
	pthread_rwlock_unlock(&o->lock);
	return ret;
}

int
txobj_queue_size(struct txobj *o, uint64_t *size)
{
	pthread_rwlock_rdlock(&o->lock);
	*size = o->meta->u.q.tail - o->meta->u.q.head;
	pthread_rwlock_unlock(&o->lock);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Map: linear probing, backward-shift deletion                        */
/* ------------------------------------------------------------------ */

/* txobj_hash -- the slot a key wants (murmur3's 64-bit finalizer) */
static uint64_t
txobj_hash(uint64_t k, uint64_t mask)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ull;
	k ^= k >> 33;
	return k & mask;
}

/* txobj_find -- slot of @key, or of the empty slot ending its probe */
static uint64_t
txobj_find(const struct txobj *o, uint64_t key, int *found)
{
	const struct txobj_slot *t = o->data;
	const uint64_t mask = o->slots - 1;
	uint64_t i = txobj_hash(key, mask);

	/* Load factor <= 1/2: an empty slot always ends the probe. */
	while (t[i].used) {
		if (t[i].key == key) {
			*found = 1;
			return i;
		}
		i = (i + 1) & mask;
	}
	*found = 0;
	return i;
}

/* What txobj_map_put() hands its write. */
struct txobj_put_arg {
	uint64_t slot; /* the key's slot, or the empty one ending its probe */
	uint64_t key;
	uint64_t value;
	int found;     /* whether the key is in the map */
};

/* txobj_put_write -- sets the value of the key (inserted if new) */
static void
txobj_put_write(struct txobj *o, void *arg)
{
	const struct txobj_put_arg *a = arg;
	struct txobj_slot *t = o->data;
	uint64_t *count = &o->meta->u.count;
	uint64_t i = a->slot;

	pmemobj_tx_add_range_direct(&t[i], sizeof(t[i]));
	if (!a->found) {
		pmemobj_tx_add_range_direct(count, sizeof(*count));
		t[i].key = a->key;
		t[i].used = 1;
		*count += 1;
	}
	t[i].value = a->value;
}

int
txobj_map_put(struct txobj *o, uint64_t key, uint64_t value)
{
	struct txobj_put_arg a = { 0, key, value, 0 };

	pthread_rwlock_wrlock(&o->lock);
	a.slot = txobj_find(o, key, &a.found);
	if (!a.found && o->meta->u.count >= o->capacity) {
		pthread_rwlock_unlock(&o->lock);
		return -ENOSPC;
	}
	return txobj_tx(o, txobj_put_write, &a, a.found);
}

/* txobj_remove_write -- empties slot *@arg, backward-shifting its cluster */
static void
txobj_remove_write(struct txobj *o, void *arg)
{
	struct txobj_slot *t = o->data;
	uint64_t *count = &o->meta->u.count;
	const uint64_t mask = o->slots - 1;
	uint64_t i = *(const uint64_t *)arg, j = i;

	pmemobj_tx_add_range_direct(count, sizeof(*count));
	pmemobj_tx_add_range_direct(&t[i], sizeof(t[i]));
	/* Backward shift: move later members of the cluster whose home
	 * is not cyclically in (i, j] into the hole. */
	for (;;) {
		uint64_t h;

		j = (j + 1) & mask;
		if (!t[j].used)
			break;
		h = txobj_hash(t[j].key, mask);
		if (i <= j ? (i < h && h <= j) : (i < h || h <= j))
			continue;
		pmemobj_tx_add_range_direct(&t[j], sizeof(t[j]));
		t[i] = t[j];
		i = j;
	}
	t[i].used = 0;
	t[i].key = 0;
	t[i].value = 0;
	*count -= 1;
}

int
txobj_map_remove(struct txobj *o, uint64_t key)
{
	uint64_t hole;
	int found;

	pthread_rwlock_wrlock(&o->lock);
	hole = txobj_find(o, key, &found);
	if (!found) {
		pthread_rwlock_unlock(&o->lock);
		return 0;
	}
	return txobj_tx(o, txobj_remove_write, &hole, 1);
}

int
txobj_map_get(struct txobj *o, uint64_t key, uint64_t *value)
{
	const struct txobj_slot *t = o->data;
	uint64_t i;
	int found;

	pthread_rwlock_rdlock(&o->lock);
	i = txobj_find(o, key, &found);
	if (found && value != NULL)
		*value = t[i].value;
	pthread_rwlock_unlock(&o->lock);
	return found;
}

int
txobj_map_size(struct txobj *o, uint64_t *size)
{
	pthread_rwlock_rdlock(&o->lock);
	*size = o->meta->u.count;
	pthread_rwlock_unlock(&o->lock);
	return 0;
}
