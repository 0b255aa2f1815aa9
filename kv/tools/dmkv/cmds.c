/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kv/tools/dmkv/cmds.c -- the subcommands that work on a cluster file:
 * put, get, delete, load, bench, status, cluster up|down. Each parses its
 * own options (getopt_long, after main's) and returns an exit code.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pm/error.h>
#include <rdma/node.h>

#include "kv/tools/dmkv/dmkv.h"

/* Print "Try 'dmkv CMD --help'." and return the usage code. */
static int
usage(const char *cmd)
{
	fprintf(stderr, "Try 'dmkv %s --help'.\n", cmd);
	return DMKV_EXIT_USAGE;
}

/* Whether @argv holds -h or --help (before any "--"). */
static bool
wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
			return true;
	return false;
}

/* Read all of standard input into *@buf (caller frees), at most @max. */
static int
read_stdin(char **buf, size_t *len, size_t max)
{
	size_t cap = 4096, n = 0;
	char *b = malloc(cap);

	if (b == NULL)
		return -ENOMEM;
	for (;;) {
		size_t got;

		if (n == cap) {
			char *nb;

			if (cap > max) {
				free(b);
				return -E2BIG;
			}
			nb = realloc(b, cap * 2);
			if (nb == NULL) {
				free(b);
				return -ENOMEM;
			}
			b = nb;
			cap *= 2;
		}
		got = fread(b + n, 1, cap - n, stdin);
		n += got;
		if (got == 0)
			break;
	}
	if (ferror(stdin)) {
		free(b);
		return -EIO;
	}
	if (n > max) {
		free(b);
		return -E2BIG;
	}
	*buf = b;
	*len = n;
	return 0;
}

int
dmkv_cmd_kv(int argc, char **argv, const char *config)
{
	static const struct option longopts[] = {
		{ "new", no_argument, NULL, 'n' },
		{ "existing", no_argument, NULL, 'e' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *cmd = argv[0];
	bool is_new = false, existing = false;
	struct dmkv_cluster cl;
	struct kv_client *c = NULL;
	char *val = NULL;
	size_t vlen = 0;
	int opt, ret, code;

	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'n':
			is_new = true;
			break;
		case 'e':
			existing = true;
			break;
		case 'h':
			printf("usage: dmkv put [--new | --existing] KEY [VALUE|-]\n"
			       "       dmkv get KEY\n"
			       "       dmkv delete KEY\n"
			       "\n"
			       "put stores VALUE under KEY, or standard input (binary-safe) when\n"
			       "VALUE is '-' or absent; --new only if KEY is absent (kv_insert),\n"
			       "--existing only if present (kv_update). get writes the value to\n"
			       "standard output as it is (no newline added; with --json, an object\n"
			       "with the value as a JSON string). Keys are 1..%d bytes, values\n"
			       "0..%u bytes.\n\n" DMKV_EXIT_CODES_HELP,
				KV_KEY_MAX, KV_VALUE_MAX);
			return 0;
		default:
			return usage(cmd);
		}
	}
	if (is_new && existing) {
		dmkv_err("put: --new and --existing exclude each other");
		return usage(cmd);
	}
	if (optind >= argc || argc - optind > (strcmp(cmd, "put") == 0 ? 2 : 1) ||
		((is_new || existing) && strcmp(cmd, "put") != 0)) {
		dmkv_err("%s: wrong arguments", cmd);
		return usage(cmd);
	}
	const char *key = argv[optind];
	size_t klen = strlen(key);

	if (klen == 0 || klen > KV_KEY_MAX) {
		dmkv_err("the key must be 1..%d bytes", KV_KEY_MAX);
		return DMKV_EXIT_USAGE;
	}
	if (strcmp(cmd, "put") == 0) {
		if (optind + 1 < argc && strcmp(argv[optind + 1], "-") != 0) {
			vlen = strlen(argv[optind + 1]);
			val = strdup(argv[optind + 1]);
			if (val == NULL)
				return dmkv_fail("put", -ENOMEM);
		} else if ((ret = read_stdin(&val, &vlen, KV_VALUE_MAX)) != 0) {
			dmkv_err("put: reading standard input: %s", pm_strerror(ret));
			return ret == -E2BIG ? DMKV_EXIT_USAGE : DMKV_EXIT_IO;
		}
		if (vlen > KV_VALUE_MAX) {
			free(val);
			dmkv_err("the value must be at most %u bytes", KV_VALUE_MAX);
			return DMKV_EXIT_USAGE;
		}
	}
	if ((code = dmkv_cluster_load(&cl, config, NULL)) != 0) {
		free(val);
		return code;
	}
	ret = kv_open(&c, &cl.cfg);
	if (ret != 0) {
		free(val);
		dmkv_cluster_free(&cl);
		return dmkv_fail("connecting to the cluster", ret);
	}
	if (strcmp(cmd, "put") == 0) {
		ret = is_new ? kv_insert(c, key, klen, val, vlen) :
			existing ? kv_update(c, key, klen, val, vlen) : kv_put(c, key, klen, val, vlen);
		if (ret == 0 && dmkv_json)
			printf("{\"ok\":true,\"key_bytes\":%zu,\"value_bytes\":%zu}\n", klen, vlen);
	} else if (strcmp(cmd, "get") == 0) {
		val = malloc(KV_VALUE_MAX);
		ret = val == NULL ? -ENOMEM : kv_get(c, key, klen, val, KV_VALUE_MAX, &vlen);
		if (ret == 0 && dmkv_json) {
			printf("{\"ok\":true,\"value\":\"");
			for (size_t i = 0; i < vlen; i++) {
				unsigned char ch = (unsigned char)val[i];

				if (ch == '"' || ch == '\\')
					printf("\\%c", ch);
				else if (ch < 0x20 || ch >= 0x7f)
					printf("\\u%04x", ch);
				else
					putchar(ch);
			}
			printf("\"}\n");
		} else if (ret == 0 && fwrite(val, 1, vlen, stdout) != vlen) {
			ret = -EIO;
		}
	} else {
		ret = kv_delete(c, key, klen);
		if (ret == 0 && dmkv_json)
			printf("{\"ok\":true}\n");
	}
	free(val);
	code = ret == 0 ? 0 : dmkv_exit_of(ret);
	if (ret == -ENOENT || ret == KV_E_EXISTS) {
		if (dmkv_json)
			printf("{\"ok\":false,\"error\":\"%s\"}\n", pm_strerror(ret));
		else
			dmkv_err("%s: %s", cmd, ret == -ENOENT ? "no such key" : "the key exists");
	} else if (ret != 0) {
		code = dmkv_fail(cmd, ret);
	}
	if ((ret = kv_close(&c)) != 0 && code == 0)
		code = dmkv_fail("closing", ret);
	dmkv_cluster_free(&cl);
	if (fflush(stdout) != 0 && code == 0)
		code = DMKV_EXIT_IO;
	return code;
}

