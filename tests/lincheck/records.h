// SPDX-License-Identifier: BSD-3-Clause
/*
 * tests/lincheck/records.h -- histories from several client processes: a
 * record file format, its writer and its reader, shared by the models whose
 * ops fit one record (IndexModel: kv/'s key index; KvModel: the store).
 *
 * Files rather than a Recorder because the clients of one kv/ run are
 * separate processes that share no memory, and a client that crashes must
 * still leave its unfinished op behind. Each process writes its own file;
 * the checking process reads them all into one history for
 * lincheck::check(IndexModel(), ...) or lincheck::check(KvModel(), ...).
 *
 * Format, version 1. A file is a sequence of 64-byte records, one per op, in
 * the host's byte order (the files are read on the host that wrote them:
 * their CLOCK_MONOTONIC stamps mean nothing anywhere else):
 *
 *	offset size field
 *	 0     4    magic    the model's: 0x3158494c "LIX1" (IndexOp),
 *	                     0x31564b4c "LKV1" (KvOp), as a hex dump shows them
 *	 4     4    process  the writer's id, given to RecordWriter::open()
 *	 8     4    thread   the caller's id within its process, given to invoke()
 *	12     1    kind     the op's Kind: IndexOp 0 insert, 1 remove, 2 lookup;
 *	                     KvOp 0 insert, 1 update, 2 put, 3 get, 4 delete
 *	13     1    status   RecordStatus: 0 invoked (pending), 1 OK, 2 EXISTS,
 *	                     3 ABSENT, 4 FOUND, 5 UNAVAILABLE
 *	14     2    zero
 *	16     8    call     CLOCK_MONOTONIC ns, taken before the op started
 *	24     8    ret      CLOCK_MONOTONIC ns, taken after it returned;
 *	                     UINT64_MAX while pending
 *	32     8    key      the key id
 *	40     8    arg      the op's other input: IndexOp insert, remove: the
 *	                     location; KvOp insert, update, put: the value id;
 *	                     else 0
 *	48     8    out      IndexOp EXISTS, FOUND: the location returned; KvOp
 *	                     FOUND: the value id returned; else 0
 *	56     8    check    FNV-1a (64-bit) of bytes 0..55
 *
 * The magic says which model's ops a file holds, so a reader for one model
 * rejects the other's files. Which statuses a kind can end with is the
 * model's (read_history()).
 *
 * Life of a record: invoke() stamps call and writes the record, pending, to
 * the next free slot before the op starts; complete() or unavailable()
 * stamps ret and rewrites the whole record in place. A client that dies in
 * the middle of an op thus leaves it pending, which is what it is: it may or
 * may not have taken effect. Records survive the death of their process
 * (they are in the page cache once pwrite(2) returns) but not of the host,
 * which would end the clock's meaning anyway. A record lies within one page
 * (64-byte slots), and the kernel copies such a write at once, so a dying
 * process leaves the old or the new record, never a mix; the checksum
 * rejects what else a file may hold (another format, a torn sector). An
 * all-zero slot is a hole: a thread took the slot and died before writing
 * it, before its op began. The reader skips it.
 *
 * Why CLOCK_MONOTONIC: every process of a host reads the same clock and it
 * is never stepped, so an op whose ret stamp is below another's call stamp
 * really returned before the other started. Equal stamps overlap (lincheck.h).
 *
 * UNAVAILABLE: the reader turns it into a pending op (the invoked form, ret
 * kPending), because the index and the store promise "an unavailable error,
 * never a wrong answer" and an op that reported it may still take effect,
 * even after it returned (IndexOp). The record keeps the status and ret for
 * diagnosis.
 */
#ifndef TESTS_LINCHECK_RECORDS_H
#define TESTS_LINCHECK_RECORDS_H

#include <atomic>
#include <cassert>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/lincheck/lincheck.h"
#include "tests/lincheck/models.h"

