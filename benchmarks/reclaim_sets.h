// SPDX-License-Identifier: BSD-3-Clause
// benchmarks/reclaim_sets.h -- what reclaim_bench and reclaim_robust share:
// the three lock-free sets of ds/ (Harris-Michael list, Fraser skip list,
// Natarajan-Mittal BST) behind one table of functions, their sizes in the
// thesis's evaluation (Zablotchi's EPFL thesis, 2020, sect. 6.7), the
// domain configuration every scheme gets, the fill and the operation mix.
//
// Sizes. Initial size S (the README reading of the thesis: list 2000, skip
// list 20000, BST 2,000,000) drawn uniformly from the key range [0, 2S), so
// that with as many inserts as removes the size stays near S. Overridable
// for smoke runs: RECLAIM_BENCH_LIST_SIZE, RECLAIM_BENCH_SKIPLIST_SIZE,
// RECLAIM_BENCH_BST_SIZE (at most 2^28).
//
// Domain. reclaim_config_init() of the scheme, with max_threads 16 (8
// workers, the filler, slack) and hazards_per_thread = the structure's K.
// The other parameters are the library's defaults (Q, T, epsilon; R and C,
// which grow with the threads registered so far); RECLAIM_BENCH_Q and
// RECLAIM_BENCH_T_US override Q and T for diagnosis.
#ifndef BENCHMARKS_RECLAIM_SETS_H
#define BENCHMARKS_RECLAIM_SETS_H

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <reclaim/reclaim.h>

#include <ds/hmlist.h>
#include <ds/nmbst.h>
#include <ds/skiplist.h>

#include "benchmarks/bench_util.h"

