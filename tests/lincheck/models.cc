// SPDX-License-Identifier: BSD-3-Clause
/*
 * tests/lincheck/models.cc -- the word-array, set, counter, queue, map, index and
 * store models.
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

/* output -- " -> @text", or " -> ?" when not returned */
std::string output(bool returned, const std::string &text)
{
	return " -> " + (returned ? text : "?");
}

std::string result(bool returned, bool r)
{
	return output(returned, r ? "true" : "false");
}

/* " -> v", " -> empty" (or @none), or " -> ?" when not returned. */
std::string found_value(bool returned, bool found, uint64_t v, const char *none)
{
	return output(returned, found ? std::to_string(v) : none);
}

/* status_text -- "OK", "EXISTS", "ABSENT" or "FOUND", then "(@found)" if
 * @names_found: the outputs of IndexOp and KvOp, whose Status enums list
 * them in this order */
template <class Status>
std::string status_text(Status status, bool names_found, uint64_t found)
{
	static const char *const names[] = {"OK", "EXISTS", "ABSENT", "FOUND"};
	std::string out = names[static_cast<int>(status)];
	if (names_found)
		out += "(" + std::to_string(found) + ")";
	return out;
}

/* partition_by_key -- the indices of @history's ops grouped by op.key, in
 * key order: the partition() of models whose ops on different keys commute */
template <class Op>
std::vector<std::vector<size_t>> partition_by_key(const std::vector<Operation<Op>> &history)
{
	std::map<uint64_t, std::vector<size_t>> by_key;
	for (size_t i = 0; i < history.size(); i++)
		by_key[history[i].op.key].push_back(i);
	std::vector<std::vector<size_t>> parts;
	for (auto &kv : by_key)
		parts.push_back(std::move(kv.second));
	return parts;
}

using Pairs = std::vector<std::pair<uint64_t, uint64_t>>;

/* sorted_pairs -- @pairs by increasing key, the last pair of a repeated key
 * kept: the initial state of the map and index models */
Pairs sorted_pairs(const Pairs &pairs)
{
	std::map<uint64_t, uint64_t> m;
	for (const auto &kv : pairs)
		m[kv.first] = kv.second;
	return Pairs(m.begin(), m.end());
}

/* find_key -- the first pair of sorted @s whose key is not below @key */
Pairs::const_iterator find_key(const Pairs &s, uint64_t key)
{
	return std::lower_bound(s.begin(), s.end(), key,
		[](const std::pair<uint64_t, uint64_t> &kv, uint64_t k) { return kv.first < k; });
}

/* hash_pairs -- hash_words() of the pairs' words, key then value */
size_t hash_pairs(const Pairs &s)
{
	std::vector<uint64_t> flat;
	flat.reserve(2 * s.size());
	for (const auto &kv : s) {
		flat.push_back(kv.first);
		flat.push_back(kv.second);
	}
	return hash_words(flat);
}

/* pairs_text -- "{k: v, k: v}" */
std::string pairs_text(const Pairs &s)
{
	std::string out;
	for (size_t i = 0; i < s.size(); i++)
		out += (i ? ", " : "") + std::to_string(s[i].first) + ": " + std::to_string(s[i].second);
	return "{" + out + "}";
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
		return "read(" + std::to_string(op.index) + ")" +
			output(op.returned, std::to_string(op.value));
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
	return partition_by_key(history);
}

bool CounterModel::step(const State &s, const Op &op, State *next) const
{
	State after = s;
	if (op.kind == CounterOp::Kind::kAdd)  // wraps modulo 2^64 without signed overflow
		after = static_cast<int64_t>(static_cast<uint64_t>(s) + static_cast<uint64_t>(op.delta));
	if (op.returned && op.value != after)
		return false;
	*next = after;
	return true;
}

size_t CounterModel::hash(const State &s) const
{
	return hash_words({static_cast<uint64_t>(s)});
}

std::string CounterModel::describe(const Op &op) const
{
	std::string out = op.kind == CounterOp::Kind::kAdd
		? "add(" + std::to_string(op.delta) + ")" : std::string("get()");
	return out + output(op.returned, std::to_string(op.value));
}

std::string CounterModel::describe_state(const State &s) const
{
	return std::to_string(s);
}

