// SPDX-License-Identifier: BSD-3-Clause
// rdma/tests/control_test.cc -- the client side of the control port
// (rdma/src/control.h): host:port parsing; connecting to a closed port; a
// HELLO answered by a small in-test TCP server thread with WELCOME, REFUSE,
// silence, garbage, a wrong seq or a hang-up; death detection by
// rdma__control_alive; and send/recv bounds on a socket pair (timeouts,
// oversized bodies, a dead peer without SIGPIPE).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <rdma/rdma.h>

extern "C" {
#include "rdma/src/control.h"
#include "rdma/src/wire.h"
}

namespace {

using Bytes = std::vector<uint8_t>;

TEST(ParseHostport, Accepts)
{
	char host[RDMA__HOST_MAX + 1];
	uint16_t port = 0;

	ASSERT_EQ(rdma__parse_hostport("127.0.0.1:7470", host, &port), 0);
	EXPECT_STREQ(host, "127.0.0.1");
	EXPECT_EQ(port, 7470);
	ASSERT_EQ(rdma__parse_hostport("node-3.example_lab:1", host, &port), 0);
	EXPECT_STREQ(host, "node-3.example_lab");
	EXPECT_EQ(port, 1);
	ASSERT_EQ(rdma__parse_hostport("[::1]:65535", host, &port), 0);
	EXPECT_STREQ(host, "::1");
	EXPECT_EQ(port, 65535);
	ASSERT_EQ(rdma__parse_hostport("[fe80::1%eth0]:80", host, &port), 0);
	EXPECT_STREQ(host, "fe80::1%eth0");
	EXPECT_EQ(port, 80);
	ASSERT_EQ(rdma__parse_hostport("[::ffff:10.0.0.1]:08080", host, &port), 0);
	EXPECT_STREQ(host, "::ffff:10.0.0.1");
	EXPECT_EQ(port, 8080);
	std::string longest(RDMA__HOST_MAX, 'h');
	ASSERT_EQ(rdma__parse_hostport((longest + ":9").c_str(), host, &port), 0);
	EXPECT_EQ(std::string(host), longest);
}

TEST(ParseHostport, Rejects)
{
	std::string too_long(RDMA__HOST_MAX + 1, 'h');
	const std::string bad[] = {
		"", ":", "127.0.0.1", "127.0.0.1:", ":7470", "127.0.0.1:0",
		"127.0.0.1:65536", "127.0.0.1:99999", "127.0.0.1:123456",
		"127.0.0.1:-1", "127.0.0.1:+80", "127.0.0.1: 80", "127.0.0.1:80 ",
		"127.0.0.1:0x50", "127.0.0.1:80a", "::1:80", "[::1]", "[::1]80",
		"[::1]:", "[]:80", "[::1:80", "::1]:80", "[127.0.0.1]:80",
		"host name:80", "host/x:80", "ho\tst:80", "[::1]:80:81", "a:b:c",
		too_long + ":80",
	};
	for (const std::string &s : bad) {
		char host[RDMA__HOST_MAX + 1];
		uint16_t port = 0;
		EXPECT_EQ(rdma__parse_hostport(s.c_str(), host, &port), -EINVAL) << "'" << s << "'";
	}
	char host[RDMA__HOST_MAX + 1];
	uint16_t port;
	EXPECT_EQ(rdma__parse_hostport(nullptr, host, &port), -EINVAL);
}

// A TCP socket on 127.0.0.1 with a kernel-chosen port; listening or not.
int BoundSocket(bool listening, uint16_t *port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	EXPECT_GE(fd, 0);
	sockaddr_in a{};
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a)), 0);
	if (listening) {
		EXPECT_EQ(listen(fd, 4), 0);
	}
	socklen_t len = sizeof(a);
	EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