/*
 * Options shared by load, bench and demo.
 */
enum {
	O_RECORDS = 256, O_OPERATIONS, O_DURATION, O_WARMUP, O_THREADS, O_INFLIGHT, O_KEY_SIZE,
	O_VALUE_SIZE, O_SEED, O_LOAD, O_LOADERS, O_INTERVAL, O_FAIL, O_RESTORE, O_NO_VERIFY,
	O_JSON_OUT, O_CSV_OUT, O_WORKLOAD, O_DIST, O_THETA, O_LABEL, O_FILE,
};

#define BENCH_LONGOPTS \
	{ "records", required_argument, NULL, O_RECORDS }, \
	{ "operations", required_argument, NULL, O_OPERATIONS }, \
	{ "duration", required_argument, NULL, O_DURATION }, \
	{ "warmup", required_argument, NULL, O_WARMUP }, \
	{ "threads", required_argument, NULL, O_THREADS }, \
	{ "inflight", required_argument, NULL, O_INFLIGHT }, \
	{ "key-size", required_argument, NULL, O_KEY_SIZE }, \
	{ "value-size", required_argument, NULL, O_VALUE_SIZE }, \
	{ "seed", required_argument, NULL, O_SEED }, \
	{ "load", no_argument, NULL, O_LOAD }, \
	{ "loaders", required_argument, NULL, O_LOADERS }, \
	{ "interval", required_argument, NULL, O_INTERVAL }, \
	{ "fail-node", required_argument, NULL, O_FAIL }, \
	{ "restore-node", required_argument, NULL, O_RESTORE }, \
	{ "no-verify", no_argument, NULL, O_NO_VERIFY }, \
	{ "json-out", required_argument, NULL, O_JSON_OUT }, \
	{ "csv-out", required_argument, NULL, O_CSV_OUT }, \
	{ "workload", required_argument, NULL, O_WORKLOAD }, \
	{ "distribution", required_argument, NULL, O_DIST }, \
	{ "theta", required_argument, NULL, O_THETA }, \
	{ "label", required_argument, NULL, O_LABEL }

