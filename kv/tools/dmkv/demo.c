/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kv/tools/dmkv/demo.c -- `dmkv demo`, the README's main job: a three-node
 * cluster in a temporary directory, 100K records loaded, YCSB-B from
 * several client threads for 20 seconds with node 1 crashed a third of the
 * way in and restored at two thirds, then every record read back. It
 * prints throughput, latency and round trips per operation before, during
 * and after the crash, the failed operations, and the final check, writes
 * the JSON, the CSV timeline and (with python3-matplotlib) a plot, and
 * exits 2 if any value was wrong or any acknowledged write lost.
 *
 * On `local` (the default) the nodes are pool files every client maps and
 * a crash fails the node's device; with --transport ofi+tcp they are
 * dmkv-node daemons on loopback, the crash is SIGKILL and the restore a
 * restart from the pool. On a RAM file system the pools stand in for
 * persistent memory: PMEM_IS_PMEM_FORCE=1 makes every persist a real
 * cache-line flush and fence (the demo re-executes itself with it set).
 */
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <pm/error.h>

#include "kv/tools/dmkv/dmkv.h"

#define TMPFS_MAGIC_NUMBER 0x01021994

/* A free loopback TCP port (bound and released: another process could
 * take it meanwhile, which the daemon's start then reports). */
static unsigned
free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	unsigned port = 0;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
		getsockname(fd, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

static bool
on_tmpfs(const char *dir)
{
	struct statfs sf;

	return statfs(dir, &sf) == 0 && sf.f_type == TMPFS_MAGIC_NUMBER;
}

/* Find benchmarks/kv_report.py: $DMKV_REPORT, the runfiles, the source
 * tree around Bazel's output tree, or PREFIX/share/dmem beside an installed
 * PREFIX/bin/dmkv (tools/install.sh). */
static const char *
find_report(void)
{
	static char buf[PATH_MAX + 64];
	char self[PATH_MAX];
	const char *env = getenv("DMKV_REPORT");
	ssize_t n;

	if (env != NULL && env[0] != '\0')
		return env;
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return NULL;
	self[n] = '\0';
	snprintf(buf, sizeof(buf), "%s.runfiles/dmem/benchmarks/kv_report.py", self);
	if (access(buf, R_OK) == 0)
		return buf;
	if (getenv("BUILD_WORKSPACE_DIRECTORY") != NULL) {
		snprintf(buf, sizeof(buf), "%s/benchmarks/kv_report.py",
			getenv("BUILD_WORKSPACE_DIRECTORY"));
		if (access(buf, R_OK) == 0)
			return buf;
	}
	if (strrchr(self, '/') != NULL) {
		*strrchr(self, '/') = '\0';
		snprintf(buf, sizeof(buf), "%s/../share/dmem/kv_report.py", self);
		if (access(buf, R_OK) == 0)
			return buf;
	}
	return NULL;
}

/* Draw the plot with kv_report.py; a missing python or matplotlib is
 * reported, not an error of the demo. */
static void
plot(const char *json, const char *png)
{
	const char *script = find_report();
	pid_t pid;
	int st;

	if (script == NULL) {
		dmkv_err("no plot: benchmarks/kv_report.py not found (set DMKV_REPORT)");
		return;
	}
	pid = fork();
	if (pid == 0) {
		/* Debian's python3 has python3-matplotlib; another first on
		 * $PATH (pyenv, a venv) may not. */
		const char *py = access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";

		execlp(py, py, script, "--dmkv", json, "--png", png, (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		dmkv_err("no plot: %s failed (python3-matplotlib is installed by tools/setup.sh)",
			script);
	else
		printf("plot: %s\n", png);
}

static void
print_help(void)
{
	printf("usage: dmkv demo [options]\n"
	       "\n"
	       "The main job: make a three-node cluster in a temporary directory, load\n"
	       "--records records, run YCSB-B from --threads client threads for --duration\n"
	       "seconds, crash node 1 a third of the way in and restore it at two thirds,\n"
	       "then read every record back. Prints throughput, latency and round trips\n"
	       "per operation before, during and after the crash, the failed operations\n"
	       "and the final check; writes dmkv-demo.json, .csv and .png (--out).\n"
	       "\n"
	       "options:\n"
	       "  --transport T      local (pool files mapped by this process, the CXL\n"
	       "                     model; the crash fails a node's device) or ofi+tcp\n"
	       "                     (dmkv-node daemons on loopback; the crash is SIGKILL,\n"
	       "                     the restore a restart from the pool); default local\n"
	       "  --records N        default 100000\n"
	       "  --duration S       default 20\n"
	       "  --threads N        default: the cores, 2..8\n"
	       "  --inflight N       operations in flight per thread (default 1)\n"
	       "  --value-size N     default 64\n"
	       "  --workload W       default B\n"
	       "  --short            a quick run (tests, CI): 10000 records, 3 s, 2 threads\n"
	       "                     (other options still apply)\n"
	       "  --dir DIR          where the pools go (default a new directory in\n"
	       "                     /dev/shm, else $TMPDIR); removed at the end\n"
	       "  --keep             keep the directory (see below)\n"
	       "  --out PREFIX       results to PREFIX.json, .csv, .png (default\n"
	       "                     ./dmkv-demo)\n"
	       "  --no-plot          do not draw the plot\n"
	       "\n"
	       "With --keep the daemons are still stopped; the pools and the cluster file\n"
	       "stay, and 'dmkv --config DIR/dmkv.conf cluster up' brings them back.\n"
	       "\n" DMKV_EXIT_CODES_HELP);
}

/* Write the cluster file of the demo into @dir; its path into @conf. */
static int
write_conf(const char *dir, bool tcp, unsigned clients, uint64_t records, char *conf,
	size_t cap)
{
	FILE *f;

	snprintf(conf, cap, "%s/dmkv.conf", dir);
	f = fopen(conf, "w");
	if (f == NULL) {
		dmkv_err("cannot write %s: %s", conf, strerror(errno));
		return DMKV_EXIT_IO;
	}
	fprintf(f, "# written by dmkv demo\n[cluster]\n");
	for (unsigned i = 0; i < 3; i++) {
		if (tcp)
			fprintf(f, "node = ofi+tcp://127.0.0.1:%u\n", free_port());
		else
			fprintf(f, "node = local:%s/node%u.pool\n", dir, i);
	}
	/* A location cache of twice the records: a miss costs an index
	 * lookup (the cache is 4-way set associative by key hash). */
	fprintf(f, "token = demo-%ld\ntimeout_ms = 5000\nconnect_timeout_ms = 1000\n"
		   "cache_entries = %llu\n[create]\nmax_clients = %u\nlog_bytes = 64M\n",
		(long)getpid(), (unsigned long long)(records < 32768 ? 65536 : 2 * records), clients);
	return fclose(f) == 0 ? 0 : DMKV_EXIT_IO;
}

int
dmkv_cmd_demo(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "transport", required_argument, NULL, 't' },
		{ "records", required_argument, NULL, 'r' },
		{ "duration", required_argument, NULL, 'd' },
		{ "threads", required_argument, NULL, 'n' },
		{ "inflight", required_argument, NULL, 'i' },
		{ "value-size", required_argument, NULL, 'v' },
		{ "workload", required_argument, NULL, 'w' },
		{ "short", no_argument, NULL, 's' },
		{ "dir", required_argument, NULL, 'D' },
		{ "keep", no_argument, NULL, 'k' },
		{ "out", required_argument, NULL, 'o' },
		{ "no-plot", no_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char dir[PATH_MAX], conf[PATH_MAX + 16], json[PATH_MAX], csv[PATH_MAX], png[PATH_MAX];
	const char *transport = "local", *out = "dmkv-demo", *user_dir = NULL;
	bool keep = false, no_plot = false, tcp;
	struct dmkv_bench_opts o;
	struct dmkv_cluster cl;
	uint64_t v;
	int opt, code;

	dmkv_bench_opts_init(&o);
	o.records = 100000;
	o.duration_ms = 20000;
	/* Several clients, no more than the cores: a preempted client holds
	 * its operation's lock words while it sleeps. */
	o.threads = (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
	o.threads = o.threads < 2 ? 2 : o.threads > 8 ? 8 : o.threads;
	/* --short sets defaults that the other options then override. */
	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "--short") == 0) {
			o.records = 10000;
			o.duration_ms = 3000;
			o.warmup_ms = 500;
			o.threads = 2;
			o.interval_ms = 250;
		}
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		bool ok = true;

		switch (opt) {
		case 't':
			transport = optarg;
			ok = strcmp(optarg, "local") == 0 || strcmp(optarg, "ofi+tcp") == 0;
			break;
		case 'r':
			ok = dmkv_parse_u64(optarg, false, 1, UINT64_C(1) << 30, &o.records);
			break;
		case 'd':
			ok = dmkv_parse_u64(optarg, false, 1, 86400, &v);
			o.duration_ms = v * 1000;
			break;
		case 'n':
			ok = dmkv_parse_u64(optarg, false, 1, 64, &v);
			o.threads = (unsigned)v;
			break;
		case 'i':
			ok = dmkv_parse_u64(optarg, false, 1, 64, &v);
			o.inflight = (unsigned)v;
			break;
		case 'v':
			ok = dmkv_parse_u64(optarg, true, 24, KV_VALUE_MAX, &v);
			o.value_size = (unsigned)v;
			break;
		case 'w':
			ok = strlen(optarg) == 1 && dmkv_ycsb_workload(optarg[0], &o.workload) == 0;
			o.dist = o.workload.dist;
			break;
		case 's':
			break;
		case 'D':
			user_dir = optarg;
			break;
		case 'k':
			keep = true;
			break;
		case 'o':
			out = optarg;
			break;
		case 'P':
			no_plot = true;
			break;
		case 'h':
			print_help();
			return 0;
		default:
			ok = false;
		}
		if (!ok) {
			if (opt != '?')
				dmkv_err("demo: bad value for an option: %s", optarg ? optarg : "");
			fprintf(stderr, "Try 'dmkv demo --help'.\n");
			return DMKV_EXIT_USAGE;
		}
	}
	if (optind != argc) {
		dmkv_err("demo: unexpected argument '%s'", argv[optind]);
		return DMKV_EXIT_USAGE;
	}
	tcp = strcmp(transport, "ofi+tcp") == 0;

	if (user_dir != NULL) {
		snprintf(dir, sizeof(dir), "%s", user_dir);
		if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
			dmkv_err("cannot create %s: %s", dir, strerror(errno));
			return DMKV_EXIT_IO;
		}
	} else {
		const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" :
			getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp";

		snprintf(dir, sizeof(dir), "%s/dmkv-demo.XXXXXX", base);
		if (mkdtemp(dir) == NULL) {
			dmkv_err("cannot create a directory in %s: %s", base, strerror(errno));
			return DMKV_EXIT_IO;
		}
	}
	/* On a RAM file system the pools stand in for persistent memory. */
	if (on_tmpfs(dir) && getenv("PMEM_IS_PMEM_FORCE") == NULL) {
		setenv("PMEM_IS_PMEM_FORCE", "1", 1);
		if (user_dir == NULL)
			rmdir(dir);
		/* libpmem reads it once, when it is loaded: start again. */
		execv("/proc/self/exe", dmkv_argv);
		dmkv_err("cannot re-execute with PMEM_IS_PMEM_FORCE=1: %s", strerror(errno));
		return DMKV_EXIT_SOFTWARE;
	}
	if ((code = write_conf(dir, tcp, 2 * o.threads * o.inflight + o.loaders + 4, o.records,
		conf, sizeof(conf))) != 0)
		return code;
	if ((code = dmkv_cluster_load(&cl, conf, dir)) != 0)
		return code;
	printf("dmkv demo: 3 memory nodes (%s) in %s%s\n",
		tcp ? "dmkv-node daemons over ofi+tcp on loopback" : "local: pool files", dir,
		getenv("PMEM_IS_PMEM_FORCE") != NULL ?
			", on a RAM file system standing in for persistent memory" : "");
	fflush(stdout);
	code = dmkv_cluster_up(&cl, o.records, o.value_size);
	if (code == 0) {
		snprintf(json, sizeof(json), "%s.json", out);
		snprintf(csv, sizeof(csv), "%s.csv", out);
		snprintf(png, sizeof(png), "%s.png", out);
		o.load = true;
		o.run = true;
		o.fail_node = o.restore_node = 1;
		o.fail_at_ms = o.duration_ms / 3;
		o.restore_at_ms = 2 * o.duration_ms / 3;
		o.json_path = json;
		o.csv_path = csv;
		o.label = tcp ? "demo ofi+tcp" : "demo local";
		code = dmkv_bench_run(&cl, &o);
		printf("\n%s: %s\n", code == 0 ? "PASS" : "FAIL",
			code == 0 ? "no wrong value, every acknowledged write read back" :
			code == DMKV_EXIT_CHECK ? "a wrong value or a lost acknowledged write (above)" :
			"the run did not complete (above)");
		printf("results: %s, %s\n", json, csv);
		if (!no_plot && (code == 0 || code == DMKV_EXIT_CHECK))
			plot(json, png);
	}
	(void)dmkv_cluster_down(&cl, !keep, 5000);
	if (!keep && user_dir == NULL) {
		unlink(conf);
		rmdir(dir);
	} else {
		printf("kept: %s (cluster file %s)\n", dir, conf);
	}
	dmkv_cluster_free(&cl);
	return code;
}
