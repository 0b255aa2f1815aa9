// SPDX-License-Identifier: BSD-3-Clause
// rdma/tests/node_proc.h -- run the dmkv-node daemon from tests: a running
// node as an object (start, port, signals, restart) and one-shot runs of the
// binary for command-line tests.
//
// The binary must be a data dependency of the test (data = ["//rdma:dmkv-node"]);
// it is found in the runfiles. Every wait here is bounded and fails only on
// a hang, never on slowness within the bound.
#ifndef RDMA_TESTS_NODE_PROC_H
#define RDMA_TESTS_NODE_PROC_H

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include <rdma/node.h>

namespace rdmatest {

// $TEST_TMPDIR (or /tmp outside Bazel).
std::string TempDir();

// A path in TempDir() with nothing at it (removed first).
std::string FreshPath(const std::string &name);

// Absolute path of the dmkv-node binary in the test's runfiles.
std::string NodeBinary();

// What a finished run of the binary did.
struct RunResult {
	int exit_code = -1;   // exit status, or -1 if killed by a signal or hung
	int signal = 0;       // the signal that ended it, if any
	bool timed_out = false;
	std::string out;      // its stdout
	std::string err;      // its stderr
};

// Run dmkv-node with @args (not including argv[0]) and wait for it, at most
// @timeout_ms (then it is killed and timed_out is set).
RunResult RunNode(const std::vector<std::string> &args, int timeout_ms = 60000);

// How NodeProcess starts the daemon.
struct NodeOptions {
	std::string name = "node";   // pool is TempDir()/<name>.pool
	bool create = true;          // pass --create
	std::vector<std::string> regions = {"1M"}; // --region values (with --create)
	std::string backends;        // --backends value; "" = the daemon's default
	std::string token;           // --token value; "" = none
	std::vector<std::string> extra; // more arguments, appended last
};

// A dmkv-node child process on a pool in TempDir(), with --port 0 and a
// ready file from which Start() learns the port. Its stdout and stderr are
// appended to TempDir()/<name>.stderr (kept across restarts). The destructor
// kills a child that is still running (SIGKILL).
class NodeProcess {
public:
	explicit NodeProcess(NodeOptions opts = NodeOptions());
	~NodeProcess();
	NodeProcess(const NodeProcess &) = delete;
	NodeProcess &operator=(const NodeProcess &) = delete;

	// Start the daemon and wait (at most @timeout_ms) until its ready file
	// names the port. False if it exited or hung instead; *@error (if not
	// null) then says why, with the tail of its stderr. A hung child is
	// killed.
	bool Start(std::string *error = nullptr, int timeout_ms = 30000);

	// Start the daemon and return at once, without waiting for it to be
	// ready (to catch it in the middle of creating its pool). False if it
	// could not be spawned; *@error then says why.
	bool Launch(std::string *error = nullptr);

	// Terminate() if running, then Start() again on the same pool.
	bool Restart(std::string *error = nullptr, int timeout_ms = 30000);

	// The control port (0 before a successful Start; after the child
	// ended, the port it had).
	int Port() const { return port_; }
	pid_t Pid() const { return pid_; }
	const std::string &PoolPath() const { return pool_; }
	std::string ControlAddress() const;  // "127.0.0.1:<port>"
	bool Running();

	// Send @sig. For SIGKILL also wait for the child and return its exit
	// code as Wait() does; for other signals return 0 (or -1 if not running).
	int Kill(int sig);

	// SIGTERM, then wait at most @timeout_ms. Returns the exit code; if the
	// child was killed by a signal, 128 + signal; -1 if it hung (it is then
	// killed) or was not running.
	int Terminate(int timeout_ms = 30000);

	// Wait for the child to exit by itself, at most @timeout_ms; as Terminate.
	int Wait(int timeout_ms = 30000);

	// Everything the child(ren) wrote so far, and its last @n bytes.
	std::string Stderr() const;
	std::string StderrTail(size_t n = 4000) const;

	// The full command line used.
	std::vector<std::string> Args() const;

private:
	NodeOptions opts_;
	std::string pool_;
	std::string ready_;
	std::string log_;
	pid_t pid_ = -1;
	int port_ = 0;
};

// The config of an in-process test node: a pool at @path (created if
// missing) with two regions of @region0 and @region1 bytes and cluster token
// @token. @path and @token must outlive the config.
inline rdma_node_config TwoRegionNodeConfig(const std::string &path, uint64_t region0,
	uint64_t region1, const char *token)
{
	rdma_node_config cfg;
	rdma_node_config_init(&cfg);
	cfg.pool_path = path.c_str();
	cfg.flags = RDMA_NODE_CREATE;
	cfg.nregions = 2;
	cfg.region_size[0] = region0;
	cfg.region_size[1] = region1;
	cfg.token = token;
	return cfg;
}

// Serving @backends on @host, control port chosen by the kernel.
// Where a node under test serves RDMA (verbs, ofi+verbs):
// $RDMA_VERBS_TEST_HOST if set, else the IPv4 address of the netdev behind
// the first RoCE/Soft-RoCE port (sysfs; rdma_cm cannot bind loopback to a
// device), else 127.0.0.1.
const char *RdmaTestHost();

inline rdma_node_serve_config ServeConfig(const char *host, unsigned backends)
{
	rdma_node_serve_config cfg;
	rdma_node_serve_config_init(&cfg);
	cfg.host = host;
	cfg.port = 0;
	cfg.backends = backends;
	return cfg;
}

} // namespace rdmatest

#endif
