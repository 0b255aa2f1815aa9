// SPDX-License-Identifier: BSD-3-Clause
/*
 * tests/lincheck/models.h -- sequential models for lincheck::check().
 *
 * WordArrayModel specifies mcas/ (k-word compare-and-swap over an array of
 * 64-bit words, plus plain reads and writes); RegisterModel is its one-word
 * case; SetModel specifies the set-like structures in ds/. CounterModel,
 * QueueModel and MapModel specify the objects of onll/objects.h. IndexModel
 * specifies kv/'s replicated key index as its clients see it, KvModel the
 * store (kv/kv.h) as its clients see it (histories from several processes:
 * records.h).
 *
 * Every op type is built by static functions: the form without outputs is
 * what a thread passes to Recorder::Handle::invoke() (and what a pending op
 * stays), the form with outputs is what it passes to complete(). A pending
 * op is checked as "legal with whatever output the state gives". Op types
 * are aggregates: those functions list the fields in declaration order.
 *
 * Thread-safety: models are immutable after construction; check() only reads
 * them.
 */
#ifndef TESTS_LINCHECK_MODELS_H
#define TESTS_LINCHECK_MODELS_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tests/lincheck/lincheck.h"

namespace lincheck {

/* One word of an MCAS: word @index must hold @expected; it then gets @desired. */
struct McasEntry {
	size_t index;
	uint64_t expected;
	uint64_t desired;
};

/* An operation on a word array. */
struct WordOp {
	enum class Kind : uint8_t { kRead, kWrite, kMcas };
	Kind kind = Kind::kRead;
	bool returned = false;          /* the outputs below were recorded */
	size_t index = 0;               /* read, write */
	uint64_t value = 0;             /* write: value stored; read: value returned */
	bool success = false;           /* mcas: its result */
	std::vector<McasEntry> entries; /* mcas */

	/* read -- read(i), invoked (output unknown). */
	static WordOp read(size_t i) { return {Kind::kRead, false, i, 0, false, {}}; }
	/* read -- read(i) that returned @v. */
	static WordOp read(size_t i, uint64_t v) { return {Kind::kRead, true, i, v, false, {}}; }
	/* write -- write(i, v); it has no output, so one form serves both uses. */
	static WordOp write(size_t i, uint64_t v) { return {Kind::kWrite, true, i, v, false, {}}; }
	/* mcas -- mcas(e), invoked (result unknown). */
	static WordOp mcas(std::vector<McasEntry> e)
	{
		return {Kind::kMcas, false, 0, 0, false, std::move(e)};
	}
	/* mcas -- mcas(e) that returned @ok. */
	static WordOp mcas(std::vector<McasEntry> e, bool ok)
	{
		return {Kind::kMcas, true, 0, 0, ok, std::move(e)};
	}
	/* cas -- a one-word mcas, invoked. */
	static WordOp cas(size_t i, uint64_t expected, uint64_t desired)
	{
		return mcas({{i, expected, desired}});
	}
	/* cas -- a one-word mcas that returned @ok. */
	static WordOp cas(size_t i, uint64_t expected, uint64_t desired, bool ok)
	{
		return mcas({{i, expected, desired}}, ok);
	}
};

/*
 * WordArrayModel -- N 64-bit words with atomic read, write and MCAS.
 *
 * An MCAS succeeds iff every listed word holds its expected value, and then
 * writes every desired value at once (strong MCAS: no spurious failure). An
 * op naming a word outside the array is illegal. There is no partition: an
 * MCAS spans words. The state is the array itself; the search interns each
 * distinct array once, so its hash (one pass over N words) is computed once
 * per step.
 */
class WordArrayModel {
public:
	using Op = WordOp;
	using State = std::vector<uint64_t>;

	/* Words start with the values in @initial; its size is N. */
	explicit WordArrayModel(std::vector<uint64_t> initial) : initial_(std::move(initial)) {}

	/* The model interface: see the top of lincheck.h. */
	State init() const { return initial_; }
	bool step(const State &s, const Op &op, State *next) const;
	size_t hash(const State &s) const;
	std::string describe(const Op &op) const;
	std::string describe_state(const State &s) const;

private:
	std::vector<uint64_t> initial_;
};

/* RegisterModel -- one word with read, write and cas (word index 0). */
class RegisterModel : public WordArrayModel {
public:
	explicit RegisterModel(uint64_t initial = 0) : WordArrayModel({initial}) {}
};

/* An operation on a set of 64-bit keys; each returns a bool. */
struct SetOp {
	enum class Kind : uint8_t { kInsert, kRemove, kContains };
	Kind kind = Kind::kContains;
	bool returned = false;  /* result was recorded */
	uint64_t key = 0;
	bool result = false;    /* insert: was absent; remove, contains: was present */

