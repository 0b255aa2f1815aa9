// SPDX-License-Identifier: BSD-3-Clause
// benchmarks/kv_compare_bench.cc -- the other side of the store's
// comparison with what users run today (benchmarks/run_kv_compare.sh):
// YCSB A and B against Redis (RESP) or memcached (text protocol) on
// loopback, and against two floors in this process, with the same key
// stream (benchmarks/ycsb.h), the same one-operation-at-a-time loop and
// the same JSON fields as kv_bench, so that one report reads both.
//
// Targets (--target):
//   redis      GET k; update = SET k v XX (only an existing key, as
//              kv_update); load = SET k v. The JSON records the server's
//              persistence settings as it reports them (CONFIG GET
//              appendonly, appendfsync, save, dir), and "durable" is true
//              only for appendonly yes + appendfsync always, so a row's
//              durability is read from the server, not assumed.
//   memcached  get k; update = replace k (only an existing key); load =
//              set k. Volatile.
//   echo       a 64-byte (--value-size) message to a loopback TCP echo
//              server thread in this process and back (echo_server.h):
//              the network floor. Gets and updates are the same message.
//   cacheline  a get copies the key's --value-size bytes out of a shared
//              buffer (keys x 64-byte aligned slots), an update copies a
//              value in, word by word (relaxed atomics, since threads share
//              the hot keys): the memory floor.
// Every client polls as the store's clients do (--poll busy, the default):
// a non-blocking socket, recv(MSG_DONTWAIT) in a loop until the reply is
// there. This machine halts idle vCPUs, so a client that sleeps in recv()
// pays the wake-up (tens of microseconds) on every reply; --poll block
// measures that cost instead of asserting it. (Redis and memcached
// themselves sleep in epoll_wait between requests; that is how users run
// them, and it is part of what they cost.)
//
// One configuration = workload x threads. Each thread has its own
// connection (or its part of the buffer); between barriers: load (the
// --keys keys, key id i by thread i mod threads, pipelined in batches of
// kLoadBatch for the servers; not timed per operation), then run: for
// --duration-ms each thread loops one operation at a time, a get with
// probability read% (A 50, B 95) else an update, of a key drawn Zipfian
// (theta 0.99) -- ycsb::Stream, seeded as kv_bench seeds it. Gets are
// checked (length and the key id leading the value). Per operation:
// CLOCK_MONOTONIC latency; per op type: ops, ops/s over the run's span,
// latency p50/p90/p99/p99.9/max/mean.
//
// CPUs (--pin auto, as kv_bench: split for network targets): the clients
// on every CPU but the last, which is left to the server (the script pins
// redis-server and memcached there; the echo server thread is made there).
//
// Output: one JSON line per configuration on stdout, progress on stderr.
// Exit status: 0 done (errors of operations are in the JSON, "ok":
// false); 1 setup failed (no server, bad reply to the setup's queries);
// 64 bad usage.
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "benchmarks/echo_server.h"
#include "benchmarks/node_bench.h"
#include "benchmarks/ycsb.h"
#include "benchmarks/zipf.h"

namespace {

using nodebench::BadValue;
using nodebench::Barrier;
using nodebench::CpuSplit;
using nodebench::JsonStr;
using nodebench::LatencyJson;
using nodebench::NowNs;
using nodebench::ParseUnsigned;
using nodebench::SplitList;
using ycsb::CheckValue;
using ycsb::KeyOf;
using ycsb::kKeyMax;
using ycsb::kZipfTheta;
using ycsb::ReadPct;
using ycsb::ValueOf;

constexpr int kExitOk = 0;
constexpr int kExitSetup = 1;
constexpr int kExitUsage = 64;

constexpr unsigned kMaxThreads = 64;
constexpr unsigned kMaxValue = 65536; // KV_VALUE_MAX, the store's limit
constexpr unsigned kMaxErrors = 10;   // a thread leaves a phase after this many
constexpr size_t kLoadBatch = 64;     // requests per pipelined load write
constexpr uint64_t kIoTimeoutNs = 5000000000ull; // a reply later than this is an error

const char kUsage[] =
	"Usage: kv_compare_bench --target T [options]\n"
	"YCSB A/B against Redis, memcached or a floor, with kv_bench's key stream and\n"
	"JSON; one line per configuration (workload x threads).\n"
	"\n"
	"  --target T          redis | memcached | echo (loopback TCP echo thread in\n"
	"                      this process) | cacheline (64-byte copies in memory)\n"
	"  --addr HOST:PORT    the server (redis, memcached)\n"
	"  --workloads LIST    of A (50% get / 50% update), B (95/5) (default A,B)\n"
	"  --threads LIST      client threads, 1..64, one connection each (default 1)\n"
	"  --keys N            keys loaded and drawn from (default 100000)\n"
	"  --value-size N      value bytes, 1..65536 (default 64)\n"
	"  --duration-ms MS    the measured run (default 3000)\n"
	"  --poll busy|block   spin on a non-blocking socket, or sleep in recv()\n"
	"                      (default busy)\n"
	"  --pin auto|split|none  clients off the last CPU (auto: for network targets)\n"
	"  --seed S            random seed (default 1, as kv_bench)\n"
	"  --label TEXT        copied into the JSON\n"
	"  -h, --help\n"
	"Exit status: 0 done (operation errors are in the JSON); 1 setup failed; 64 bad usage.\n";

struct Options {
	std::string target;
	std::string host, port;
	std::vector<std::string> workloads = { "A", "B" };
	std::vector<unsigned> threads = { 1 };
	unsigned keys = 100000;
	unsigned vsize = 64;
	unsigned duration_ms = 3000;
	bool busy = true;
	std::string pin = "auto";
	uint64_t seed = 1;
	std::string label;
};

bool Networked(const std::string &target)
{
	return target != "cacheline";
}

// A TCP connection with a read buffer, polled (busy) or blocking.
class Conn {
public:
	~Conn()
	{
		if (fd_ >= 0)
			close(fd_);
	}