TEST(ControlConnect, ClosedPortIsConnError)
{
	// Bound but not listening: the kernel refuses, and nobody else can
	// take the port while we hold it.
	uint16_t port;
	int fd = BoundSocket(false, &port);
	EXPECT_EQ(rdma__control_connect("127.0.0.1", port, 2000), RDMA_E_CONN);
	close(fd);
	EXPECT_EQ(rdma__control_connect("", port, 2000), -EINVAL);
	EXPECT_EQ(rdma__control_connect("127.0.0.1", 0, 2000), -EINVAL);
}

TEST(ControlConnect, Succeeds)
{
	uint16_t port;
	int lfd = BoundSocket(true, &port);
	int fd = rdma__control_connect("127.0.0.1", port, 2000);
	ASSERT_GE(fd, 0);
	EXPECT_EQ(rdma__control_alive(fd), 0);
	close(fd);
	close(lfd);
}

enum class Answer {
	kWelcome,   // WELCOME, then hang up when told
	kRefuse,    // REFUSE(RDMA_E_AUTH)
	kSilent,    // read the HELLO, answer nothing until the client leaves
	kGarbage,   // 16 bytes that are no header
	kWrongSeq,  // a WELCOME with another seq
	kWrongType, // a STATUS instead
	kFull,      // REFUSE(-EBUSY) with seq 0, before reading the HELLO
	kHangUp,    // close after the HELLO
};

// A one-connection control server on 127.0.0.1: accepts, reads a HELLO,
// answers as told. Every blocking call is bounded (poll, SO_RCVTIMEO).
class TestServer {
public:
	explicit TestServer(Answer answer) : answer_(answer)
	{
		lfd_ = BoundSocket(true, &port_);
		thread_ = std::thread([this] { Run(); });
	}

	~TestServer()
	{
		HangUp();
		thread_.join();
		close(lfd_);
	}

	uint16_t port() const { return port_; }

	// Close the accepted connection (kWelcome).
	void HangUp()
	{
		std::lock_guard<std::mutex> g(mu_);
		hang_up_ = true;
		cv_.notify_all();
	}

	// The HELLO received (after the thread has read it).
	rdma_wire_hello hello()
	{
		std::unique_lock<std::mutex> g(mu_);
		cv_.wait_for(g, std::chrono::seconds(10), [this] { return got_hello_; });
		return hello_;
	}

	static rdma_wire_welcome Welcome()
	{
		rdma_wire_welcome w{};
		w.incarnation = 99;
		w.nregions = 2;
		w.regions[0] = { 4096, 11, 0 };
		w.regions[1] = { 1u << 20, 12, 0x7f0000000000ULL };
		w.addr_len = 3;
		w.addr[0] = 'a';
		w.addr[1] = 'd';
		w.addr[2] = 'r';
		return w;
	}

private:
	bool ReadFull(int fd, void *buf, size_t len)
	{
		uint8_t *p = static_cast<uint8_t *>(buf);
		while (len > 0) {
			ssize_t n = recv(fd, p, len, 0);
			if (n <= 0)
				return false;
			p += n;
			len -= static_cast<size_t>(n);
		}
		return true;
	}