#define BENCH_HELP \
	"  --workload W         A (50%% read/50%% update), B (95/5), C (read only),\n" \
	"                       D (95%% read/5%% insert, latest), F (50%% read/50%%\n" \
	"                       read-modify-write); E needs range scans, which the\n" \
	"                       store does not have (default B)\n" \
	"  --distribution D     zipfian, uniform or latest (default: the workload's)\n" \
	"  --theta X            zipfian constant (default 0.99)\n" \
	"  --records N          records loaded / present (default 100000)\n" \
	"  --load               load the records first (ids 0..N-1)\n" \
	"  --loaders N          loading threads (default 4)\n" \
	"  --operations N       stop after N operations (default: by --duration)\n" \
	"  --duration S         measured run in seconds, decimals allowed (default 10)\n" \
	"  --warmup S           unmeasured run before it (default 1)\n" \
	"  --threads N          client threads (default 4)\n" \
	"  --inflight N         operations in flight per thread, 1..64 (default 1;\n" \
	"                       more uses the asynchronous API)\n" \
	"  --key-size N         key bytes, >= 24 (default 24)\n" \
	"  --value-size N       value bytes, >= 24 (default 64)\n" \
	"  --seed N             generator seed (default 1)\n" \
	"  --interval S         timeline bucket in seconds (default 0.5)\n" \
	"  --fail-node N@S      crash node N at S seconds into the measured run\n" \
	"                       (SIGKILL of its daemon; local: its device fails)\n" \
	"  --restore-node N@S   bring it back at S seconds (restart from its pool)\n" \
	"  --no-verify          skip reading every record back at the end\n" \
	"  --json-out FILE      write the results as JSON (--json: on stdout)\n" \
	"  --csv-out FILE       write the timeline as CSV\n" \
	"  --label TEXT         a label carried into the JSON\n"

/* Seconds with decimals into milliseconds. */
static bool
parse_secs(const char *s, uint64_t *ms)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end == s || *end != '\0' || !(v >= 0) || v > 1e7)
		return false;
	*ms = (uint64_t)(v * 1000 + 0.5);
	return true;
}

/* "N@S" */
static bool
parse_node_at(const char *s, unsigned *node, uint64_t *ms)
{
	const char *at = strchr(s, '@');
	char num[16];
	uint64_t n;

	if (at == NULL || (size_t)(at - s) >= sizeof(num))
		return false;
	memcpy(num, s, (size_t)(at - s));
	num[at - s] = '\0';
	if (!dmkv_parse_u64(num, false, 0, KV_MAX_NODES - 1, &n) || !parse_secs(at + 1, ms))
		return false;
	*node = (unsigned)n;
	return true;
}

/* One bench option @opt (from BENCH_LONGOPTS) into @o; false if bad. */
static bool
bench_opt(int opt, const char *arg, struct dmkv_bench_opts *o, bool *dist_set)
{
	uint64_t v;
	char *end;

	switch (opt) {
	case O_RECORDS:
		if (!dmkv_parse_u64(arg, false, 1, UINT64_C(1) << 32, &o->records))
			return false;
		return true;
	case O_OPERATIONS:
		if (!dmkv_parse_u64(arg, false, 1, UINT64_MAX, &o->operations))
			return false;
		o->duration_ms = 0;
		return true;
	case O_DURATION:
		return parse_secs(arg, &o->duration_ms) && o->duration_ms > 0;
	case O_WARMUP:
		return parse_secs(arg, &o->warmup_ms);
	case O_THREADS:
		if (!dmkv_parse_u64(arg, false, 1, 64, &v))
			return false;
		o->threads = (unsigned)v;
		return true;
	case O_INFLIGHT:
		if (!dmkv_parse_u64(arg, false, 1, 64, &v))
			return false;
		o->inflight = (unsigned)v;
		return true;
	case O_KEY_SIZE:
		if (!dmkv_parse_u64(arg, false, DMKV_YCSB_KEY_MIN, KV_KEY_MAX, &v))
			return false;
		o->key_size = (unsigned)v;
		return true;
	case O_VALUE_SIZE:
		if (!dmkv_parse_u64(arg, true, 24, KV_VALUE_MAX, &v))
			return false;
		o->value_size = (unsigned)v;
		return true;
	case O_SEED:
		return dmkv_parse_u64(arg, false, 0, UINT64_MAX, &o->seed);
	case O_LOAD:
		o->load = true;
		return true;
	case O_LOADERS:
		if (!dmkv_parse_u64(arg, false, 1, 64, &v))
			return false;
		o->loaders = (unsigned)v;
		return true;
	case O_INTERVAL:
		return parse_secs(arg, &o->interval_ms) && o->interval_ms > 0;
	case O_FAIL:
		return parse_node_at(arg, &o->fail_node, &o->fail_at_ms);
	case O_RESTORE:
		return parse_node_at(arg, &o->restore_node, &o->restore_at_ms);
	case O_NO_VERIFY:
		o->verify = false;
		return true;
	case O_JSON_OUT:
		o->json_path = arg;
		return true;
	case O_CSV_OUT:
		o->csv_path = arg;
		return true;
	case O_LABEL:
		o->label = arg;
		return true;
	case O_WORKLOAD:
		if (strlen(arg) != 1)
			return false;
		if (dmkv_ycsb_workload(arg[0], &o->workload) == -ENOTSUP) {
			dmkv_err("workload E needs range scans, which the store does not have");
			return false;
		}
		if (dmkv_ycsb_workload(arg[0], &o->workload) != 0)
			return false;
		if (!*dist_set)
			o->dist = o->workload.dist;
		return true;
	case O_DIST:
		*dist_set = true;
		if (strcmp(arg, "zipfian") == 0)
			o->dist = DMKV_YCSB_ZIPFIAN;
		else if (strcmp(arg, "uniform") == 0)
			o->dist = DMKV_YCSB_UNIFORM;
		else if (strcmp(arg, "latest") == 0)
			o->dist = DMKV_YCSB_LATEST;
		else
			return false;
		return true;
	case O_THETA:
		errno = 0;
		o->theta = strtod(arg, &end);
		return errno == 0 && end != arg && *end == '\0' && o->theta > 0 && o->theta < 1;
	default:
		return false;
	}
}