bool QueueModel::step(const State &s, const Op &op, State *next) const
{
	switch (op.kind) {
	case QueueOp::Kind::kEnqueue:
		*next = s;
		next->push_back(op.value);
		return true;
	case QueueOp::Kind::kDequeue:
	case QueueOp::Kind::kFront:
		if (op.returned && (op.found != !s.empty() || (op.found && op.value != s.front())))
			return false;
		if (op.kind == QueueOp::Kind::kDequeue && !s.empty())
			next->assign(s.begin() + 1, s.end());
		else
			*next = s;
		return true;
	case QueueOp::Kind::kSize:
		if (op.returned && op.count != s.size())
			return false;
		*next = s;
		return true;
	}
	return false;
}

size_t QueueModel::hash(const State &s) const
{
	return hash_words(s);
}

std::string QueueModel::describe(const Op &op) const
{
	switch (op.kind) {
	case QueueOp::Kind::kEnqueue:
		return "enqueue(" + std::to_string(op.value) + ")";
	case QueueOp::Kind::kDequeue:
		return "dequeue()" + found_value(op.returned, op.found, op.value, "empty");
	case QueueOp::Kind::kFront:
		return "front()" + found_value(op.returned, op.found, op.value, "empty");
	case QueueOp::Kind::kSize:
		return "size()" + output(op.returned, std::to_string(op.count));
	}
	return "?";
}

std::string QueueModel::describe_state(const State &s) const
{
	return "[" + list(s) + "]";  // front first
}

MapModel::MapModel(std::vector<std::pair<uint64_t, uint64_t>> initial)
	: initial_(sorted_pairs(initial))
{
}

bool MapModel::step(const State &s, const Op &op, State *next) const
{
	auto it = find_key(s, op.key);
	bool present = it != s.end() && it->first == op.key;
	if (op.returned && op.present != present)
		return false;
	size_t pos = static_cast<size_t>(it - s.begin());
	switch (op.kind) {
	case MapOp::Kind::kPut:
		*next = s;
		if (present)
			(*next)[pos].second = op.value;
		else
			next->insert(next->begin() + pos, {op.key, op.value});
		return true;
	case MapOp::Kind::kRemove:
		*next = s;
		if (present)
			next->erase(next->begin() + pos);
		return true;
	case MapOp::Kind::kGet:
		if (op.returned && present && op.value != it->second)
			return false;
		*next = s;
		return true;
	}
	return false;
}

size_t MapModel::hash(const State &s) const
{
	return hash_pairs(s);
}

std::string MapModel::describe(const Op &op) const
{
	std::string k = std::to_string(op.key);
	switch (op.kind) {
	case MapOp::Kind::kPut:
		return "put(" + k + ", " + std::to_string(op.value) + ")" + result(op.returned, op.present);
	case MapOp::Kind::kRemove:
		return "remove(" + k + ")" + result(op.returned, op.present);
	case MapOp::Kind::kGet:
		return "get(" + k + ")" + found_value(op.returned, op.present, op.value, "absent");
	}
	return "?";
}

std::string MapModel::describe_state(const State &s) const
{
	return pairs_text(s);
}

std::vector<std::vector<size_t>> MapModel::partition(const std::vector<Operation<Op>> &history) const
{
	return partition_by_key(history);
}

IndexModel::IndexModel(std::vector<std::pair<uint64_t, uint64_t>> initial)
	: initial_(sorted_pairs(initial))
{
}

bool IndexModel::step(const State &s, const Op &op, State *next) const
{
	using Status = IndexOp::Status;
	auto it = find_key(s, op.key);
	bool present = it != s.end() && it->first == op.key;
	bool changes = false;  // the op maps or unmaps op.key
	Status status = Status::kAbsent;
	switch (op.kind) {
	case IndexOp::Kind::kInsert:
		changes = !present;
		status = present ? Status::kExists : Status::kOk;
		break;
	case IndexOp::Kind::kRemove:
		changes = present && it->second == op.loc;
		status = changes ? Status::kOk : Status::kAbsent;
		break;
	case IndexOp::Kind::kLookup:
		status = present ? Status::kFound : Status::kAbsent;
		break;
	}
	bool names_loc = status == Status::kExists || status == Status::kFound;
	if (op.returned && (op.status != status || (names_loc && op.found != it->second)))
		return false;
	*next = s;
	size_t pos = static_cast<size_t>(it - s.begin());
	if (changes && op.kind == IndexOp::Kind::kInsert)
		next->insert(next->begin() + pos, {op.key, op.loc});
	else if (changes)
		next->erase(next->begin() + pos);
	return true;
}

