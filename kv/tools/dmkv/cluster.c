/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kv/tools/dmkv/cluster.c -- a cluster on one machine: the memory nodes of
 * a cluster config, made real.
 *
 * A local:PATH node is a pool file that every client process maps (the
 * CXL model); `cluster up` creates it with rdma/node.h, and no process
 * needs to run for it. An ofi+tcp://HOST:PORT node is a dmkv-node daemon
 * serving the pool DIR/nodeI.pool on that port; `cluster up` starts it
 * (in its own session, so it outlives the command) and records its pid in
 * DIR/nodeI.pid, its log in DIR/nodeI.log. `cluster down` stops what the
 * pid files name, after checking that the process is still that daemon
 * (a pid may have been reused), and with --purge removes the pools.
 *
 * A crash (bench --fail-node, the demo) is SIGKILL of the daemon, or for
 * a local node the failure of its device for this process
 * (rdma_local_fail); a restore restarts the daemon from its pool, or
 * restores the device.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <pm/error.h>
#include <rdma/node.h>

#include "kv/tools/dmkv/dmkv.h"

/* How long a daemon may take to serve after it was started. */
#define READY_MS 30000

bool
dmkv_node_is_local(const struct dmkv_cluster *cl, unsigned i)
{
	return strncmp(cl->cfg.nodes[i], "local:", 6) == 0;
}

/* The host and port of an ofi+tcp:// node; false if it is not one. */
static bool
tcp_addr(const char *uri, char *host, size_t cap, unsigned *port)
{
	const char *p = uri + strlen("ofi+tcp://"), *colon;
	char *end;
	unsigned long v;

	if (strncmp(uri, "ofi+tcp://", 10) != 0 || (colon = strrchr(p, ':')) == NULL ||
		(size_t)(colon - p) >= cap || colon == p)
		return false;
	errno = 0;
	v = strtoul(colon + 1, &end, 10);
	if (errno != 0 || *end != '\0' || v == 0 || v > 65535)
		return false;
	memcpy(host, p, (size_t)(colon - p));
	host[colon - p] = '\0';
	*port = (unsigned)v;
	return true;
}

static void
node_file(const struct dmkv_cluster *cl, unsigned i, const char *ext, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s/node%u.%s", cl->dir, i, ext);
}

/* The pool file of node @i. */
static void
pool_path(const struct dmkv_cluster *cl, unsigned i, char *buf, size_t cap)
{
	if (dmkv_node_is_local(cl, i))
		snprintf(buf, cap, "%s", cl->cfg.nodes[i] + 6);
	else
		node_file(cl, i, "pool", buf, cap);
}

/* An executable file? */
static bool
runnable(const char *path)
{
	return access(path, X_OK) == 0;
}

/* Find dmkv-node: $DMKV_NODE, beside this program in Bazel's output tree
 * or its runfiles, in the same directory (installed), or on $PATH. */
static const char *
find_node_bin(void)
{
	static char buf[PATH_MAX + 64];
	char self[PATH_MAX], *slash;
	const char *env = getenv("DMKV_NODE");
	ssize_t n;

	if (env != NULL && env[0] != '\0')
		return env;
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		snprintf(buf, sizeof(buf), "%s.runfiles/dmem/rdma/dmkv-node", self);
		if (runnable(buf))
			return buf;
		slash = strrchr(self, '/');
		if (slash != NULL) {
			*slash = '\0';
			snprintf(buf, sizeof(buf), "%s/../rdma/dmkv-node", self);
			if (runnable(buf))
				return buf;
			snprintf(buf, sizeof(buf), "%s/dmkv-node", self);
			if (runnable(buf))
				return buf;
		}
	}
	return "dmkv-node";
}

int
dmkv_cluster_load(struct dmkv_cluster *cl, const char *path, const char *dir)
{
	int ret;

	memset(cl, 0, sizeof(*cl));
	kv_config_init(&cl->cfg);
	ret = kv_config_load(&cl->file, &cl->cfg, path);
	if (ret != 0) {
		dmkv_err("%s: %s", pm_strerror(ret), ret == KV_E_CONFIG ? pm_errormsg() : path);
		return DMKV_EXIT_CONFIG;
	}
	if (snprintf(cl->dir, sizeof(cl->dir), "%s%s", dir != NULL ? dir : path,
		dir != NULL ? "" : ".d") >= (int)sizeof(cl->dir)) {
		dmkv_err("%s: path too long", path);
		dmkv_cluster_free(cl);
		return DMKV_EXIT_USAGE;
	}
	cl->node_bin = find_node_bin();
	return 0;
}