int
dmkv_cmd_bench(int argc, char **argv, const char *config)
{
	static const struct option longopts[] = {
		BENCH_LONGOPTS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct dmkv_bench_opts o;
	struct dmkv_cluster cl;
	bool dist_set = false;
	int opt, code;

	dmkv_bench_opts_init(&o);
	o.run = true;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (opt == 'h') {
			printf("usage: dmkv [--config FILE] [--json] bench [options]\n"
			       "\n"
			       "YCSB on the cluster of the config file: throughput, latency\n"
			       "percentiles per operation type, round trips per operation, failures by\n"
			       "kind, a timeline; every value read is checked against the writes\n"
			       "acknowledged before the read began, and at the end every record is read\n"
			       "back (a lost acknowledged write exits 2). Without --load the records\n"
			       "0..N-1 must be present (dmkv load); nodes crashed with --fail-node must\n"
			       "have been started by 'dmkv cluster up' (or be local: pools).\n"
			       "\noptions:\n" BENCH_HELP "\n" DMKV_EXIT_CODES_HELP);
			return 0;
		}
		if (!bench_opt(opt, optarg, &o, &dist_set)) {
			if (opt != '?')
				dmkv_err("bench: bad value for an option%s%s", optarg ? ": " : "",
					optarg ? optarg : "");
			return usage("bench");
		}
	}
	if (optind != argc) {
		dmkv_err("bench: unexpected argument '%s'", argv[optind]);
		return usage("bench");
	}
	if ((code = dmkv_cluster_load(&cl, config, NULL)) != 0)
		return code;
	code = dmkv_bench_run(&cl, &o);
	dmkv_cluster_free(&cl);
	return code;
}

/* Undo the escapes of a load file field in place; its new length, or -1
 * for a bad escape. */
static ssize_t
unescape(char *s, size_t len)
{
	size_t o = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned hi, lo;

		if (s[i] != '\\') {
			s[o++] = s[i];
			continue;
		}
		if (++i == len)
			return -1;
		switch (s[i]) {
		case '\\':
			s[o++] = '\\';
			break;
		case 't':
			s[o++] = '\t';
			break;
		case 'n':
			s[o++] = '\n';
			break;
		case 'x':
			if (i + 2 >= len)
				return -1;
			if (sscanf(s + i + 1, "%1x%1x", &hi, &lo) != 2)
				return -1;
			s[o++] = (char)(hi << 4 | lo);
			i += 2;
			break;
		default:
			return -1;
		}
	}
	return (ssize_t)o;
}

/* dmkv load --file: one client, one record per line. */
static int
load_file(struct dmkv_cluster *cl, const char *path)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
	struct dmkv_progress pr;
	struct kv_client *c = NULL;
	uint64_t lineno = 0, n = 0;
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int ret, code = 0;

	if (f == NULL) {
		dmkv_err("load: cannot open %s: %s", path, strerror(errno));
		return DMKV_EXIT_IO;
	}
	ret = kv_open(&c, &cl->cfg);
	if (ret != 0) {
		if (f != stdin)
			fclose(f);
		return dmkv_fail("connecting to the cluster", ret);
	}
	dmkv_progress_init(&pr, "load", 0);
	while ((len = getline(&line, &cap, f)) >= 0) {
		char *tab;
		ssize_t kl, vl;

		lineno++;
		if (len > 0 && line[len - 1] == '\n')
			len--;
		tab = memchr(line, '\t', (size_t)len);
		if (tab == NULL || (kl = unescape(line, (size_t)(tab - line))) <= 0 ||
			(vl = unescape(tab + 1, (size_t)(line + len - tab - 1))) < 0) {
			dmkv_err("load: %s:%llu: expected KEY<tab>VALUE with \\\\, \\t, \\n, "
				 "\\xHH escapes and a non-empty key", path, (unsigned long long)lineno);
			code = DMKV_EXIT_USAGE;
			break;
		}
		ret = kv_put(c, line, (size_t)kl, tab + 1, (size_t)vl);
		if (ret != 0) {
			char what[PATH_MAX + 32];

			snprintf(what, sizeof(what), "load: %s:%llu", path, (unsigned long long)lineno);
			code = dmkv_fail(what, ret);
			break;
		}
		n++;
		pr.total = n;
		dmkv_progress_show(&pr, n, false);
	}
	if (code == 0 && ferror(f)) {
		dmkv_err("load: reading %s: %s", path, strerror(errno));
		code = DMKV_EXIT_IO;
	}
	pr.total = n;
	dmkv_progress_show(&pr, n, true);
	free(line);
	if (f != stdin)
		fclose(f);
	if ((ret = kv_close(&c)) != 0 && code == 0)
		code = dmkv_fail("closing", ret);
	return code;
}