namespace rsets {

enum class Structure { kList, kSkipList, kBst };

// Every scheme of reclaim.h, "none" (the leaky baseline) first.
inline const enum reclaim_scheme kSchemes[] = {
	RECLAIM_NONE, RECLAIM_QSBR, RECLAIM_EBR, RECLAIM_HP,
	RECLAIM_CADENCE, RECLAIM_QSENSE, RECLAIM_URCU_QSBR,
};

// One set behind untyped functions (the ds_* functions, unchanged).
struct SetOps {
	const char *name;       // "list", "skiplist", "bst"
	unsigned hazards;       // K: hazard slots per thread
	unsigned retire_per_op; // m: nodes one remove retires (without helping)
	uint64_t thesis_size;   // initial size in the thesis
	const char *size_env;   // environment override of the initial size
	int (*make)(reclaim_domain *d, void **out);
	int (*del)(void *s);
	int (*insert)(void *s, reclaim_thread *t, uint64_t key);
	int (*remove)(void *s, reclaim_thread *t, uint64_t key);
	int (*contains)(void *s, reclaim_thread *t, uint64_t key);
	size_t (*size)(const void *s);
	int (*check)(const void *s, char *buf, size_t buflen);
};

// The skip list's level count: the thesis's levelmax for a key range of
// 40000 (the library's default).
constexpr unsigned kSkipLevels = DS_SKIPLIST_DEFAULT_LEVELS;

inline const SetOps &Ops(Structure st)
{
	using L = ds_hmlist;
	using S = ds_skiplist;
	using B = ds_nmbst;
	static const SetOps list = {
		"list", DS_HMLIST_HAZARDS, 1, 2000, "RECLAIM_BENCH_LIST_SIZE",
		+[](reclaim_domain *d, void **out) {
			L *l = nullptr;
			int ret = ds_hmlist_new(&l, d, nullptr, nullptr);
			*out = l;
			return ret;
		},
		+[](void *s) {
			L *p = static_cast<L *>(s);
			return ds_hmlist_delete(&p);
		},
		+[](void *s, reclaim_thread *t, uint64_t k) {
			return ds_hmlist_insert(static_cast<L *>(s), t, k);
		},
		+[](void *s, reclaim_thread *t, uint64_t k) {
			return ds_hmlist_remove(static_cast<L *>(s), t, k);
		},
		+[](void *s, reclaim_thread *t, uint64_t k) {
			return ds_hmlist_contains(static_cast<L *>(s), t, k);
		},
		+[](const void *s) { return ds_hmlist_size(static_cast<const L *>(s)); },
		+[](const void *s, char *buf, size_t n) {
			return ds_hmlist_check(static_cast<const L *>(s), buf, n);
		},
	};
	static const SetOps skip = {
		"skiplist", DS_SKIPLIST_HAZARDS(kSkipLevels), 1, 20000, "RECLAIM_BENCH_SKIPLIST_SIZE",
		+[](reclaim_domain *d, void **out) {
			S *l = nullptr;
			int ret = ds_skiplist_new(&l, d, kSkipLevels, nullptr, nullptr);
			*out = l;
			return ret;
		},
		+[](void *s) {
			S *p = static_cast<S *>(s);
			return ds_skiplist_delete(&p);
		},
		+[](void *s, reclaim_thread *t, uint64_t k) {
			return ds_skiplist_insert(static_cast<S *>(s), t, k);
		},
		+[](void *s, reclaim_thread *t, uint64_t k) {
			return ds_skiplist_remove(static_cast<S *>(s), t, k);
		},
		+[](void *s, reclaim_thread *t, uint64_t k) {
			return ds_skiplist_contains(static_cast<S *>(s), t, k);
		},
		+[](const void *s) { return ds_skiplist_size(static_cast<const S *>(s)); },
		+[](const void *s, char *buf, size_t n) {
			return ds_skiplist_check(static_cast<const S *>(s), buf, n);
		},
	};
	static const SetOps bst = {
		"bst", DS_NMBST_HAZARDS, 2, 2000000, "RECLAIM_BENCH_BST_SIZE",
		+[](reclaim_domain *d, void **out) {
			B *b = nullptr;
			int ret = ds_nmbst_new(&b, d, nullptr, nullptr);
			*out = b;
			return ret;
		},
		+[](void *s) {
			B *p = static_cast<B *>(s);
			return ds_nmbst_delete(&p);
		},
		+[](void *s, reclaim_thread *t, uint64_t k) {
			return ds_nmbst_insert(static_cast<B *>(s), t, k);
		},
		+[](void *s, reclaim_thread *t, uint64_t k) {
			return ds_nmbst_remove(static_cast<B *>(s), t, k);
		},
		+[](void *s, reclaim_thread *t, uint64_t k) {
			return ds_nmbst_contains(static_cast<B *>(s), t, k);
		},
		+[](const void *s) { return ds_nmbst_size(static_cast<const B *>(s)); },
		+[](const void *s, char *buf, size_t n) {
			return ds_nmbst_check(static_cast<const B *>(s), buf, n);
		},
	};
	return st == Structure::kList ? list : st == Structure::kSkipList ? skip : bst;
}

// 0 and *@out for "list", "skiplist" or "bst"; -EINVAL otherwise.
inline int ParseStructure(const char *name, Structure *out)
{
	for (Structure st : { Structure::kList, Structure::kSkipList, Structure::kBst })
		if (std::strcmp(name, Ops(st).name) == 0) {
			*out = st;
			return 0;
		}
	return -EINVAL;
}

// The initial size of @st: its environment override or the thesis's.
inline uint64_t InitialSize(Structure st)
{
	const SetOps &o = Ops(st);
	return bench::EnvUnsigned(o.size_env, static_cast<unsigned>(o.thesis_size), 1u << 28);
}

// The configuration of a domain of @scheme for a set needing @hazards slots.
inline reclaim_config DomainConfig(enum reclaim_scheme scheme, unsigned hazards)
{
	reclaim_config c;
	reclaim_config_init(&c, scheme);
	c.max_threads = 16;
	c.hazards_per_thread = hazards;
	c.quiescence_threshold = bench::EnvUnsigned("RECLAIM_BENCH_Q", c.quiescence_threshold);
	c.rooster_interval_us = bench::EnvUnsigned("RECLAIM_BENCH_T_US", c.rooster_interval_us,
		1u << 30);
	return c;
}

// "" or "@what: strerror(-@ret)".
inline std::string Err(int ret, const std::string &what)
{
	return ret >= 0 ? std::string() : what + ": " + std::strerror(-ret);
}

// A domain of @scheme and an empty @st set on it, then filled by the
// calling thread (registered for the fill only) with @size distinct keys
// drawn uniformly from [0, 2 @size). Owns both; the set is deleted before
// the domain.
class Instance {
 public:
	Instance() = default;
	Instance(const Instance &) = delete;
	Instance &operator=(const Instance &) = delete;
	~Instance() { Close(); }

