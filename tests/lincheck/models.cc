// SPDX-License-Identifier: BSD-3-Clause
/*
 * tests/lincheck/models.cc -- the word-array and set models.
 */
#include "tests/lincheck/models.h"

#include <algorithm>
#include <map>

namespace lincheck {
namespace {

/* hash_words -- splitmix64 folded over the words: cheap, and every bit of
 * every word reaches every bit of the result. */
size_t hash_words(const std::vector<uint64_t> &w)
{
	uint64_t h = w.size();
	for (uint64_t x : w) {
		h += x + 0x9e3779b97f4a7c15ULL;
		h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
		h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
		h ^= h >> 31;
	}
	return static_cast<size_t>(h);
}

/* list -- "a, b, c" */
std::string list(const std::vector<uint64_t> &w)
{
	std::string out;
	for (size_t i = 0; i < w.size(); i++)
		out += (i ? ", " : "") + std::to_string(w[i]);
	return out;
}

std::string result(bool returned, bool r)
{
	return returned ? (r ? " -> true" : " -> false") : " -> ?";
}

}  // namespace

bool WordArrayModel::step(const State &s, const Op &op, State *next) const
{
	switch (op.kind) {
	case WordOp::Kind::kRead:
		if (op.index >= s.size() || (op.returned && s[op.index] != op.value))
			return false;
		*next = s;
		return true;
	case WordOp::Kind::kWrite:
		if (op.index >= s.size())
			return false;
		*next = s;
		(*next)[op.index] = op.value;
		return true;
	case WordOp::Kind::kMcas: {
		bool match = true;
		for (const McasEntry &e : op.entries) {
			if (e.index >= s.size())
				return false;
			match = match && s[e.index] == e.expected;
		}
		if (op.returned && op.success != match)
			return false;
		*next = s;
		if (match)
			for (const McasEntry &e : op.entries)
				(*next)[e.index] = e.desired;
		return true;
	}
	}
	return false;
}

size_t WordArrayModel::hash(const State &s) const
{
	return hash_words(s);
}

std::string WordArrayModel::describe(const Op &op) const
{
	switch (op.kind) {
	case WordOp::Kind::kRead:
		return "read(" + std::to_string(op.index) + ") -> " +
			(op.returned ? std::to_string(op.value) : "?");
	case WordOp::Kind::kWrite:
		return "write(" + std::to_string(op.index) + ", " + std::to_string(op.value) + ")";
	case WordOp::Kind::kMcas: {
		std::string out = "mcas{";
		for (size_t i = 0; i < op.entries.size(); i++)
			out += (i ? ", " : "") + std::to_string(op.entries[i].index) + ": " +
				std::to_string(op.entries[i].expected) + "->" +
				std::to_string(op.entries[i].desired);
		return out + "}" + result(op.returned, op.success);
	}
	}
	return "?";
}

std::string WordArrayModel::describe_state(const State &s) const
{
	return "[" + list(s) + "]";
}

SetModel::SetModel(std::vector<uint64_t> initial) : initial_(std::move(initial))
{
	std::sort(initial_.begin(), initial_.end());
	initial_.erase(std::unique(initial_.begin(), initial_.end()), initial_.end());
}

bool SetModel::step(const State &s, const Op &op, State *next) const
{
	auto it = std::lower_bound(s.begin(), s.end(), op.key);
	bool present = it != s.end() && *it == op.key;
	bool r = op.kind == SetOp::Kind::kInsert ? !present : present;
	if (op.returned && op.result != r)
		return false;
	*next = s;
	if (op.kind == SetOp::Kind::kInsert && !present)
		next->insert(next->begin() + (it - s.begin()), op.key);
	else if (op.kind == SetOp::Kind::kRemove && present)
		next->erase(next->begin() + (it - s.begin()));
	return true;
}

size_t SetModel::hash(const State &s) const
{
	return hash_words(s);
}

std::string SetModel::describe(const Op &op) const
{
	static const char *const names[] = {"insert", "remove", "contains"};
	return std::string(names[static_cast<int>(op.kind)]) + "(" + std::to_string(op.key) + ")" +
		result(op.returned, op.result);
}

std::string SetModel::describe_state(const State &s) const
{
	return "{" + list(s) + "}";
}

std::vector<std::vector<size_t>> SetModel::partition(const std::vector<Operation<Op>> &history) const
{
	std::map<uint64_t, std::vector<size_t>> by_key;
	for (size_t i = 0; i < history.size(); i++)
		by_key[history[i].op.key].push_back(i);
	std::vector<std::vector<size_t>> parts;
	for (auto &kv : by_key)
		parts.push_back(std::move(kv.second));
	return parts;
}

}  // namespace lincheck
