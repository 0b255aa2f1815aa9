// SPDX-License-Identifier: BSD-3-Clause
/*
 * tests/lincheck/lincheck.h -- a linearizability checker and history recorder.
 *
 * DESIGN.md section 6 asks that every concurrent object be checked against a
 * sequential model on histories recorded from real runs. This is that checker
 * (C++17, for tests; include "tests/lincheck/lincheck.h", link
 * //tests/lincheck). A C++ checker rather than Porcupine (Go) keeps recording
 * and checking inside one gtest binary, with no export step.
 *
 * Algorithm: Wing & Gong's search with Lowe's improvements ("WGL"). The calls
 * and returns of a history form one doubly linked list ordered by time. The
 * search walks the list from its head; at a call it tries to linearize that
 * op now (the model must accept the op's recorded output from the current
 * state), and if so removes ("lifts") the call and its return from the list
 * and starts again from the head. Reaching a return means that op can no
 * longer be placed before its deadline, so the last choice is undone
 * ("unlifted") and the next candidate tried. Lowe's memoisation makes this
 * polynomial on realistic histories: a (set of linearized ops, model state)
 * pair already explored is never explored again, whatever order led to it.
 *
 * P-compositionality: linearizability is local, so a model may split a
 * history into independent sub-histories (per key of a set) that are checked
 * one by one; a history is linearizable iff each part is.
 *
 * Times are integers consistent with real time: Recorder's stamps from one
 * shared counter, or hand-written values in tests. Intervals are closed: an op
 * returning at t and an op invoked at t overlap.
 *
 * A model is a type with these members (see models.h for three of them):
 *
 *	using Op = ...;     // one operation: inputs and, once returned, outputs
 *	using State = ...;  // default-constructible, copyable, operator==
 *	State init() const;
 *	bool step(const State &s, const Op &op, State *next) const;
 *	size_t hash(const State &s) const;
 *	std::string describe(const Op &op) const;
 *	// optional:
 *	std::string describe_state(const State &s) const;
 *	std::vector<std::vector<size_t>> partition(
 *		const std::vector<lincheck::Operation<Op>> &history) const;
 *
 * step() returns true iff @op with its recorded output is legal from @s and
 * then stores the state after it in @next; it must be a pure function. An op
 * that never returned is passed exactly as given to Recorder::Handle::invoke(),
 * so an Op must be able to say "no output recorded" and step() must then
 * accept whatever output is legal (the shipped models keep a `returned` flag).
 * partition() returns groups of indices into @history that together hold
 * every index exactly once. The model is only read, from the checking thread.
 */
#ifndef TESTS_LINCHECK_LINCHECK_H
#define TESTS_LINCHECK_LINCHECK_H

#include <algorithm>
#include <atomic>
#include <cassert>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace lincheck {

/* The return time of an op that never returned (it may or may not have taken effect). */
inline constexpr uint64_t kPending = UINT64_MAX;

/* One entry of a history: an op, when it was invoked and when it returned. */
template <class Op>
struct Operation {
	Op op;
	uint64_t call = 0;
	uint64_t ret = kPending;  /* >= call, or kPending */
	int thread = 0;           /* only used in explanations */
};

/* Search limits for check(). The defaults suit unit tests. */
struct Options {
	/* Configurations (linearized set, state) one sub-history's search may
	 * remember, about (ops / 8 + 60) bytes each, so this bounds memory.
	 * Hitting it makes the result inconclusive. */
	uint64_t max_states = 1000000;
	/* Wall-clock budget of the whole check() call; zero means none. */
	std::chrono::milliseconds timeout{0};
	/* On failure, binary-search the shortest failing prefix of the failing
	 * sub-history (about log2(ops) more searches) so the explanation points
	 * at the op whose return makes the history impossible. */
	bool minimize = true;
};

/* What check() found. */
struct Result {
	bool ok = false;           /* linearizable; never true when a limit was hit */
	std::string explanation;   /* why not, or why inconclusive; empty when ok */
	size_t ops = 0;            /* ops in the history */
	uint64_t states_explored = 0;  /* configurations explored, all searches */
	bool timed_out_or_limit = false;  /* inconclusive: no verdict within limits */
};