	// "" or what failed.
	std::string Open(Structure st, enum reclaim_scheme scheme, uint64_t size)
	{
		if (size == 0 || size > (1ull << 30))
			return "initial size " + std::to_string(size) + " not in 1..2^30";
		ops_ = &Ops(st);
		range_ = 2 * size;
		reclaim_config c = DomainConfig(scheme, ops_->hazards);
		int ret = reclaim_domain_new(&d_, &c);
		if (ret != 0)
			return Err(ret, "reclaim_domain_new");
		ret = ops_->make(d_, &s_);
		if (ret != 0)
			return Err(ret, std::string(ops_->name) + " create");
		reclaim_thread *t = nullptr;
		ret = reclaim_thread_register(d_, &t);
		if (ret != 0)
			return Err(ret, "reclaim_thread_register (fill)");
		// A uniform random @size-subset of the range in random order: the
		// first @size places of a partial Fisher-Yates shuffle (no insert
		// is wasted on a key already drawn, 28 % of them otherwise).
		bench::Rng rng(size * 7919 + 17);
		std::vector<uint32_t> keys(range_);
		for (uint64_t i = 0; i < range_; i++)
			keys[i] = static_cast<uint32_t>(i);
		for (uint64_t i = 0; i < size && ret == 0; i++) {
			std::swap(keys[i], keys[i + rng.Below(range_ - i)]);
			ret = ops_->insert(s_, t, keys[i]);
			ret = ret == 1 ? 0 : ret < 0 ? ret : -EEXIST;
		}
		reclaim_thread_unregister(&t);
		if (ret < 0)
			return Err(ret, "fill insert");
		return "";
	}

	void Close()
	{
		if (s_ != nullptr)
			ops_->del(s_);
		s_ = nullptr;
		if (d_ != nullptr)
			reclaim_domain_delete(&d_);
		d_ = nullptr;
	}

	const SetOps &ops() const { return *ops_; }
	reclaim_domain *domain() const { return d_; }
	void *set() const { return s_; }
	uint64_t range() const { return range_; }

	// "" if check() passes and the size is @expect, else what is wrong;
	// the size in *@size (0 if check() failed). Quiescent only (as the ds
	// check functions).
	std::string Check(uint64_t expect, uint64_t *size = nullptr) const
	{
		char buf[256] = "";
		uint64_t dummy;
		if (size == nullptr)
			size = &dummy;
		*size = 0;
		int ret = ops_->check(s_, buf, sizeof(buf));
		if (ret != 0)
			return std::string(ops_->name) + " check: " + std::strerror(-ret) + ": " + buf;
		size_t n = ops_->size(s_);
		*size = n;
		if (n != expect)
			return std::string(ops_->name) + " size " + std::to_string(n) +
				" != expected " + std::to_string(expect) +
				" (lost or doubled update)";
		return "";
	}

 private:
	const SetOps *ops_ = nullptr;
	reclaim_domain *d_ = nullptr;
	void *s_ = nullptr;
	uint64_t range_ = 0;
};

// What one thread's operations did.
struct OpCounts {
	uint64_t ops = 0, inserted = 0, removed = 0, errors = 0;
	int last_error = 0;
};

// One operation of the thesis's mix on @s: a key uniform in [0, @range),
// 50 % contains, 25 % insert, 25 % remove (two bits of the same draw).
inline void MixedOp(const SetOps &o, void *s, reclaim_thread *t, uint64_t range,
	bench::Rng *rng, OpCounts *c)
{
	uint64_t r = rng->Next();
	uint64_t key = (r >> 32) % range;
	int ret;

	switch ((r >> 8) & 3) {
	case 0:
		ret = o.insert(s, t, key);
		c->inserted += ret == 1;
		break;
	case 1:
		ret = o.remove(s, t, key);
		c->removed += ret == 1;
		break;
	default:
		ret = o.contains(s, t, key);
		break;
	}
	c->ops++;
	if (ret < 0) {
		c->errors++;
		c->last_error = ret;
	}
}

} // namespace rsets

#endif