	/* insert -- insert(k), invoked. */
	static SetOp insert(uint64_t k) { return {Kind::kInsert, false, k, false}; }
	/* insert -- insert(k) that returned @r. */
	static SetOp insert(uint64_t k, bool r) { return {Kind::kInsert, true, k, r}; }
	/* remove -- remove(k), invoked. */
	static SetOp remove(uint64_t k) { return {Kind::kRemove, false, k, false}; }
	/* remove -- remove(k) that returned @r. */
	static SetOp remove(uint64_t k, bool r) { return {Kind::kRemove, true, k, r}; }
	/* contains -- contains(k), invoked. */
	static SetOp contains(uint64_t k) { return {Kind::kContains, false, k, false}; }
	/* contains -- contains(k) that returned @r. */
	static SetOp contains(uint64_t k, bool r) { return {Kind::kContains, true, k, r}; }
};

/*
 * SetModel -- an ordered set of 64-bit keys with insert, remove, contains.
 *
 * Ops on different keys commute, so partition() checks each key's ops on
 * their own: a history of many keys costs the sum, not the product, of the
 * per-key searches. The state is the sorted vector of present keys.
 */
class SetModel {
public:
	using Op = SetOp;
	using State = std::vector<uint64_t>;

	/* The set starts with @initial (any order, duplicates ignored). */
	explicit SetModel(std::vector<uint64_t> initial = {});

	/* The model interface: see the top of lincheck.h. */
	State init() const { return initial_; }
	bool step(const State &s, const Op &op, State *next) const;
	size_t hash(const State &s) const;
	std::string describe(const Op &op) const;
	std::string describe_state(const State &s) const;
	/* partition -- one group per key, in key order. */
	std::vector<std::vector<size_t>> partition(const std::vector<Operation<Op>> &history) const;

private:
	std::vector<uint64_t> initial_;
};

/* An operation on a 64-bit counter. */
struct CounterOp {
	enum class Kind : uint8_t { kAdd, kGet };
	Kind kind = Kind::kGet;
	bool returned = false;  /* value was recorded */
	int64_t delta = 0;      /* add */
	int64_t value = 0;      /* add: value after it; get: value read */

	/* add -- add(d), invoked. */
	static CounterOp add(int64_t d) { return {Kind::kAdd, false, d, 0}; }
	/* add -- add(d) that returned the value after it, @after. */
	static CounterOp add(int64_t d, int64_t after) { return {Kind::kAdd, true, d, after}; }
	/* get -- get(), invoked. */
	static CounterOp get() { return {Kind::kGet, false, 0, 0}; }
	/* get -- get() that returned @v. */
	static CounterOp get(int64_t v) { return {Kind::kGet, true, 0, v}; }
};

/*
 * CounterModel -- a signed 64-bit counter with add (returns the value after
 * it) and get. Addition wraps modulo 2^64 (computed on uint64_t, so a wrap
 * is defined behaviour), as onll_counter_type() specifies. The state is the
 * value. No partition: every op touches the one value.
 */
class CounterModel {
public:
	using Op = CounterOp;
	using State = int64_t;

	/* The counter starts at @initial. */
	explicit CounterModel(int64_t initial = 0) : initial_(initial) {}

	/* The model interface: see the top of lincheck.h. */
	State init() const { return initial_; }
	bool step(const State &s, const Op &op, State *next) const;
	size_t hash(const State &s) const;
	std::string describe(const Op &op) const;
	std::string describe_state(const State &s) const;

private:
	int64_t initial_;
};

/* An operation on a FIFO queue of 64-bit values. */
struct QueueOp {
	enum class Kind : uint8_t { kEnqueue, kDequeue, kFront, kSize };
	Kind kind = Kind::kSize;
	bool returned = false;  /* the outputs below were recorded */
	uint64_t value = 0;     /* enqueue: value appended; dequeue, front: value returned if found */
	bool found = false;     /* dequeue, front: the queue was not empty */
	uint64_t count = 0;     /* size: the number of values returned */

