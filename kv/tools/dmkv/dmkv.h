/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kv/tools/dmkv/dmkv.h -- what the files of the dmkv command share: exit
 * codes, the cluster a command works on (its config file and, for
 * `cluster up` and the demo, the directory of its pools and daemons), the
 * bulk load, and the YCSB run. Private to the tool; the library is
 * kv/kv.h.
 */
#ifndef KV_TOOLS_DMKV_H
#define KV_TOOLS_DMKV_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <kv/kv.h>

#include "kv/tools/dmkv/hist.h"
#include "kv/tools/dmkv/ycsb.h"

/* Exit codes, listed in every --help. */
enum dmkv_exit {
	DMKV_EXIT_OK = 0,
	DMKV_EXIT_NOTFOUND = 1,    /* get/delete: no such key; insert: exists */
	DMKV_EXIT_CHECK = 2,       /* bench/demo: a wrong value or a lost write */
	DMKV_EXIT_USAGE = 64,      /* bad command line */
	DMKV_EXIT_UNAVAILABLE = 69, /* no majority of memory nodes answered */
	DMKV_EXIT_SOFTWARE = 70,   /* anything else (the message says what) */
	DMKV_EXIT_IO = 74,         /* a local file could not be read or written */
	DMKV_EXIT_CONFIG = 78,     /* bad or inconsistent cluster config */
};

#define DMKV_EXIT_CODES_HELP \
	"exit codes: 0 done; 1 key not found (get, delete) or present (put --new);\n" \
	"2 a wrong value or a lost acknowledged write (bench, demo); 64 bad usage;\n" \
	"69 unavailable (no majority of memory nodes answered); 70 other errors;\n" \
	"74 a local file could not be read or written; 78 bad cluster config\n"

/* A cluster: its config and where `cluster up` keeps its nodes' files. */
struct dmkv_cluster {
	struct kv_config cfg;
	struct kv_config_file *file; /* owns cfg's strings (NULL: built here) */
	/* pools, pid files, logs, ready files; PATH_MAX less room for the
	 * "/node<i>.<ext>" names built in it, so none of them is truncated */
	char dir[PATH_MAX - 32];
	const char *node_bin;        /* the dmkv-node program (ofi nodes) */
	pid_t pid[KV_MAX_NODES];     /* daemons this process started, or 0 */
	/* Built by dmkv_cluster_make (the demo): */
	char uri_buf[KV_MAX_NODES][PATH_MAX + 32];
	const char *uris[KV_MAX_NODES];
};

/* Shared options of the subcommands. */
extern bool dmkv_json;   /* --json */
extern bool dmkv_quiet;  /* --quiet: no progress lines */
extern char **dmkv_argv; /* main's argv (the demo re-executes itself) */

/* dmkv_err -- print "dmkv: ..." and a newline on stderr. */
void dmkv_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* dmkv_exit_of -- the exit code for a library error @ret. */
int dmkv_exit_of(int ret);

/* dmkv_fail -- print "dmkv: @what: strerror: errormsg" and return the exit
 * code of @ret. */
int dmkv_fail(const char *what, int ret);

/* dmkv_now_ns -- CLOCK_MONOTONIC in nanoseconds. */
uint64_t dmkv_now_ns(void);

/* dmkv_parse_u64 -- @s as a decimal number with an optional K/M/G suffix
 * (x 1024^n) when @sizes, in [@min, @max]; false if it is not one. */
bool dmkv_parse_u64(const char *s, bool sizes, uint64_t min, uint64_t max, uint64_t *out);

/* Progress on stderr when it is a terminal: "\r@label n/total (p%) rate". */
struct dmkv_progress {
	const char *label;
	uint64_t total;
	uint64_t start_ns, last_ns;
	bool tty;
};
void dmkv_progress_init(struct dmkv_progress *p, const char *label, uint64_t total);
void dmkv_progress_show(struct dmkv_progress *p, uint64_t done, bool final);

