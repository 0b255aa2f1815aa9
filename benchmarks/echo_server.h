// SPDX-License-Identifier: BSD-3-Clause
// benchmarks/echo_server.h -- the loopback TCP echo server that gives
// rdma_bench and kv_compare_bench their network floor: the cheapest
// request/response a TCP client can have on this machine. One thread
// accepts and serves every connection, busy-polling them all with
// MSG_DONTWAIT as the memory node's progress thread polls its endpoint (a
// server blocked in the kernel would add the wake-up of a halted vCPU to
// every round trip, which is not the floor).
#ifndef BENCHMARKS_ECHO_SERVER_H
#define BENCHMARKS_ECHO_SERVER_H

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

namespace bench {

class EchoServer {
public:
	// Listens on 127.0.0.1 (any free port) and echoes every message of
	// @msg bytes back on the connection it came from. port() is 0 if
	// the socket could not be set up.
	explicit EchoServer(size_t msg) : msg_(msg)
	{
		lfd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		sockaddr_in a{};
		a.sin_family = AF_INET;
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		socklen_t len = sizeof(a);
		if (lfd_ < 0 || bind(lfd_, reinterpret_cast<sockaddr *>(&a), sizeof(a)) != 0 ||
			listen(lfd_, 64) != 0 ||
			getsockname(lfd_, reinterpret_cast<sockaddr *>(&a), &len) != 0)
			return;
		port_ = ntohs(a.sin_port);
		thread_ = std::thread([this] { Serve(); });
	}
	~EchoServer()
	{
		stop_.store(true, std::memory_order_relaxed);
		if (thread_.joinable())
			thread_.join();
		if (lfd_ >= 0)
			close(lfd_);
	}
	EchoServer(const EchoServer &) = delete;
	EchoServer &operator=(const EchoServer &) = delete;

	uint16_t port() const { return port_; }

private:
	struct Conn {
		int fd;
		size_t got; // bytes of the current message received
		std::vector<char> buf;
	};

	void Serve()
	{
		std::vector<Conn> conns;
		// relaxed: the flag orders nothing, the join does
		for (uint64_t poll = 0; !stop_.load(std::memory_order_relaxed); poll++) {
			// a new connection waits a few hundred polls, so that the
			// accept's system call is not in every echo's way
			int fd = poll % kAcceptEvery == 0 ?
				accept4(lfd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK) : -1;
			if (fd >= 0) {
				int one = 1;
				setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
				conns.push_back({ fd, 0, std::vector<char>(msg_) });
			}
			for (size_t i = 0; i < conns.size();) {
				if (Step(&conns[i])) {
					i++;
					continue;
				}
				close(conns[i].fd);
				conns.erase(conns.begin() + static_cast<std::ptrdiff_t>(i));
			}
		}
		for (Conn &c : conns)
			close(c.fd);
	}

	// One poll of @c: receive what has come, echo a complete message.
	// False once the peer has closed or the connection failed.
	bool Step(Conn *c)
	{
		ssize_t r = recv(c->fd, c->buf.data() + c->got, msg_ - c->got, MSG_DONTWAIT);
		if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
			return false;
		if (r > 0)
			c->got += static_cast<size_t>(r);
		if (c->got < msg_)
			return true;
		c->got = 0;
		for (size_t sent = 0; sent < msg_;) {
			ssize_t s = send(c->fd, c->buf.data() + sent, msg_ - sent, MSG_NOSIGNAL);
			if (s < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				return false;
			if (s > 0)
				sent += static_cast<size_t>(s);
		}
		return true;
	}

	static constexpr uint64_t kAcceptEvery = 256;

	size_t msg_;
	int lfd_ = -1;
	uint16_t port_ = 0;
	std::atomic<bool> stop_{ false };
	std::thread thread_;
};

} // namespace bench

#endif
