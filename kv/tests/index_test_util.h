// SPDX-License-Identifier: BSD-3-Clause
// kv/tests/index_test_util.h -- words, replies and a model of acceptor
// states for the index tests: every state one acceptor of a slot's stage 1
// can be in, and which values a full state has chosen by Fast Paxos's
// definition.
#ifndef KV_TESTS_INDEX_TEST_UTIL_H
#define KV_TESTS_INDEX_TEST_UTIL_H

#include <algorithm>
#include <cstdint>
#include <functional>
#include <set>
#include <vector>

extern "C" {
#include "kv/src/index/analyse.h"
#include "kv/src/index/word.h"
}

namespace kvixtest {

constexpr unsigned kGen = 7;

inline uint64_t C(unsigned stage, bool frz, unsigned fp, uint64_t loc)
{
	return kv_ixw_make(KV_IXW_C, kGen, kv_ixw_body(stage, frz, fp, loc));
}

inline uint64_t F(unsigned stage, bool frz, unsigned fp, uint64_t loc)
{
	return kv_ixw_make(KV_IXW_F, kGen, kv_ixw_body(stage, frz, fp, loc));
}

inline kv_ix_reply Reply(uint64_t w)
{
	return kv_ix_reply{w, false, 0, 0};
}

inline kv_ix_reply Promise(unsigned stage, uint32_t round, unsigned cid, uint32_t acc, uint64_t body)
{
	return kv_ix_reply{kv_ixw_make_p(kGen, stage, round, cid, 1), true, acc, body};
}

// The two values the model proposes.
inline uint64_t Value(int v)
{
	return v == 0 ? kv_ixw_body(1, false, 3, 4) : kv_ixw_body(1, false, 5, 6);
}

// One acceptor's state for stage 1, values a and b: untouched (C(0)), fast
// acceptance, a promise at a ballot with its record's acceptance, or the
// committed value.
struct Acceptor {
	kv_ix_reply reply;
	int fast = -1;     // value fast-accepted (0 a, 1 b), or -1
	int classic = -1;  // value accepted at a classic ballot, or -1
	uint32_t ballot = 0;
	int committed = -1;
};

inline std::vector<Acceptor> AcceptorStates(unsigned max_round)
{
	std::vector<Acceptor> s;
	s.push_back({Reply(C(0, false, 0, 0))});
	for (int v = 0; v < 2; v++) {
		Acceptor a{Reply(kv_ixw_make(KV_IXW_F, kGen, Value(v)))};
		a.fast = v;
		s.push_back(a);
		Acceptor c{Reply(kv_ixw_make(KV_IXW_C, kGen, Value(v)))};
		c.committed = v;
		s.push_back(c);
	}
	for (uint32_t round = 1; round <= max_round; round++) {
		const unsigned cid = 1;
		s.push_back({Promise(1, round, cid, KV_IX_ACC_NONE, 0)});
		for (int v = 0; v < 2; v++) {
			Acceptor f{Promise(1, round, cid, KV_IX_ACC_FAST, Value(v))};
			f.fast = v;
			s.push_back(f);
			for (uint32_t acc_round = 1; acc_round <= round; acc_round++) {
				uint32_t ballot = acc_round << KV_IXW_CID_BITS | cid;
				Acceptor c{Promise(1, round, cid, ballot + 2, Value(v))};
				c.classic = v;
				c.ballot = ballot;
				s.push_back(c);
			}
		}
	}
	return s;
}

// The values chosen in a full state, by Fast Paxos's definition: q_f
// acceptances in the fast round, or f+1 at one classic ballot. A commit
// word C(v) replaced its acceptor's acceptance of v, so it counts towards
// either quorum. *@reachable is false for states that hold a commit word
// of a value not chosen (commit words are written only after a choice).
inline std::set<int> Chosen(const std::vector<const Acceptor *> &st, unsigned n, bool *reachable)
{
	std::set<int> chosen;
	unsigned qf = kv__ix_fast_quorum(n), qc = n / 2 + 1;
	*reachable = true;
	for (int v = 0; v < 2; v++) {
		unsigned fast = 0, commits = 0, best_classic = 0;
		for (const Acceptor *a : st) {
			fast += a->fast == v;
			commits += a->committed == v;
			if (a->classic == v) {
				unsigned same = 0;
				for (const Acceptor *b : st)
					same += b->classic == v && b->ballot == a->ballot;
				best_classic = std::max(best_classic, same);
			}
		}
		if (fast + commits >= qf || best_classic + commits >= qc)
			chosen.insert(v);
		else if (commits > 0)
			*reachable = false;
	}
	// A ballot has one coordinator, which proposes one value.
	for (const Acceptor *a : st)
		for (const Acceptor *b : st)
			if (a->classic >= 0 && b->classic >= 0 && a->ballot == b->ballot &&
			    a->classic != b->classic)
				*reachable = false;
	// Once v is chosen, every classic round after the choice proposes v
	// (that is what the coordinator's rule guarantees), so a classic
	// acceptance of another value must come from a ballot below the one
	// that chose v; after a fast choice there is none.
	if (chosen.size() == 1) {
		int v = *chosen.begin();
		uint32_t choosing = UINT32_MAX; // lowest classic ballot with a quorum of v
		unsigned fast = 0, commits = 0;
		for (const Acceptor *a : st) {
			fast += a->fast == v;
			commits += a->committed == v;
		}
		if (fast + commits < qf) {
			for (const Acceptor *a : st) {
				if (a->classic != v)
					continue;
				unsigned same = 0;
				for (const Acceptor *b : st)
					same += b->classic == v && b->ballot == a->ballot;
				if (same + commits >= qc)
					choosing = std::min(choosing, a->ballot);
			}
		} else {
			choosing = 0;
		}
		for (const Acceptor *a : st)
			if (a->classic >= 0 && a->classic != v && a->ballot > choosing)
				*reachable = false;
	}
	return chosen;
}

// ForEachQuorum -- call @fn(states, chosen, mask) for every reachable state
// of @n acceptors (AcceptorStates(@max_round) each) with at most one value
// chosen, and every set @mask of at least f+1 of them (bit k: acceptor k).
template <class Fn>
void ForEachQuorum(unsigned n, unsigned max_round, Fn fn)
{
	std::vector<Acceptor> states = AcceptorStates(max_round);
	std::vector<const Acceptor *> st(n);
	std::function<void(unsigned)> each = [&](unsigned i) {
		if (i < n) {
			for (const Acceptor &a : states) {
				st[i] = &a;
				each(i + 1);
			}
			return;
		}
		bool reachable;
		std::set<int> chosen = Chosen(st, n, &reachable);
		if (!reachable || chosen.size() > 1)
			return; // agreement rules such states out
		for (unsigned mask = 0; mask < (1u << n); mask++)
			if ((unsigned)__builtin_popcount(mask) >= n / 2 + 1)
				fn(st, chosen, mask);
	};
	each(0);
}

} // namespace kvixtest

#endif // KV_TESTS_INDEX_TEST_UTIL_H
