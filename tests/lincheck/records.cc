// SPDX-License-Identifier: BSD-3-Clause
/*
 * tests/lincheck/records.cc -- the record files: writer, reader, and the
 * codecs of IndexOp and KvOp.
 */
#include "tests/lincheck/records.h"

#include <errno.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
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
uint64_t checksum(const Record &r)
{
	unsigned char bytes[offsetof(Record, check)];
	std::memcpy(bytes, &r, sizeof(bytes));
	uint64_t h = 0xcbf29ce484222325ULL;
	for (unsigned char b : bytes) {
		h ^= b;
		h *= 0x100000001b3ULL;
	}
	return h;
}

/*
 * Both models' Status enums list OK, EXISTS, ABSENT, FOUND in RecordStatus's
 * order, one below it (RecordStatus 0 is "no status yet"), so one pair of
 * conversions serves both codecs.
 */
template <class Status>
constexpr bool same_order()
{
	return static_cast<int>(Status::kOk) + 1 == static_cast<int>(RecordStatus::kOk) &&
		static_cast<int>(Status::kExists) + 1 == static_cast<int>(RecordStatus::kExists) &&
		static_cast<int>(Status::kAbsent) + 1 == static_cast<int>(RecordStatus::kAbsent) &&
		static_cast<int>(Status::kFound) + 1 == static_cast<int>(RecordStatus::kFound);
}
static_assert(same_order<IndexOp::Status>(), "IndexOp::Status follows RecordStatus");
static_assert(same_order<KvOp::Status>(), "KvOp::Status follows RecordStatus");

/* record_status -- the record status of an op that returned @s */
template <class Status>
uint8_t record_status(Status s)
{
	return static_cast<uint8_t>(static_cast<int>(s) + 1);
}

/* op_status -- the op status of a record that returned @s (OK..FOUND) */
template <class Status>
Status op_status(uint8_t s)
{
	return static_cast<Status>(s - 1);
}

/* answered -- whether record status @s is an answer (it has outputs) */
bool answered(uint8_t s)
{
	return s != static_cast<uint8_t>(RecordStatus::kInvoked) &&
		s != static_cast<uint8_t>(RecordStatus::kUnavailable);
}

/* validate -- "" if @r is a well-formed non-hole record, else the rule it breaks */
std::string validate(const Record &r, const RecordFormat &f)
{
	if (r.magic != f.magic)
		return std::string("bad magic (not ") + f.name + " records, or another version)";
	if (r.check != checksum(r))
		return "bad checksum";
	if (r.kind >= f.kinds)
		return "unknown kind " + std::to_string(r.kind);
	if (r.status > static_cast<uint8_t>(RecordStatus::kUnavailable) ||
		(answered(r.status) && !f.legal(r.kind, static_cast<RecordStatus>(r.status))))
		return "status " + std::to_string(r.status) + " impossible for kind " + std::to_string(r.kind);
	bool pending = r.status == static_cast<uint8_t>(RecordStatus::kInvoked);
	if (pending != (r.ret == UINT64_MAX))
		return pending ? "pending with a ret stamp" : "returned without a ret stamp";
	if (r.ret < r.call)
		return "ret stamp below call stamp";
	return std::string();
}

/* read_file -- append the valid records of @path to @records; 0 or -errno/-EBADMSG */
int read_file(const std::string &path, const RecordFormat &f, std::vector<Record> *records,
	std::string *why)
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
	if (bytes.size() % sizeof(Record) != 0) {
		*why = path + ": ends inside record " + std::to_string(bytes.size() / sizeof(Record));
		return -EBADMSG;
	}
	static const Record hole{};
	for (size_t i = 0; i < bytes.size() / sizeof(Record); i++) {
		Record r;
		std::memcpy(&r, &bytes[i * sizeof(r)], sizeof(r));
		if (std::memcmp(&r, &hole, sizeof(r)) == 0)
			continue;
		std::string bad = validate(r, f);
		if (!bad.empty()) {
			*why = path + ": record " + std::to_string(i) + ": " + bad;
			return -EBADMSG;
		}
		records->push_back(r);
	}
	return 0;
}

/* index_legal -- RecordFormat::legal of IndexOp: as IndexModel */
bool index_legal(uint8_t kind, RecordStatus returned)
{
	switch (static_cast<IndexOp::Kind>(kind)) {
	case IndexOp::Kind::kInsert:
		return returned == RecordStatus::kOk || returned == RecordStatus::kExists;
	case IndexOp::Kind::kRemove:
		return returned == RecordStatus::kOk || returned == RecordStatus::kAbsent;
	case IndexOp::Kind::kLookup:
		return returned == RecordStatus::kFound || returned == RecordStatus::kAbsent;
	}
	return false;  // no such kind
}