	/* enqueue -- enqueue(v); it has no output, so one form serves both uses. */
	static QueueOp enqueue(uint64_t v) { return {Kind::kEnqueue, true, v, false, 0}; }
	/* dequeue -- dequeue(), invoked. */
	static QueueOp dequeue() { return {Kind::kDequeue, false, 0, false, 0}; }
	/* dequeue -- dequeue() that returned @v (@found) or found the queue
	 * empty (!@found; @v is then ignored). */
	static QueueOp dequeue(bool found, uint64_t v)
	{
		return {Kind::kDequeue, true, found ? v : 0, found, 0};
	}
	/* front -- front(), invoked. */
	static QueueOp front() { return {Kind::kFront, false, 0, false, 0}; }
	/* front -- front() that read @v (@found) or found the queue empty. */
	static QueueOp front(bool found, uint64_t v)
	{
		return {Kind::kFront, true, found ? v : 0, found, 0};
	}
	/* size -- size(), invoked. */
	static QueueOp size() { return {Kind::kSize, false, 0, false, 0}; }
	/* size -- size() that returned @n. */
	static QueueOp size(uint64_t n) { return {Kind::kSize, true, 0, false, n}; }
};

/*
 * QueueModel -- an unbounded FIFO queue of 64-bit values with enqueue,
 * dequeue (removes and returns the front, or reports empty), front (reads
 * it) and size. The state is the values, front first. No partition: FIFO
 * order relates every op to every other. Histories whose enqueued values are
 * distinct check fastest (an output then names the one enqueue it came
 * from), but duplicates are allowed.
 *
 * Cost: the order of two overlapping enqueues is only revealed when their
 * values are dequeued, so the search may carry every order of the values
 * in the queue whose enqueues overlapped: exponential in how many there are
 * at once. Record histories in which the queue stays short (dequeue at
 * least as often as enqueue); a 2000-op history of at most 8 values with
 * about six ops in flight explores a few thousand configurations, one whose
 * queue wanders to dozens of values can exceed Options::max_states.
 */
class QueueModel {
public:
	using Op = QueueOp;
	using State = std::vector<uint64_t>;

	/* The queue starts with @initial, front first. */
	explicit QueueModel(std::vector<uint64_t> initial = {}) : initial_(std::move(initial)) {}

	/* The model interface: see the top of lincheck.h. */
	State init() const { return initial_; }
	bool step(const State &s, const Op &op, State *next) const;
	size_t hash(const State &s) const;
	std::string describe(const Op &op) const;
	std::string describe_state(const State &s) const;

private:
	std::vector<uint64_t> initial_;
};

/* An operation on a map from 64-bit keys to 64-bit values. */
struct MapOp {
	enum class Kind : uint8_t { kPut, kRemove, kGet };
	Kind kind = Kind::kGet;
	bool returned = false;  /* the outputs below were recorded */
	uint64_t key = 0;
	uint64_t value = 0;     /* put: value stored; get: value returned if present */
	bool present = false;   /* put, remove, get: @key was present before the op */

	/* put -- put(k, v), invoked. */
	static MapOp put(uint64_t k, uint64_t v) { return {Kind::kPut, false, k, v, false}; }
	/* put -- put(k, v) that returned @was_present (true: a value was replaced). */
	static MapOp put(uint64_t k, uint64_t v, bool was_present)
	{
		return {Kind::kPut, true, k, v, was_present};
	}
	/* remove -- remove(k), invoked. */
	static MapOp remove(uint64_t k) { return {Kind::kRemove, false, k, 0, false}; }
	/* remove -- remove(k) that returned @was_present. */
	static MapOp remove(uint64_t k, bool was_present)
	{
		return {Kind::kRemove, true, k, 0, was_present};
	}
	/* get -- get(k), invoked. */
	static MapOp get(uint64_t k) { return {Kind::kGet, false, k, 0, false}; }
	/* get -- get(k) that read @v (@present) or found @k absent (@v ignored). */
	static MapOp get(uint64_t k, bool present, uint64_t v)
	{
		return {Kind::kGet, true, k, present ? v : 0, present};
	}
};

/*
 * MapModel -- a map from 64-bit keys to 64-bit values with put (returns
 * whether the key was present), remove (the same) and get (presence and
 * value).
 *
 * Every op names one key and ops on different keys commute, so partition()
 * checks each key's ops on their own, as SetModel does. There is
 * deliberately no size op: its result depends on every key, so one size op
 * would join all keys into one sub-history and the search would pay the
 * product of the per-key searches. Check a map's size at quiescent points
 * instead (after the threads join, against the keys the model ends with).
 * The state is the (key, value) pairs in increasing key order.
 */
class MapModel {
public:
	using Op = MapOp;
	using State = std::vector<std::pair<uint64_t, uint64_t>>;