size_t IndexModel::hash(const State &s) const
{
	return hash_pairs(s);
}

std::string IndexModel::describe(const Op &op) const
{
	std::string in = std::to_string(op.key);
	if (op.kind != IndexOp::Kind::kLookup)
		in += ", " + std::to_string(op.loc);
	static const char *const names[] = {"insert", "remove", "lookup"};
	return std::string(names[static_cast<int>(op.kind)]) + "(" + in + ")" +
		output(op.returned, status_text(op.status,
			op.status == IndexOp::Status::kExists || op.status == IndexOp::Status::kFound, op.found));
}

std::string IndexModel::describe_state(const State &s) const
{
	return pairs_text(s);
}

std::vector<std::vector<size_t>> IndexModel::partition(const std::vector<Operation<Op>> &history) const
{
	return partition_by_key(history);
}

KvModel::KvModel(std::vector<std::pair<uint64_t, uint64_t>> initial)
{
	for (const auto &kv : sorted_pairs(initial))
		initial_.push_back({kv.first, kv.second, true});
}

bool KvModel::step(const State &s, const Op &op, State *next) const
{
	using Status = KvOp::Status;
	auto it = std::lower_bound(s.begin(), s.end(), op.key,
		[](const KvEntry &e, uint64_t k) { return e.key < k; });
	bool has = it != s.end() && it->key == op.key;
	bool present = has && it->present;
	bool write = false;   // the key then holds op.value
	bool remove = false;  // the key then is absent, emptied by a delete OK
	Status status = Status::kAbsent;
	switch (op.kind) {
	case KvOp::Kind::kInsert:
		write = !present;
		status = present ? Status::kExists : Status::kOk;
		break;
	case KvOp::Kind::kUpdate:
		write = present;
		status = present ? Status::kOk : Status::kAbsent;
		break;
	case KvOp::Kind::kPut:
		write = true;
		status = Status::kOk;
		break;
	case KvOp::Kind::kGet:
		status = present ? Status::kFound : Status::kAbsent;
		break;
	case KvOp::Kind::kDelete:
		remove = present;
		status = present ? Status::kOk : Status::kAbsent;
		// The leniency: after a delete OK, another delete may also say OK
		// (kv_delete); either answer leaves the state as it is.
		if (has && !present && op.returned && op.status == Status::kOk)
			status = Status::kOk;
		break;
	}
	if (op.returned && (op.status != status || (status == Status::kFound && op.found != it->value)))
		return false;
	*next = s;
	auto pos = next->begin() + (it - s.begin());
	KvEntry after{op.key, write ? op.value : 0, write};
	if (!write && !remove)
		return true;
	if (has)
		*pos = after;
	else
		next->insert(pos, after);
	return true;
}

size_t KvModel::hash(const State &s) const
{
	std::vector<uint64_t> flat;
	flat.reserve(3 * s.size());
	for (const KvEntry &e : s) {
		flat.push_back(e.key);
		flat.push_back(e.value);
		flat.push_back(e.present);
	}
	return hash_words(flat);
}

std::string KvModel::describe(const Op &op) const
{
	std::string in = std::to_string(op.key);
	if (op.kind == KvOp::Kind::kInsert || op.kind == KvOp::Kind::kUpdate || op.kind == KvOp::Kind::kPut)
		in += ", " + std::to_string(op.value);
	static const char *const names[] = {"insert", "update", "put", "get", "delete"};
	return std::string(names[static_cast<int>(op.kind)]) + "(" + in + ")" +
		output(op.returned, status_text(op.status, op.status == KvOp::Status::kFound, op.found));
}

std::string KvModel::describe_state(const State &s) const
{
	std::string out;
	for (size_t i = 0; i < s.size(); i++)
		out += (i ? ", " : "") + std::to_string(s[i].key) + ": " +
			(s[i].present ? std::to_string(s[i].value) : "deleted");
	return "{" + out + "}";
}

std::vector<std::vector<size_t>> KvModel::partition(const std::vector<Operation<Op>> &history) const
{
	return partition_by_key(history);
}

}  // namespace lincheck
