/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pm/examples/crashsim_demo.c -- shows the crash simulator at work on real
 * PMDK pools: a correct persistent log passes every crash point, and three
 * planted persistence bugs are each found, with a command to replay them.
 *
 * Exit codes: 0 the correct code passed and every planted bug was found;
 * 1 otherwise (a false alarm or a missed bug); 2 bad arguments or setup.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pm/crashsim.h>
#include <pm/error.h>

#include "pmlog.h"

struct demo_opts {
	unsigned ops, threads, mt_ops, one_in, images;
	uint64_t seed;
	const char *dir;
};

struct demo_totals {
	uint64_t points, images;
	unsigned passed, found, wrong;
};

static void
usage(FILE *f, const char *prog)
{
	fprintf(f,
		"usage: %s [options]\n"
		"Runs a small persistent log on real PMDK pools under the crash simulator:\n"
		"the correct version must survive every crash point, and each of three\n"
		"planted bugs (valid flag before data, missing fence, torn two-word update)\n"
		"must be found.\n\n"
		"  --ops N          operations in the every-crash-point runs (1..%d, default 8)\n"
		"  --threads N      threads in the sampled runs (1..%d, default 4)\n"
		"  --mt-ops N       operations per thread in the sampled runs (default 16)\n"
		"  --sample-one-in N  check each event with probability 1/N (default 8)\n"
		"  --images N       post-crash images per crash point (>= 2, default 64)\n"
		"  --seed S         seed for sampled points and random images (default 1)\n"
		"  --dir DIR        where the pool files go (default $TMPDIR or /tmp)\n"
		"  --help           this text\n\n"
		"Exit status: 0 all as expected, 1 a false alarm or a missed bug, 2 usage or setup error.\n",
		prog, PMLOG_CAPACITY, PMLOG_MAX_THREADS);
}

/* parse_uint -- strict decimal in [lo, hi] */
static int
parse_uint(const char *s, unsigned lo, unsigned hi, unsigned *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
		return -1;
	*out = (unsigned)v;
	return 0;
}

static void
progress(void *arg, const struct pm_crashsim_stats *st)
{
	const char *name = arg;

	if (st->points % 16 == 0)
		fprintf(stderr, "\r  %-20s checked %" PRIu64 " crash points, %" PRIu64 " images",
			name, st->points, st->images);
}

/* print_indented -- print a multi-line report under a table row */
static void
print_indented(const char *text)
{
	printf("      ");
	for (; *text != '\0'; text++) {
		putchar(*text);
		if (*text == '\n')
			printf("      ");
	}
	putchar('\n');
}

/* demo_one -- simulate one variant and print its row */
static void
demo_one(const struct demo_opts *o, enum pmlog_bug bug, unsigned threads, unsigned ops,
	enum pm_crashsim_mode mode, struct demo_totals *tot)
{
	char path[4096], report[4096] = "", name[64];
	struct pm_crashsim_config cfg;
	struct pm_crashsim_stats st = { 0 };
	struct pmlog_run run = { .bug = bug, .threads = threads, .ops = ops };
	int tty = isatty(STDERR_FILENO);
	int ret;

	snprintf(name, sizeof(name), "%s%s", pmlog_variant_name(bug),
		mode == PM_CRASHSIM_SAMPLE ? "-mt" : "");
	snprintf(path, sizeof(path), "%s/%s.pool", o->dir, name);
	pm_crashsim_config_init(&cfg);
	cfg.name = name;
	cfg.mode = mode;
	cfg.seed = o->seed;
	cfg.max_images = o->images;
	cfg.sample_one_in = o->one_in;
	cfg.progress = tty ? progress : NULL;
	cfg.progress_arg = name;
	ret = pmlog_simulate(path, &run, &cfg, &st, report, sizeof(report));
	if (tty)
		fprintf(stderr, "\r%70s\r", "");