	// "" or why the connection to @host:@port failed.
	std::string Connect(const std::string &host, const std::string &port, bool busy)
	{
		busy_ = busy;
		addrinfo hints{}, *res = nullptr;
		hints.ai_family = AF_UNSPEC;
		hints.ai_socktype = SOCK_STREAM;
		int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res);
		if (rc != 0)
			return "getaddrinfo(" + host + "): " + gai_strerror(rc);
		std::string err = "no address";
		for (addrinfo *a = res; a != nullptr && fd_ < 0; a = a->ai_next) {
			int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
			if (fd >= 0 && connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
				fd_ = fd;
				break;
			}
			err = std::string("connect: ") + strerror(errno);
			if (fd >= 0)
				close(fd);
		}
		freeaddrinfo(res);
		if (fd_ < 0)
			return host + ":" + port + ": " + err;
		int one = 1;
		setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (busy_) {
			fcntl(fd_, F_SETFL, fcntl(fd_, F_GETFL) | O_NONBLOCK);
		} else {
			timeval tv{ static_cast<time_t>(kIoTimeoutNs / 1000000000u), 0 };
			setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
			setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		}
		rbuf_.resize(1 << 16);
		return "";
	}

	bool SendAll(const char *p, size_t n)
	{
		uint64_t since = 0;
		while (n > 0) {
			ssize_t s = send(fd_, p, n, MSG_NOSIGNAL | (busy_ ? MSG_DONTWAIT : 0));
			if (s > 0) {
				p += s;
				n -= static_cast<size_t>(s);
				since = 0;
				continue;
			}
			if (!Wait(s, &since))
				return Fail("send");
		}
		return true;
	}
	bool SendAll(const std::string &s) { return SendAll(s.data(), s.size()); }

	// The next line without its CRLF; valid until the next read.
	bool ReadLine(std::string_view *line)
	{
		size_t from = 0; // unread bytes already searched
		for (;;) {
			const char *b = rbuf_.data() + rpos_;
			const size_t n = rlen_ - rpos_;
			for (size_t i = from; i + 1 < n; i++)
				if (b[i] == '\r' && b[i + 1] == '\n') {
					*line = std::string_view(b, i);
					rpos_ += i + 2;
					return true;
				}
			from = n > 0 ? n - 1 : 0;
			if (!Fill())
				return false;
		}
	}

	// The next @n bytes; valid until the next read.
	bool ReadN(size_t n, const char **p)
	{
		while (rlen_ - rpos_ < n)
			if (!Fill())
				return false;
		*p = rbuf_.data() + rpos_;
		rpos_ += n;
		return true;
	}

	const std::string &error() const { return error_; }
	const char *kind() const { return kind_; }
	// Records a failure of the protocol above; returns false.
	bool Protocol(const std::string &what)
	{
		kind_ = "protocol";
		error_ = what;
		return false;
	}

private:
	// More bytes into the buffer, after the unread ones moved to its front.
	bool Fill()
	{
		if (rpos_ > 0) {
			memmove(rbuf_.data(), rbuf_.data() + rpos_, rlen_ - rpos_);
			rlen_ -= rpos_;
			rpos_ = 0;
		}
		if (rlen_ == rbuf_.size())
			rbuf_.resize(rbuf_.size() * 2);
		uint64_t since = 0;
		for (;;) {
			// busy: returns at once, and Wait() says to call again; block:
			// the thread sleeps in the kernel until data or SO_RCVTIMEO
			ssize_t r = recv(fd_, rbuf_.data() + rlen_, rbuf_.size() - rlen_,
				busy_ ? MSG_DONTWAIT : 0);
			if (r > 0) {
				rlen_ += static_cast<size_t>(r);
				return true;
			}
			if (r == 0) {
				kind_ = "closed";
				error_ = "the server closed the connection";
				return false;
			}
			if (!Wait(r, &since))
				return Fail("recv");
		}
	}

	// After a send or recv that returned @r <= 0: true to try again (EINTR,
	// or EAGAIN while polling and within the time limit, *@since its start).
	bool Wait(ssize_t r, uint64_t *since)
	{
		if (r < 0 && errno == EINTR)
			return true;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && busy_) {
			const uint64_t now = NowNs();
			if (*since == 0)
				*since = now;
			if (now - *since < kIoTimeoutNs)
				return true;
			errno = ETIMEDOUT;
		}
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) // SO_RCVTIMEO
			errno = ETIMEDOUT;
		return false;
	}

	bool Fail(const char *what)
	{
		kind_ = errno == ETIMEDOUT ? "timeout" : "io";
		error_ = std::string(what) + ": " + strerror(errno);
		return false;
	}

	int fd_ = -1;
	bool busy_ = true;
	std::vector<char> rbuf_;
	size_t rpos_ = 0, rlen_ = 0;
	std::string error_;
	const char *kind_ = "";
};