	void Run()
	{
		pollfd pfd = { lfd_, POLLIN, 0 };
		if (poll(&pfd, 1, 10000) != 1)
			return;
		int fd = accept(lfd_, nullptr, nullptr);
		if (fd < 0)
			return;
		timeval tv = { 10, 0 };
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		if (answer_ == Answer::kFull) {
			// As node_control.c does when it has no client slot left:
			// refuse at once, before reading anything.
			Bytes out(RDMA_WIRE_MSG_MAX);
			int n = rdma_wire_refuse_encode(out.data(), out.size(), 0,
				-EBUSY, "too many clients");
			if (n > 0)
				send(fd, out.data(), static_cast<size_t>(n), MSG_NOSIGNAL);
			close(fd);
			return;
		}
		uint8_t hdr[RDMA_WIRE_HEADER_SIZE];
		rdma_wire_header h;
		Bytes body;
		rdma_wire_hello hello{};
		if (ReadFull(fd, hdr, sizeof(hdr)) &&
		    rdma_wire_header_decode(hdr, sizeof(hdr), &h) == 0 &&
		    h.type == RDMA_WIRE_HELLO) {
			body.resize(h.length);
			if (ReadFull(fd, body.data(), body.size()) &&
			    rdma_wire_hello_decode(body.data(), body.size(), &hello) == 0) {
				std::lock_guard<std::mutex> g(mu_);
				hello_ = hello;
				got_hello_ = true;
				cv_.notify_all();
			}
		}
		Bytes out(RDMA_WIRE_MSG_MAX);
		int n = 0;
		rdma_wire_welcome w = Welcome();
		switch (answer_) {
		case Answer::kWelcome:
			n = rdma_wire_welcome_encode(out.data(), out.size(), h.seq, &w);
			break;
		case Answer::kRefuse:
			n = rdma_wire_refuse_encode(out.data(), out.size(), h.seq,
				RDMA_E_AUTH, "wrong cluster token");
			break;
		case Answer::kGarbage:
			n = RDMA_WIRE_HEADER_SIZE;
			std::memset(out.data(), 0xa5, n);
			break;
		case Answer::kWrongSeq:
			n = rdma_wire_welcome_encode(out.data(), out.size(), h.seq + 1, &w);
			break;
		case Answer::kWrongType:
			n = rdma_wire_status_encode(out.data(), out.size(), h.seq, "x 1\n", 4);
			break;
		case Answer::kSilent:
		case Answer::kHangUp:
		case Answer::kFull:
			break;
		}
		if (n > 0)
			send(fd, out.data(), static_cast<size_t>(n), MSG_NOSIGNAL);
		if (answer_ == Answer::kSilent) {
			// Until the client gives up and closes (bounded by
			// SO_RCVTIMEO).
			uint8_t c;
			while (recv(fd, &c, 1, 0) > 0) {
			}
		}
		if (answer_ == Answer::kWelcome) {
			std::unique_lock<std::mutex> g(mu_);
			cv_.wait_for(g, std::chrono::seconds(10), [this] { return hang_up_; });
		}
		close(fd);
	}

	Answer answer_;
	int lfd_ = -1;
	uint16_t port_ = 0;
	std::thread thread_;
	std::mutex mu_; // guards the fields below; leaf lock
	std::condition_variable cv_;
	bool hang_up_ = false;
	bool got_hello_ = false;
	rdma_wire_hello hello_{};
};

rdma_wire_hello ClientHello()
{
	rdma_wire_hello h{};
	h.backend = RDMA_WIRE_BACKEND_OFI_TCP;
	std::memcpy(h.token, "cluster-7", 9);
	h.token_len = 9;
	h.addr_len = 2;
	h.addr[0] = 0xfe;
	h.addr[1] = 0xed;
	return h;
}

TEST(ControlHello, WelcomeThenNodeDeath)
{
	TestServer srv(Answer::kWelcome);
	rdma_wire_hello hello = ClientHello();
	rdma_wire_welcome w;
	int fd = -1;
	ASSERT_EQ(rdma__control_hello("127.0.0.1", srv.port(), 5000, &hello, &w, &fd), 0);
	ASSERT_GE(fd, 0);
	rdma_wire_welcome want = TestServer::Welcome();
	EXPECT_EQ(w.incarnation, want.incarnation);
	ASSERT_EQ(w.nregions, want.nregions);
	for (unsigned i = 0; i < w.nregions; i++) {
		EXPECT_EQ(w.regions[i].length, want.regions[i].length);
		EXPECT_EQ(w.regions[i].key, want.regions[i].key);
		EXPECT_EQ(w.regions[i].addr, want.regions[i].addr);
	}
	ASSERT_EQ(w.addr_len, 3);
	EXPECT_EQ(std::memcmp(w.addr, "adr", 3), 0);
	rdma_wire_hello got = srv.hello();
	EXPECT_EQ(got.backend, hello.backend);
	EXPECT_EQ(std::string(got.token, got.token_len), "cluster-7");
	ASSERT_EQ(got.addr_len, 2);
	EXPECT_EQ(got.addr[1], 0xed);

	EXPECT_EQ(rdma__control_alive(fd), 0);
	srv.HangUp();
	// The FIN arrives asynchronously; bounded wait for it.
	int alive = 0;
	for (int i = 0; i < 1000 && alive == 0; i++) {
		alive = rdma__control_alive(fd);
		if (alive == 0)
			std::this_thread::sleep_for(std::chrono::milliseconds(5));
	}
	EXPECT_EQ(alive, RDMA_E_CONN);
	EXPECT_EQ(rdma__control_alive(fd), RDMA_E_CONN); // and it stays dead
	close(fd);
}