int
dmkv_cmd_load(int argc, char **argv, const char *config)
{
	static const struct option longopts[] = {
		{ "records", required_argument, NULL, O_RECORDS },
		{ "key-size", required_argument, NULL, O_KEY_SIZE },
		{ "value-size", required_argument, NULL, O_VALUE_SIZE },
		{ "loaders", required_argument, NULL, O_LOADERS },
		{ "file", required_argument, NULL, O_FILE },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct dmkv_bench_opts o;
	struct dmkv_cluster cl;
	const char *file = NULL;
	bool dist_set = false;
	int opt, code;

	dmkv_bench_opts_init(&o);
	o.load = true;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (opt == 'h') {
			printf("usage: dmkv load [--records N] [--key-size N] [--value-size N]\n"
			       "                 [--loaders N]\n"
			       "       dmkv load --file FILE\n"
			       "\n"
			       "Generated records: ids 0..N-1 as YCSB keys (\"user\" and zero-padded\n"
			       "digits) with self-checking values, what 'dmkv bench' reads (defaults:\n"
			       "100000 records, 24-byte keys, 64-byte values, 4 loaders). A file: one\n"
			       "record per line, KEY, a tab, VALUE, where \\\\, \\t, \\n and \\xHH\n"
			       "stand for a backslash, a tab, a newline and any byte ('-' reads\n"
			       "standard input). Existing keys are overwritten. Progress on a\n"
			       "terminal.\n\n" DMKV_EXIT_CODES_HELP);
			return 0;
		}
		if (opt == O_FILE) {
			file = optarg;
			continue;
		}
		if (!bench_opt(opt, optarg, &o, &dist_set))
			return usage("load");
	}
	if (optind != argc) {
		dmkv_err("load: unexpected argument '%s'", argv[optind]);
		return usage("load");
	}
	if ((code = dmkv_cluster_load(&cl, config, NULL)) != 0)
		return code;
	code = file != NULL ? load_file(&cl, file) : dmkv_bench_run(&cl, &o);
	dmkv_cluster_free(&cl);
	return code;
}

/* The "key value" line @key of a daemon's status text, or NULL. */
static const char *
status_field(const char *text, const char *key, char *buf, size_t cap)
{
	size_t kl = strlen(key);

	for (const char *p = text; *p != '\0';) {
		const char *nl = strchr(p, '\n');
		size_t len = nl != NULL ? (size_t)(nl - p) : strlen(p);

		if (len > kl && strncmp(p, key, kl) == 0 && p[kl] == ' ') {
			snprintf(buf, cap, "%.*s", (int)(len - kl - 1), p + kl + 1);
			return buf;
		}
		p += len + (nl != NULL);
	}
	return NULL;
}

/* Ask the daemon of ofi node @uri for its status lines. */
static void
daemon_status(const struct dmkv_cluster *cl, const char *uri, char *text, size_t cap)
{
	const char *p = strstr(uri, "://"), *colon = p != NULL ? strrchr(p + 3, ':') : NULL;
	char host[256];

	text[0] = '\0';
	if (colon == NULL || (size_t)(colon - p - 3) >= sizeof(host))
		return;
	memcpy(host, p + 3, (size_t)(colon - p - 3));
	host[colon - p - 3] = '\0';
	if (rdma_node_status_query(host, (uint16_t)atoi(colon + 1), cl->cfg.conn.token,
		cl->cfg.conn.timeout_ms, text, cap) != 0)
		text[0] = '\0';
}

static const char *const repl_name[] = { "swarm", "abd", "raw" };