// What an operation came to.
enum Outcome { kDone, kMissing, kFailed };

// One thread's connection to a target (or share of the buffer).
class Client {
public:
	virtual ~Client() = default;
	// "" or why the client could not start.
	virtual std::string Open() = 0;
	// The server's settings as a JSON object, *@durable whether its writes
	// are durable when acknowledged; "" with error() set if unreadable.
	virtual std::string ServerJson(bool *durable) = 0;
	// Stores version 0 of keys @ids[0..@n) (at most kLoadBatch), pipelined.
	virtual Outcome Load(const uint64_t *ids, size_t n) = 0;
	// Gets key @id into @buf (@cap bytes), its length into *@len.
	virtual Outcome Get(uint64_t id, char *buf, size_t cap, size_t *len) = 0;
	// Replaces the value of key @id, which exists, by the @vsize bytes at @v.
	virtual Outcome Update(uint64_t id, const char *v) = 0;
	virtual const std::string &error() const = 0;
	// A short name for the last failure ("missing", "timeout", "io",
	// "closed", "protocol", "server").
	virtual const char *kind() const = 0;
};

// Redis (RESP2). Requests are arrays of bulk strings; replies are parsed
// generically, since the setup reads arrays and the hot path's replies
// are one simple or bulk string.
class RedisClient : public Client {
public:
	explicit RedisClient(const Options &o) : o_(o), val_(o.vsize) {}

	std::string Open() override { return c_.Connect(o_.host, o_.port, o_.busy); }

	std::string ServerJson(bool *durable) override
	{
		std::map<std::string, std::string> cfg;
		for (const char *name : { "appendonly", "appendfsync", "save", "dir" }) {
			if (!Command({ "CONFIG", "GET", name }) || !ReadReply(&reply_))
				return "";
			if (reply_.type == '-') {
				Server(reply_.str);
				return "";
			}
			// [name, value]
			if (reply_.type == '*' && reply_.elems.size() == 2)
				cfg[name] = reply_.elems[1].str;
		}
		if (!Command({ "INFO", "server" }) || !ReadReply(&reply_))
			return "";
		std::string version;
		const std::string key = "redis_version:";
		size_t at = reply_.str.find(key);
		if (at != std::string::npos)
			version = reply_.str.substr(at + key.size(),
				reply_.str.find('\r', at) - at - key.size());
		*durable = cfg["appendonly"] == "yes" && cfg["appendfsync"] == "always";
		std::string j = "{\"name\":\"redis\",\"version\":" + JsonStr(version);
		for (const auto &kv : cfg)
			j += "," + JsonStr(kv.first) + ":" + JsonStr(kv.second);
		return j + "}";
	}

	Outcome Load(const uint64_t *ids, size_t n) override
	{
		req_.clear();
		for (size_t i = 0; i < n; i++) {
			ValueOf(ids[i], 0, o_.vsize, val_.data());
			AppendSet(ids[i], val_.data(), false);
		}
		if (!c_.SendAll(req_))
			return kFailed;
		for (size_t i = 0; i < n; i++) {
			if (!ReadReply(&reply_))
				return kFailed;
			if (reply_.type != '+')
				return Unexpected("SET");
		}
		return kDone;
	}

	Outcome Get(uint64_t id, char *buf, size_t cap, size_t *len) override
	{
		char key[kKeyMax];
		const size_t klen = KeyOf(id, o_.seed, key);
		req_.clear();
		AppendArray(2);
		AppendBulk("GET", 3);
		AppendBulk(key, klen);
		if (!c_.SendAll(req_) || !ReadReply(&reply_))
			return kFailed;
		if (reply_.type == '$' && reply_.nil)
			return Missing();
		if (reply_.type != '$')
			return Unexpected("GET");
		*len = reply_.str.size();
		memcpy(buf, reply_.str.data(), std::min(cap, *len));
		return kDone;
	}

	Outcome Update(uint64_t id, const char *v) override
	{
		req_.clear();
		AppendSet(id, v, true);
		if (!c_.SendAll(req_) || !ReadReply(&reply_))
			return kFailed;
		if (reply_.type == '$' && reply_.nil) // XX: the key was absent
			return Missing();
		if (reply_.type != '+')
			return Unexpected("SET XX");
		return kDone;
	}

	const std::string &error() const override { return error_.empty() ? c_.error() : error_; }
	const char *kind() const override { return kind_ != nullptr ? kind_ : c_.kind(); }

private:
	struct Reply {
		char type = 0;
		bool nil = false;
		std::string str; // simple string, error, integer text or bulk
		std::vector<Reply> elems;
	};

