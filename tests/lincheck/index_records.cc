// SPDX-License-Identifier: BSD-3-Clause
/*
 * tests/lincheck/index_records.cc -- the index record files: writer and reader.
 */
#include "tests/lincheck/index_records.h"

#include <errno.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstring>
#include <numeric>

namespace lincheck {
namespace {

/* now -- CLOCK_MONOTONIC in ns */
uint64_t now()
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

/* checksum -- FNV-1a (64-bit) of the record's bytes before its check field */
uint64_t checksum(const IndexRecord &r)
{
	unsigned char bytes[offsetof(IndexRecord, check)];
	std::memcpy(bytes, &r, sizeof(bytes));
	uint64_t h = 0xcbf29ce484222325ULL;
	for (unsigned char b : bytes) {
		h ^= b;
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* record_status -- the record status of returned @op */
IndexRecordStatus record_status(const IndexOp &op)
{
	switch (op.status) {
	case IndexOp::Status::kOk:
		return IndexRecordStatus::kOk;
	case IndexOp::Status::kExists:
		return IndexRecordStatus::kExists;
	case IndexOp::Status::kAbsent:
		return IndexRecordStatus::kAbsent;
	case IndexOp::Status::kFound:
		return IndexRecordStatus::kFound;
	}
	return IndexRecordStatus::kInvoked;
}

/* legal_status -- can an op of kind @kind end with @status? */
bool legal_status(uint8_t kind, uint8_t status)
{
	auto k = static_cast<IndexOp::Kind>(kind);
	switch (static_cast<IndexRecordStatus>(status)) {
	case IndexRecordStatus::kInvoked:
	case IndexRecordStatus::kUnavailable:
		return true;
	case IndexRecordStatus::kOk:
		return k == IndexOp::Kind::kInsert || k == IndexOp::Kind::kRemove;
	case IndexRecordStatus::kExists:
		return k == IndexOp::Kind::kInsert;
	case IndexRecordStatus::kAbsent:
		return k == IndexOp::Kind::kRemove || k == IndexOp::Kind::kLookup;
	case IndexRecordStatus::kFound:
		return k == IndexOp::Kind::kLookup;
	}
	return false;  // no such status
}

/* validate -- "" if @r is a well-formed non-hole record, else the rule it breaks */
std::string validate(const IndexRecord &r)
{
	if (r.magic != kIndexRecordMagic)
		return "bad magic (not an index record file, or another version)";
	if (r.check != checksum(r))
		return "bad checksum";
	if (r.kind > static_cast<uint8_t>(IndexOp::Kind::kLookup))
		return "unknown kind " + std::to_string(r.kind);
	if (!legal_status(r.kind, r.status))
		return "status " + std::to_string(r.status) + " impossible for kind " + std::to_string(r.kind);
	bool pending = r.status == static_cast<uint8_t>(IndexRecordStatus::kInvoked);
	if (pending != (r.ret == UINT64_MAX))
		return pending ? "pending with a ret stamp" : "returned without a ret stamp";
	if (r.ret < r.call)
		return "ret stamp below call stamp";
	return std::string();
}

/* to_operation -- the history entry of valid record @r */
Operation<IndexOp> to_operation(const IndexRecord &r)
{
	Operation<IndexOp> o;
	o.op.kind = static_cast<IndexOp::Kind>(r.kind);
	o.op.key = r.key;
	o.op.loc = r.loc;
	o.call = r.call;
	o.thread = static_cast<int>(r.thread);
	switch (static_cast<IndexRecordStatus>(r.status)) {
	case IndexRecordStatus::kInvoked:
	case IndexRecordStatus::kUnavailable:  // may take effect at any time from call on, or never
		return o;
	case IndexRecordStatus::kOk:
		o.op.status = IndexOp::Status::kOk;
		break;
	case IndexRecordStatus::kExists:
		o.op.status = IndexOp::Status::kExists;
		break;
	case IndexRecordStatus::kAbsent:
		o.op.status = IndexOp::Status::kAbsent;
		break;
	case IndexRecordStatus::kFound:
		o.op.status = IndexOp::Status::kFound;
		break;
	}
	o.op.returned = true;
	o.op.found = r.found;
	o.ret = r.ret;
	return o;
}

/* read_file -- append the records of @path to @records; 0 or -errno/-EBADMSG */
int read_file(const std::string &path, std::vector<IndexRecord> *records, std::string *why)
{
	int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int err = errno;
		*why = path + ": " + std::strerror(err);
		return -err;
	}
	std::vector<char> bytes;
	char buf[16384];
	ssize_t n;
	while ((n = ::read(fd, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = errno;
			::close(fd);
			*why = path + ": " + std::strerror(err);
			return -err;
		}
		bytes.insert(bytes.end(), buf, buf + n);
	}
	::close(fd);
	if (bytes.size() % sizeof(IndexRecord) != 0) {
		*why = path + ": ends inside record " + std::to_string(bytes.size() / sizeof(IndexRecord));
		return -EBADMSG;
	}
	static const IndexRecord hole{};
	for (size_t i = 0; i < bytes.size() / sizeof(IndexRecord); i++) {
		IndexRecord r;
		std::memcpy(&r, &bytes[i * sizeof(r)], sizeof(r));
		if (std::memcmp(&r, &hole, sizeof(r)) == 0)
			continue;
		std::string bad = validate(r);
		if (!bad.empty()) {
			*why = path + ": record " + std::to_string(i) + ": " + bad;
			return -EBADMSG;
		}
		records->push_back(r);
	}
	return 0;
}

}  // namespace

IndexRecordWriter::~IndexRecordWriter()
{
	if (fd_ >= 0)
		::close(fd_);
}

int IndexRecordWriter::open(const std::string &path, uint32_t process)
{
	if (fd_ >= 0)
		return -EBUSY;
	int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	fd_ = fd;
	process_ = process;
	next_slot_.store(0, std::memory_order_relaxed);
	return 0;
}

int IndexRecordWriter::write_slot(uint64_t slot, IndexRecord *r)
{
	if (fd_ < 0)
		return -EBADF;
	r->check = checksum(*r);
	ssize_t n = ::pwrite(fd_, r, sizeof(*r), static_cast<off_t>(slot * sizeof(*r)));
	if (n < 0)
		return -errno;
	return n == sizeof(*r) ? 0 : -EIO;
}

int IndexRecordWriter::invoke(uint32_t thread, const IndexOp &op, Ticket *t)
{
	IndexRecord r{};
	r.magic = kIndexRecordMagic;
	r.process = process_;
	r.thread = thread;
	r.kind = static_cast<uint8_t>(op.kind);
	r.status = static_cast<uint8_t>(IndexRecordStatus::kInvoked);
	r.call = now();
	r.ret = UINT64_MAX;
	r.key = op.key;
	r.loc = op.loc;
	// Relaxed: the slot only has to be unique; the file orders nothing.
	uint64_t slot = next_slot_.fetch_add(1, std::memory_order_relaxed);
	int ret = write_slot(slot, &r);
	if (ret == 0)
		*t = Ticket{slot, r};
	return ret;
}

int IndexRecordWriter::complete(const Ticket &t, const IndexOp &op)
{
	assert(op.returned && static_cast<uint8_t>(op.kind) == t.record.kind &&
		op.key == t.record.key && op.loc == t.record.loc);
	IndexRecord r = t.record;
	r.ret = now();
	r.status = static_cast<uint8_t>(record_status(op));
	r.found = op.status == IndexOp::Status::kExists || op.status == IndexOp::Status::kFound
		? op.found : 0;
	return write_slot(t.slot, &r);
}

int IndexRecordWriter::unavailable(const Ticket &t)
{
	IndexRecord r = t.record;
	r.ret = now();
	r.status = static_cast<uint8_t>(IndexRecordStatus::kUnavailable);
	return write_slot(t.slot, &r);
}

int IndexRecordWriter::close()
{
	if (fd_ < 0)
		return -EBADF;
	int ret = ::close(fd_);
	fd_ = -1;
	return ret == 0 ? 0 : -errno;
}

int read_index_history(const std::vector<std::string> &paths, IndexHistory *out, std::string *why)
{
	std::string ignored;
	if (!why)
		why = &ignored;
	std::vector<IndexRecord> records;
	for (const std::string &path : paths) {
		int ret = read_file(path, &records, why);
		if (ret != 0)
			return ret;
	}
	std::vector<size_t> order(records.size());
	std::iota(order.begin(), order.end(), 0);
	std::stable_sort(order.begin(), order.end(),
		[&](size_t a, size_t b) { return records[a].call < records[b].call; });
	out->ops.clear();
	out->records.clear();
	for (size_t i : order) {
		out->ops.push_back(to_operation(records[i]));
		out->records.push_back(records[i]);
	}
	return 0;
}

}  // namespace lincheck