int
dmkv_cmd_scrub(int argc, char **argv, const char *config)
{
	struct dmkv_cluster cl;
	struct kv_client *c = NULL;
	struct kv_stats st;
	int code, ret;

	if (wants_help(argc, argv)) {
		printf("usage: dmkv [--config FILE] [--json] scrub\n"
		       "\n"
		       "Give memory nodes that were down, restarted or cut off what the others\n"
		       "decided while they were away (kv_scrub): run it after restarting a node\n"
		       "and before taking another one down. Exit 0 when every node answered and\n"
		       "is up to date, 69 if some node did not answer (run it again).\n\n"
		       DMKV_EXIT_CODES_HELP);
		return 0;
	}
	if (argc > 1) {
		dmkv_err("scrub: unexpected argument '%s'", argv[1]);
		return usage("scrub");
	}
	if ((code = dmkv_cluster_load(&cl, config, NULL)) != 0)
		return code;
	ret = kv_open(&c, &cl.cfg);
	if (ret != 0) {
		dmkv_cluster_free(&cl);
		return dmkv_fail("connecting to the cluster", ret);
	}
	if (!dmkv_quiet && !dmkv_json)
		fprintf(stderr, "dmkv: scrubbing the index of %u nodes...\n", cl.cfg.nnodes);
	ret = kv_scrub(c);
	kv_stats_read(c, &st);
	if (ret != 0)
		code = dmkv_fail("scrub", ret);
	else if (dmkv_json)
		printf("{\"ok\":true,\"index_rounds\":%llu}\n", (unsigned long long)st.index_rounds);
	else
		printf("scrubbed: every node is up to date\n");
	kv_close(&c);
	dmkv_cluster_free(&cl);
	return code;
}

int
dmkv_cmd_node(int argc, char **argv, const char *config)
{
	struct dmkv_cluster cl;
	struct kv_rebuild_report rep;
	struct kv_node_status ns;
	uint64_t node, start;
	int code, ret;

	if (wants_help(argc, argv)) {
		printf("usage: dmkv [--config FILE] [--json] node rebuild INDEX\n"
		       "\n"
		       "Rebuild memory node INDEX (0-based, the order of the cluster file) after\n"
		       "its pool was lost: start it again on a new, empty pool first (dmkv\n"
		       "cluster up does, for the nodes it manages), then run this. Clients keep\n"
		       "running; the node counts towards no majority until the rebuild ends, so\n"
		       "every other node must stay up meanwhile. It rebuilds the index\n"
		       "(waiting the cluster's operation timeout T), waits the suspicion time\n"
		       "(the clients' lease plus T, and a sixteenth), copies every object,\n"
		       "value and table from the others, and waits T more before the node\n"
		       "counts (kv_rebuild, kv/kv.h). A node restarted\n"
		       "from its own pool needs no rebuild and is refused one (exit 64).\n"
		       "Exit 0 when rebuilt, 69 if another node did not answer (run it again).\n\n"
		       DMKV_EXIT_CODES_HELP);
		return 0;
	}
	if (argc != 3 || strcmp(argv[1], "rebuild") != 0) {
		dmkv_err("node: expected 'node rebuild INDEX'");
		return usage("node");
	}
	if ((code = dmkv_cluster_load(&cl, config, NULL)) != 0)
		return code;
	if (!dmkv_parse_u64(argv[2], false, 0, cl.cfg.nnodes - 1, &node)) {
		dmkv_err("node rebuild: '%s' is not a node index (0..%u)", argv[2], cl.cfg.nnodes - 1);
		dmkv_cluster_free(&cl);
		return DMKV_EXIT_USAGE;
	}
	if (!dmkv_quiet && !dmkv_json) {
		unsigned other = node == 0 ? 1 : 0;

		if (kv_node_status_read(&cl.cfg, other, &ns) == 0)
			fprintf(stderr, "dmkv: rebuilding node %llu: the index (a wait of %u ms), "
				"a wait of %llu ms (the lease and the operation timeout, and a "
				"sixteenth: no operation from before the loss is still deciding), "
				"the values, and %u ms more before the node counts...\n",
				(unsigned long long)node, ns.timeout_ms,
				(unsigned long long)(ns.lease_ms + ns.timeout_ms) * 17 / 16,
				ns.timeout_ms);
	}
	start = dmkv_now_ns();
	ret = kv_rebuild(&cl.cfg, (unsigned)node, &rep);
	if (ret == -EEXIST) {
		dmkv_err("node rebuild: %s", pm_errormsg());
		code = DMKV_EXIT_USAGE;
	} else if (ret != 0) {
		code = dmkv_fail("node rebuild", ret);
	} else if (dmkv_json) {
		printf("{\"ok\":true,\"node\":%llu,\"index_rebuilt\":%s,\"grace_ms\":%llu,"
		       "\"chunks\":%llu,\"objects\":%llu,\"buffers\":%llu,\"bytes\":%llu,"
		       "\"seconds\":%.3f}\n", (unsigned long long)node,
			rep.index_rebuilt ? "true" : "false", (unsigned long long)rep.grace_ms,
			(unsigned long long)rep.chunks, (unsigned long long)rep.objects,
			(unsigned long long)rep.buffers, (unsigned long long)rep.bytes,
			(double)(dmkv_now_ns() - start) / 1e9);
	} else {
		printf("rebuilt node %llu in %.1f s: %llu chunks, %llu objects, %llu value buffers, "
		       "%llu bytes copied; it counts towards majorities again\n",
			(unsigned long long)node, (double)(dmkv_now_ns() - start) / 1e9,
			(unsigned long long)rep.chunks, (unsigned long long)rep.objects,
			(unsigned long long)rep.buffers, (unsigned long long)rep.bytes);
	}
	dmkv_cluster_free(&cl);
	return code;
}