	void AppendArray(size_t n)
	{
		req_ += '*';
		req_ += std::to_string(n);
		req_ += "\r\n";
	}
	void AppendBulk(const char *p, size_t n)
	{
		req_ += '$';
		req_ += std::to_string(n);
		req_ += "\r\n";
		req_.append(p, n);
		req_ += "\r\n";
	}
	// SET key value [XX] for key @id.
	void AppendSet(uint64_t id, const char *v, bool xx)
	{
		char key[kKeyMax];
		const size_t klen = KeyOf(id, o_.seed, key);
		AppendArray(xx ? 4 : 3);
		AppendBulk("SET", 3);
		AppendBulk(key, klen);
		AppendBulk(v, o_.vsize);
		if (xx)
			AppendBulk("XX", 2);
	}
	bool Command(std::initializer_list<const char *> args)
	{
		req_.clear();
		AppendArray(args.size());
		for (const char *a : args)
			AppendBulk(a, strlen(a));
		return c_.SendAll(req_);
	}

	// One reply into *@r (its storage reused from the last one).
	bool ReadReply(Reply *r)
	{
		std::string_view line;
		if (!c_.ReadLine(&line))
			return false;
		if (line.empty())
			return c_.Protocol("empty reply line");
		r->type = line[0];
		r->nil = false;
		r->str.assign(line.data() + 1, line.size() - 1);
		switch (r->type) {
		case '+':
		case '-':
		case ':':
			return true;
		case '$': {
			long long n = std::strtoll(r->str.c_str(), nullptr, 10);
			if (n < 0) {
				r->nil = true;
				r->str.clear();
				return true;
			}
			const char *p;
			if (!c_.ReadN(static_cast<size_t>(n) + 2, &p))
				return false;
			if (p[n] != '\r' || p[n + 1] != '\n')
				return c_.Protocol("bulk string without CRLF");
			r->str.assign(p, static_cast<size_t>(n));
			return true;
		}
		case '*': {
			long long n = std::strtoll(r->str.c_str(), nullptr, 10);
			r->nil = n < 0;
			r->elems.resize(n > 0 ? static_cast<size_t>(n) : 0);
			for (Reply &e : r->elems)
				if (!ReadReply(&e))
					return false;
			return true;
		}
		default:
			return c_.Protocol(std::string("reply type '") + r->type + "'");
		}
	}

	Outcome Missing()
	{
		kind_ = "missing";
		error_ = "key absent";
		return kFailed;
	}
	Outcome Unexpected(const char *cmd)
	{
		if (reply_.type == '-')
			return Server(reply_.str);
		kind_ = "protocol";
		error_ = std::string(cmd) + ": unexpected reply type '" + reply_.type + "'";
		return kFailed;
	}
	Outcome Server(const std::string &msg)
	{
		kind_ = "server";
		error_ = "server error: " + msg;
		return kFailed;
	}

	const Options &o_;
	Conn c_;
	std::string req_;
	Reply reply_;
	std::vector<char> val_;
	std::string error_;
	const char *kind_ = nullptr;
};

// memcached's text protocol.
class MemcachedClient : public Client {
public:
	explicit MemcachedClient(const Options &o) : o_(o), val_(o.vsize) {}

	std::string Open() override { return c_.Connect(o_.host, o_.port, o_.busy); }

	std::string ServerJson(bool *durable) override
	{
		std::string_view line;
		if (!c_.SendAll("version\r\n", 9) || !c_.ReadLine(&line))
			return "";
		if (line.compare(0, 8, "VERSION ") != 0) {
			Unexpected("version", line);
			return "";
		}
		*durable = false;
		return "{\"name\":\"memcached\",\"version\":" +
			JsonStr(std::string(line.substr(8))) + "}";
	}

	Outcome Load(const uint64_t *ids, size_t n) override
	{
		req_.clear();
		for (size_t i = 0; i < n; i++) {
			ValueOf(ids[i], 0, o_.vsize, val_.data());
			AppendStore("set", ids[i], val_.data());
		}
		if (!c_.SendAll(req_))
			return kFailed;
		for (size_t i = 0; i < n; i++) {
			std::string_view line;
			if (!c_.ReadLine(&line))
				return kFailed;
			if (line != "STORED")
				return Unexpected("set", line);
		}
		return kDone;
	}

	Outcome Get(uint64_t id, char *buf, size_t cap, size_t *len) override
	{
		char key[kKeyMax];
		const size_t klen = KeyOf(id, o_.seed, key);
		req_.assign("get ");
		req_.append(key, klen);
		req_ += "\r\n";
		std::string_view line;
		if (!c_.SendAll(req_) || !c_.ReadLine(&line))
			return kFailed;
		if (line == "END") {
			kind_ = "missing";
			error_ = "key absent";
			return kFailed;
		}
		// VALUE <key> <flags> <bytes>
		if (line.compare(0, 6, "VALUE ") != 0)
			return Unexpected("get", line);
		const size_t sp = line.rfind(' ');
		*len = std::strtoull(std::string(line.substr(sp + 1)).c_str(), nullptr, 10);
		const char *p;
		if (!c_.ReadN(*len + 2, &p))
			return kFailed;
		memcpy(buf, p, std::min(cap, *len));
		if (!c_.ReadLine(&line))
			return kFailed;
		if (line != "END")
			return Unexpected("get", line);
		return kDone;
	}