/*
 * Cluster (cluster.c).
 */
/* dmkv_cluster_load -- @path into @cl (dir = "@path.d" unless @dir).
 * Return: an exit code (messages printed). */
int dmkv_cluster_load(struct dmkv_cluster *cl, const char *path, const char *dir);
/* dmkv_cluster_free -- release what load or make took. */
void dmkv_cluster_free(struct dmkv_cluster *cl);
/* dmkv_cluster_up -- create missing local pools / start the daemons of
 * ofi+tcp nodes in cl->dir, with regions for @keys keys of @value_size
 * bytes, then format the store if no node holds one. Return: exit code. */
int dmkv_cluster_up(struct dmkv_cluster *cl, uint64_t keys, size_t value_size);
/* dmkv_cluster_down -- stop the daemons (SIGTERM, then SIGKILL after
 * @grace_ms) recorded in cl->dir; @purge also removes the pools. Return:
 * exit code. */
int dmkv_cluster_down(struct dmkv_cluster *cl, bool purge, unsigned grace_ms);
/* dmkv_node_crash -- crash node @i: SIGKILL its daemon (ofi) or fail its
 * device (local, rdma_local_fail). Return: 0 or a negative code. */
int dmkv_node_crash(struct dmkv_cluster *cl, unsigned i);
/* dmkv_node_restore -- restart node @i from its pool (ofi: a new daemon,
 * waiting until it serves) or restore its device (local). */
int dmkv_node_restore(struct dmkv_cluster *cl, unsigned i);
/* dmkv_node_is_local -- whether node @i is reached as local:PATH. */
bool dmkv_node_is_local(const struct dmkv_cluster *cl, unsigned i);

/*
 * Load and YCSB run (bench.c).
 */
struct dmkv_bench_opts {
	struct dmkv_ycsb_workload workload;
	enum dmkv_ycsb_dist dist;
	double theta;
	uint64_t records;        /* loaded (or already present) */
	uint64_t operations;     /* 0: until duration_ms */
	uint64_t duration_ms;    /* measured run (0 with operations) */
	uint64_t warmup_ms;      /* before the measured run, not reported */
	unsigned threads;
	unsigned inflight;       /* per thread; > 1 uses kv_async */
	unsigned key_size, value_size;
	uint64_t seed;
	bool load;               /* load the records first */
	bool run;                /* run the workload (false: load only) */
	unsigned loaders;
	uint64_t interval_ms;    /* timeline bucket */
	/* Faults (times from the start of the measured run; ~0 = none). */
	unsigned fail_node, restore_node;
	uint64_t fail_at_ms, restore_at_ms;
	bool verify;             /* read every record back at the end */
	const char *json_path;   /* NULL: no file */
	const char *csv_path;
	const char *label;
};

void dmkv_bench_opts_init(struct dmkv_bench_opts *o);

/* dmkv_bench_run -- (load,) run, report on stdout (human or --json), write
 * the files asked for. Return: an exit code (DMKV_EXIT_CHECK if a value
 * was wrong or an acknowledged write lost). */
int dmkv_bench_run(struct dmkv_cluster *cl, const struct dmkv_bench_opts *o);

/* Subcommands (each parses its own argv, argv[0] being its name). */
int dmkv_cmd_kv(int argc, char **argv, const char *config);      /* put get delete */
int dmkv_cmd_load(int argc, char **argv, const char *config);
int dmkv_cmd_bench(int argc, char **argv, const char *config);
int dmkv_cmd_status(int argc, char **argv, const char *config);
int dmkv_cmd_scrub(int argc, char **argv, const char *config);
int dmkv_cmd_node(int argc, char **argv, const char *config);     /* node rebuild */
int dmkv_cmd_cluster(int argc, char **argv, const char *config);
int dmkv_cmd_demo(int argc, char **argv);

#endif /* KV_TOOLS_DMKV_H */