namespace lincheck {

/* Record::status: what the op returned, if anything. */
enum class RecordStatus : uint8_t {
	kInvoked = 0,      /* no response: not yet, or its client died (pending) */
	kOk = 1,
	kExists = 2,
	kAbsent = 3,
	kFound = 4,        /* out holds what was found */
	kUnavailable = 5,  /* any op: checked as pending */
};

/* One record of the file format above, field for field. */
struct Record {
	uint32_t magic;
	uint32_t process;
	uint32_t thread;
	uint8_t kind;
	uint8_t status;
	uint16_t zero;
	uint64_t call;
	uint64_t ret;
	uint64_t key;
	uint64_t arg;
	uint64_t out;
	uint64_t check;
};
static_assert(sizeof(Record) == 64, "the format's record size");

/* What sets one model's record files apart (RecordCodec<Op>::format). */
struct RecordFormat {
	uint32_t magic;
	const char *name;  /* in read errors: "index", "kv" */
	uint8_t kinds;     /* the op's Kind values are 0..kinds-1 */
	/* legal -- can an op of @kind end with answer @returned (OK..FOUND)? */
	bool (*legal)(uint8_t kind, RecordStatus returned);
};

/*
 * RecordCodec<Op> -- how one model's ops map onto records; specialised for
 * IndexOp and KvOp (records.cc). Its members:
 *
 *	static const RecordFormat format;
 *	static void invoked(const Op &op, Record *r);   // sets kind, key, arg
 *	static void returned(const Op &op, Record *r);  // sets status, out
 *	static Op decode(const Record &r);  // the op of valid @r; the invoked
 *	                                    // form when pending or UNAVAILABLE
 */
template <class Op>
struct RecordCodec;

template <>
struct RecordCodec<IndexOp> {
	static const RecordFormat format;
	static void invoked(const IndexOp &op, Record *r);
	static void returned(const IndexOp &op, Record *r);
	static IndexOp decode(const Record &r);
};

template <>
struct RecordCodec<KvOp> {
	static const RecordFormat format;
	static void invoked(const KvOp &op, Record *r);
	static void returned(const KvOp &op, Record *r);
	static KvOp decode(const Record &r);
};

/*
 * RecordFile -- the model-independent part of a writer: one process's
 * record file, its slots and stamps. Use it through RecordWriter<Op>.
 *
 * Thread-safety: as RecordWriter's.
 */
class RecordFile {
public:
	/* What complete() and unavailable() need: the slot invoke() wrote and
	 * its record. A value: each in-flight op keeps its own. */
	struct Ticket {
		uint64_t slot = 0;
		Record record{};
	};

	RecordFile() = default;
	/* Closes the file if open (errors ignored; call close() to see them). */
	~RecordFile();
	RecordFile(const RecordFile &) = delete;
	RecordFile &operator=(const RecordFile &) = delete;

	/**
	 * open -- create @path for the records of process @process.
	 *
	 * The file must not exist (O_EXCL), so two processes can never write
	 * one file by mistake. @process is any id the run chooses (a client
	 * number, getpid()); the reader only reports it.
	 *
	 * Returns 0, or -errno of open(2) (-EEXIST: @path exists), or -EBUSY
	 * if this writer is already open.
	 */
	int open(const std::string &path, uint32_t process);

	/**
	 * unavailable -- record that the op of @t returned UNAVAILABLE.
	 *
	 * The reader checks it as pending (see the top of this file). Takes
	 * the ret stamp, then rewrites the record in place. Returns 0, -errno
	 * of pwrite(2), -EIO on a short write, or -EBADF if not open.
	 */
	int unavailable(const Ticket &t);

	/* close -- close the file. Returns 0, -errno of close(2), or -EBADF if
	 * not open. Records already written stay valid whatever it returns. */
	int close();

protected:
	/* invoke_record -- stamp call in @r (kind, key and arg filled), add
	 * magic, process and @thread, and write it pending to a fresh slot. */
	int invoke_record(uint32_t magic, uint32_t thread, Record r, Ticket *t);
	/* complete_record -- stamp ret in @r (status and out filled) and
	 * rewrite slot @slot. */
	int complete_record(uint64_t slot, Record r);

private:
	int write_slot(uint64_t slot, Record *r);