void
dmkv_cluster_free(struct dmkv_cluster *cl)
{
	kv_config_file_delete(&cl->file);
}

/* The pid recorded for node @i, if that process is still its daemon. */
static pid_t
daemon_pid(const struct dmkv_cluster *cl, unsigned i)
{
	char path[PATH_MAX], pool[PATH_MAX], cmd[8192];
	ssize_t n;
	long pid;
	FILE *f;
	int fd;

	node_file(cl, i, "pid", path, sizeof(path));
	f = fopen(path, "r");
	if (f == NULL)
		return 0;
	if (fscanf(f, "%ld", &pid) != 1 || pid <= 1)
		pid = 0;
	fclose(f);
	if (pid == 0)
		return 0;
	/* The daemon's command line names its pool: a reused pid does not. */
	snprintf(path, sizeof(path), "/proc/%ld/cmdline", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, cmd, sizeof(cmd) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	for (ssize_t k = 0; k < n; k++)
		if (cmd[k] == '\0')
			cmd[k] = ' ';
	cmd[n] = '\0';
	pool_path(cl, i, pool, sizeof(pool));
	return strstr(cmd, "dmkv-node") != NULL && strstr(cmd, pool) != NULL ? (pid_t)pid : 0;
}

/* Whether @pid is gone (reaped if it is our child). */
static bool
gone(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, WNOHANG) == pid)
		return true;
	return kill(pid, 0) != 0 && errno == ESRCH;
}

/* Start node @i's daemon, creating its pool with @regions if @create;
 * wait until it serves. */