TEST(ControlHello, RefusedTokenLeavesNoSocket)
{
	TestServer srv(Answer::kRefuse);
	rdma_wire_hello hello = ClientHello();
	rdma_wire_welcome w;
	int fd = 1234;
	EXPECT_EQ(rdma__control_hello("127.0.0.1", srv.port(), 5000, &hello, &w, &fd),
		RDMA_E_AUTH);
	EXPECT_EQ(fd, -1);
}

TEST(ControlHello, FullNodeRefusesWithSeqZero)
{
	TestServer srv(Answer::kFull);
	rdma_wire_hello hello = ClientHello();
	rdma_wire_welcome w;
	int fd = 1234;
	EXPECT_EQ(rdma__control_hello("127.0.0.1", srv.port(), 5000, &hello, &w, &fd),
		-EBUSY);
	EXPECT_EQ(fd, -1);
}

TEST(ControlHello, SilentNodeTimesOut)
{
	TestServer srv(Answer::kSilent);
	rdma_wire_hello hello = ClientHello();
	rdma_wire_welcome w;
	int fd = 1234;
	auto t0 = std::chrono::steady_clock::now();
	EXPECT_EQ(rdma__control_hello("127.0.0.1", srv.port(), 200, &hello, &w, &fd),
		-ETIMEDOUT);
	auto waited = std::chrono::steady_clock::now() - t0;
	EXPECT_EQ(fd, -1);
	// Not a timing assertion on speed: only that the timeout was waited
	// out and not skipped.
	EXPECT_GE(waited, std::chrono::milliseconds(200));
}

TEST(ControlHello, BadAnswersAreProtocolErrors)
{
	for (Answer a : {Answer::kGarbage, Answer::kWrongSeq, Answer::kWrongType}) {
		TestServer srv(a);
		rdma_wire_hello hello = ClientHello();
		rdma_wire_welcome w;
		int fd = 1234;
		EXPECT_EQ(rdma__control_hello("127.0.0.1", srv.port(), 5000, &hello, &w, &fd),
			RDMA_E_PROTO) << static_cast<int>(a);
		EXPECT_EQ(fd, -1);
	}
}

TEST(ControlHello, HangUpIsConnError)
{
	TestServer srv(Answer::kHangUp);
	rdma_wire_hello hello = ClientHello();
	rdma_wire_welcome w;
	int fd = 1234;
	EXPECT_EQ(rdma__control_hello("127.0.0.1", srv.port(), 5000, &hello, &w, &fd),
		RDMA_E_CONN);
	EXPECT_EQ(fd, -1);
}

TEST(ControlHello, UnencodableHelloSendsNothing)
{
	rdma_wire_hello hello = ClientHello();
	hello.token_len = RDMA_TOKEN_MAX + 1;
	rdma_wire_welcome w;
	int fd = 1234;
	// No server needed: the HELLO is checked before connecting.
	EXPECT_EQ(rdma__control_hello("127.0.0.1", 1, 200, &hello, &w, &fd), -EINVAL);
	EXPECT_EQ(fd, -1);
}

class SocketPair : public ::testing::Test {
protected:
	void SetUp() override
	{
		ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds_), 0);
	}
	void TearDown() override
	{
		for (int fd : fds_)
			if (fd >= 0)
				close(fd);
	}
	void ClosePeer()
	{
		close(fds_[1]);
		fds_[1] = -1;
	}
	int fds_[2] = { -1, -1 };
};