	int fd_ = -1;
	uint32_t process_ = 0;
	std::atomic<uint64_t> next_slot_{0};
};

/*
 * RecordWriter<Op> -- appends one process's ops of one model to its record
 * file (open(), unavailable() and close(): RecordFile).
 *
 * Bracket every op with invoke() (just before the op) and complete() or
 * unavailable() (just after it returns); an op never completed stays
 * pending, as a crash leaves it. Every call writes its record with one
 * pwrite(2) before it returns. A failed invoke() means the op is not in the
 * history, so do not run it; stop the run instead. A failed complete() or
 * unavailable() leaves the op pending (or, after a short write, a record
 * the reader rejects).
 *
 * Thread-safety: invoke(), complete() and unavailable() may be called from
 * any number of threads of the process at once (each takes its slot from an
 * atomic counter and writes only that slot); open() and close() must not
 * run concurrently with anything else. One writer per file: open it in the
 * process that writes it (after fork(), never before), and give each process
 * its own path.
 */
template <class Op>
class RecordWriter : public RecordFile {
public:
	/**
	 * invoke -- record that @op (its inputs) starts now.
	 *
	 * Takes the call stamp, then writes the pending record, so the stamp
	 * precedes the op and the record exists before the op can have any
	 * effect. @thread identifies the caller within the process in the
	 * history. On success fills @t for complete() or unavailable().
	 *
	 * Returns 0, -errno of pwrite(2), -EIO on a short write, or -EBADF if
	 * the writer is not open.
	 */
	int invoke(uint32_t thread, const Op &op, Ticket *t)
	{
		Record r{};
		RecordCodec<Op>::invoked(op, &r);
		return invoke_record(RecordCodec<Op>::format.magic, thread, r, t);
	}

	/**
	 * complete -- record that the op of @t returned @op.
	 *
	 * @op is the returned form (IndexOp::insert_ok(), ...) of the op passed
	 * to invoke(): same kind and inputs (asserted). Takes the ret stamp,
	 * then rewrites the record in place. Returns as invoke().
	 */
	int complete(const Ticket &t, const Op &op)
	{
		Record in{};
		RecordCodec<Op>::invoked(op, &in);
		assert(op.returned && in.kind == t.record.kind && in.key == t.record.key &&
			in.arg == t.record.arg);
		(void)in;
		Record r = t.record;
		RecordCodec<Op>::returned(op, &r);
		return complete_record(t.slot, r);
	}
};

using IndexRecordWriter = RecordWriter<IndexOp>;
using KvRecordWriter = RecordWriter<KvOp>;

/* What read_history() returns: ops[i] was read from records[i]. */
template <class Op>
struct RecordHistory {
	/* By call stamp. thread is the record's thread (records[i].process says
	 * which process); pending and UNAVAILABLE ops have ret kPending and no
	 * outputs. */
	std::vector<Operation<Op>> ops;
	std::vector<Record> records;
};

using IndexHistory = RecordHistory<IndexOp>;
using KvHistory = RecordHistory<KvOp>;

/**
 * read_records -- the valid records of the files @paths of format @f, by
 * call stamp: read_history() without the decoding. Returns as read_history().
 */
int read_records(const std::vector<std::string> &paths, const RecordFormat &f,
	std::vector<Record> *out, std::string *why);

/**
 * read_history -- read the record files @paths of one model into one history.
 *
 * Skips holes (all-zero slots). Any other record must have the model's
 * magic, a valid checksum, a known kind, a status that kind can return
 * (IndexOp insert: OK, EXISTS; remove: OK, ABSENT; lookup: FOUND, ABSENT;
 * KvOp: as KvModel; any: pending, UNAVAILABLE), ret UINT64_MAX exactly when
 * pending and else ret >= call; and a file must be whole records.
 *
 * Returns 0 and fills @out; or -errno of open(2)/read(2), or -EBADMSG for a
 * file or record that breaks the format, with @why (if not null) naming the
 * file, the record and the rule. @out is unspecified on failure.
 *
 * Thread-safety: reentrant. Read after the writers have exited or closed
 * their files: a record read while its op is in flight is pending.
 */
template <class Op>
int read_history(const std::vector<std::string> &paths, RecordHistory<Op> *out, std::string *why)
{
	using Codec = RecordCodec<Op>;
	int ret = read_records(paths, Codec::format, &out->records, why);
	if (ret != 0)
		return ret;
	out->ops.clear();
	for (const Record &r : out->records) {
		Operation<Op> o;
		o.op = Codec::decode(r);
		o.call = r.call;
		o.ret = o.op.returned ? r.ret : kPending;
		o.thread = static_cast<int>(r.thread);
		out->ops.push_back(o);
	}
	return 0;
}

}  // namespace lincheck

#endif  // TESTS_LINCHECK_RECORDS_H
