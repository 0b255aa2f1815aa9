// SPDX-License-Identifier: BSD-3-Clause
/*
 * tests/lincheck/lincheck.cc -- the model-independent WGL search.
 *
 * Invariants of search():
 *  - the list holds, in time order, the call node of every op not yet
 *    linearized and the return node of every such op that is required (it
 *    returned by the cut); optional ops (pending, or returning after the cut)
 *    have no return node, so nothing forces them in and the search succeeds
 *    as soon as no required op is left;
 *  - only calls before the first return node are candidates: an op whose
 *    return precedes another op's call must be linearized first;
 *  - `stack` holds the linearized ops in order with the state before each, so
 *    lifts are undone in reverse order, which is what makes the O(1) unlink
 *    and relink of the doubly linked list correct;
 *  - `memo` holds every (linearized set, state) reached; reaching one again
 *    cannot lead anywhere new, because what remains to be done depends only
 *    on that pair.
 */
#include "tests/lincheck/lincheck.h"

#include <algorithm>
#include <unordered_set>

namespace lincheck {
namespace detail {
namespace {

/* mix -- splitmix64's finaliser: spreads op and state ids over 64 bits. */
uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

struct Node {
	Node *prev = nullptr;
	Node *next = nullptr;
	Node *ret = nullptr;  /* a call's return node; null for an optional op */
	size_t op = 0;
	bool is_call = false;
};

/* lift -- unlink a call and its return node (they stay linked to their neighbours). */
void lift(Node *call)
{
	call->prev->next = call->next;
	if (call->next)
		call->next->prev = call->prev;
	if (Node *r = call->ret) {
		r->prev->next = r->next;
		if (r->next)
			r->next->prev = r->prev;
	}
}

/* unlift -- undo lift(call); valid only for the most recent lift still in force. */
void unlift(Node *call)
{
	if (Node *r = call->ret) {
		r->prev->next = r;
		if (r->next)
			r->next->prev = r;
	}
	call->prev->next = call;
	if (call->next)
		call->next->prev = call;
}

/*
 * Memo -- the set of explored (linearized bitset, state id) pairs.
 * Bitsets are appended to one arena rather than kept in a vector each: an
 * entry then costs its bits plus a hash-set node, with no allocation per entry.
 */
class Memo {
public:
	explicit Memo(size_t words)
		: set_(1024, KeyHash(), KeyEq{&arena_, words}) {}

	/* insert -- true if the pair is new (and now remembered). */
	bool insert(const std::vector<uint64_t> &bits, uint64_t hash, size_t state)
	{
		size_t offset = arena_.size();
		arena_.insert(arena_.end(), bits.begin(), bits.end());
		if (set_.insert(Key{hash ^ mix(state), state, offset}).second)
			return true;
		arena_.resize(offset);
		return false;
	}

	size_t size() const { return set_.size(); }

private:
	struct Key {
		uint64_t hash;
		size_t state;
		size_t offset;
	};
	struct KeyHash {
		size_t operator()(const Key &k) const { return static_cast<size_t>(k.hash); }
	};
	struct KeyEq {
		const std::vector<uint64_t> *arena;
		size_t words;
		bool operator()(const Key &a, const Key &b) const
		{
			return a.hash == b.hash && a.state == b.state &&
				std::equal(arena->begin() + a.offset, arena->begin() + a.offset + words,
					arena->begin() + b.offset);
		}
	};