namespace detail {

/* One op of a sub-history as the model-independent search sees it. */
struct Event {
	uint64_t call;
	uint64_t ret;  /* kPending: may be linearized anywhere after call, or not at all */
	int thread;
	size_t id;     /* index in the whole history, for explanations */
};

/*
 * The model as the search sees it, through dense state ids: the adaptor
 * below interns each distinct state once, so the memo holds small (bitset, id)
 * pairs, a state is hashed once per step (to intern it), and equal states
 * compare as equal ids. Type erasure also keeps the search out of the header.
 */
class Stepper {
public:
	virtual size_t init() = 0;
	virtual bool step(size_t state, size_t op, size_t *next) = 0;
	virtual std::string describe_op(size_t op) const = 0;
	virtual std::string describe_state(size_t state) const = 0;  /* "" if none */
protected:
	~Stepper() = default;
};

/* Checks one sub-history; @deadline is steady_clock time, or max() for none.
 * Adds to @states; returns 1 linearizable, 0 not (sets @why), -1 limit hit. */
int check_part(const std::vector<Event> &events, Stepper &stepper, const Options &options,
	std::chrono::steady_clock::time_point deadline, uint64_t *states, std::string *why);

template <class M, class = void>
struct has_partition : std::false_type {};
template <class M>
struct has_partition<M, std::void_t<decltype(std::declval<const M &>().partition(
	std::declval<const std::vector<Operation<typename M::Op>> &>()))>> : std::true_type {};

template <class M, class = void>
struct has_describe_state : std::false_type {};
template <class M>
struct has_describe_state<M, std::void_t<decltype(std::declval<const M &>().describe_state(
	std::declval<const typename M::State &>()))>> : std::true_type {};

template <class Model>
class ModelStepper final : public Stepper {
public:
	using Op = typename Model::Op;
	using State = typename Model::State;

	ModelStepper(const Model &model, std::vector<const Op *> ops)
		: model_(model), ops_(std::move(ops)), ids_(64, Hash{&model}) {}

	size_t init() override { return intern(model_.init()); }

	bool step(size_t state, size_t op, size_t *next) override
	{
		State after;
		if (!model_.step(*states_[state], *ops_[op], &after))
			return false;
		*next = intern(std::move(after));
		return true;
	}

	std::string describe_op(size_t op) const override { return model_.describe(*ops_[op]); }

	std::string describe_state(size_t state) const override
	{
		if constexpr (has_describe_state<Model>::value)
			return model_.describe_state(*states_[state]);
		else
			return std::string();
	}

private:
	struct Hash {
		const Model *model;
		size_t operator()(const State &s) const { return model->hash(s); }
	};

	size_t intern(State &&s)
	{
		auto ins = ids_.try_emplace(std::move(s), states_.size());
		if (ins.second)
			states_.push_back(&ins.first->first);  // map nodes never move
		return ins.first->second;
	}

	const Model &model_;
	std::vector<const Op *> ops_;
	std::unordered_map<State, size_t, Hash> ids_;
	std::vector<const State *> states_;
};

}  // namespace detail

/**
 * check -- is @history linearizable with respect to @model?
 *
 * @history may come from Recorder::history() or be written by hand, in any
 * order. Ops with ret == kPending may have taken effect or not. The result is
 * ok only when a linearization was found; on a limit or timeout it is
 * inconclusive (ok false, timed_out_or_limit true, explanation says so). A
 * malformed history (ret < call) is reported as not ok with the reason.
 *
 * Thread-safety: reentrant; @model and @history are only read.
 */
template <class Model>
Result check(const Model &model, const std::vector<Operation<typename Model::Op>> &history,
	const Options &options = Options())
{
	Result r;
	r.ops = history.size();
	for (size_t i = 0; i < history.size(); i++) {
		if (history[i].call == kPending || history[i].ret < history[i].call) {
			r.explanation = "malformed history: op " + std::to_string(i) +
				" returns before it is invoked";
			return r;
		}
	}
	std::vector<std::vector<size_t>> parts;
	if constexpr (detail::has_partition<Model>::value) {
		parts = model.partition(history);
		std::vector<char> seen(history.size(), 0);
		size_t covered = 0;
		for (const auto &p : parts)
			for (size_t i : p)
				if (i < seen.size() && !seen[i]++)
					covered++;
		if (covered != history.size()) {
			r.explanation = "model bug: partition() does not cover every op exactly once";
			return r;
		}
	} else {
		parts.emplace_back(history.size());
		for (size_t i = 0; i < history.size(); i++)
			parts[0][i] = i;
	}

	auto deadline = options.timeout.count() > 0
		? std::chrono::steady_clock::now() + options.timeout
		: std::chrono::steady_clock::time_point::max();
	std::string inconclusive;
	for (size_t p = 0; p < parts.size(); p++) {
		std::vector<detail::Event> events;
		std::vector<const typename Model::Op *> ops;
		for (size_t i : parts[p]) {
			const auto &h = history[i];
			events.push_back({h.call, h.ret, h.thread, i});
			ops.push_back(&h.op);
		}
		detail::ModelStepper<Model> stepper(model, std::move(ops));
		std::string why;
		int v = detail::check_part(events, stepper, options, deadline, &r.states_explored, &why);
		std::string where = parts.size() > 1
			? "sub-history " + std::to_string(p) + " of " + std::to_string(parts.size()) +
				" (" + std::to_string(events.size()) + " ops): "
			: std::string();
		if (v == 0) {  // a definite failure outranks any inconclusive part
			r.explanation = "not linearizable: " + where + why;
			r.timed_out_or_limit = false;
			return r;
		}
		if (v < 0 && inconclusive.empty())
			inconclusive = "inconclusive: " + where + why;
	}
	r.ok = inconclusive.empty();
	r.timed_out_or_limit = !r.ok;
	r.explanation = inconclusive;
	return r;
}