	/* The map starts with @initial (any order; for a repeated key the last
	 * pair wins). */
	explicit MapModel(std::vector<std::pair<uint64_t, uint64_t>> initial = {});

	/* The model interface: see the top of lincheck.h. */
	State init() const { return initial_; }
	bool step(const State &s, const Op &op, State *next) const;
	size_t hash(const State &s) const;
	std::string describe(const Op &op) const;
	std::string describe_state(const State &s) const;
	/* partition -- one group per key, in key order. */
	std::vector<std::vector<size_t>> partition(const std::vector<Operation<Op>> &history) const;

private:
	State initial_;
};

/*
 * An operation on the key index. Keys are 64-bit ids (see IndexModel on why
 * not key bytes); a location is the 64-bit value a key maps to.
 *
 * UNAVAILABLE (a timeout, too many nodes down) is not an output: the index
 * promises "an unavailable error, never a wrong answer", and an op that
 * reported it may still take effect later (another client's recovery can
 * finish its proposal). So it is recorded as a pending op: the invoked form,
 * with ret = kPending (Recorder: never call complete() for it; the record
 * reader of records.h does this itself).
 */
struct IndexOp {
	enum class Kind : uint8_t { kInsert = 0, kRemove = 1, kLookup = 2 };  /* records.h stores these */
	/* What a returned op reported: insert OK or EXISTS(found); remove OK or
	 * ABSENT; lookup FOUND(found) or ABSENT. */
	enum class Status : uint8_t { kOk, kExists, kAbsent, kFound };
	Kind kind = Kind::kLookup;
	bool returned = false;          /* status and found were recorded */
	uint64_t key = 0;
	uint64_t loc = 0;               /* insert, remove: the location given; lookup: 0 */
	Status status = Status::kAbsent;
	uint64_t found = 0;             /* EXISTS, FOUND: the location returned; else 0 */

	/* insert -- insert(k, l), invoked. */
	static IndexOp insert(uint64_t k, uint64_t l) { return {Kind::kInsert, false, k, l, Status::kOk, 0}; }
	/* insert_ok -- insert(k, l) that returned OK: @k now maps to @l. */
	static IndexOp insert_ok(uint64_t k, uint64_t l) { return {Kind::kInsert, true, k, l, Status::kOk, 0}; }
	/* insert_exists -- insert(k, l) that returned EXISTS(@current). */
	static IndexOp insert_exists(uint64_t k, uint64_t l, uint64_t current)
	{
		return {Kind::kInsert, true, k, l, Status::kExists, current};
	}
	/* remove -- remove(k, l), invoked. */
	static IndexOp remove(uint64_t k, uint64_t l) { return {Kind::kRemove, false, k, l, Status::kOk, 0}; }
	/* remove_ok -- remove(k, l) that returned OK: it unmapped @k from @l. */
	static IndexOp remove_ok(uint64_t k, uint64_t l) { return {Kind::kRemove, true, k, l, Status::kOk, 0}; }
	/* remove_absent -- remove(k, l) that returned ABSENT: @k did not map to @l. */
	static IndexOp remove_absent(uint64_t k, uint64_t l)
	{
		return {Kind::kRemove, true, k, l, Status::kAbsent, 0};
	}
	/* lookup -- lookup(k), invoked. */
	static IndexOp lookup(uint64_t k) { return {Kind::kLookup, false, k, 0, Status::kAbsent, 0}; }
	/* lookup_found -- lookup(k) that returned FOUND(@l). */
	static IndexOp lookup_found(uint64_t k, uint64_t l)
	{
		return {Kind::kLookup, true, k, 0, Status::kFound, l};
	}
	/* lookup_absent -- lookup(k) that returned ABSENT. */
	static IndexOp lookup_absent(uint64_t k) { return {Kind::kLookup, true, k, 0, Status::kAbsent, 0}; }
};

/*
 * IndexModel -- kv/'s key index (kv/DESIGN.md) as a client sees it: a map
 * from keys to 64-bit locations with insert-if-absent, remove of one exact
 * mapping and lookup.
 *
 *	insert(k, l): k unmapped -> k maps to l, OK; else EXISTS(k's location),
 *	              unchanged -- also when that location is l: insert is not
 *	              idempotent (a client retrying after UNAVAILABLE whose first
 *	              attempt took effect must see EXISTS(l))
 *	remove(k, l): k maps to exactly l -> unmapped, OK; else ABSENT, unchanged
 *	lookup(k):    FOUND(current location) or ABSENT
 *
 * Keys are uint64_t ids rather than key bytes because the search copies and
 * hashes the state at every step it tries: with ids a state is a flat array
 * of words (one splitmix pass, as MapModel's) instead of strings to allocate
 * and hash, and a history record stays fixed-size, so it can be rewritten in
 * place when its op returns (records.h). A workload derives its key
 * bytes from the id (so every process agrees on the mapping without talking);
 * the model needs no fingerprints, so keys chosen to collide in the index's
 * 16-bit fingerprint are simply different ids.
 *
 * Every op names one key and ops on different keys commute, so partition()
 * checks each key's ops on their own (as MapModel). The state is the
 * (key, location) pairs in increasing key order.
 */
class IndexModel {
public:
	using Op = IndexOp;
	using State = std::vector<std::pair<uint64_t, uint64_t>>;