	std::vector<uint64_t> arena_;
	std::unordered_set<Key, KeyHash, KeyEq> set_;
};

/* The deepest point at which the search got stuck: what the explanation shows. */
struct Stuck {
	std::vector<size_t> order;      /* linearized ops, in order */
	std::vector<size_t> after;      /* state id after each of them */
	size_t blocked = 0;             /* the op whose return was reached */
	size_t state = 0;               /* state id at that point */
	std::vector<size_t> candidates; /* ops that could have gone next */
	bool found = false;
};

enum Verdict { kNo = 0, kYes = 1, kLimit = -1 };

/*
 * search -- WGL over the ops of @ev invoked by @cut; ops returning after @cut
 * (and pending ops) are optional. Fills @stuck on failure.
 */
Verdict search(const std::vector<Event> &ev, uint64_t cut, Stepper &st, const Options &o,
	std::chrono::steady_clock::time_point deadline, uint64_t *states, Stuck *stuck)
{
	struct Stamp {
		uint64_t t;
		bool is_ret;  /* calls sort before returns at equal times: closed intervals */
		size_t op;
		bool operator<(const Stamp &b) const
		{
			return t != b.t ? t < b.t : is_ret != b.is_ret ? b.is_ret : op < b.op;
		}
	};
	std::vector<Stamp> stamps;
	for (size_t i = 0; i < ev.size(); i++) {
		if (ev[i].call > cut)
			continue;
		stamps.push_back({ev[i].call, false, i});
		if (ev[i].ret != kPending && ev[i].ret <= cut)
			stamps.push_back({ev[i].ret, true, i});
	}
	std::sort(stamps.begin(), stamps.end());

	std::vector<Node> nodes(stamps.size() + 1);  // nodes[0] is the head sentinel
	std::vector<Node *> call_of(ev.size(), nullptr);
	size_t required = 0;
	for (size_t k = 0; k < stamps.size(); k++) {
		Node *n = &nodes[k + 1];
		n->op = stamps[k].op;
		n->is_call = !stamps[k].is_ret;
		n->prev = &nodes[k];
		nodes[k].next = n;
		if (n->is_call) {
			call_of[n->op] = n;
		} else {
			call_of[n->op]->ret = n;
			required++;
		}
	}

	Node *head = &nodes[0];
	std::vector<uint64_t> bits((ev.size() + 63) / 64, 0);
	uint64_t hash = 0;  // Zobrist hash of bits: XOR of mix(op) over set bits
	Memo memo(bits.size());
	struct Frame {
		Node *call;
		size_t before;
	};
	std::vector<Frame> stack;
	size_t state = st.init();
	Node *entry = head->next;
	uint64_t iterations = 0;

	while (required > 0) {
		if ((++iterations & 1023) == 0 && std::chrono::steady_clock::now() >= deadline)
			return kLimit;
		if (entry != nullptr && entry->is_call) {
			size_t op = entry->op, next;
			// An optional op that leaves the state as it is (a pending
			// read) never needs to be linearized: nothing waits for it.
			if (st.step(state, op, &next) && (entry->ret || next != state)) {
				bits[op / 64] |= 1ULL << (op % 64);
				if (memo.insert(bits, hash ^ mix(op), next)) {
					if (memo.size() > o.max_states)
						return kLimit;
					++*states;
					hash ^= mix(op);
					stack.push_back({entry, state});
					state = next;
					lift(entry);
					if (entry->ret)
						required--;
					entry = head->next;
					continue;
				}
				bits[op / 64] &= ~(1ULL << (op % 64));
			}
			entry = entry->next;
			continue;
		}
		// A return (entry cannot run off the end while a return node is left,
		// but treat that like a return anyway): its op missed its deadline.
		if (entry != nullptr && (!stuck->found || stack.size() > stuck->order.size())) {
			stuck->found = true;
			stuck->blocked = entry->op;
			stuck->state = state;
			stuck->order.clear();
			stuck->after.clear();
			for (size_t k = 0; k < stack.size(); k++) {
				stuck->order.push_back(stack[k].call->op);
				stuck->after.push_back(k + 1 < stack.size() ? stack[k + 1].before : state);
			}
			stuck->candidates.clear();
			for (Node *n = head->next; n != entry; n = n->next)
				stuck->candidates.push_back(n->op);
		}
		if (stack.empty())
			return kNo;
		Frame f = stack.back();
		stack.pop_back();
		state = f.before;
		size_t op = f.call->op;
		bits[op / 64] &= ~(1ULL << (op % 64));
		hash ^= mix(op);
		unlift(f.call);
		if (f.call->ret)
			required++;
		entry = f.call->next;
	}
	return kYes;
}

/* label -- "op #12 (thread 1, [30, 41]) read(0) -> 5" */
std::string label(const std::vector<Event> &ev, const Stepper &st, size_t op)
{
	const Event &e = ev[op];
	return "op #" + std::to_string(e.id) + " (thread " + std::to_string(e.thread) + ", [" +
		std::to_string(e.call) + ", " +
		(e.ret == kPending ? std::string("pending") : std::to_string(e.ret)) + "]) " +
		st.describe_op(op);
}

/* explain -- the failure report for a search that got stuck as @s. */
std::string explain(const std::vector<Event> &ev, const Stepper &st, uint64_t cut,
	bool cut_known, bool shortest, const Stuck &s)
{
	const size_t kShow = 20;  // a longer list buries the point of failure
	std::string out;
	if (cut_known) {
		size_t in = 0;
		for (const Event &e : ev)
			in += e.call <= cut;
		out += std::string(shortest ? "the shortest" : "a") + " failing prefix is the " +
			std::to_string(in) + " ops invoked by time " + std::to_string(cut) +
			" (ops still running then may or may not have taken effect); it fails once";
		const char *sep = " ";
		for (size_t i = 0; i < ev.size(); i++) {
			if (ev[i].ret == cut) {
				out += sep + label(ev, st, i);
				sep = ", ";
			}
		}
		out += " returns\n";
	}
	out += "longest partial linearization, " + std::to_string(s.order.size()) + " ops:\n";
	size_t from = s.order.size() > kShow ? s.order.size() - kShow : 0;
	if (from > 0)
		out += "  ... " + std::to_string(from) + " earlier ops\n";
	for (size_t k = from; k < s.order.size(); k++) {
		std::string after = st.describe_state(s.after[k]);
		out += "  " + std::to_string(k + 1) + ". " + label(ev, st, s.order[k]) +
			(after.empty() ? "" : "  => " + after) + "\n";
	}
	std::string now = st.describe_state(s.state);
	out += "then " + label(ev, st, s.blocked) + " cannot be linearized before it returns: " +
		(now.empty() ? "" : "from state " + now + ", ") +
		"each candidate is illegal or leads only to dead ends\ncandidates:\n";
	for (size_t k = 0; k < s.candidates.size() && k < kShow; k++)
		out += "  " + label(ev, st, s.candidates[k]) + "\n";
	if (s.candidates.size() > kShow)
		out += "  ... " + std::to_string(s.candidates.size() - kShow) + " more\n";
	return out;
}

}  // namespace

int check_part(const std::vector<Event> &events, Stepper &stepper, const Options &options,
	std::chrono::steady_clock::time_point deadline, uint64_t *states, std::string *why)
{
	auto limit = [&]() {
		*why = std::chrono::steady_clock::now() >= deadline
			? "timed out after " + std::to_string(options.timeout.count()) + " ms"
			: "search hit max_states = " + std::to_string(options.max_states);
	};
	Stuck stuck;
	Verdict v = search(events, kPending, stepper, options, deadline, states, &stuck);
	if (v == kLimit)
		limit();
	if (v != kNo)
		return v;

	// Prefixes fail monotonically (a linearization of a history, cut before
	// the first op invoked after t, linearizes the prefix up to t), so binary
	// search over return times finds the shortest failing one. A probe that
	// hits a limit counts as passing: the answer is then still a failing
	// prefix, perhaps not the shortest.
	std::vector<uint64_t> rets;
	for (const Event &e : events)
		if (e.ret != kPending)
			rets.push_back(e.ret);
	std::sort(rets.begin(), rets.end());
	rets.erase(std::unique(rets.begin(), rets.end()), rets.end());
	bool cut_known = options.minimize && !rets.empty();
	size_t lo = 0, hi = rets.empty() ? 0 : rets.size() - 1;  // rets[hi] fails: same as all
	while (cut_known && lo < hi && std::chrono::steady_clock::now() < deadline) {
		size_t mid = lo + (hi - lo) / 2;
		Stuck probe;
		if (search(events, rets[mid], stepper, options, deadline, states, &probe) == kNo) {
			hi = mid;
			stuck = std::move(probe);
		} else {
			lo = mid + 1;
		}
	}
	*why = explain(events, stepper, cut_known ? rets[hi] : kPending, cut_known, lo >= hi, stuck);
	return kNo;
}

}  // namespace detail
}  // namespace lincheck
