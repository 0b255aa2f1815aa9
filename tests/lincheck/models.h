// SPDX-License-Identifier: BSD-3-Clause
/*
 * tests/lincheck/models.h -- sequential models for lincheck::check().
 *
 * WordArrayModel specifies mcas/ (k-word compare-and-swap over an array of
 * 64-bit words, plus plain reads and writes); RegisterModel is its one-word
 * case; SetModel specifies the set-like structures in ds/.
 *
 * Every op type is built by static functions: the form without outputs is
 * what a thread passes to Recorder::Handle::invoke() (and what a pending op
 * stays), the form with outputs is what it passes to complete(). A pending
 * op is checked as "legal with whatever output the state gives".
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
	static WordOp read(size_t i) { return make(Kind::kRead, false, i, 0, false, {}); }
	/* read -- read(i) that returned @v. */
	static WordOp read(size_t i, uint64_t v) { return make(Kind::kRead, true, i, v, false, {}); }
	/* write -- write(i, v); it has no output, so one form serves both uses. */
	static WordOp write(size_t i, uint64_t v) { return make(Kind::kWrite, true, i, v, false, {}); }
	/* mcas -- mcas(e), invoked (result unknown). */
	static WordOp mcas(std::vector<McasEntry> e)
	{
		return make(Kind::kMcas, false, 0, 0, false, std::move(e));
	}
	/* mcas -- mcas(e) that returned @ok. */
	static WordOp mcas(std::vector<McasEntry> e, bool ok)
	{
		return make(Kind::kMcas, true, 0, 0, ok, std::move(e));
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

private:
	static WordOp make(Kind k, bool returned, size_t i, uint64_t v, bool ok,
		std::vector<McasEntry> e)
	{
		WordOp op;
		op.kind = k;
		op.returned = returned;
		op.index = i;
		op.value = v;
		op.success = ok;
		op.entries = std::move(e);
		return op;
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
	static SetOp insert(uint64_t k) { return make(Kind::kInsert, k, false, false); }
	/* insert -- insert(k) that returned @r. */
	static SetOp insert(uint64_t k, bool r) { return make(Kind::kInsert, k, true, r); }
	/* remove -- remove(k), invoked. */
	static SetOp remove(uint64_t k) { return make(Kind::kRemove, k, false, false); }
	/* remove -- remove(k) that returned @r. */
	static SetOp remove(uint64_t k, bool r) { return make(Kind::kRemove, k, true, r); }
	/* contains -- contains(k), invoked. */
	static SetOp contains(uint64_t k) { return make(Kind::kContains, k, false, false); }
	/* contains -- contains(k) that returned @r. */
	static SetOp contains(uint64_t k, bool r) { return make(Kind::kContains, k, true, r); }

private:
	static SetOp make(Kind kind, uint64_t k, bool returned, bool r)
	{
		SetOp op;
		op.kind = kind;
		op.returned = returned;
		op.key = k;
		op.result = r;
		return op;
	}
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

}  // namespace lincheck

#endif  // TESTS_LINCHECK_MODELS_H
