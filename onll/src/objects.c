/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * onll/src/objects.c -- the counter, FIFO queue and map of onll/objects.h:
 * sequential objects (struct onll_type) and the typed wrappers that encode
 * their ops for onll_update()/onll_read().
 *
 * Ops. An op is one opcode byte followed by 0, 1 or 2 native-endian
 * 64-bit arguments, packed (no padding), read and written with memcpy so no
 * alignment is assumed:
 *
 *   object   opcode             bytes  arguments     kind
 *   counter  0x01 ADD            9     delta         update
 *            0x02 GET            1                   read
 *   queue    0x11 ENQUEUE        9     value         update
 *            0x12 DEQUEUE        1                   update
 *            0x13 FRONT          1                   read
 *            0x14 SIZE           1                   read
 *   map      0x21 PUT           17     key, value    update
 *            0x22 REMOVE         9     key           update
 *            0x23 GET            9     key           read
 *            0x24 SIZE           1                   read
 *
 * Opcodes differ between objects, so an op meant for one object is
 * malformed for the others. Any other opcode, or a length other than the
 * one in the table, is malformed: apply() and compute() leave the state
 * alone and report -EINVAL in the result (ONLL replays logged bytes, so the
 * callbacks must be total over arbitrary input). apply() also answers read
 * ops, without changing the state (a read submitted as an update is still
 * a read); compute() rejects update ops with -EINVAL rather than answer
 * what they would have done, since onll_read() with an update op is a
 * caller's mistake that should not pass silently.
 *
 * Results. Every callback writes one struct obj_result (memcpy'd, so the
 * caller's buffer needs no alignment): err is 0, -EINVAL (malformed op) or
 * -ENOMEM (the state could not grow; the state is unchanged); found is the
 * 1/0 answer of dequeue, front, put, remove and get; value is the counter's
 * value (two's complement), the dequeued or front value, the value found
 * by get or replaced by put, or a size.
 *
 * Snapshots are native-endian 64-bit words (the pool is not portable
 * between byte orders anyway):
 *   counter  value                                   8 bytes
 *   queue    count, values front to back             8 + 8 * count
 *   map      count, (key, value) by increasing key   8 + 16 * count
 * Sorting the map's pairs makes equal maps give equal bytes whatever their
 * insertion history (which the hash table's layout depends on).
 * snapshot_load() rejects with -EINVAL a length that does not match the
 * count, and map keys that are not strictly increasing (so duplicates too).
 *
 * Code. What sets an object apart is its struct obj_class, the ctx of its
 * onll_type: how to make and free a state, apply an update op and answer a
 * read op. The callbacks state_new, state_free, apply and compute are the
 * same for the three objects (obj_state_new() ...): they decode the op once
 * and call the class. The snapshot callbacks are each object's own. (The
 * classes are const; onll_type's ctx is not, but is only read.)
 *
 * Determinism. The results and snapshots depend only on the op sequence.
 * The memory layout does not have to: a state may fail to grow on one
 * thread (-ENOMEM, state unchanged, ONLL rebuilds that view) and not on
 * another, and the shrinking of a queue or map after removals is skipped
 * when the smaller allocation fails, which no result or snapshot can see.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <onll/objects.h>
#include <onll/onll.h>

enum obj_opcode {
	OBJ_COUNTER_ADD = 0x01,
	OBJ_COUNTER_GET = 0x02,
	OBJ_QUEUE_ENQUEUE = 0x11,
	OBJ_QUEUE_DEQUEUE = 0x12,
	OBJ_QUEUE_FRONT = 0x13,
	OBJ_QUEUE_SIZE = 0x14,
	OBJ_MAP_PUT = 0x21,
	OBJ_MAP_REMOVE = 0x22,
	OBJ_MAP_GET = 0x23,
	OBJ_MAP_SIZE = 0x24,
};

/* Longest op: opcode and two arguments. */
#define OBJ_OP_MAX (1 + 2 * sizeof(uint64_t))
_Static_assert(OBJ_OP_MAX == ONLL_OBJECTS_MAX_OP, "objects.h states the longest op");

/* A decoded op; unused arguments are 0. */
struct obj_op {
	uint8_t code;
	uint64_t arg[2];
};

/* What every callback reports (see the essay). tests/objects_test.cc keeps
 * a copy of this layout to drive the callbacks directly. */
struct obj_result {
	int32_t err;
	uint32_t found;
	uint64_t value;
};

_Static_assert(sizeof(struct obj_result) == 16, "objects_test.cc mirrors this layout");

/* ---- op encoding ---- */

/* The op table of the essay: every opcode's arguments and kind. Any other
 * byte is no opcode (known is false). */
static const struct obj_op_spec {
	bool known;
	bool read;
	uint8_t nargs;
} obj_op_specs[UINT8_MAX + 1] = {
	[OBJ_COUNTER_ADD] = { .known = true, .read = false, .nargs = 1 },
	[OBJ_COUNTER_GET] = { .known = true, .read = true, .nargs = 0 },
	[OBJ_QUEUE_ENQUEUE] = { .known = true, .read = false, .nargs = 1 },
	[OBJ_QUEUE_DEQUEUE] = { .known = true, .read = false, .nargs = 0 },
	[OBJ_QUEUE_FRONT] = { .known = true, .read = true, .nargs = 0 },
	[OBJ_QUEUE_SIZE] = { .known = true, .read = true, .nargs = 0 },
	[OBJ_MAP_PUT] = { .known = true, .read = false, .nargs = 2 },
	[OBJ_MAP_REMOVE] = { .known = true, .read = false, .nargs = 1 },
	[OBJ_MAP_GET] = { .known = true, .read = true, .nargs = 1 },
	[OBJ_MAP_SIZE] = { .known = true, .read = true, .nargs = 0 },
};

/* obj_op_encode -- write op (@code, @a, @b) to @buf (OBJ_OP_MAX bytes);
 * return its length. Arguments the opcode does not take are ignored. */
static size_t
obj_op_encode(uint8_t *buf, uint8_t code, uint64_t a, uint64_t b)
{
	const uint64_t arg[2] = { a, b };
	size_t len = 1;

	buf[0] = code;
	for (int i = 0; i < obj_op_specs[code].nargs; i++) {
		memcpy(buf + len, &arg[i], sizeof(arg[i]));
		len += sizeof(arg[i]);
	}
	return len;
}

/* obj_op_decode -- parse @len bytes at @op into @out; -EINVAL if they are
 * not an op of the table (any object's) */
static int
obj_op_decode(const void *op, size_t len, struct obj_op *out)
{
	const uint8_t *p = op;
	int n;

	memset(out, 0, sizeof(*out));
	if (op == NULL || len == 0 || !obj_op_specs[p[0]].known)
		return -EINVAL;
	n = obj_op_specs[p[0]].nargs;
	if (len != 1 + (size_t)n * sizeof(uint64_t))
		return -EINVAL;
	out->code = p[0];
	for (int i = 0; i < n; i++)
		memcpy(&out->arg[i], p + 1 + (size_t)i * sizeof(uint64_t), sizeof(uint64_t));
	return 0;
}

/* ---- the callbacks the objects share ---- */

/*
 * struct obj_class -- one object's part: the ctx of its onll_type. update
 * and read get any decoded op and report -EINVAL in r->err for one that is
 * not theirs (read: not one of its reads, so update ops too); update may
 * report -ENOMEM with the state unchanged.
 */
struct obj_class {
	/* A new empty state, or NULL. */
	void *(*alloc)(void);
	/* Free a state (NULL accepted). */
	void (*free)(void *state);
	void (*update)(void *state, const struct obj_op *o, struct obj_result *r);
	void (*read)(const void *state, const struct obj_op *o, struct obj_result *r);
};

/* obj_state_new -- an empty state of class @ctx */
static int
obj_state_new(void *ctx, void **state)
{
	const struct obj_class *c = ctx;
	void *s = c->alloc();

	if (s == NULL)
		return -ENOMEM;
	*state = s;
	return 0;
}

/* obj_state_free -- free a state of class @ctx */
static void
obj_state_free(void *ctx, void *state)
{
	const struct obj_class *c = ctx;

	c->free(state);
}

/* obj_result_put -- copy @r to the caller's @result (NULL: not wanted) */
static void
obj_result_put(void *result, const struct obj_result *r)
{
	if (result != NULL)
		memcpy(result, r, sizeof(*r));
}

/* obj_apply -- apply update @op to a state of class @ctx (or answer a read
 * op) */
static int
obj_apply(void *ctx, void *state, const void *op, size_t op_len, void *result)
{
	const struct obj_class *c = ctx;
	struct obj_result r = { 0 };
	struct obj_op o;

	if (obj_op_decode(op, op_len, &o) != 0)
		r.err = -EINVAL;
	else if (obj_op_specs[o.code].read)
		c->read(state, &o, &r);
	else
		c->update(state, &o, &r);
	obj_result_put(result, &r);
	return r.err == -ENOMEM ? -ENOMEM : 0;
}

/* obj_compute -- answer read op @op from a state of class @ctx */
static void
obj_compute(void *ctx, const void *state, const void *op, size_t op_len, void *result)
{
	const struct obj_class *c = ctx;
	struct obj_result r = { 0 };
	struct obj_op o;

	if (obj_op_decode(op, op_len, &o) != 0)
		r.err = -EINVAL;
	else
		c->read(state, &o, &r);
	obj_result_put(result, &r);
}

/* ---- the wrappers' side ---- */

/* obj_call -- run op (@code, @a, @b) through onll_read() if it is a read,
 * else onll_update(), into @r; return their error or the callback's r->err */
static int
obj_call(struct onll_thread *t, uint8_t code, uint64_t a, uint64_t b, struct obj_result *r)
{
	uint8_t op[OBJ_OP_MAX];
	size_t len = obj_op_encode(op, code, a, b);
	int ret;

	memset(r, 0, sizeof(*r));
	if (obj_op_specs[code].read)
		ret = onll_read(t, op, len, r);
	else
		ret = onll_update(t, op, len, r, NULL);
	if (ret < 0)
		return ret;
	return r->err;
}

/* obj_found -- a wrapper's return for an op answering found: obj_call()'s
 * error @ret, or 1 with the value found in *@value (NULL: not wanted), or 0 */
static int
obj_found(int ret, const struct obj_result *r, uint64_t *value)
{
	if (ret < 0)
		return ret;
	if (r->found && value != NULL)
		*value = r->value;
	return r->found ? 1 : 0;
}

/* obj_value -- a wrapper's return for an op answering a value: obj_call()'s
 * error @ret, or 0 with the value in *@value (NULL: not wanted) */
static int
obj_value(int ret, const struct obj_result *r, uint64_t *value)
{
	if (ret < 0)
		return ret;
	if (value != NULL)
		*value = r->value;
	return 0;
}

/* obj_u64_get -- the native 64-bit word at byte @i of @buf */
static inline uint64_t
obj_u64_get(const uint8_t *buf, size_t i)
{
	uint64_t v;

	memcpy(&v, buf + i, sizeof(v));
	return v;
}

/* obj_u64_put -- store @v as the native 64-bit word at byte @i of @buf */
static inline void
obj_u64_put(uint8_t *buf, size_t i, uint64_t v)
{
	memcpy(buf + i, &v, sizeof(v));
}

/* ---- counter ---- */

/* The state is the value as uint64_t: unsigned arithmetic wraps modulo 2^64
 * without undefined behaviour, and two's complement makes that the signed
 * wrap objects.h promises. */

/* counter_alloc -- a counter at 0, or NULL */
static void *
counter_alloc(void)
{
	return calloc(1, sizeof(uint64_t));
}

/* counter_update -- apply update op @o into @r */
static void
counter_update(void *state, const struct obj_op *o, struct obj_result *r)
{
	uint64_t *c = state;

	if (o->code == OBJ_COUNTER_ADD) {
		*c += o->arg[0];
		r->value = *c;
	} else {
		r->err = -EINVAL;
	}
}

/* counter_read -- answer read op @o into @r */
static void
counter_read(const void *state, const struct obj_op *o, struct obj_result *r)
{
	const uint64_t *c = state;

	if (o->code == OBJ_COUNTER_GET)
		r->value = *c;
	else
		r->err = -EINVAL;
}

/* counter_snapshot_size -- always one word */
static size_t
counter_snapshot_size(void *ctx, const void *state)
{
	(void)ctx;
	(void)state;
	return sizeof(uint64_t);
}

/* counter_snapshot_save -- the value */
static void
counter_snapshot_save(void *ctx, const void *state, void *buf)
{
	(void)ctx;
	obj_u64_put(buf, 0, *(const uint64_t *)state);
}

/* counter_snapshot_load -- a counter from exactly one word */
static int
counter_snapshot_load(void *ctx, const void *buf, size_t len, void **state)
{
	uint64_t *c;

	(void)ctx;
	if (buf == NULL || len != sizeof(uint64_t))
		return -EINVAL;
	c = malloc(sizeof(*c));
	if (c == NULL)
		return -ENOMEM;
	*c = obj_u64_get(buf, 0);
	*state = c;
	return 0;
}

static const struct obj_class counter_class = {
	.alloc = counter_alloc,
	.free = free,
	.update = counter_update,
	.read = counter_read,
};

static const struct onll_type counter_type = {
	.name = "counter",
	.ctx = (void *)&counter_class,
	.state_new = obj_state_new,
	.state_free = obj_state_free,
	.apply = obj_apply,
	.compute = obj_compute,
	.snapshot_size = counter_snapshot_size,
	.snapshot_save = counter_snapshot_save,
	.snapshot_load = counter_snapshot_load,
};

const struct onll_type *
onll_counter_type(void)
{
	return &counter_type;
}

/* The counter's wrappers pass their int64_t * as the uint64_t * of
 * obj_value(): a signed type may alias its unsigned one (C11 6.5p7). */

int
onll_counter_add(struct onll_thread *t, int64_t delta, int64_t *value)
{
	struct obj_result r;

	return obj_value(obj_call(t, OBJ_COUNTER_ADD, (uint64_t)delta, 0, &r), &r,
		(uint64_t *)value);
}

int
onll_counter_get(struct onll_thread *t, int64_t *value)
{
	struct obj_result r;

	return obj_value(obj_call(t, OBJ_COUNTER_GET, 0, 0, &r), &r, (uint64_t *)value);
}

/* ---- queue ---- */

/* Smallest ring (values); the ring never shrinks below it. */
#define QUEUE_MIN_CAP 8

/*
 * A ring buffer: the values are buf[(head + i) & (cap - 1)] for i in
 * [0, count), front first. cap is a power of two >= QUEUE_MIN_CAP. It
 * doubles when full and halves when at most 1/8 full, so a shrink leaves it
 * at most 1/4 full and a grow-shrink cycle costs Omega(cap) operations.
 */
struct obj_queue {
	uint64_t *buf;
	size_t cap;
	size_t head;
	size_t count;
};

/* queue_resize -- move the values into a new ring of @cap (>= count,
 * power of two) slots, front at 0; -ENOMEM with @q unchanged */
static int
queue_resize(struct obj_queue *q, size_t cap)
{
	size_t first = q->cap - q->head;
	uint64_t *buf;

	if (cap > SIZE_MAX / sizeof(uint64_t))
		return -ENOMEM;
	buf = malloc(cap * sizeof(uint64_t));
	if (buf == NULL)
		return -ENOMEM;
	if (first > q->count)
		first = q->count;
	memcpy(buf, q->buf + q->head, first * sizeof(uint64_t));
	memcpy(buf + first, q->buf, (q->count - first) * sizeof(uint64_t));
	free(q->buf);
	q->buf = buf;
	q->cap = cap;
	q->head = 0;
	return 0;
}

/* queue_alloc -- an empty queue with a ring of @cap values, or NULL */
static struct obj_queue *
queue_alloc(size_t cap)
{
	struct obj_queue *q = calloc(1, sizeof(*q));

	if (q == NULL)
		return NULL;
	q->buf = cap <= SIZE_MAX / sizeof(uint64_t) ? malloc(cap * sizeof(uint64_t)) : NULL;
	if (q->buf == NULL) {
		free(q);
		return NULL;
	}
	q->cap = cap;
	return q;
}

/* queue_empty -- an empty queue, or NULL */
static void *
queue_empty(void)
{
	return queue_alloc(QUEUE_MIN_CAP);
}

/* queue_free -- free a queue state (NULL accepted) */
static void
queue_free(void *state)
{
	struct obj_queue *q = state;

	if (q == NULL)
		return;
	free(q->buf);
	free(q);
}

/* queue_enqueue -- append @value, or -ENOMEM in @r */
static void
queue_enqueue(struct obj_queue *q, uint64_t value, struct obj_result *r)
{
	if (q->count == q->cap &&
	    (q->cap > SIZE_MAX / 2 || queue_resize(q, 2 * q->cap) != 0)) {
		r->err = -ENOMEM;
		return;
	}
	q->buf[(q->head + q->count) & (q->cap - 1)] = value;
	q->count++;
}

/* queue_dequeue -- remove the front value into @r (found: there was one) */
static void
queue_dequeue(struct obj_queue *q, struct obj_result *r)
{
	if (q->count == 0)
		return;
	r->found = 1;
	r->value = q->buf[q->head];
	q->head = (q->head + 1) & (q->cap - 1);
	q->count--;
	/* Best effort: a failed shrink changes nothing visible. */
	if (q->cap > QUEUE_MIN_CAP && q->count <= q->cap / 8)
		(void)queue_resize(q, q->cap / 2);
}

/* queue_update -- apply update op @o into @r */
static void
queue_update(void *state, const struct obj_op *o, struct obj_result *r)
{
	switch (o->code) {
	case OBJ_QUEUE_ENQUEUE:
		queue_enqueue(state, o->arg[0], r);
		break;
	case OBJ_QUEUE_DEQUEUE:
		queue_dequeue(state, r);
		break;
	default:
		r->err = -EINVAL;
	}
}

/* queue_read -- answer read op @o into @r */
static void
queue_read(const void *state, const struct obj_op *o, struct obj_result *r)
{
	const struct obj_queue *q = state;

	switch (o->code) {
	case OBJ_QUEUE_FRONT:
		if (q->count > 0) {
			r->found = 1;
			r->value = q->buf[q->head];
		}
		break;
	case OBJ_QUEUE_SIZE:
		r->value = q->count;
		break;
	default:
		r->err = -EINVAL;
	}
}

/* queue_snapshot_size -- the count and every value */
static size_t
queue_snapshot_size(void *ctx, const void *state)
{
	const struct obj_queue *q = state;

	(void)ctx;
	return sizeof(uint64_t) * (1 + q->count);
}

/* queue_snapshot_save -- the count, then the values front to back */
static void
queue_snapshot_save(void *ctx, const void *state, void *buf)
{
	const struct obj_queue *q = state;
	uint8_t *p = buf;

	(void)ctx;
	obj_u64_put(p, 0, q->count);
	for (size_t i = 0; i < q->count; i++)
		obj_u64_put(p, sizeof(uint64_t) * (1 + i), q->buf[(q->head + i) & (q->cap - 1)]);
}

/* queue_snapshot_load -- a queue from a count and exactly that many values */
static int
queue_snapshot_load(void *ctx, const void *buf, size_t len, void **state)
{
	const uint8_t *p = buf;
	struct obj_queue *q;
	uint64_t count;
	size_t cap = QUEUE_MIN_CAP;

	(void)ctx;
	if (buf == NULL || len < sizeof(uint64_t) || len % sizeof(uint64_t) != 0)
		return -EINVAL;
	count = obj_u64_get(p, 0);
	/* Compared this way round, a huge count cannot overflow. */
	if (count != len / sizeof(uint64_t) - 1)
		return -EINVAL;
	/* count < len / 8 fits in memory, so this doubling stops before
	 * overflowing. */
	while (cap < count)
		cap *= 2;
	q = queue_alloc(cap);
	if (q == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < count; i++)
		q->buf[i] = obj_u64_get(p, sizeof(uint64_t) * (1 + i));
	q->count = count;
	*state = q;
	return 0;
}

static const struct obj_class queue_class = {
	.alloc = queue_empty,
	.free = queue_free,
	.update = queue_update,
	.read = queue_read,
};

static const struct onll_type queue_type = {
	.name = "queue",
	.ctx = (void *)&queue_class,
	.state_new = obj_state_new,
	.state_free = obj_state_free,
	.apply = obj_apply,
	.compute = obj_compute,
	.snapshot_size = queue_snapshot_size,
	.snapshot_save = queue_snapshot_save,
	.snapshot_load = queue_snapshot_load,
};

const struct onll_type *
onll_queue_type(void)
{
	return &queue_type;
}

int
onll_queue_enqueue(struct onll_thread *t, uint64_t value)
{
	struct obj_result r;

	return obj_call(t, OBJ_QUEUE_ENQUEUE, value, 0, &r);
}

int
onll_queue_dequeue(struct onll_thread *t, uint64_t *value)
{
	struct obj_result r;

	return obj_found(obj_call(t, OBJ_QUEUE_DEQUEUE, 0, 0, &r), &r, value);
}

int
onll_queue_front(struct onll_thread *t, uint64_t *value)
{
	struct obj_result r;

	return obj_found(obj_call(t, OBJ_QUEUE_FRONT, 0, 0, &r), &r, value);
}

int
onll_queue_size(struct onll_thread *t, uint64_t *size)
{
	struct obj_result r;

	return obj_value(obj_call(t, OBJ_QUEUE_SIZE, 0, 0, &r), &r, size);
}

/* ---- map ---- */

/* Smallest table (slots); the table never shrinks below it. */
#define MAP_MIN_CAP 16
/* Largest load factor, MAP_LOAD_NUM / MAP_LOAD_DEN: an insert that would
 * exceed it doubles the table first. Below 1, so a probe always reaches an
 * empty slot. */
#define MAP_LOAD_NUM 7
#define MAP_LOAD_DEN 10

struct obj_map_slot {
	uint64_t key;
	uint64_t value;
};

/*
 * Open addressing with linear probing over cap (a power of two) slots;
 * used[i] says whether slots[i] holds a pair (every key value is valid, so
 * no key can mark a slot empty). Both arrays are one allocation.
 *
 * Invariant: for a pair at slot j whose home is h = hash(key) & (cap - 1),
 * every slot from h to j (cyclically) is used. Lookup therefore stops at
 * the first empty slot. Removal keeps the invariant without tombstones by
 * backward shifting (Knuth 6.4, algorithm R): the pairs after the hole
 * that may move back into it do, until an empty slot ends the cluster.
 * The table doubles before an insert would pass the load factor and
 * halves (best effort) when at most 1/8 full.
 */
struct obj_map {
	struct obj_map_slot *slots;
	uint8_t *used;
	size_t cap;
	size_t count;
};

/* map_hash -- the splitmix64 finalizer: a fixed bijective mixer, so the
 * table layout is a function of the keys alone (not randomised per run:
 * keys chosen to collide degrade a map to linear scans, as in any
 * unseeded table) */
static inline uint64_t
map_hash(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

/* map_table_alloc -- zeroed slots and flags for @cap slots into @m (count
 * untouched); -ENOMEM with @m unchanged */
static int
map_table_alloc(struct obj_map *m, size_t cap)
{
	const size_t per_slot = sizeof(struct obj_map_slot) + 1;
	void *p;

	if (cap > SIZE_MAX / per_slot)
		return -ENOMEM;
	p = calloc(cap, per_slot);
	if (p == NULL)
		return -ENOMEM;
	m->slots = p;
	m->used = (uint8_t *)(m->slots + cap);
	m->cap = cap;
	return 0;
}

/* map_find -- the slot holding @key (return true) or the empty slot where
 * it would go (return false) */
static bool
map_find(const struct obj_map *m, uint64_t key, size_t *slot)
{
	size_t mask = m->cap - 1;
	size_t i = map_hash(key) & mask;

	while (m->used[i]) {
		if (m->slots[i].key == key) {
			*slot = i;
			return true;
		}
		i = (i + 1) & mask;
	}
	*slot = i;
	return false;
}

/* map_insert_new -- add a pair whose key is absent; room must exist */
static void
map_insert_new(struct obj_map *m, uint64_t key, uint64_t value)
{
	size_t i;

	(void)map_find(m, key, &i);
	m->slots[i].key = key;
	m->slots[i].value = value;
	m->used[i] = 1;
	m->count++;
}

/* map_rehash -- move every pair into a new table of @cap slots (a power of
 * two with room for count pairs); -ENOMEM with @m unchanged */
static int
map_rehash(struct obj_map *m, size_t cap)
{
	struct obj_map old = *m;
	int ret = map_table_alloc(m, cap);

	if (ret != 0)
		return ret;
	m->count = 0;
	for (size_t i = 0; i < old.cap; i++) {
		if (old.used[i])
			map_insert_new(m, old.slots[i].key, old.slots[i].value);
	}
	free(old.slots);
	return 0;
}

/* map_fits -- whether @count pairs stay within the load factor of @cap */
static inline bool
map_fits(size_t count, size_t cap)
{
	/* Callers keep count and cap below SIZE_MAX / 17 (a table of cap
	 * slots, or a snapshot of count pairs, is in memory), so neither
	 * product overflows. */
	return count * MAP_LOAD_DEN <= cap * MAP_LOAD_NUM;
}

/* map_delete_at -- remove the pair at @hole, shifting back the pairs after
 * it that probe through it (see struct obj_map) */
static void
map_delete_at(struct obj_map *m, size_t hole)
{
	size_t mask = m->cap - 1;
	size_t j = hole;

	for (;;) {
		size_t home;

		j = (j + 1) & mask;
		if (!m->used[j])
			break;
		home = map_hash(m->slots[j].key) & mask;
		/* The pair at j may stay iff its home lies cyclically in
		 * (hole, j]: then the hole is not on its probe path. */
		if (hole <= j ? (hole < home && home <= j) : (hole < home || home <= j))
			continue;
		m->slots[hole] = m->slots[j];
		hole = j;
	}
	m->used[hole] = 0;
	m->count--;
}

/* map_alloc -- an empty map with @cap slots, or NULL */
static struct obj_map *
map_alloc(size_t cap)
{
	struct obj_map *m = calloc(1, sizeof(*m));

	if (m == NULL)
		return NULL;
	if (map_table_alloc(m, cap) != 0) {
		free(m);
		return NULL;
	}
	return m;
}

/* map_empty -- an empty map, or NULL */
static void *
map_empty(void)
{
	return map_alloc(MAP_MIN_CAP);
}

/* map_free -- free a map state (NULL accepted) */
static void
map_free(void *state)
{
	struct obj_map *m = state;

	if (m == NULL)
		return;
	free(m->slots);
	free(m);
}

/* map_read -- answer read op @o into @r */
static void
map_read(const void *state, const struct obj_op *o, struct obj_result *r)
{
	const struct obj_map *m = state;
	size_t i;

	switch (o->code) {
	case OBJ_MAP_GET:
		if (map_find(m, o->arg[0], &i)) {
			r->found = 1;
			r->value = m->slots[i].value;
		}
		break;
	case OBJ_MAP_SIZE:
		r->value = m->count;
		break;
	default:
		r->err = -EINVAL;
	}
}

/* map_put -- map @key to @value into @r (found: the value replaced) */
static void
map_put(struct obj_map *m, uint64_t key, uint64_t value, struct obj_result *r)
{
	size_t i;

	if (map_find(m, key, &i)) {
		r->found = 1;
		r->value = m->slots[i].value;
		m->slots[i].value = value;
		return;
	}
	if (!map_fits(m->count + 1, m->cap) &&
	    (m->cap > SIZE_MAX / 2 || map_rehash(m, 2 * m->cap) != 0)) {
		r->err = -ENOMEM;
		return;
	}
	map_insert_new(m, key, value);
}

/* map_remove -- remove @key into @r (found: the value removed) */
static void
map_remove(struct obj_map *m, uint64_t key, struct obj_result *r)
{
	size_t i;

	if (!map_find(m, key, &i))
		return;
	r->found = 1;
	r->value = m->slots[i].value;
	map_delete_at(m, i);
	/* Best effort: a failed shrink changes nothing visible. */
	if (m->cap > MAP_MIN_CAP && m->count <= m->cap / 8)
		(void)map_rehash(m, m->cap / 2);
}

/* map_update -- apply update op @o into @r */
static void
map_update(void *state, const struct obj_op *o, struct obj_result *r)
{
	switch (o->code) {
	case OBJ_MAP_PUT:
		map_put(state, o->arg[0], o->arg[1], r);
		break;
	case OBJ_MAP_REMOVE:
		map_remove(state, o->arg[0], r);
		break;
	default:
		r->err = -EINVAL;
	}
}

/* Bytes of one (key, value) pair in a snapshot. */
#define MAP_PAIR_BYTES (2 * sizeof(uint64_t))

/* map_snapshot_size -- the count and every pair */
static size_t
map_snapshot_size(void *ctx, const void *state)
{
	const struct obj_map *m = state;

	(void)ctx;
	return sizeof(uint64_t) + MAP_PAIR_BYTES * m->count;
}

/* map_pair_cmp -- qsort() order of two snapshot pairs: by key (unique, so
 * the order is total and the sorted bytes are unique). The pairs sit in
 * the caller's buffer at any alignment, hence memcpy. */
static int
map_pair_cmp(const void *a, const void *b)
{
	uint64_t ka, kb;

	memcpy(&ka, a, sizeof(ka));
	memcpy(&kb, b, sizeof(kb));
	return ka < kb ? -1 : ka > kb;
}

/* map_snapshot_save -- the count, then the pairs by increasing key. The
 * pairs are sorted in place in @buf: saving cannot fail, so it must not
 * need memory of its own (glibc's qsort() falls back to an in-place sort
 * when it cannot allocate). */
static void
map_snapshot_save(void *ctx, const void *state, void *buf)
{
	const struct obj_map *m = state;
	uint8_t *p = buf;
	size_t off = sizeof(uint64_t);

	(void)ctx;
	obj_u64_put(p, 0, m->count);
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->used[i])
			continue;
		obj_u64_put(p, off, m->slots[i].key);
		obj_u64_put(p, off + sizeof(uint64_t), m->slots[i].value);
		off += MAP_PAIR_BYTES;
	}
	qsort(p + sizeof(uint64_t), m->count, MAP_PAIR_BYTES, map_pair_cmp);
}

/* map_snapshot_load -- a map from a count and exactly that many pairs with
 * strictly increasing keys */
static int
map_snapshot_load(void *ctx, const void *buf, size_t len, void **state)
{
	const uint8_t *p = buf;
	struct obj_map *m;
	uint64_t count;
	size_t cap = MAP_MIN_CAP;

	(void)ctx;
	if (buf == NULL || len < sizeof(uint64_t) ||
	    (len - sizeof(uint64_t)) % MAP_PAIR_BYTES != 0)
		return -EINVAL;
	count = obj_u64_get(p, 0);
	if (count != (len - sizeof(uint64_t)) / MAP_PAIR_BYTES)
		return -EINVAL;
	/* Validate before allocating: a rejected snapshot costs no memory. */
	for (size_t i = 1; i < count; i++) {
		size_t off = sizeof(uint64_t) + MAP_PAIR_BYTES * i;

		if (obj_u64_get(p, off - MAP_PAIR_BYTES) >= obj_u64_get(p, off))
			return -EINVAL;
	}
	/* count <= len / 16, so count * MAP_LOAD_DEN cannot overflow. */
	while (!map_fits(count, cap)) {
		if (cap > SIZE_MAX / 2 / (sizeof(struct obj_map_slot) + 1))
			return -ENOMEM;
		cap *= 2;
	}
	m = map_alloc(cap);
	if (m == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < count; i++) {
		size_t off = sizeof(uint64_t) + MAP_PAIR_BYTES * i;

		map_insert_new(m, obj_u64_get(p, off), obj_u64_get(p, off + sizeof(uint64_t)));
	}
	*state = m;
	return 0;
}

static const struct obj_class map_class = {
	.alloc = map_empty,
	.free = map_free,
	.update = map_update,
	.read = map_read,
};

static const struct onll_type map_type = {
	.name = "map",
	.ctx = (void *)&map_class,
	.state_new = obj_state_new,
	.state_free = obj_state_free,
	.apply = obj_apply,
	.compute = obj_compute,
	.snapshot_size = map_snapshot_size,
	.snapshot_save = map_snapshot_save,
	.snapshot_load = map_snapshot_load,
};

const struct onll_type *
onll_map_type(void)
{
	return &map_type;
}

int
onll_map_put(struct onll_thread *t, uint64_t key, uint64_t value)
{
	struct obj_result r;

	return obj_found(obj_call(t, OBJ_MAP_PUT, key, value, &r), &r, NULL);
}

int
onll_map_remove(struct onll_thread *t, uint64_t key)
{
	struct obj_result r;

	return obj_found(obj_call(t, OBJ_MAP_REMOVE, key, 0, &r), &r, NULL);
}

int
onll_map_get(struct onll_thread *t, uint64_t key, uint64_t *value)
{
	struct obj_result r;

	return obj_found(obj_call(t, OBJ_MAP_GET, key, 0, &r), &r, value);
}

int
onll_map_size(struct onll_thread *t, uint64_t *size)
{
	struct obj_result r;

	return obj_value(obj_call(t, OBJ_MAP_SIZE, 0, 0, &r), &r, size);
}