/**
 * Recorder -- records a history from many threads with low overhead.
 *
 * Each thread takes its own Handle and brackets every operation with
 * invoke() and complete(). Timestamps come from one shared counter, so "A
 * returned before B was invoked" in the history means A's operation really
 * finished before B's started. Ops are appended to per-thread vectors (no
 * lock, no shared writes apart from the counter) and merged by history().
 *
 * Thread-safety: handle(i) may be called from any thread; one Handle must be
 * used by one thread at a time. history() must not run concurrently with
 * invoke()/complete(); call it after joining the workers (the join orders
 * their appends before the read).
 * Ownership: the Recorder owns its handles; they live as long as it does.
 */
template <class Op>
class Recorder {
public:
	using Ticket = size_t;

	/* One thread's log. Aligned to its own cache lines so threads do not
	 * slow each other down through false sharing. */
	class alignas(64) Handle {
	public:
		/**
		 * invoke -- record that @op (inputs only) starts now.
		 * Takes the call timestamp (seq_cst fetch_add; pairs with the other
		 * threads' complete(): an op whose return stamp precedes this call
		 * stamp happens-before the operation that follows) and stores @op.
		 * Returns the ticket to pass to complete().
		 */
		Ticket invoke(const Op &op)
		{
			uint64_t now = clock_->fetch_add(1, std::memory_order_seq_cst);
			ops_.push_back(Operation<Op>{op, now, kPending, thread_});
			return ops_.size() - 1;
		}

		/**
		 * complete -- record that the op of @t returned, with its outputs.
		 * @op replaces the invoked op (same inputs plus outputs). The return
		 * timestamp is taken first (seq_cst, pairs with other threads'
		 * invoke()). An op never completed stays pending.
		 */
		void complete(Ticket t, const Op &op)
		{
			uint64_t now = clock_->fetch_add(1, std::memory_order_seq_cst);
			assert(t < ops_.size() && ops_[t].ret == kPending);
			ops_[t].op = op;
			ops_[t].ret = now;
		}

		/* complete -- as above for an op without outputs (a write). */
		void complete(Ticket t)
		{
			uint64_t now = clock_->fetch_add(1, std::memory_order_seq_cst);
			assert(t < ops_.size() && ops_[t].ret == kPending);
			ops_[t].ret = now;
		}

	private:
		friend class Recorder;
		std::atomic<uint64_t> *clock_ = nullptr;
		int thread_ = 0;
		std::vector<Operation<Op>> ops_;
	};

	/* Creates @threads handles, each with room for @reserve ops reserved so
	 * recording does not reallocate in the middle of a workload. */
	explicit Recorder(size_t threads, size_t reserve = 0)
	{
		for (size_t i = 0; i < threads; i++) {
			handles_.push_back(std::make_unique<Handle>());
			handles_[i]->clock_ = &clock_;
			handles_[i]->thread_ = static_cast<int>(i);
			handles_[i]->ops_.reserve(reserve);
		}
	}

	/* handle -- the log of thread @i (< threads); see the class comment. */
	Handle &handle(size_t i) { return *handles_.at(i); }

	/* history -- every op recorded so far, all threads, ordered by call time. */
	std::vector<Operation<Op>> history() const
	{
		std::vector<Operation<Op>> all;
		for (const auto &h : handles_)
			all.insert(all.end(), h->ops_.begin(), h->ops_.end());
		std::sort(all.begin(), all.end(),
			[](const Operation<Op> &a, const Operation<Op> &b) { return a.call < b.call; });
		return all;
	}

private:
	std::atomic<uint64_t> clock_{0};
	std::vector<std::unique_ptr<Handle>> handles_;
};

}  // namespace lincheck

#endif  // TESTS_LINCHECK_LINCHECK_H