int
dmkv_cmd_status(int argc, char **argv, const char *config)
{
	struct dmkv_cluster cl;
	struct kv_client *c = NULL;
	unsigned up = 0;
	int code, ret;

	if (wants_help(argc, argv)) {
		printf("usage: dmkv [--config FILE] [--json] status\n"
		       "\n"
		       "Every memory node of the cluster file: reachable or not, its regions,\n"
		       "the index on it (buckets and depth), the store (replication, client ids\n"
		       "registered, ids of stopped clients freed by the others and the hazard\n"
		       "words they left cleared, object chunks and log space in use), and for a\n"
		       "daemon its\n"
		       "pool, size and durability mode; then whether a client can open the\n"
		       "store (a majority answers and a client id is free). Exit 0 if it can,\n"
		       "69 if not.\n\n" DMKV_EXIT_CODES_HELP);
		return 0;
	}
	if (argc > 1) {
		dmkv_err("status: unexpected argument '%s'", argv[1]);
		return usage("status");
	}
	if ((code = dmkv_cluster_load(&cl, config, NULL)) != 0)
		return code;
	if (dmkv_json)
		printf("{\"nodes\":[");
	for (unsigned i = 0; i < cl.cfg.nnodes; i++) {
		struct kv_node_status ns;
		char text[4096] = "", dur[64] = "", pool[PATH_MAX] = "";
		const char *durability, *pool_path;

		ret = kv_node_status_read(&cl.cfg, i, &ns);
		up += ns.reachable;
		if (ns.reachable && !dmkv_node_is_local(&cl, i))
			daemon_status(&cl, cl.cfg.nodes[i], text, sizeof(text));
		durability = status_field(text, "durability", dur, sizeof(dur));
		pool_path = dmkv_node_is_local(&cl, i) ? cl.cfg.nodes[i] + 6 :
			status_field(text, "pool", pool, sizeof(pool));
		if (dmkv_json) {
			printf("%s{\"node\":%u,\"uri\":\"%s\",\"reachable\":%s,\"formatted\":%s", i ? "," : "",
				i, cl.cfg.nodes[i], ns.reachable ? "true" : "false",
				ns.formatted ? "true" : "false");
			if (ret != 0)
				printf(",\"error\":\"%s\"", pm_strerror(ret));
			if (pool_path != NULL)
				printf(",\"pool\":\"%s\"", pool_path);
			if (durability != NULL)
				printf(",\"durability\":\"%s\"", durability);
			if (ns.reachable)
				printf(",\"index_bytes\":%llu,\"index_buckets\":%llu,\"index_depth\":%u,"
				       "\"store_bytes\":%llu",
					(unsigned long long)ns.index_bytes,
					(unsigned long long)ns.index_buckets, ns.index_depth,
					(unsigned long long)ns.store_bytes);
			if (ns.formatted)
				printf(",\"repl\":\"%s\",\"lease_ms\":%u,\"timeout_ms\":%u,\"clients\":%u,\"max_clients\":%u,"
				       "\"ids_freed\":%llu,\"hazards_cleared\":%llu,\"objects_zeroed\":%llu,"
				       "\"chunks_used\":%llu,"
				       "\"chunks\":%llu,\"chunk_bytes\":%llu,\"log_used\":%llu,"
				       "\"log_bytes_per_client\":%llu",
					repl_name[ns.repl], ns.lease_ms, ns.timeout_ms, ns.clients,
					ns.max_clients,
					(unsigned long long)ns.ids_freed,
					(unsigned long long)ns.hazards_cleared,
					(unsigned long long)ns.objects_zeroed,
					(unsigned long long)ns.chunks_used, (unsigned long long)ns.chunks,
					(unsigned long long)ns.chunk_bytes, (unsigned long long)ns.log_used,
					(unsigned long long)ns.log_bytes);
			printf("}");
			continue;
		}
		printf("node %u  %s  %s\n", i, cl.cfg.nodes[i],
			!ns.reachable ? "DOWN" : ns.formatted ? "up" : "up, no store of this cluster");
		if (!ns.reachable || ret != 0)
			printf("        %s: %s\n", pm_strerror(ret), pm_errormsg());
		if (pool_path != NULL)
			printf("        pool %s%s%s\n", pool_path, durability ? ", durability " : "",
				durability ? durability : "");
		if (ns.reachable)
			printf("        index: %llu MiB region, %llu buckets, depth %u\n",
				(unsigned long long)(ns.index_bytes >> 20),
				(unsigned long long)ns.index_buckets, ns.index_depth);
		if (ns.formatted)
			printf("        store: %llu MiB region, %s, client lease %u ms (operation "
			       "timeouts up to %u ms), %u of %u client "
			       "ids registered (%llu freed after their clients' leases ran out, %llu "
			       "hazard words cleared), %llu of %llu chunks (%llu MiB) used (%llu objects "
			       "of deleted keys zeroed for reuse), %.1f MiB of logs reserved\n",
				(unsigned long long)(ns.store_bytes >> 20), repl_name[ns.repl],
				ns.lease_ms, ns.timeout_ms, ns.clients, ns.max_clients,
				(unsigned long long)ns.ids_freed,
				(unsigned long long)ns.hazards_cleared, (unsigned long long)ns.chunks_used,
				(unsigned long long)ns.chunks,
				(unsigned long long)(ns.chunks_used * ns.chunk_bytes >> 20),
				(unsigned long long)ns.objects_zeroed, (double)ns.log_used / (1 << 20));
	}
	ret = kv_open(&c, &cl.cfg);
	if (ret == 0)
		kv_close(&c);
	if (dmkv_json)
		printf("],\"nodes_up\":%u,\"majority\":%s,\"store\":\"%s\"}\n", up,
			up > cl.cfg.nnodes / 2 ? "true" : "false", ret == 0 ? "ok" : pm_strerror(ret));
	else
		printf("\n%u of %u nodes up (a majority is %u); store: %s\n", up, cl.cfg.nnodes,
			cl.cfg.nnodes / 2 + 1, ret == 0 ? "usable" : pm_strerror(ret));
	dmkv_cluster_free(&cl);
	return ret == 0 ? 0 : dmkv_exit_of(ret) == DMKV_EXIT_CONFIG ? DMKV_EXIT_CONFIG :
		DMKV_EXIT_UNAVAILABLE;
}