	printf("  %-20s %7" PRIu64 " %7" PRIu64 " %8" PRIu64 "  ", pmlog_variant_name(bug),
		st.events, st.points, st.images);
	tot->points += st.points;
	tot->images += st.images;
	if (ret == 0 && bug == PMLOG_CORRECT) {
		printf("PASS: invariants hold at every checked crash point\n");
		tot->passed++;
	} else if (ret == PM_E_CHECK_FAILED && bug != PMLOG_CORRECT) {
		printf("BUG FOUND (as planted)\n");
		print_indented(report);
		tot->found++;
	} else if (ret == PM_E_CHECK_FAILED) {
		printf("FALSE ALARM\n");
		print_indented(report);
		tot->wrong++;
	} else if (ret == 0) {
		printf("MISSED: the planted bug was not found\n");
		tot->wrong++;
	} else {
		printf("ERROR %d (%s): %s\n", ret, pm_strerror(ret), report);
		tot->wrong++;
	}
	fflush(stdout);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "ops", required_argument, NULL, 'o' },
		{ "threads", required_argument, NULL, 't' },
		{ "mt-ops", required_argument, NULL, 'm' },
		{ "sample-one-in", required_argument, NULL, 's' },
		{ "images", required_argument, NULL, 'i' },
		{ "seed", required_argument, NULL, 'S' },
		{ "dir", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct demo_opts o = { .ops = 8, .threads = 4, .mt_ops = 16, .one_in = 8,
		.images = 64, .seed = 1, .dir = NULL };
	struct demo_totals tot = { 0 };
	char dirbuf[4096];
	unsigned seed32;
	int c;

	int li = 0;

	while ((c = getopt_long(argc, argv, "h", longopts, &li)) != -1) {
		int bad = 0;

		switch (c) {
		case 'o': bad = parse_uint(optarg, 1, PMLOG_CAPACITY, &o.ops); break;
		case 't': bad = parse_uint(optarg, 1, PMLOG_MAX_THREADS, &o.threads); break;
		case 'm': bad = parse_uint(optarg, 1, PMLOG_CAPACITY, &o.mt_ops); break;
		case 's': bad = parse_uint(optarg, 1, 1u << 30, &o.one_in); break;
		case 'i': bad = parse_uint(optarg, 2, 1u << 20, &o.images); break;
		case 'S': bad = parse_uint(optarg, 0, UINT32_MAX, &seed32); o.seed = seed32; break;
		case 'd': o.dir = optarg; break;
		case 'h': usage(stdout, argv[0]); return 0;
		default: usage(stderr, argv[0]); return 2;
		}
		if (bad) {
			fprintf(stderr, "%s: bad value '%s' for --%s (see --help)\n", argv[0],
				optarg, longopts[li].name);
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\n", argv[0], argv[optind]);
		usage(stderr, argv[0]);
		return 2;
	}
	if (o.dir == NULL) {
		const char *tmp = getenv("TMPDIR");

		snprintf(dirbuf, sizeof(dirbuf), "%s/dmem-crashsim-XXXXXX", tmp ? tmp : "/tmp");
		if (mkdtemp(dirbuf) == NULL) {
			fprintf(stderr, "%s: cannot create a directory for pools: %s\n", argv[0],
				strerror(errno));
			return 2;
		}
		o.dir = dirbuf;
	} else if (access(o.dir, W_OK) != 0) {
		fprintf(stderr, "%s: --dir %s is not a writable directory\n", argv[0], o.dir);
		return 2;
	}

	printf("Crash simulator on real PMDK pools in %s\n\n", o.dir);
	printf("Every crash point, 1 thread, %u appends + %u register updates:\n", o.ops, o.ops);
	printf("  %-20s %7s %7s %8s  %s\n", "variant", "events", "points", "images", "result");
	for (int b = 0; b < PMLOG_NVARIANTS; b++)
		demo_one(&o, (enum pmlog_bug)b, 1, o.ops, PM_CRASHSIM_EVERY, &tot);
	printf("\nSampled crash points (1 in %u events), %u threads x %u operations, "
		"shared CAS counter:\n", o.one_in, o.threads, o.mt_ops);
	printf("  %-20s %7s %7s %8s  %s\n", "variant", "events", "points", "images", "result");
	demo_one(&o, PMLOG_CORRECT, o.threads, o.mt_ops, PM_CRASHSIM_SAMPLE, &tot);
	demo_one(&o, PMLOG_BUG_VALID_BEFORE_DATA, o.threads, o.mt_ops, PM_CRASHSIM_SAMPLE, &tot);
	if (dirbuf[0] != '\0' && o.dir == dirbuf)
		rmdir(dirbuf);

	printf("\n%" PRIu64 " crash points and %" PRIu64 " post-crash images checked: "
		"correct code passed %u of 2 runs, %u of 4 planted bugs found, %u unexpected.\n",
		tot.points, tot.images, tot.passed, tot.found, tot.wrong);
	return tot.wrong == 0 && tot.passed == 2 && tot.found == 4 ? 0 : 1;
}
