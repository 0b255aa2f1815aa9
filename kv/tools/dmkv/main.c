/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kv/tools/dmkv/main.c -- dmkv, the store's command line: dispatch, the
 * shared options, exit codes, progress lines.
 *
 *   dmkv [--config FILE] [--json] [--quiet] COMMAND [ARGS]
 *
 * Commands: put, get, delete, load, bench, status, scrub, node rebuild,
 * cluster up|down, demo.
 * The cluster file is --config, else $DMKV_CONFIG, else ./dmkv.conf
 * (kv/kv.h describes its format).
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <pm/error.h>
#include <rdma/rdma.h>

#include "kv/tools/dmkv/dmkv.h"

bool dmkv_json;
bool dmkv_quiet;
char **dmkv_argv;

void
dmkv_err(const char *fmt, ...)
{
	va_list ap;

	fputs("dmkv: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int
dmkv_exit_of(int ret)
{
	switch (ret) {
	case 0:
		return DMKV_EXIT_OK;
	case -ENOENT:
	case KV_E_EXISTS:
		return DMKV_EXIT_NOTFOUND;
	case KV_E_CONFIG:
	case RDMA_E_AUTH:
		return DMKV_EXIT_CONFIG;
	case KV_E_UNAVAILABLE:
	case RDMA_E_CONN:
	case -ETIMEDOUT:
		return DMKV_EXIT_UNAVAILABLE;
	case -E2BIG:
	case -EINVAL:
		return DMKV_EXIT_USAGE;
	default:
		return DMKV_EXIT_SOFTWARE;
	}
}

int
dmkv_fail(const char *what, int ret)
{
	const char *msg = pm_errormsg();

	if (msg != NULL && msg[0] != '\0')
		dmkv_err("%s: %s: %s", what, pm_strerror(ret), msg);
	else
		dmkv_err("%s: %s", what, pm_strerror(ret));
	return dmkv_exit_of(ret);
}

uint64_t
dmkv_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

bool
dmkv_parse_u64(const char *s, bool sizes, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	unsigned shift = 0;
	char *end;

	if (s == NULL || s[0] < '0' || s[0] > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || end == s)
		return false;
	if (sizes && *end != '\0' && end[1] == '\0') {
		shift = *end == 'K' || *end == 'k' ? 10 : *end == 'M' || *end == 'm' ? 20 :
			*end == 'G' || *end == 'g' ? 30 : 0;
		if (shift == 0)
			return false;
		end++;
	}
	if (*end != '\0' || v > (UINT64_MAX >> shift))
		return false;
	v <<= shift;
	if (v < min || v > max)
		return false;
	*out = v;
	return true;
}

void
dmkv_progress_init(struct dmkv_progress *p, const char *label, uint64_t total)
{
	p->label = label;
	p->total = total;
	p->start_ns = p->last_ns = dmkv_now_ns();
	p->tty = isatty(2) && !dmkv_quiet;
}

void
dmkv_progress_show(struct dmkv_progress *p, uint64_t done, bool final)
{
	uint64_t now = dmkv_now_ns();
	double s = (double)(now - p->start_ns) / 1e9;
	char bar[31];
	unsigned fill;

	if (dmkv_quiet || (!final && (!p->tty || now - p->last_ns < 100000000u)))
		return;
	p->last_ns = now;
	fill = p->total == 0 ? 30 : (unsigned)(done * 30 / p->total);
	if (fill > 30)
		fill = 30;
	memset(bar, '#', fill);
	memset(bar + fill, '.', 30 - fill);
	bar[30] = '\0';
	fprintf(stderr, "%s%-7s [%s] %llu/%llu (%3.0f%%) %.0f/s %.1f s%s", p->tty ? "\r" : "",
		p->label, bar, (unsigned long long)done, (unsigned long long)p->total,
		p->total == 0 ? 100.0 : 100.0 * (double)done / (double)p->total,
		s > 0 ? (double)done / s : 0, s, final || !p->tty ? "\n" : "");
}

static void
print_help(FILE *f)
{
	fprintf(f,
		"usage: dmkv [--config FILE] [--json] [--quiet] COMMAND [ARGS]\n"
		"\n"
		"The durable, replicated, disaggregated key-value store (kv/kv.h).\n"
		"\n"
		"commands:\n"
		"  put KEY [VALUE|-]      store VALUE (or standard input) under KEY\n"
		"  get KEY                write KEY's value to standard output\n"
		"  delete KEY             remove KEY\n"
		"  load                   bulk load generated records or a file\n"
		"  bench                  the YCSB driver (workloads A-D, F)\n"
		"  status                 every memory node and the store\n"
		"  scrub                  bring nodes that were down up to date\n"
		"  node rebuild INDEX     rebuild a node whose pool was lost, from the others\n"
		"  cluster up|down        start or stop the nodes of the cluster file\n"
		"  demo                   the main job: a three-node cluster, YCSB-B with a\n"
		"                         node crashed and restored, every write checked\n"
		"  COMMAND --help         that command's options\n"
		"\n"
		"options:\n"
		"  --config FILE          the cluster file (default $DMKV_CONFIG, else\n"
		"                         ./dmkv.conf); format in kv/kv.h and the README\n"
		"  --json                 machine-readable output on standard output\n"
		"  --quiet                no progress lines\n"
		"  -h, --help             this text\n"
		"\n" DMKV_EXIT_CODES_HELP);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *config = getenv("DMKV_CONFIG");
	const char *cmd;
	int opt;

	dmkv_argv = argv;
	/* A SIGINT or SIGTERM must not end dmkv as exit 1, which means "not
	 * found" here (rdma.h, rdma_signals_restore). */
	if (rdma_signals_restore() != 0) {
		dmkv_err("cannot restore the default signal dispositions");
		return DMKV_EXIT_SOFTWARE;
	}
	/* Under `bazel run`, paths on the command line are the user's. */
	if (getenv("BUILD_WORKING_DIRECTORY") != NULL &&
		chdir(getenv("BUILD_WORKING_DIRECTORY")) != 0) {
		dmkv_err("cannot enter %s", getenv("BUILD_WORKING_DIRECTORY"));
		return DMKV_EXIT_IO;
	}
	if (config == NULL || config[0] == '\0')
		config = "dmkv.conf";
	/* Options before the command only ('+'): the rest are the command's. */
	while ((opt = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			config = optarg;
			break;
		case 'j':
			dmkv_json = true;
			break;
		case 'q':
			dmkv_quiet = true;
			break;
		case 'h':
			print_help(stdout);
			return 0;
		default:
			fprintf(stderr, "Try 'dmkv --help'.\n");
			return DMKV_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		print_help(stderr);
		return DMKV_EXIT_USAGE;
	}
	cmd = argv[optind];
	argc -= optind;
	argv += optind;
	optind = 0; /* reset getopt for the command's own options */
	if (strcmp(cmd, "put") == 0 || strcmp(cmd, "get") == 0 || strcmp(cmd, "delete") == 0)
		return dmkv_cmd_kv(argc, argv, config);
	if (strcmp(cmd, "load") == 0)
		return dmkv_cmd_load(argc, argv, config);
	if (strcmp(cmd, "bench") == 0)
		return dmkv_cmd_bench(argc, argv, config);
	if (strcmp(cmd, "status") == 0)
		return dmkv_cmd_status(argc, argv, config);
	if (strcmp(cmd, "scrub") == 0)
		return dmkv_cmd_scrub(argc, argv, config);
	if (strcmp(cmd, "node") == 0)
		return dmkv_cmd_node(argc, argv, config);
	if (strcmp(cmd, "cluster") == 0)
		return dmkv_cmd_cluster(argc, argv, config);
	if (strcmp(cmd, "demo") == 0)
		return dmkv_cmd_demo(argc, argv);
	if (strcmp(cmd, "help") == 0) {
		print_help(stdout);
		return 0;
	}
	dmkv_err("unknown command '%s'", cmd);
	fprintf(stderr, "Try 'dmkv --help'.\n");
	return DMKV_EXIT_USAGE;
}