int
dmkv_cmd_cluster(int argc, char **argv, const char *config)
{
	static const struct option longopts[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "records", required_argument, NULL, O_RECORDS },
		{ "value-size", required_argument, NULL, O_VALUE_SIZE },
		{ "purge", no_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct dmkv_bench_opts o;
	struct dmkv_cluster cl;
	const char *dir = NULL;
	bool purge = false, dist_set = false;
	int opt, code;

	dmkv_bench_opts_init(&o);
	o.records = 1000000;
	o.value_size = 1024;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'd':
			dir = optarg;
			break;
		case 'p':
			purge = true;
			break;
		case 'h':
			printf("usage: dmkv [--config FILE] cluster up [--dir DIR] [--records N]\n"
			       "                                       [--value-size N]\n"
			       "       dmkv [--config FILE] cluster down [--dir DIR] [--purge]\n"
			       "\n"
			       "up: make the memory nodes of the cluster file real on this machine:\n"
			       "a local:PATH node's pool file is created if missing; an\n"
			       "ofi+tcp://HOST:PORT node is a dmkv-node daemon serving DIR/nodeI.pool\n"
			       "on that port, started in the background (pid in DIR/nodeI.pid, log in\n"
			       "DIR/nodeI.log; $DMKV_NODE names the program if it is not found beside\n"
			       "dmkv). New pools get regions for --records records of --value-size\n"
			       "bytes (default 1000000 of 1024) with the [create] settings of the\n"
			       "file; a pool that replaces a lost one is sized like those of the\n"
			       "nodes that hold the store (then 'dmkv node rebuild I'). Then the\n"
			       "store is formatted unless the nodes hold one already.\n"
			       "DIR defaults to the config file's path with '.d' appended.\n"
			       "\n"
			       "down: stop the daemons (SIGTERM, SIGKILL after 5 s); --purge also\n"
			       "removes the pools and logs (every value is lost).\n\n" DMKV_EXIT_CODES_HELP);
			return 0;
		default:
			if (!bench_opt(opt, optarg, &o, &dist_set))
				return usage("cluster");
		}
	}
	if (optind + 1 != argc || (strcmp(argv[optind], "up") != 0 &&
		strcmp(argv[optind], "down") != 0)) {
		dmkv_err("cluster: say up or down");
		return usage("cluster");
	}
	if ((code = dmkv_cluster_load(&cl, config, dir)) != 0)
		return code;
	if (strcmp(argv[optind], "up") == 0) {
		code = dmkv_cluster_up(&cl, o.records, o.value_size);
		if (code == 0 && !dmkv_quiet)
			fprintf(stderr, "dmkv: %u nodes up (%s)\n", cl.cfg.nnodes, cl.dir);
	} else {
		code = dmkv_cluster_down(&cl, purge, 5000);
	}
	dmkv_cluster_free(&cl);
	return code;
}
