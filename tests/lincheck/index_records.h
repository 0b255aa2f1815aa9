// SPDX-License-Identifier: BSD-3-Clause
/*
 * tests/lincheck/index_records.h -- IndexModel histories from several client
 * processes: a record file format, its writer and its reader.
 *
 * Files rather than a Recorder because the clients of one kv/ run are
 * separate processes that share no memory, and a client that crashes must
 * still leave its unfinished op behind. Each process writes its own file;
 * the checking process reads them all into one history for
 * lincheck::check(IndexModel(), ...).
 *
 * Format, version 1. A file is a sequence of 64-byte records, one per op, in
 * the host's byte order (the files are read on the host that wrote them:
 * their CLOCK_MONOTONIC stamps mean nothing anywhere else):
 *
 *	offset size field
 *	 0     4    magic    0x3158494c, "LIX1" in a hex dump
 *	 4     4    process  the writer's id, given to IndexRecordWriter::open()
 *	 8     4    thread   the caller's id within its process, given to invoke()
 *	12     1    kind     IndexOp::Kind: 0 insert, 1 remove, 2 lookup
 *	13     1    status   IndexRecordStatus: 0 invoked (pending), 1 OK, 2 EXISTS,
 *	                     3 ABSENT, 4 FOUND, 5 UNAVAILABLE
 *	14     2    zero
 *	16     8    call     CLOCK_MONOTONIC ns, taken before the op started
 *	24     8    ret      CLOCK_MONOTONIC ns, taken after it returned;
 *	                     UINT64_MAX while pending
 *	32     8    key
 *	40     8    loc      insert, remove: the location given; lookup: 0
 *	48     8    found    EXISTS, FOUND: the location returned; else 0
 *	56     8    check    FNV-1a (64-bit) of bytes 0..55
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
 * kPending), because the index promises "an unavailable error, never a wrong
 * answer" and an op that reported it may still take effect, even after it
 * returned (IndexOp). The record keeps the status and ret for diagnosis.
 */
#ifndef TESTS_LINCHECK_INDEX_RECORDS_H
#define TESTS_LINCHECK_INDEX_RECORDS_H

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/lincheck/lincheck.h"
#include "tests/lincheck/models.h"

namespace lincheck {

/* IndexRecord::status: what the op returned, if anything. */
enum class IndexRecordStatus : uint8_t {
	kInvoked = 0,      /* no response: not yet, or its client died (pending) */
	kOk = 1,           /* insert, remove */
	kExists = 2,       /* insert; found holds the location */
	kAbsent = 3,       /* remove, lookup */
	kFound = 4,        /* lookup; found holds the location */
	kUnavailable = 5,  /* any op: checked as pending */
};

/* IndexRecord::magic of format version 1. */
inline constexpr uint32_t kIndexRecordMagic = 0x3158494c;

/* One record of the file format above, field for field. */
struct IndexRecord {
	uint32_t magic;
	uint32_t process;
	uint32_t thread;
	uint8_t kind;
	uint8_t status;
	uint16_t zero;
	uint64_t call;
	uint64_t ret;
	uint64_t key;
	uint64_t loc;
	uint64_t found;
	uint64_t check;
};
static_assert(sizeof(IndexRecord) == 64, "the format's record size");

/*
 * IndexRecordWriter -- appends one process's ops to its record file.
 *
 * Bracket every index op with invoke() (just before the op) and complete()
 * or unavailable() (just after it returns); an op never completed stays
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
class IndexRecordWriter {
public:
	/* What complete() and unavailable() need: the slot invoke() wrote and
	 * its record. A value: each in-flight op keeps its own. */
	struct Ticket {
		uint64_t slot = 0;
		IndexRecord record{};
	};

	IndexRecordWriter() = default;
	/* Closes the file if open (errors ignored; call close() to see them). */
	~IndexRecordWriter();
	IndexRecordWriter(const IndexRecordWriter &) = delete;
	IndexRecordWriter &operator=(const IndexRecordWriter &) = delete;

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
	 * invoke -- record that @op (its kind, key and loc) starts now.
	 *
	 * Takes the call stamp, then writes the pending record, so the stamp
	 * precedes the op and the record exists before the op can have any
	 * effect. @thread identifies the caller within the process in the
	 * history. On success fills @t for complete() or unavailable().
	 *
	 * Returns 0, -errno of pwrite(2), -EIO on a short write, or -EBADF if
	 * the writer is not open.
	 */
	int invoke(uint32_t thread, const IndexOp &op, Ticket *t);

	/**
	 * complete -- record that the op of @t returned @op.
	 *
	 * @op is the returned form (IndexOp::insert_ok(), ...) of the op passed
	 * to invoke(): same kind, key and loc (asserted). Takes the ret stamp,
	 * then rewrites the record in place. Returns as invoke().
	 */
	int complete(const Ticket &t, const IndexOp &op);

	/**
	 * unavailable -- record that the op of @t returned UNAVAILABLE.
	 *
	 * The reader checks it as pending (see the top of this file). Takes
	 * the ret stamp, then rewrites the record in place. Returns as invoke().
	 */
	int unavailable(const Ticket &t);

	/* close -- close the file. Returns 0, -errno of close(2), or -EBADF if
	 * not open. Records already written stay valid whatever it returns. */
	int close();

private:
	int write_slot(uint64_t slot, IndexRecord *r);

	int fd_ = -1;
	uint32_t process_ = 0;
	std::atomic<uint64_t> next_slot_{0};
};

/* What read_index_history() returns: ops[i] was read from records[i]. */
struct IndexHistory {
	/* By call stamp. thread is the record's thread (records[i].process says
	 * which process); pending and UNAVAILABLE ops have ret kPending and no
	 * outputs. */
	std::vector<Operation<IndexOp>> ops;
	std::vector<IndexRecord> records;
};

/**
 * read_index_history -- read the record files @paths into one history.
 *
 * Skips holes (all-zero slots). Any other record must have the magic, a
 * valid checksum, a known kind, a status that kind can return (insert: OK,
 * EXISTS; remove: OK, ABSENT; lookup: FOUND, ABSENT; any: pending,
 * UNAVAILABLE), ret UINT64_MAX exactly when pending and else ret >= call;
 * and a file must be whole records.
 *
 * Returns 0 and fills @out; or -errno of open(2)/read(2), or -EBADMSG for a
 * file or record that breaks the format, with @why (if not null) naming the
 * file, the record and the rule. @out is unspecified on failure.
 *
 * Thread-safety: reentrant. Read after the writers have exited or closed
 * their files: a record read while its op is in flight is pending.
 */
int read_index_history(const std::vector<std::string> &paths, IndexHistory *out, std::string *why);

}  // namespace lincheck

#endif  // TESTS_LINCHECK_INDEX_RECORDS_H