	Outcome Update(uint64_t id, const char *v) override
	{
		req_.clear();
		AppendStore("replace", id, v);
		std::string_view line;
		if (!c_.SendAll(req_) || !c_.ReadLine(&line))
			return kFailed;
		if (line == "NOT_STORED") { // replace: the key was absent
			kind_ = "missing";
			error_ = "key absent";
			return kFailed;
		}
		if (line != "STORED")
			return Unexpected("replace", line);
		return kDone;
	}

	const std::string &error() const override { return error_.empty() ? c_.error() : error_; }
	const char *kind() const override { return kind_ != nullptr ? kind_ : c_.kind(); }

private:
	// <cmd> <key> <flags 0> <exptime 0> <bytes>\r\n<data>\r\n
	void AppendStore(const char *cmd, uint64_t id, const char *v)
	{
		char key[kKeyMax];
		const size_t klen = KeyOf(id, o_.seed, key);
		req_ += cmd;
		req_ += ' ';
		req_.append(key, klen);
		req_ += " 0 0 ";
		req_ += std::to_string(o_.vsize);
		req_ += "\r\n";
		req_.append(v, o_.vsize);
		req_ += "\r\n";
	}
	Outcome Unexpected(const char *cmd, std::string_view line)
	{
		const bool server = line.compare(0, 5, "ERROR") == 0 ||
			line.compare(0, 12, "CLIENT_ERROR") == 0 || line.compare(0, 12, "SERVER_ERROR") == 0;
		kind_ = server ? "server" : "protocol";
		error_ = std::string(cmd) + ": " + std::string(line.substr(0, 200));
		return kFailed;
	}

	const Options &o_;
	Conn c_;
	std::string req_;
	std::vector<char> val_;
	std::string error_;
	const char *kind_ = nullptr;
};

// The network floor: every operation is one message of the value's size
// to the echo server and back; the echo is checked as a get is.
class EchoClient : public Client {
public:
	EchoClient(const Options &o, uint16_t port)
		: o_(o), port_(port), msg_(o.vsize), back_(o.vsize)
	{
	}

	std::string Open() override { return c_.Connect("127.0.0.1", std::to_string(port_), o_.busy); }
	std::string ServerJson(bool *) override
	{
		return "{\"name\":\"echo\",\"port\":" + std::to_string(port_) + "}";
	}
	Outcome Load(const uint64_t *, size_t) override { return kDone; } // not called
	Outcome Get(uint64_t id, char *buf, size_t cap, size_t *len) override
	{
		ValueOf(id, 0, o_.vsize, msg_.data());
		return RoundTrip(msg_.data(), buf, cap, len);
	}
	Outcome Update(uint64_t, const char *v) override
	{
		size_t len;
		return RoundTrip(v, back_.data(), back_.size(), &len);
	}
	const std::string &error() const override { return c_.error(); }
	const char *kind() const override { return c_.kind(); }

private:
	Outcome RoundTrip(const char *out, char *buf, size_t cap, size_t *len)
	{
		const char *p;
		if (!c_.SendAll(out, o_.vsize) || !c_.ReadN(o_.vsize, &p))
			return kFailed;
		*len = o_.vsize;
		memcpy(buf, p, std::min<size_t>(cap, o_.vsize));
		return kDone;
	}

	const Options &o_;
	uint16_t port_;
	Conn c_;
	std::vector<char> msg_, back_;
};

// The memory floor's buffer: one 64-byte aligned slot per key.
class Slots {
public:
	Slots(unsigned keys, unsigned vsize)
		: words_((vsize + 7) / 8), stride_((words_ + 7) / 8 * 8),
		  mem_(static_cast<uint64_t *>(aligned_alloc(64, keys * stride_ * 8ull)))
	{
	}
	~Slots() { free(mem_); }
	Slots(const Slots &) = delete;
	Slots &operator=(const Slots &) = delete;

	bool ok() const { return mem_ != nullptr; }
	// Copies the words of slot @id to or from @w (relaxed: threads share
	// the hot keys, and a floor needs no order).
	void Read(uint64_t id, uint64_t *w) const
	{
		const uint64_t *s = mem_ + id * stride_;
		for (unsigned i = 0; i < words_; i++)
			w[i] = __atomic_load_n(&s[i], __ATOMIC_RELAXED);
	}
	void Write(uint64_t id, const uint64_t *w)
	{
		uint64_t *s = mem_ + id * stride_;
		for (unsigned i = 0; i < words_; i++)
			__atomic_store_n(&s[i], w[i], __ATOMIC_RELAXED);
	}

private:
	unsigned words_, stride_;
	uint64_t *mem_;
};

class CachelineClient : public Client {
public:
	CachelineClient(const Options &o, Slots *slots)
		: o_(o), slots_(slots), w_((o.vsize + 7) / 8 + 1)
	{
	}
	std::string Open() override { return ""; }
	std::string ServerJson(bool *) override { return "{\"name\":\"cacheline\"}"; }
	Outcome Load(const uint64_t *ids, size_t n) override
	{
		for (size_t i = 0; i < n; i++) {
			ValueOf(ids[i], 0, o_.vsize, reinterpret_cast<char *>(w_.data()));
			slots_->Write(ids[i], w_.data());
		}
		return kDone;
	}
	Outcome Get(uint64_t id, char *buf, size_t cap, size_t *len) override
	{
		slots_->Read(id, w_.data());
		*len = o_.vsize;
		memcpy(buf, w_.data(), std::min<size_t>(cap, o_.vsize));
		return kDone;
	}
	Outcome Update(uint64_t id, const char *v) override
	{
		memcpy(w_.data(), v, o_.vsize);
		slots_->Write(id, w_.data());
		return kDone;
	}
	const std::string &error() const override { return none_; }
	const char *kind() const override { return ""; }

private:
	const Options &o_;
	Slots *slots_;
	std::vector<uint64_t> w_;
	std::string none_;
};