	/* The index starts with the mappings in @initial (any order; for a
	 * repeated key the last pair wins). */
	explicit IndexModel(std::vector<std::pair<uint64_t, uint64_t>> initial = {});

	/* The model interface: see the top of lincheck.h. */
	State init() const { return initial_; }
	bool step(const State &s, const Op &op, State *next) const;
	size_t hash(const State &s) const;
	std::string describe(const Op &op) const;
	std::string describe_state(const State &s) const;
	/* partition -- one group per key, in key order. */
	std::vector<std::vector<size_t>> partition(const std::vector<Operation<Op>> &history) const;

private:
	State initial_;
};

/*
 * An operation on the store (kv/kv.h). Keys and values are 64-bit ids (see
 * IndexModel on why not bytes): a workload derives a key's bytes and a
 * value's bytes from their ids, and maps a value read back to its id.
 * UNAVAILABLE is recorded as a pending op, as IndexOp's.
 */
struct KvOp {
	enum class Kind : uint8_t { kInsert = 0, kUpdate = 1, kPut = 2, kGet = 3, kDelete = 4 };  /* records.h stores these */
	/* What a returned op reported: insert OK or EXISTS; update OK or
	 * ABSENT; put OK; get FOUND(found) or ABSENT; delete OK or ABSENT. The
	 * order is IndexOp::Status's (records.h relies on it). */
	enum class Status : uint8_t { kOk, kExists, kAbsent, kFound };
	Kind kind = Kind::kGet;
	bool returned = false;          /* status and found were recorded */
	uint64_t key = 0;
	uint64_t value = 0;             /* insert, update, put: the value given; else 0 */
	Status status = Status::kAbsent;
	uint64_t found = 0;             /* FOUND: the value returned; else 0 */