/* kv_legal -- RecordFormat::legal of KvOp: as KvModel */
bool kv_legal(uint8_t kind, RecordStatus returned)
{
	switch (static_cast<KvOp::Kind>(kind)) {
	case KvOp::Kind::kInsert:
		return returned == RecordStatus::kOk || returned == RecordStatus::kExists;
	case KvOp::Kind::kUpdate:
	case KvOp::Kind::kDelete:
		return returned == RecordStatus::kOk || returned == RecordStatus::kAbsent;
	case KvOp::Kind::kPut:
		return returned == RecordStatus::kOk;
	case KvOp::Kind::kGet:
		return returned == RecordStatus::kFound || returned == RecordStatus::kAbsent;
	}
	return false;  // no such kind
}

}  // namespace

const RecordFormat RecordCodec<IndexOp>::format = {0x3158494c, "index", 3, index_legal};

void RecordCodec<IndexOp>::invoked(const IndexOp &op, Record *r)
{
	r->kind = static_cast<uint8_t>(op.kind);
	r->key = op.key;
	r->arg = op.loc;
}

void RecordCodec<IndexOp>::returned(const IndexOp &op, Record *r)
{
	r->status = record_status(op.status);
	r->out = op.status == IndexOp::Status::kExists || op.status == IndexOp::Status::kFound
		? op.found : 0;
}

IndexOp RecordCodec<IndexOp>::decode(const Record &r)
{
	IndexOp op;
	op.kind = static_cast<IndexOp::Kind>(r.kind);
	op.key = r.key;
	op.loc = r.arg;
	if (answered(r.status)) {  // else the invoked form: may take effect any time from call on, or never
		op.returned = true;
		op.status = op_status<IndexOp::Status>(r.status);
		op.found = r.out;
	}
	return op;
}

const RecordFormat RecordCodec<KvOp>::format = {0x31564b4c, "kv", 5, kv_legal};

void RecordCodec<KvOp>::invoked(const KvOp &op, Record *r)
{
	r->kind = static_cast<uint8_t>(op.kind);
	r->key = op.key;
	r->arg = op.value;
}

void RecordCodec<KvOp>::returned(const KvOp &op, Record *r)
{
	r->status = record_status(op.status);
	r->out = op.status == KvOp::Status::kFound ? op.found : 0;
}

KvOp RecordCodec<KvOp>::decode(const Record &r)
{
	KvOp op;
	op.kind = static_cast<KvOp::Kind>(r.kind);
	op.key = r.key;
	op.value = r.arg;
	if (answered(r.status)) {  // else the invoked form, as IndexOp's
		op.returned = true;
		op.status = op_status<KvOp::Status>(r.status);
		op.found = r.out;
	}
	return op;
}

RecordFile::~RecordFile()
{
	if (fd_ >= 0)
		::close(fd_);
}

int RecordFile::open(const std::string &path, uint32_t process)
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

int RecordFile::write_slot(uint64_t slot, Record *r)
{
	if (fd_ < 0)
		return -EBADF;
	r->check = checksum(*r);
	ssize_t n = ::pwrite(fd_, r, sizeof(*r), static_cast<off_t>(slot * sizeof(*r)));
	if (n < 0)
		return -errno;
	return n == sizeof(*r) ? 0 : -EIO;
}

int RecordFile::invoke_record(uint32_t magic, uint32_t thread, Record r, Ticket *t)
{
	r.magic = magic;
	r.process = process_;
	r.thread = thread;
	r.status = static_cast<uint8_t>(RecordStatus::kInvoked);
	r.call = now();
	r.ret = UINT64_MAX;
	// Relaxed: the slot only has to be unique; the file orders nothing.
	uint64_t slot = next_slot_.fetch_add(1, std::memory_order_relaxed);
	int ret = write_slot(slot, &r);
	if (ret == 0)
		*t = Ticket{slot, r};
	return ret;
}

int RecordFile::complete_record(uint64_t slot, Record r)
{
	r.ret = now();
	return write_slot(slot, &r);
}

int RecordFile::unavailable(const Ticket &t)
{
	Record r = t.record;
	r.status = static_cast<uint8_t>(RecordStatus::kUnavailable);
	return complete_record(t.slot, r);
}

int RecordFile::close()
{
	if (fd_ < 0)
		return -EBADF;
	int ret = ::close(fd_);
	fd_ = -1;
	return ret == 0 ? 0 : -errno;
}

int read_records(const std::vector<std::string> &paths, const RecordFormat &f,
	std::vector<Record> *out, std::string *why)
{
	std::string ignored;
	if (!why)
		why = &ignored;
	std::vector<Record> records;
	for (const std::string &path : paths) {
		int ret = read_file(path, f, &records, why);
		if (ret != 0)
			return ret;
	}
	std::vector<size_t> order(records.size());
	std::iota(order.begin(), order.end(), 0);
	std::stable_sort(order.begin(), order.end(),
		[&](size_t a, size_t b) { return records[a].call < records[b].call; });
	out->clear();
	for (size_t i : order)
		out->push_back(records[i]);
	return 0;
}

}  // namespace lincheck