// One operation's measurement.
struct Sample {
	uint32_t ns; // saturated at 2^32-1 (4.3 s)
	uint8_t type;
};

enum OpType { kGet, kUpdate, kNTypes };
const char *const kTypeName[] = { "get", "update" };

// What one thread did in one phase.
struct Part {
	std::vector<Sample> samples;
	uint64_t ops = 0; // operations (load: keys), timed or not
	uint64_t start_ns = 0, end_ns = 0;
	uint64_t wrong = 0;
	std::map<std::string, uint64_t> errors;
	std::string first_error, first_wrong;

	uint64_t NErrors() const
	{
		uint64_t n = 0;
		for (const auto &e : errors)
			n += e.second;
		return n;
	}
	void Error(const Client &c, const char *what, uint64_t opno)
	{
		errors[c.kind()]++;
		if (first_error.empty())
			first_error = std::string(what) + " #" + std::to_string(opno) + ": " + c.error();
	}
	void Wrong(const std::string &what)
	{
		if (wrong++ == 0)
			first_wrong = what;
	}
};

enum Phase { kLoad, kRun, kNPhases };

// One configuration's shared state.
struct Run {
	const Options *o;
	std::string workload;
	unsigned threads;
	const bench::Zipf *zipf;
	uint16_t echo_port = 0;
	Slots *slots = nullptr;
	Barrier barrier;
	std::vector<std::vector<Part>> parts; // [phase][thread]
	std::vector<std::string> open_error;
	explicit Run(unsigned n) : threads(n), barrier(n), parts(kNPhases, std::vector<Part>(n)), open_error(n) {}
};

std::unique_ptr<Client> MakeClient(const Options &o, const Run &r)
{
	if (o.target == "redis")
		return std::make_unique<RedisClient>(o);
	if (o.target == "memcached")
		return std::make_unique<MemcachedClient>(o);
	if (o.target == "echo")
		return std::make_unique<EchoClient>(o, r.echo_port);
	return std::make_unique<CachelineClient>(o, r.slots);
}

void Worker(Run *r, unsigned t)
{
	const Options &o = *r->o;
	std::unique_ptr<Client> c = MakeClient(o, *r);
	std::string err = c->Open();
	if (!err.empty())
		r->open_error[t] = "thread " + std::to_string(t) + ": " + err;
	const bool ok = err.empty();
	r->barrier.Wait(); // without a client the thread still meets every barrier

	if (ok && o.target != "echo") { // an echo has nothing to load
		Part &p = r->parts[kLoad][t];
		std::vector<uint64_t> ids;
		p.start_ns = NowNs();
		for (uint64_t id = t; id < o.keys && p.NErrors() == 0; id += r->threads) {
			ids.push_back(id);
			if (ids.size() == kLoadBatch || id + r->threads >= o.keys) {
				if (c->Load(ids.data(), ids.size()) != kDone)
					p.Error(*c, "load", p.ops);
				p.ops += ids.size();
				ids.clear();
			}
		}
		p.end_ns = NowNs();
	}
	r->barrier.Wait();

	uint64_t load_errors = 0;
	for (const Part &p : r->parts[kLoad])
		load_errors += p.NErrors();
	if (ok && load_errors == 0) {
		Part &p = r->parts[kRun][t];
		ycsb::Stream ops(*r->zipf, o.seed, t, o.vsize, r->workload);
		std::vector<char> buf(o.vsize + 64), val(o.vsize);
		uint64_t updates = 0;
		p.samples.reserve(1u << 20);
		p.start_ns = NowNs();
		const uint64_t stop = p.start_ns + static_cast<uint64_t>(o.duration_ms) * 1000000u;
		for (uint64_t i = 0;; i++) {
			bool get;
			const uint64_t id = ops.Next(&get);
			uint64_t t0, t1;
			size_t len = 0;
			Outcome out;
			if (get) {
				t0 = NowNs();
				out = c->Get(id, buf.data(), buf.size(), &len);
				t1 = NowNs();
			} else {
				// the same versions kv_bench writes
				ValueOf(id, static_cast<uint64_t>(t + 1) << 40 | ++updates, o.vsize, val.data());
				t0 = NowNs();
				out = c->Update(id, val.data());
				t1 = NowNs();
			}
			p.samples.push_back({ static_cast<uint32_t>(std::min<uint64_t>(t1 - t0, UINT32_MAX)),
				static_cast<uint8_t>(get ? kGet : kUpdate) });
			if (out != kDone) {
				p.Error(*c, get ? "get" : "update", i);
			} else if (get) {
				const std::string wrong = CheckValue(buf.data(), len, o.vsize, id);
				if (!wrong.empty())
					p.Wrong("get #" + std::to_string(i) + " of key id " + std::to_string(id) +
						": " + wrong);
			}
			if (p.NErrors() >= kMaxErrors || t1 >= stop)
				break;
		}
		p.end_ns = NowNs();
		p.ops = p.samples.size();
	}
	r->barrier.Wait();
}