TEST_F(SocketPair, SendRecvRoundTrip)
{
	Bytes msg(RDMA_WIRE_MSG_MAX);
	int n = rdma_wire_status_encode(msg.data(), msg.size(), 17, "clients 2\n", 10);
	ASSERT_GT(n, 0);
	ASSERT_EQ(rdma__control_send(fds_[1], msg.data(), n, 1000), 0);
	rdma_wire_header h;
	char body[64];
	ASSERT_EQ(rdma__control_recv(fds_[0], &h, body, sizeof(body), 1000), 0);
	EXPECT_EQ(h.type, RDMA_WIRE_STATUS);
	EXPECT_EQ(h.seq, 17u);
	ASSERT_EQ(h.length, 10u);
	EXPECT_EQ(std::memcmp(body, "clients 2\n", 10), 0);
}

TEST_F(SocketPair, RecvBounds)
{
	rdma_wire_header h;
	char body[8];
	// Nothing arrives.
	EXPECT_EQ(rdma__control_recv(fds_[0], &h, body, sizeof(body), 50), -ETIMEDOUT);
	// A body larger than the caller's buffer.
	Bytes msg(RDMA_WIRE_MSG_MAX);
	int n = rdma_wire_status_encode(msg.data(), msg.size(), 1, "123456789", 9);
	ASSERT_GT(n, 0);
	ASSERT_EQ(rdma__control_send(fds_[1], msg.data(), n, 1000), 0);
	EXPECT_EQ(rdma__control_recv(fds_[0], &h, body, sizeof(body), 1000), RDMA_E_PROTO);
}

TEST_F(SocketPair, RecvHalfAMessageThenTimeoutOrEof)
{
	Bytes msg(RDMA_WIRE_MSG_MAX);
	int n = rdma_wire_status_encode(msg.data(), msg.size(), 1, "abcdef", 6);
	ASSERT_GT(n, 0);
	ASSERT_EQ(send(fds_[1], msg.data(), n - 3, 0), n - 3);
	rdma_wire_header h;
	char body[64];
	EXPECT_EQ(rdma__control_recv(fds_[0], &h, body, sizeof(body), 50), -ETIMEDOUT);
	ClosePeer();
	EXPECT_EQ(rdma__control_recv(fds_[0], &h, body, sizeof(body), 1000), RDMA_E_CONN);
	EXPECT_EQ(rdma__control_alive(fds_[0]), RDMA_E_CONN);
}

TEST_F(SocketPair, GarbageHeader)
{
	uint8_t junk[RDMA_WIRE_HEADER_SIZE];
	std::memset(junk, 0x5a, sizeof(junk));
	ASSERT_EQ(rdma__control_send(fds_[1], junk, sizeof(junk), 1000), 0);
	rdma_wire_header h;
	char body[64];
	EXPECT_EQ(rdma__control_recv(fds_[0], &h, body, sizeof(body), 1000), RDMA_E_PROTO);
}

TEST_F(SocketPair, SendToDeadPeerIsConnErrorNotSigpipe)
{
	ClosePeer();
	uint8_t b[64] = {};
	// Without MSG_NOSIGNAL this would kill the test with SIGPIPE.
	EXPECT_EQ(rdma__control_send(fds_[0], b, sizeof(b), 1000), RDMA_E_CONN);
}

TEST_F(SocketPair, SendToStuckPeerTimesOut)
{
	// The peer never reads: the socket buffers fill and the send must
	// give up at its deadline.
	int small = 4096;
	setsockopt(fds_[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	Bytes big(8 << 20, 1);
	EXPECT_EQ(rdma__control_send(fds_[0], big.data(), big.size(), 100), -ETIMEDOUT);
}

TEST_F(SocketPair, AliveWithPendingData)
{
	EXPECT_EQ(rdma__control_alive(fds_[0]), 0);
	ASSERT_EQ(send(fds_[1], "x", 1, 0), 1);
	EXPECT_EQ(rdma__control_alive(fds_[0]), 0);
	char c;
	EXPECT_EQ(recv(fds_[0], &c, 1, 0), 1); // the peek consumed nothing
}

} // namespace