static int
daemon_start(struct dmkv_cluster *cl, unsigned i, bool create, const uint64_t regions[2])
{
	char host[256], pool[PATH_MAX], log[PATH_MAX], ready[PATH_MAX], pidf[PATH_MAX];
	char port_s[16], r0[32], r1[32];
	unsigned port;
	uint64_t t0;
	pid_t pid;
	FILE *f;

	if (!tcp_addr(cl->cfg.nodes[i], host, sizeof(host), &port)) {
		dmkv_err("node %u: %s: cluster up runs local:PATH and ofi+tcp://HOST:PORT nodes",
			i, cl->cfg.nodes[i]);
		return DMKV_EXIT_CONFIG;
	}
	pool_path(cl, i, pool, sizeof(pool));
	node_file(cl, i, "log", log, sizeof(log));
	node_file(cl, i, "ready", ready, sizeof(ready));
	node_file(cl, i, "pid", pidf, sizeof(pidf));
	snprintf(port_s, sizeof(port_s), "%u", port);
	snprintf(r0, sizeof(r0), "%llu", (unsigned long long)regions[0]);
	snprintf(r1, sizeof(r1), "%llu", (unsigned long long)regions[1]);
	unlink(ready);
	pid = fork();
	if (pid < 0)
		return dmkv_fail("fork", -errno);
	if (pid == 0) {
		const char *argv[32];
		unsigned a = 0;
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		setsid();
		argv[a++] = cl->node_bin;
		argv[a++] = "serve";
		argv[a++] = "--pool";
		argv[a++] = pool;
		if (create) {
			argv[a++] = "--create";
			argv[a++] = "--region";
			argv[a++] = r0;
			argv[a++] = "--region";
			argv[a++] = r1;
		}
		argv[a++] = "--listen";
		argv[a++] = host;
		argv[a++] = "--port";
		argv[a++] = port_s;
		argv[a++] = "--backends";
		argv[a++] = "tcp";
		argv[a++] = "--token";
		argv[a++] = cl->cfg.conn.token != NULL ? cl->cfg.conn.token : "";
		argv[a++] = "--ready-file";
		argv[a++] = ready;
		argv[a++] = "--log-level";
		argv[a++] = "warn";
		argv[a] = NULL;
		execvp(argv[0], (char *const *)argv);
		fprintf(stderr, "dmkv: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	cl->pid[i] = pid;
	f = fopen(pidf, "w");
	if (f == NULL || fprintf(f, "%ld\n", (long)pid) < 0 || fclose(f) != 0) {
		dmkv_err("cannot write %s", pidf);
		return DMKV_EXIT_IO;
	}
	t0 = dmkv_now_ns();
	while (access(ready, F_OK) != 0) {
		if (gone(pid)) {
			dmkv_err("node %u: dmkv-node (%s) exited; see %s", i, cl->node_bin, log);
			cl->pid[i] = 0;
			return DMKV_EXIT_UNAVAILABLE;
		}
		if (dmkv_now_ns() - t0 > (uint64_t)READY_MS * 1000000u) {
			dmkv_err("node %u: not serving after %u ms; see %s", i, READY_MS, log);
			return DMKV_EXIT_UNAVAILABLE;
		}
		usleep(10000);
	}
	return 0;
}

/* Create the local pool of node @i. */
static int
local_create(const struct dmkv_cluster *cl, unsigned i, const uint64_t regions[2])
{
	struct rdma_node_config nc;
	struct rdma_node *n = NULL;
	char pool[PATH_MAX];
	int ret;

	pool_path(cl, i, pool, sizeof(pool));
	rdma_node_config_init(&nc);
	nc.pool_path = pool;
	nc.flags = RDMA_NODE_CREATE;
	nc.nregions = 2;
	nc.region_size[0] = regions[0];
	nc.region_size[1] = regions[1];
	nc.token = cl->cfg.conn.token;
	ret = rdma_node_open(&n, &nc);
	if (ret != 0) {
		dmkv_err("node %u: creating %s: %s: %s%s", i, pool, pm_strerror(ret), pm_errormsg(),
			ret == PM_E_NOT_PMEM ? " (set PMEM_IS_PMEM_FORCE=1 on tmpfs)" : "");
		return dmkv_exit_of(ret);
	}
	ret = rdma_node_close(&n);
	return ret == 0 ? 0 : dmkv_fail("closing the new node", ret);
}

/* Whether node @i's pool file exists. */
static bool
pool_exists(const struct dmkv_cluster *cl, unsigned i)
{
	char pool[PATH_MAX];

	pool_path(cl, i, pool, sizeof(pool));
	return access(pool, F_OK) == 0;
}

/* Bring up node @i if its pool exists (@create false) or is missing
 * (@create true, made with @regions); a daemon already running is left. */
static int
node_up(struct dmkv_cluster *cl, unsigned i, bool create, const uint64_t regions[2])
{
	if (pool_exists(cl, i) == create)
		return 0;
	if (dmkv_node_is_local(cl, i))
		return create ? local_create(cl, i, regions) : 0;
	return daemon_pid(cl, i) == 0 ? daemon_start(cl, i, create, regions) : 0;
}

int
dmkv_cluster_up(struct dmkv_cluster *cl, uint64_t keys, size_t value_size)
{
	uint64_t regions[2], peer[2] = { 0, 0 };
	bool missing = false;
	int ret;

	if (cl->cfg.index_region != 0 || cl->cfg.store_region != 1) {
		dmkv_err("cluster up makes nodes with the index in region 0 and values in "
			 "region 1 (the defaults)");
		return DMKV_EXIT_CONFIG;
	}
	ret = kv_region_sizes(&cl->cfg, keys, KV_KEY_MAX < 256 ? KV_KEY_MAX : 256, value_size,
		&regions[0], &regions[1]);
	if (ret != 0)
		return dmkv_fail("sizing the regions", ret);
	if (mkdir(cl->dir, 0755) != 0 && errno != EEXIST) {
		dmkv_err("cannot create %s: %s", cl->dir, strerror(errno));
		return DMKV_EXIT_IO;
	}
	/* First the nodes that have their pools, then the new ones: a pool
	 * that replaces a lost one is sized like those of the nodes that
	 * hold the store (it is rebuilt from them: smaller could not hold
	 * what they hold, larger only costs the time and disk to make it). */
	for (unsigned i = 0; i < cl->cfg.nnodes; i++) {
		missing |= !pool_exists(cl, i);
		if ((ret = node_up(cl, i, false, regions)) != 0)
			return ret;
	}
	for (unsigned i = 0; missing && i < cl->cfg.nnodes; i++) {
		struct kv_node_status ns;

		if (pool_exists(cl, i) && kv_node_status_read(&cl->cfg, i, &ns) == 0 &&
			ns.formatted) {
			peer[0] = ns.index_bytes > peer[0] ? ns.index_bytes : peer[0];
			peer[1] = ns.store_bytes > peer[1] ? ns.store_bytes : peer[1];
		}
	}
	if (peer[0] != 0 && peer[1] != 0) {
		regions[0] = peer[0];
		regions[1] = peer[1];
	}
	for (unsigned i = 0; missing && i < cl->cfg.nnodes; i++) {
		if (!pool_exists(cl, i) && !dmkv_quiet)
			fprintf(stderr, "dmkv: node %u: new pool, %.1f MiB index and %.1f MiB "
				"values (%s)\n", i, regions[0] / 1048576.0, regions[1] / 1048576.0,
				peer[0] != 0 ? "as its peers" : "from --records and --value-size");
		if ((ret = node_up(cl, i, true, regions)) != 0)
			return ret;
	}
	/* Nodes that came back from their pools hold the store already
	 * (kv_create would also say so, but it needs every node at once). */
	for (unsigned i = 0; i < cl->cfg.nnodes; i++) {
		struct kv_node_status ns;

		if (kv_node_status_read(&cl->cfg, i, &ns) == 0 && ns.formatted)
			return 0;
	}
	ret = kv_create(&cl->cfg);
	if (ret == -EEXIST)
		return 0;
	return ret == 0 ? 0 : dmkv_fail("formatting the store", ret);
}

/* Stop @pid: SIGTERM, then SIGKILL after @grace_ms. */
static void
stop_pid(pid_t pid, unsigned grace_ms)
{
	uint64_t t0 = dmkv_now_ns();

	if (kill(pid, SIGTERM) != 0)
		return;
	while (!gone(pid)) {
		if (dmkv_now_ns() - t0 > (uint64_t)grace_ms * 1000000u) {
			kill(pid, SIGKILL);
			while (!gone(pid))
				usleep(1000);
			return;
		}
		usleep(2000);
	}
}

int
dmkv_cluster_down(struct dmkv_cluster *cl, bool purge, unsigned grace_ms)
{
	char path[PATH_MAX];

	for (unsigned i = 0; i < cl->cfg.nnodes; i++) {
		pid_t pid = cl->pid[i] != 0 ? cl->pid[i] : daemon_pid(cl, i);

		if (!dmkv_node_is_local(cl, i) && pid != 0)
			stop_pid(pid, grace_ms);
		cl->pid[i] = 0;
		node_file(cl, i, "pid", path, sizeof(path));
		unlink(path);
		node_file(cl, i, "ready", path, sizeof(path));
		unlink(path);
		if (!purge)
			continue;
		pool_path(cl, i, path, sizeof(path));
		unlink(path);
		strncat(path, ".node", sizeof(path) - strlen(path) - 1);
		unlink(path);
		node_file(cl, i, "log", path, sizeof(path));
		unlink(path);
	}
	if (purge)
		(void)rmdir(cl->dir); /* only if nothing else is in it */
	return 0;
}

int
dmkv_node_crash(struct dmkv_cluster *cl, unsigned i)
{
	char pool[PATH_MAX];
	pid_t pid;

	pool_path(cl, i, pool, sizeof(pool));
	if (dmkv_node_is_local(cl, i))
		return rdma_local_fail(pool, 1);
	pid = cl->pid[i] != 0 ? cl->pid[i] : daemon_pid(cl, i);
	if (pid == 0)
		return pm_error_set(-ESRCH, "node %u has no daemon running", i);
	if (kill(pid, SIGKILL) != 0)
		return pm_error_set(-errno, "kill %ld", (long)pid);
	while (!gone(pid))
		usleep(1000);
	cl->pid[i] = 0;
	return 0;
}

int
dmkv_node_restore(struct dmkv_cluster *cl, unsigned i)
{
	static const uint64_t none[2];
	char pool[PATH_MAX];

	pool_path(cl, i, pool, sizeof(pool));
	if (dmkv_node_is_local(cl, i))
		return rdma_local_fail(pool, 0);
	return daemon_start(cl, i, false, none) == 0 ? 0 :
		pm_error_set(KV_E_UNAVAILABLE, "node %u did not restart", i);
}