// Latency of the samples of @parts of type @type (-1: all), over @secs.
std::string OpJson(const std::vector<Part> &parts, int type, double secs)
{
	std::vector<uint64_t> lat;
	for (const Part &p : parts)
		for (const Sample &s : p.samples)
			if (type < 0 || s.type == type)
				lat.push_back(s.ns);
	std::sort(lat.begin(), lat.end());
	std::ostringstream j;
	j.precision(6);
	j << "{\"ops\":" << lat.size() << ",\"ops_per_s\":"
	  << (secs > 0 ? static_cast<double>(lat.size()) / secs : 0)
	  << ",\"lat_ns\":" << LatencyJson(lat) << "}";
	return j.str();
}

// A phase's JSON over every thread (the load has no samples: its ops and
// rate only); adds its errors and wrong values to *@bad.
std::string PhaseJson(const std::vector<Part> &parts, bool run, uint64_t *bad)
{
	uint64_t start = UINT64_MAX, end = 0, ops = 0, wrong = 0;
	std::map<std::string, uint64_t> errors;
	std::string first, first_wrong;
	for (const Part &p : parts) {
		if (p.end_ns != 0) {
			start = std::min(start, p.start_ns);
			end = std::max(end, p.end_ns);
		}
		ops += p.ops;
		wrong += p.wrong;
		for (const auto &e : p.errors)
			errors[e.first] += e.second;
		if (first.empty())
			first = p.first_error;
		if (first_wrong.empty())
			first_wrong = p.first_wrong;
	}
	const double secs = end > start ? static_cast<double>(end - start) / 1e9 : 0;
	std::ostringstream j;
	j.precision(6);
	j << "{\"secs\":" << secs;
	if (run) {
		j << ",\"all\":" << OpJson(parts, -1, secs);
		for (int ty = 0; ty < kNTypes; ty++)
			j << ",\"" << kTypeName[ty] << "\":" << OpJson(parts, ty, secs);
	} else {
		j << ",\"all\":{\"ops\":" << ops << ",\"ops_per_s\":"
		  << (secs > 0 ? static_cast<double>(ops) / secs : 0) << "}";
	}
	j << ",\"wrong\":" << wrong << ",\"errors\":{";
	bool comma = false;
	uint64_t nerr = 0;
	for (const auto &e : errors) {
		j << (comma ? "," : "") << JsonStr(e.first) << ":" << e.second;
		comma = true;
		nerr += e.second;
	}
	j << "}";
	if (!first.empty())
		j << ",\"first_error\":" << JsonStr(first);
	if (!first_wrong.empty())
		j << ",\"first_wrong\":" << JsonStr(first_wrong);
	j << "}";
	*bad += nerr + wrong;
	return j.str();
}

// One configuration; prints its JSON line. False if the setup failed.
bool RunConfig(const Options &o, const std::string &workload, unsigned threads)
{
	std::ostringstream cj;
	cj << "\"bench\":\"kv_compare\",\"target\":" << JsonStr(o.target) << ",\"system\":"
	   << JsonStr(o.target) << ",\"transport\":" << JsonStr(Networked(o.target) ? "tcp" : "memory")
	   << ",\"workload\":" << JsonStr(workload) << ",\"read_pct\":" << ReadPct(workload)
	   << ",\"value_size\":" << o.vsize << ",\"threads\":" << threads
	   << ",\"inflight\":1,\"keys\":" << o.keys << ",\"zipf_theta\":" << kZipfTheta
	   << ",\"duration_ms\":" << o.duration_ms << ",\"poll\":" << JsonStr(o.busy ? "busy" : "block")
	   << ",\"seed\":" << o.seed;
	if (!o.host.empty())
		cj << ",\"addr\":" << JsonStr(o.host + ":" + o.port);
	if (!o.label.empty())
		cj << ",\"label\":" << JsonStr(o.label);
	const std::string config_json = cj.str();
	std::fprintf(stderr, "kv_compare_bench: %s %s threads=%u poll=%s\n", o.target.c_str(),
		workload.c_str(), threads, o.busy ? "busy" : "block");

	CpuSplit cpus;
	if (CpuSplit::Wanted(o.pin, Networked(o.target) ? "tcp" : "local"))
		cpus.Split();
	std::unique_ptr<bench::EchoServer> echo;
	if (o.target == "echo")
		echo = std::make_unique<bench::EchoServer>(o.vsize); // its thread on the last CPU
	cpus.Clients();
	std::unique_ptr<Slots> slots;
	if (o.target == "cacheline")
		slots = std::make_unique<Slots>(o.keys, o.vsize);
	const bench::Zipf zipf(std::max(1u, o.keys), kZipfTheta);

	Run r(threads);
	r.o = &o;
	r.workload = workload;
	r.zipf = &zipf;
	r.echo_port = echo ? echo->port() : 0;
	r.slots = slots.get();

	// The server's settings, read on a connection of its own.
	std::string err, server;
	bool durable = false;
	if (echo && echo->port() == 0)
		err = "echo server: no loopback socket";
	if (slots && !slots->ok())
		err = "no memory for the buffer";
	if (err.empty()) {
		std::unique_ptr<Client> c = MakeClient(o, r);
		err = c->Open();
		if (err.empty()) {
			server = c->ServerJson(&durable);
			if (server.empty())
				err = std::string("reading the server's settings: ") + c->error();
		}
	}
	if (!err.empty()) {
		std::printf("{%s,\"setup_error\":%s,\"ok\":false}\n", config_json.c_str(),
			JsonStr(err).c_str());
		std::fflush(stdout);
		std::fprintf(stderr, "kv_compare_bench: %s\n", err.c_str());
		return false;
	}

	std::vector<std::thread> ws;
	for (unsigned t = 0; t < threads; t++)
		ws.emplace_back(Worker, &r, t);
	for (auto &w : ws)
		w.join();
	cpus.Restore();
	std::string open_err;
	for (const auto &e : r.open_error)
		if (!e.empty() && open_err.empty())
			open_err = e;

	uint64_t bad = 0;
	std::ostringstream j;
	j << "{" << config_json << ",\"server\":" << server;
	if (Networked(o.target) && o.target != "echo")
		j << ",\"durable\":" << (durable ? "true" : "false");
	j << ",\"pin\":" << JsonStr(cpus.desc());
	if (!open_err.empty())
		j << ",\"open_error\":" << JsonStr(open_err);
	j << ",\"phases\":{\"load\":" << PhaseJson(r.parts[kLoad], false, &bad)
	  << ",\"run\":" << PhaseJson(r.parts[kRun], true, &bad) << "},\"ok\":"
	  << (bad == 0 && open_err.empty() ? "true" : "false") << "}";
	std::printf("%s\n", j.str().c_str());
	std::fflush(stdout);
	return true;
}