	/* insert -- insert(k, v), invoked. */
	static KvOp insert(uint64_t k, uint64_t v) { return {Kind::kInsert, false, k, v, Status::kOk, 0}; }
	/* insert_ok -- insert(k, v) that returned OK: @k now holds @v. */
	static KvOp insert_ok(uint64_t k, uint64_t v) { return {Kind::kInsert, true, k, v, Status::kOk, 0}; }
	/* insert_exists -- insert(k, v) that returned EXISTS (KV_E_EXISTS). */
	static KvOp insert_exists(uint64_t k, uint64_t v) { return {Kind::kInsert, true, k, v, Status::kExists, 0}; }
	/* update -- update(k, v), invoked. */
	static KvOp update(uint64_t k, uint64_t v) { return {Kind::kUpdate, false, k, v, Status::kOk, 0}; }
	/* update_ok -- update(k, v) that returned OK: @k now holds @v. */
	static KvOp update_ok(uint64_t k, uint64_t v) { return {Kind::kUpdate, true, k, v, Status::kOk, 0}; }
	/* update_absent -- update(k, v) that returned ABSENT (-ENOENT). */
	static KvOp update_absent(uint64_t k, uint64_t v) { return {Kind::kUpdate, true, k, v, Status::kAbsent, 0}; }
	/* put -- put(k, v), invoked. */
	static KvOp put(uint64_t k, uint64_t v) { return {Kind::kPut, false, k, v, Status::kOk, 0}; }
	/* put_ok -- put(k, v) that returned OK: @k now holds @v. */
	static KvOp put_ok(uint64_t k, uint64_t v) { return {Kind::kPut, true, k, v, Status::kOk, 0}; }
	/* get -- get(k), invoked. */
	static KvOp get(uint64_t k) { return {Kind::kGet, false, k, 0, Status::kAbsent, 0}; }
	/* get_found -- get(k) that returned FOUND(@v). */
	static KvOp get_found(uint64_t k, uint64_t v) { return {Kind::kGet, true, k, 0, Status::kFound, v}; }
	/* get_absent -- get(k) that returned ABSENT (-ENOENT). */
	static KvOp get_absent(uint64_t k) { return {Kind::kGet, true, k, 0, Status::kAbsent, 0}; }
	/* del -- delete(k), invoked (delete is a keyword). */
	static KvOp del(uint64_t k) { return {Kind::kDelete, false, k, 0, Status::kOk, 0}; }
	/* del_ok -- delete(k) that returned OK (0). */
	static KvOp del_ok(uint64_t k) { return {Kind::kDelete, true, k, 0, Status::kOk, 0}; }
	/* del_absent -- delete(k) that returned ABSENT (-ENOENT). */
	static KvOp del_absent(uint64_t k) { return {Kind::kDelete, true, k, 0, Status::kAbsent, 0}; }
};

/* One key of a KvModel state: it holds @value, or (!@present) it is absent
 * and was emptied by a delete that returned OK with no insert, update or
 * put succeeding on it since (the delete leniency of KvModel). A key absent
 * otherwise has no entry. */
struct KvEntry {
	uint64_t key;
	uint64_t value;  /* 0 when !present */
	bool present;

	bool operator==(const KvEntry &o) const
	{
		return key == o.key && value == o.value && present == o.present;
	}
};

/*
 * KvModel -- the store (kv/kv.h) as a client sees it: a map from keys to
 * values with insert-if-absent, update-if-present, put, get and delete.
 *
 *	insert(k, v): absent -> holds v, OK; present -> unchanged, EXISTS
 *	update(k, v): present -> holds v, OK; absent -> unchanged, ABSENT
 *	put(k, v):    holds v, OK
 *	get(k):       FOUND(k's value) or ABSENT
 *	delete(k):    present -> absent, OK; absent -> ABSENT -- or OK if a
 *	              delete that returned OK emptied k and no insert, update
 *	              or put has succeeded on k since
 *
 * The delete leniency is kv_delete's documented contract: "0 if @key was
 * present when the call began, or was removed by a delete overlapping this
 * one (two overlapping deletes may both return 0)". Two overlapping deletes
 * can linearize one after the other, so the model lets the second return OK
 * from the state the first left. A sequential model cannot tell overlap, so
 * it also accepts a second delete OK that started after the first returned,
 * which the contract forbids: tests that want that caught must check it
 * otherwise (e.g. count delete OKs per key between successful writes in the
 * real-time order).
 *
 * Every op names one key and ops on different keys commute, so partition()
 * checks each key's ops on their own (as MapModel). The state is the
 * entries (KvEntry) in increasing key order.
 */
class KvModel {
public:
	using Op = KvOp;
	using State = std::vector<KvEntry>;

	/* The store starts with the (key, value) pairs in @initial (any order;
	 * for a repeated key the last pair wins). */
	explicit KvModel(std::vector<std::pair<uint64_t, uint64_t>> initial = {});

	/* The model interface: see the top of lincheck.h. */
	State init() const { return initial_; }
	bool step(const State &s, const Op &op, State *next) const;
	size_t hash(const State &s) const;
	std::string describe(const Op &op) const;
	std::string describe_state(const State &s) const;
	/* partition -- one group per key, in key order. */
	std::vector<std::vector<size_t>> partition(const std::vector<Operation<Op>> &history) const;

private:
	State initial_;
};

}  // namespace lincheck

#endif  // TESTS_LINCHECK_MODELS_H