int Usage(const char *msg)
{
	std::fprintf(stderr, "kv_compare_bench: %s\n%s", msg, kUsage);
	return kExitUsage;
}

} // namespace

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "target", required_argument, nullptr, 'x' },
		{ "addr", required_argument, nullptr, 'a' },
		{ "workloads", required_argument, nullptr, 'W' },
		{ "threads", required_argument, nullptr, 'T' },
		{ "keys", required_argument, nullptr, 'k' },
		{ "value-size", required_argument, nullptr, 'v' },
		{ "duration-ms", required_argument, nullptr, 'D' },
		{ "poll", required_argument, nullptr, 'b' },
		{ "pin", required_argument, nullptr, 'P' },
		{ "seed", required_argument, nullptr, 's' },
		{ "label", required_argument, nullptr, 'l' },
		{ "help", no_argument, nullptr, 'h' },
		{ nullptr, 0, nullptr, 0 },
	};
	Options o;
	int c;

	while ((c = getopt_long(argc, argv, "h", longopts, nullptr)) != -1) {
		bool ok = true;
		switch (c) {
		case 'x':
			o.target = optarg;
			ok = o.target == "redis" || o.target == "memcached" || o.target == "echo" ||
				o.target == "cacheline";
			break;
		case 'a': {
			const std::string a = optarg;
			const size_t colon = a.rfind(':');
			ok = colon != std::string::npos && colon > 0 && colon + 1 < a.size();
			if (ok) {
				o.host = a.substr(0, colon);
				o.port = a.substr(colon + 1);
			}
			break;
		}
		case 'W':
			o.workloads = SplitList(optarg);
			for (const auto &w : o.workloads)
				ok = ok && (w == "A" || w == "B");
			ok = ok && !o.workloads.empty();
			break;
		case 'T':
			o.threads.clear();
			for (const auto &s : SplitList(optarg)) {
				unsigned x;
				ok = ok && ParseUnsigned(s.c_str(), &x, 1, kMaxThreads);
				o.threads.push_back(x);
			}
			ok = ok && !o.threads.empty();
			break;
		case 'k':
			ok = ParseUnsigned(optarg, &o.keys, 1, 1u << 24);
			break;
		case 'v':
			ok = ParseUnsigned(optarg, &o.vsize, 1, kMaxValue);
			break;
		case 'D':
			ok = ParseUnsigned(optarg, &o.duration_ms, 1, 3600000);
			break;
		case 'b':
			ok = std::string(optarg) == "busy" || std::string(optarg) == "block";
			o.busy = std::string(optarg) == "busy";
			break;
		case 'P':
			o.pin = optarg;
			ok = o.pin == "auto" || o.pin == "split" || o.pin == "none";
			break;
		case 's': {
			char *end;
			o.seed = std::strtoull(optarg, &end, 10);
			ok = *optarg != '\0' && *end == '\0';
			break;
		}
		case 'l':
			o.label = optarg;
			break;
		case 'h':
			std::fputs(kUsage, stdout);
			return kExitOk;
		default:
			return Usage("bad option");
		}
		if (!ok)
			return Usage(BadValue(longopts, c).c_str());
	}
	if (optind != argc)
		return Usage("unexpected argument");
	if (o.target.empty())
		return Usage("--target is required");
	if ((o.target == "redis" || o.target == "memcached") && o.host.empty())
		return Usage("--addr is required for redis and memcached");

	for (const auto &w : o.workloads)
		for (unsigned t : o.threads)
			if (!RunConfig(o, w, t))
				return kExitSetup;
	return kExitOk;
}
