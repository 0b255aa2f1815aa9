/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdma/src/node_main.c -- dmkv-node, the memory-node daemon: a command-line
 * front end to rdma/node.h.
 *
 *   dmkv-node [serve] --pool PATH [options]   open (or create) and serve
 *   dmkv-node status [--connect HOST:PORT] [--token T | --token-file F]
 *
 * Exit codes (sysexits.h; also in --help, and tests depend on them):
 *   0  clean shutdown (SIGTERM or SIGINT), or `status` got an answer
 *   64 usage or bad configuration (the message names the flag or file:line)
 *   65 pool unusable: damaged, not a node pool, wrong layout or version
 *   66 pool missing (without --create), or cannot be created or opened
 *   69 port in use, address unavailable, or no backend available;
 *      `status`: no node answers at that address
 *   70 internal error
 *   73 pool busy: another process has it open
 *   77 `status`: the node refused the token
 *
 * Signals. While the pool is opened or created, SIGTERM and SIGINT end the
 * process at once (an interrupted create leaves no pool file, only
 * PATH.creating, which the next --create removes: pm/pool.h). Then they
 * are blocked before any thread exists (the node's threads
 * inherit the mask) and main waits for them with sigwait, so shutdown runs
 * in main, outside any signal handler. SIGKILL is the crash
 * case: every byte a client persisted survives it (rdma/node.h).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#include <ini.h>

#include <pm/error.h>
#include <pm/persist.h>
#include <rdma/node.h>
#include <rdma/rdma.h>

#include "control.h"

#define NODE_MAIN_VERSION "0.1.0"
/* Answer limit of `dmkv-node status`. */
#define NODE_MAIN_STATUS_TIMEOUT_MS 5000
/* Longest config-file line inih accepts (INI_MAX_LINE, newline included). */
#define NODE_MAIN_LINE_MAX 200

/* What the daemon is told, from the command line and the config file. */
struct node_opts {
	unsigned set;            /* OPT_* bits given in this source */
	const char *pool;
	bool create;
	uint64_t pool_size;
	unsigned nregions;
	uint64_t regions[RDMA_NODE_MAX_REGIONS];
	enum pm_durability durability;
	const char *listen;
	uint16_t port;
	unsigned backends;
	enum rdma_node_poll poll;
	unsigned max_clients;
	const char *token;
	const char *token_file;
	/* command line only */
	const char *config;
	const char *ready_file;
	const char *connect;
	int log_level;
};

enum {
	OPT_POOL = 1u << 0,
	OPT_CREATE = 1u << 1,
	OPT_POOL_SIZE = 1u << 2,
	OPT_REGION = 1u << 3,
	OPT_DURABILITY = 1u << 4,
	OPT_LISTEN = 1u << 5,
	OPT_PORT = 1u << 6,
	OPT_BACKENDS = 1u << 7,
	OPT_TOKEN = 1u << 8,
	OPT_TOKEN_FILE = 1u << 9,
	OPT_POLL = 1u << 10,
	OPT_MAX_CLIENTS = 1u << 11,
};

/* The keys a config file and the flags share. */
static const struct {
	const char *key;  /* config file */
	const char *flag; /* command line */
	unsigned bit;
} node_keys[] = {
	{ "pool", "--pool", OPT_POOL },
	{ "create", "--create", OPT_CREATE },
	{ "pool_size", "--pool-size", OPT_POOL_SIZE },
	{ "region", "--region", OPT_REGION },
	{ "durability", "--durability", OPT_DURABILITY },
	{ "listen", "--listen", OPT_LISTEN },
	{ "port", "--port", OPT_PORT },
	{ "backends", "--backends", OPT_BACKENDS },
	{ "poll", "--poll", OPT_POLL },
	{ "max_clients", "--max-clients", OPT_MAX_CLIENTS },
	{ "token", "--token", OPT_TOKEN },
	{ "token_file", "--token-file", OPT_TOKEN_FILE },
};

static int node_log_level = RDMA_NODE_LOG_INFO;

/* node_main_log -- one stderr line with a UTC timestamp and the level; also
 * the node's log function (one fprintf per line: stdio locks it, so lines
 * from the node's threads do not interleave) */
static void
node_main_log(void *arg, enum rdma_node_log_level level, const char *msg)
{
	static const char *const names[] = { "error", "warn", "info", "debug" };
	struct timespec ts;
	struct tm tm;
	char when[32];

	(void)arg;
	if ((int)level > node_log_level)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	fprintf(stderr, "%s.%03ldZ %-5s %s\n", when, ts.tv_nsec / 1000000,
		names[level <= RDMA_NODE_LOG_DEBUG ? level : RDMA_NODE_LOG_DEBUG], msg);
}

/* node_main_logf -- printf-style node_main_log */
static void __attribute__((format(printf, 2, 3)))
node_main_logf(enum rdma_node_log_level level, const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	node_main_log(NULL, level, line);
}

/* usage_error -- report a usage problem; returns EX_USAGE for "return" */
static int __attribute__((format(printf, 1, 2)))
usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("dmkv-node: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'dmkv-node --help'.\n", stderr);
	return EX_USAGE;
}

/* print_help -- --help (options, config keys, exit codes) */
static void
print_help(void)
{
	printf(
"Usage: dmkv-node [serve] --pool PATH [options]\n"
"       dmkv-node status [--connect HOST:PORT] [--token T | --token-file F]\n"
"       dmkv-node --help | --version\n"
"\n"
"A memory node: a persistent pool whose regions clients reach locally\n"
"(local:PATH, through the node file PATH.node) or remotely (ofi+tcp://,\n"
"ofi+shm://, ofi+verbs://, verbs:// at the control address).\n"
"\n"
"serve options:\n"
"  --pool PATH          node pool file (required)\n"
"  --create             create the pool if PATH does not exist\n"
"  --pool-size SIZE     size of a new pool (K, M, G suffixes; default: the\n"
"                       regions plus 16M, at least 8M)\n"
"  --region SIZE        add a region of SIZE to a new pool (repeatable, at\n"
"                       most %d; default one region of 64M)\n"
"  --durability MODE    auto, pmem, msync or none (default auto)\n"
"  --listen HOST        control and data address (default 127.0.0.1)\n"
"  --port N             control port (default %d; 0 = any free port)\n"
"  --backends LIST      comma-separated tcp, shm, verbs (rdma-core), ofi-verbs\n"
"                       (libfabric verbs;ofi_rxm), or none for the\n"
"                       control port only (default tcp,shm)\n"
"  --poll MODE          how the tcp and shm backends' progress threads wait\n"
"                       for work (default adaptive): adaptive polls while there is\n"
"                       work and sleeps in the kernel as soon as there is\n"
"                       none, so an idle node uses no CPU and co-located\n"
"                       threads get the cores (shm has nothing to sleep on\n"
"                       and is polled as with busy); busy never sleeps and\n"
"                       yields after each empty poll: the lowest latency\n"
"                       when the nodes have cores of their own (or share\n"
"                       them only among themselves), but on cores shared\n"
"                       with spinning clients each round trip waits for\n"
"                       the scheduler\n"
"  --max-clients N      admitted clients at once (default 256); a connection\n"
"                       that has not said HELLO within 10 s, or the oldest\n"
"                       such one when all slots are taken, is closed\n"
"  --token T            cluster token clients must present (without a token\n"
"                       any client that reaches the port is admitted: the\n"
"                       node logs a warning and status says 'token none')\n"
"  --token-file F       read the token from the first line of F\n"
"  --config FILE        INI file with a [node] section; keys pool, create,\n"
"                       pool_size, region (repeatable), durability, listen,\n"
"                       port, backends, poll, max_clients, token,\n"
"                       token_file; flags\n"
"                       override it\n"
"  --ready-file F       once serving, write the control port and a newline\n"
"                       to F (atomically; removed at clean shutdown)\n"
"  --log-level LEVEL    error, warn, info or debug (default info)\n"
"  --quiet              same as --log-level error\n"
"\n"
"status options:\n"
"  --connect HOST:PORT  node control address (default 127.0.0.1:%d)\n"
"  --token T, --token-file F   as above\n"
"  Prints the node's status lines (pool, size, durability, incarnation,\n"
"  regions, backends, clients and counters).\n"
"\n"
"  --help               this text\n"
"  --version            the version\n"
"\n"
"SIGTERM or SIGINT shuts the node down cleanly. One during --create leaves\n"
"no pool at PATH, only PATH.creating, which the next --create removes.\n"
"Logs go to stderr.\n"
"\n"
"Exit codes:\n"
"  0   clean shutdown; status: the node answered\n"
"  64  usage or bad configuration (the message says which flag or file:line)\n"
"  65  pool unusable (damaged, not a node pool, wrong layout or version)\n"
"  66  pool missing (without --create), or cannot be created or opened\n"
"  69  port in use, address unavailable, or no backend available;\n"
"      status: nothing answers at that address\n"
"  70  internal error\n"
"  73  pool busy (open in another process)\n"
"  77  status: the node refused the token\n",
		RDMA_NODE_MAX_REGIONS, RDMA_NODE_DEFAULT_PORT, RDMA_NODE_DEFAULT_PORT);
}

/* parse_size -- decimal with an optional K, M, G or T (binary) suffix,
 * optionally followed by "B" or "iB"; 0 or -1 */
static int
parse_size(const char *s, uint64_t *out)
{
	unsigned shift = 0;
	uint64_t v;
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0)
		return -1;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	default: break;
	}
	if (shift != 0 && (strcasecmp(end, "ib") == 0 || strcasecmp(end, "b") == 0))
		end += strlen(end);
	if (*end != '\0' || (shift != 0 && v > (UINT64_MAX >> shift)))
		return -1;
	*out = v << shift;
	return 0;
}

/* parse_uint -- a decimal in [0, max]; 0 or -1 */
static int
parse_uint(const char *s, uint64_t max, uint64_t *out)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	*out = strtoull(s, &end, 10);
	return errno != 0 || *end != '\0' || *out > max ? -1 : 0;
}

/* The names --backends and the log use for RDMA_NODE_SERVE_* flags. */
static const struct {
	const char *name;
	unsigned flag;
} backend_names[] = {
	{ "tcp", RDMA_NODE_SERVE_TCP },
	{ "shm", RDMA_NODE_SERVE_SHM },
	{ "verbs", RDMA_NODE_SERVE_VERBS },
	{ "ofi-verbs", RDMA_NODE_SERVE_OFI_VERBS },
};

/* parse_backends -- "tcp,shm,verbs,ofi-verbs" (any subset) or "none" */
static int
parse_backends(const char *s, unsigned *out)
{
	char buf[64], *save = NULL, *tok;
	unsigned b = 0;

	if (strcmp(s, "none") == 0) {
		*out = 0;
		return 0;
	}
	if (snprintf(buf, sizeof(buf), "%s", s) >= (int)sizeof(buf) || buf[0] == '\0')
		return -1;
	for (tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		unsigned i;

		for (i = 0; i < sizeof(backend_names) / sizeof(backend_names[0]); i++)
			if (strcmp(tok, backend_names[i].name) == 0)
				break;
		if (i == sizeof(backend_names) / sizeof(backend_names[0]))
			return -1;
		b |= backend_names[i].flag;
	}
	if (b == 0)
		return -1;
	*out = b;
	return 0;
}

/* parse_poll -- "adaptive" or "busy" */
static int
parse_poll(const char *s, enum rdma_node_poll *out)
{
	if (strcmp(s, "adaptive") == 0)
		*out = RDMA_NODE_POLL_ADAPTIVE;
	else if (strcmp(s, "busy") == 0)
		*out = RDMA_NODE_POLL_BUSY;
	else
		return -1;
	return 0;
}

/* parse_bool -- config-file truth values */
static int
parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "1", "true", "yes", "on" };
	static const char *const no[] = { "0", "false", "no", "off" };

	for (unsigned i = 0; i < 4; i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return -1;
}

/*
 * opt_set -- set option @bit of @o from @value (NULL for --create); on
 * error, write why into @err and return -1. @value must outlive @o.
 */
static int
opt_set(struct node_opts *o, unsigned bit, const char *value, char *err, size_t cap)
{
	uint64_t v;

	switch (bit) {
	case OPT_POOL:
		if (value[0] == '\0')
			goto bad;
		o->pool = value;
		break;
	case OPT_CREATE:
		if (value == NULL)
			o->create = true;
		else if (parse_bool(value, &o->create) != 0)
			goto bad;
		break;
	case OPT_POOL_SIZE:
		if (parse_size(value, &o->pool_size) != 0 || o->pool_size == 0 ||
		    o->pool_size > SIZE_MAX)
			goto bad;
		break;
	case OPT_REGION:
		if (o->nregions == RDMA_NODE_MAX_REGIONS) {
			snprintf(err, cap, "more than %d regions", RDMA_NODE_MAX_REGIONS);
			return -1;
		}
		if (parse_size(value, &v) != 0 || v == 0)
			goto bad;
		o->regions[o->nregions++] = v;
		break;
	case OPT_DURABILITY:
		if (pm_durability_parse(value, &o->durability) != 0)
			goto bad;
		break;
	case OPT_LISTEN:
		if (value[0] == '\0')
			goto bad;
		o->listen = value;
		break;
	case OPT_PORT:
		if (parse_uint(value, 65535, &v) != 0)
			goto bad;
		o->port = (uint16_t)v;
		break;
	case OPT_BACKENDS:
		if (parse_backends(value, &o->backends) != 0)
			goto bad;
		break;
	case OPT_POLL:
		if (parse_poll(value, &o->poll) != 0)
			goto bad;
		break;
	case OPT_MAX_CLIENTS:
		if (parse_uint(value, 65536, &v) != 0 || v == 0)
			goto bad;
		o->max_clients = (unsigned)v;
		break;
	case OPT_TOKEN:
		if (strlen(value) > RDMA_TOKEN_MAX) {
			snprintf(err, cap, "token longer than %d bytes", RDMA_TOKEN_MAX);
			return -1;
		}
		o->token = value;
		break;
	case OPT_TOKEN_FILE:
		if (value[0] == '\0')
			goto bad;
		o->token_file = value;
		break;
	default:
		snprintf(err, cap, "internal: option %#x", bit);
		return -1;
	}
	o->set |= bit;
	return 0;
bad:
	snprintf(err, cap, "invalid value '%s'", value != NULL ? value : "");
	return -1;
}

/* ---- config file ---- */

struct ini_state {
	FILE *f;
	const char *path;
	struct node_opts *o;
	int line;         /* of the line inih is parsing */
	int err_line;     /* first error found here, 0 if none */
	char err[512];
	char values[64][NODE_MAIN_LINE_MAX + 1]; /* stable copies of the values */
	unsigned nvalues;
};

/* ini_fail -- remember the first error and its line */
static void __attribute__((format(printf, 2, 3)))
ini_fail(struct ini_state *st, const char *fmt, ...)
{
	va_list ap;

	if (st->err_line != 0)
		return;
	st->err_line = st->line;
	va_start(ap, fmt);
	vsnprintf(st->err, sizeof(st->err), fmt, ap);
	va_end(ap);
}

/* config_reader -- fgets for inih that counts lines (this inih build does not
 * pass line numbers to handlers), rejects lines it would truncate, and
 * checks section names (inih calls no handler for an empty section) */
static char *
config_reader(char *str, int num, void *stream)
{
	struct ini_state *st = stream;
	char *s = str;
	size_t len = 0;
	bool nul = false;
	int ch = EOF;

	/* fgets() would hide a NUL byte: read the line byte by byte. */
	while (len + 1 < (size_t)num && (ch = fgetc(st->f)) != EOF) {
		nul |= ch == '\0';
		str[len++] = (char)ch;
		if (ch == '\n')
			break;
	}
	if (len == 0)
		return NULL;
	str[len] = '\0';
	st->line++;
	if (nul) {
		ini_fail(st, "NUL byte in the line (a config file is text)");
	} else if (str[len - 1] != '\n' && ch != EOF) {
		ini_fail(st, "line longer than %d characters", NODE_MAIN_LINE_MAX - 1);
		while ((ch = fgetc(st->f)) != EOF && ch != '\n')
			;
	}
	while (*s == ' ' || *s == '\t')
		s++;
	if (*s == '[') {
		char *end = strchr(s, ']');
		size_t n = end != NULL ? (size_t)(end - s - 1) : 0;

		if (end == NULL)
			ini_fail(st, "malformed section header");
		else if (n != 4 || strncmp(s + 1, "node", 4) != 0)
			ini_fail(st, "unknown section [%.*s] (only [node])", (int)n, s + 1);
	}
	return str;
}

/* config_handler -- one "key = value" of the config file */
static int
config_handler(void *user, const char *section, const char *name, const char *value)
{
	struct ini_state *st = user;
	char err[256];
	char *copy;

	if (strcmp(section, "node") != 0) {
		ini_fail(st, "key '%s' outside the [node] section", name);
		return 0;
	}
	for (unsigned i = 0; i < sizeof(node_keys) / sizeof(node_keys[0]); i++) {
		if (strcmp(name, node_keys[i].key) != 0)
			continue;
		if (node_keys[i].bit != OPT_REGION && (st->o->set & node_keys[i].bit)) {
			ini_fail(st, "key '%s' given twice", name);
			return 0;
		}
		if ((node_keys[i].bit | st->o->set) & OPT_TOKEN &&
		    (node_keys[i].bit | st->o->set) & OPT_TOKEN_FILE) {
			ini_fail(st, "token and token_file exclude each other");
			return 0;
		}
		if (st->nvalues == sizeof(st->values) / sizeof(st->values[0])) {
			ini_fail(st, "too many keys");
			return 0;
		}
		copy = st->values[st->nvalues++];
		snprintf(copy, NODE_MAIN_LINE_MAX + 1, "%s", value);
		if (opt_set(st->o, node_keys[i].bit, copy, err, sizeof(err)) != 0) {
			ini_fail(st, "%s: %s", name, err);
			return 0;
		}
		return 1;
	}
	ini_fail(st, "unknown key '%s'", name);
	return 0;
}

/* load_config -- parse @path into @o; EX_OK or EX_USAGE with a message
 * naming file:line. @st must outlive @o (it holds the values). */
static int
load_config(const char *path, struct node_opts *o, struct ini_state *st)
{
	int ret;

	memset(st, 0, sizeof(*st));
	st->path = path;
	st->o = o;
	st->f = fopen(path, "re");
	if (st->f == NULL)
		return usage_error("--config %s: %s", path, strerror(errno));
	ret = ini_parse_stream(config_reader, st, config_handler, st);
	fclose(st->f);
	st->f = NULL;
	if (st->err_line != 0)
		return usage_error("%s:%d: %s", path, st->err_line, st->err);
	if (ret > 0)
		return usage_error("%s:%d: syntax error (expected 'key = value' or [node])",
			path, ret);
	if (ret < 0)
		return usage_error("%s: cannot parse (%d)", path, ret);
	return EX_OK;
}

/* read_token_file -- first line of @path into @buf; EX_OK or EX_USAGE */
static int
read_token_file(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "re");
	size_t len;

	if (f == NULL)
		return usage_error("--token-file %s: %s", path, strerror(errno));
	if (fgets(buf, (int)cap, f) == NULL)
		buf[0] = '\0';
	fclose(f);
	len = strcspn(buf, "\r\n");
	if (buf[len] == '\0' && len == cap - 1)
		return usage_error("--token-file %s: token longer than %d bytes", path,
			RDMA_TOKEN_MAX);
	buf[len] = '\0';
	return EX_OK;
}

/* ---- command line ---- */

enum {
	LONG_POOL = 256,
	LONG_CREATE,
	LONG_POOL_SIZE,
	LONG_REGION,
	LONG_DURABILITY,
	LONG_LISTEN,
	LONG_PORT,
	LONG_BACKENDS,
	LONG_POLL,
	LONG_MAX_CLIENTS,
	LONG_TOKEN,
	LONG_TOKEN_FILE,
	LONG_CONFIG,
	LONG_READY_FILE,
	LONG_LOG_LEVEL,
	LONG_QUIET,
	LONG_CONNECT,
	LONG_HELP,
	LONG_VERSION,
};

static const struct option node_long_opts[] = {
	{ "pool", required_argument, NULL, LONG_POOL },
	{ "create", no_argument, NULL, LONG_CREATE },
	{ "pool-size", required_argument, NULL, LONG_POOL_SIZE },
	{ "region", required_argument, NULL, LONG_REGION },
	{ "durability", required_argument, NULL, LONG_DURABILITY },
	{ "listen", required_argument, NULL, LONG_LISTEN },
	{ "port", required_argument, NULL, LONG_PORT },
	{ "backends", required_argument, NULL, LONG_BACKENDS },
	{ "poll", required_argument, NULL, LONG_POLL },
	{ "max-clients", required_argument, NULL, LONG_MAX_CLIENTS },
	{ "token", required_argument, NULL, LONG_TOKEN },
	{ "token-file", required_argument, NULL, LONG_TOKEN_FILE },
	{ "config", required_argument, NULL, LONG_CONFIG },
	{ "ready-file", required_argument, NULL, LONG_READY_FILE },
	{ "log-level", required_argument, NULL, LONG_LOG_LEVEL },
	{ "quiet", no_argument, NULL, LONG_QUIET },
	{ "connect", required_argument, NULL, LONG_CONNECT },
	{ "help", no_argument, NULL, LONG_HELP },
	{ "version", no_argument, NULL, LONG_VERSION },
	{ NULL, 0, NULL, 0 },
};

enum node_cmd { CMD_SERVE, CMD_STATUS };

/* parse_args -- the command line into @o; EX_OK, EX_USAGE, or -1 when
 * --help or --version was handled (exit 0) */
static int
parse_args(int argc, char **argv, enum node_cmd cmd, struct node_opts *o)
{
	char err[256], name[64];
	int c, li = -1;

	opterr = 0; /* our own messages */
	optind = 1;
	while ((c = getopt_long(argc, argv, "", node_long_opts, &li)) != -1) {
		const char *flag = optind > 1 ? argv[optind - 1] : "?";
		unsigned bit = 0;

		/* Name a recognised option as "--name": argv[optind - 1] may be
		 * its value. */
		if (c != '?' && li >= 0) {
			snprintf(name, sizeof(name), "--%s", node_long_opts[li].name);
			flag = name;
		}
		li = -1;

		switch (c) {
		case LONG_HELP:
			print_help();
			return -1;
		case LONG_VERSION:
			printf("dmkv-node %s (wire protocol %d, pool layout dmkv-node v1)\n",
				NODE_MAIN_VERSION, RDMA_WIRE_VERSION);
			return -1;
		case LONG_POOL: bit = OPT_POOL; break;
		case LONG_CREATE: bit = OPT_CREATE; break;
		case LONG_POOL_SIZE: bit = OPT_POOL_SIZE; break;
		case LONG_REGION: bit = OPT_REGION; break;
		case LONG_DURABILITY: bit = OPT_DURABILITY; break;
		case LONG_LISTEN: bit = OPT_LISTEN; break;
		case LONG_PORT: bit = OPT_PORT; break;
		case LONG_BACKENDS: bit = OPT_BACKENDS; break;
		case LONG_POLL: bit = OPT_POLL; break;
		case LONG_MAX_CLIENTS: bit = OPT_MAX_CLIENTS; break;
		case LONG_TOKEN: bit = OPT_TOKEN; break;
		case LONG_TOKEN_FILE: bit = OPT_TOKEN_FILE; break;
		case LONG_CONFIG:
		case LONG_READY_FILE:
			if (cmd == CMD_STATUS)
				return usage_error("%s is not an option of 'dmkv-node status'",
					flag);
			if (c == LONG_CONFIG)
				o->config = optarg;
			else
				o->ready_file = optarg;
			continue;
		case LONG_LOG_LEVEL:
			if (strcmp(optarg, "error") == 0)
				o->log_level = RDMA_NODE_LOG_ERROR;
			else if (strcmp(optarg, "warn") == 0)
				o->log_level = RDMA_NODE_LOG_WARN;
			else if (strcmp(optarg, "info") == 0)
				o->log_level = RDMA_NODE_LOG_INFO;
			else if (strcmp(optarg, "debug") == 0)
				o->log_level = RDMA_NODE_LOG_DEBUG;
			else
				return usage_error("--log-level: invalid value '%s'", optarg);
			continue;
		case LONG_QUIET:
			o->log_level = RDMA_NODE_LOG_ERROR;
			continue;
		case LONG_CONNECT:
			if (cmd != CMD_STATUS)
				return usage_error("--connect is for 'dmkv-node status'");
			o->connect = optarg;
			continue;
		default:
			/* getopt_long sets optopt to the option's value when a
			 * known option lacks (or was given) a value, to 0 or a
			 * character for an unknown one. */
			if (optopt >= LONG_POOL)
				return usage_error("option '%s' is missing its value or takes none",
					flag);
			return usage_error("unknown option '%s'", flag);
		}
		if (cmd == CMD_STATUS && bit != OPT_TOKEN && bit != OPT_TOKEN_FILE)
			return usage_error("%s is not an option of 'dmkv-node status'", flag);
		if (bit == OPT_TOKEN && (o->set & OPT_TOKEN_FILE))
			return usage_error("--token and --token-file exclude each other");
		if (bit == OPT_TOKEN_FILE && (o->set & OPT_TOKEN))
			return usage_error("--token and --token-file exclude each other");
		if (opt_set(o, bit, bit == OPT_CREATE ? NULL : optarg, err, sizeof(err)) != 0)
			return usage_error("%s: %s", flag, err);
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	return EX_OK;
}

/* merge -- @cli over @file into @out */
static void
merge(const struct node_opts *cli, const struct node_opts *file, struct node_opts *out)
{
	*out = *cli;
#define TAKE(bit, field) \
	do { if (!(cli->set & (bit)) && (file->set & (bit))) out->field = file->field; } while (0)
	TAKE(OPT_POOL, pool);
	TAKE(OPT_CREATE, create);
	TAKE(OPT_POOL_SIZE, pool_size);
	TAKE(OPT_DURABILITY, durability);
	TAKE(OPT_LISTEN, listen);
	TAKE(OPT_PORT, port);
	TAKE(OPT_BACKENDS, backends);
	TAKE(OPT_POLL, poll);
	TAKE(OPT_MAX_CLIENTS, max_clients);
#undef TAKE
	if (!(cli->set & OPT_REGION) && (file->set & OPT_REGION)) {
		out->nregions = file->nregions;
		memcpy(out->regions, file->regions, sizeof(out->regions));
	}
	/* A token source on the command line replaces the file's, whichever
	 * form either uses. */
	if (!(cli->set & (OPT_TOKEN | OPT_TOKEN_FILE))) {
		out->token = file->token;
		out->token_file = file->token_file;
	}
	out->set = cli->set | file->set;
}

/* raise_fd_limit -- the soft descriptor limit up to the hard one: every
 * client holds a control connection and its endpoint's sockets */
static void
raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
			node_main_logf(RDMA_NODE_LOG_WARN, "cannot raise the descriptor limit: %s",
				strerror(errno));
	}
}

/* opts_default -- the defaults before any source */
static void
opts_default(struct node_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->durability = PM_DURABILITY_AUTO;
	o->listen = "127.0.0.1";
	o->port = RDMA_NODE_DEFAULT_PORT;
	o->backends = RDMA_NODE_SERVE_TCP | RDMA_NODE_SERVE_SHM;
	o->poll = RDMA_NODE_POLL_ADAPTIVE;
	o->log_level = RDMA_NODE_LOG_INFO;
}

/* write_ready_file -- "PORT\n" to @path atomically (temporary + rename) */
static int
write_ready_file(const char *path, uint16_t port)
{
	char tmp[4096];
	FILE *f;
	int ok;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	f = fopen(tmp, "we");
	if (f == NULL)
		return -errno;
	ok = fprintf(f, "%u\n", (unsigned)port) > 0;
	ok = (fflush(f) == 0 && fsync(fileno(f)) == 0) && ok;
	ok = fclose(f) == 0 && ok;
	if (!ok || rename(tmp, path) != 0) {
		int err = errno != 0 ? errno : EIO;

		unlink(tmp);
		return -err;
	}
	return 0;
}

/* open_exit_code -- exit code for an rdma_node_open failure */
static int
open_exit_code(int ret)
{
	switch (ret) {
	case -EINVAL:
	case PM_E_NOT_PMEM:
		return EX_USAGE;
	case PM_E_CORRUPT:
	case PM_E_LAYOUT:
	case PM_E_VERSION:
		return EX_DATAERR;
	case -EBUSY:
		return EX_CANTCREAT;
	case -ENOMEM:
		return EX_SOFTWARE;
	default:
		/* -ENOENT, and what the file system says about opening or
		 * creating the file (-EACCES, -ENOSPC, -EROFS, ...). */
		return ret < 0 && ret > -4096 ? EX_NOINPUT : EX_SOFTWARE;
	}
}

/* serve_exit_code -- exit code for an rdma_node_serve failure */
static int
serve_exit_code(int ret)
{
	switch (ret) {
	case -EADDRINUSE:
	case -EADDRNOTAVAIL:
	case RDMA_E_NO_DEVICE:
		return EX_UNAVAILABLE;
	case -EINVAL:
		return EX_USAGE;
	default:
		return EX_SOFTWARE;
	}
}

/* backends_text -- for the log */
static const char *
backends_text(unsigned b, char *buf, size_t cap)
{
	size_t len = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < sizeof(backend_names) / sizeof(backend_names[0]); i++)
		if ((b & backend_names[i].flag) && len < cap)
			len += (size_t)snprintf(buf + len, cap - len, "%s%s",
				len > 0 ? " " : "", backend_names[i].name);
	if (b == 0)
		snprintf(buf, cap, "none (control port only)");
	return buf;
}

/* cmd_serve -- open, serve, wait for a signal, close */
static int
cmd_serve(const struct node_opts *o)
{
	char token[RDMA_TOKEN_MAX + 2];
	struct rdma_node_serve_config scfg;
	struct rdma_node_config cfg;
	struct rdma_node *node = NULL;
	char buf[64];
	sigset_t sigs;
	int ret, sig;

	if (o->pool == NULL)
		return usage_error("--pool is required (or 'pool' in the [node] section)");
	if (o->token_file != NULL) {
		ret = read_token_file(o->token_file, token, sizeof(token));
		if (ret != EX_OK)
			return ret;
	} else {
		snprintf(token, sizeof(token), "%s", o->token != NULL ? o->token : "");
	}
	if (!o->create && (o->set & (OPT_POOL_SIZE | OPT_REGION)))
		node_main_logf(RDMA_NODE_LOG_WARN,
			"--pool-size and --region apply only with --create to a new pool");

	/* Peers that vanish must not kill the node through a write. */
	signal(SIGPIPE, SIG_IGN);
	raise_fd_limit();

	rdma_node_config_init(&cfg);
	cfg.pool_path = o->pool;
	cfg.flags = o->create ? RDMA_NODE_CREATE : 0;
	cfg.pool_size = (size_t)o->pool_size;
	cfg.nregions = o->nregions;
	memcpy(cfg.region_size, o->regions, sizeof(cfg.region_size));
	cfg.durability = o->durability;
	cfg.token = token;
	cfg.log = node_main_log;
	node_main_logf(RDMA_NODE_LOG_INFO, "dmkv-node %s (pid %ld): %s pool %s",
		NODE_MAIN_VERSION, (long)getpid(), o->create ? "opening or creating" : "opening",
		o->pool);
	ret = rdma_node_open(&node, &cfg);
	if (ret != 0) {
		int code = open_exit_code(ret);

		if (ret == -ENOENT)
			node_main_logf(RDMA_NODE_LOG_ERROR,
				"pool %s does not exist (use --create to make one)", o->pool);
		else if (ret == PM_E_NOT_PMEM)
			node_main_logf(RDMA_NODE_LOG_ERROR,
				"--durability pmem: %s is not on persistent memory", o->pool);
		node_main_logf(RDMA_NODE_LOG_ERROR, "cannot open the node: %s (exit %d)",
			pm_strerror(ret), code);
		return code;
	}

	/* Until here SIGTERM and SIGINT end the process at once (opening a
	 * large or damaged pool can take long, and nothing is being served).
	 * Now, before any thread exists (rdma_node_serve starts them), block
	 * them: the threads inherit the mask, so only sigwait below sees
	 * them; one that came meanwhile stays pending for it. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	if (pthread_sigmask(SIG_BLOCK, &sigs, NULL) != 0) {
		rdma_node_close(&node);
		return EX_OSERR;
	}

	rdma_node_serve_config_init(&scfg);
	scfg.host = o->listen;
	scfg.port = o->port;
	scfg.backends = o->backends;
	scfg.poll = o->poll;
	scfg.max_clients = o->max_clients;
	node_main_logf(RDMA_NODE_LOG_INFO, "serving on %s:%u, backends %s, poll %s", o->listen,
		(unsigned)o->port, backends_text(o->backends, buf, sizeof(buf)),
		o->poll == RDMA_NODE_POLL_BUSY ? "busy" : "adaptive");
	ret = rdma_node_serve(node, &scfg);
	if (ret != 0) {
		int code = serve_exit_code(ret);

		node_main_logf(RDMA_NODE_LOG_ERROR, "cannot serve on %s:%u: %s (exit %d)",
			o->listen, (unsigned)o->port, pm_strerror(ret), code);
		rdma_node_close(&node);
		return code;
	}
	{
		struct rdma_node_status st;

		rdma_node_get_status(node, &st);
		node_main_logf(RDMA_NODE_LOG_INFO, "ready: control port %s:%u, backends %s",
			o->listen, (unsigned)rdma_node_port(node),
			backends_text(st.backends, buf, sizeof(buf)));
		if (token[0] == '\0')
			node_main_logf(RDMA_NODE_LOG_WARN,
				"no token: any client that reaches %s:%u may read and write the"
				" pool (set --token or --token-file)", o->listen,
				(unsigned)rdma_node_port(node));
	}
	if (o->ready_file != NULL) {
		ret = write_ready_file(o->ready_file, rdma_node_port(node));
		if (ret != 0) {
			node_main_logf(RDMA_NODE_LOG_ERROR, "cannot write ready file %s: %s",
				o->ready_file, strerror(-ret));
			rdma_node_close(&node);
			return EX_SOFTWARE;
		}
	}

	for (;;) {
		ret = sigwait(&sigs, &sig);
		if (ret == 0)
			break;
		if (ret != EINTR) {
			node_main_logf(RDMA_NODE_LOG_ERROR, "sigwait: %s", strerror(ret));
			break;
		}
	}
	node_main_logf(RDMA_NODE_LOG_INFO, "received %s, shutting down",
		ret == 0 ? (sig == SIGTERM ? "SIGTERM" : "SIGINT") : "an error");
	if (o->ready_file != NULL)
		unlink(o->ready_file);
	ret = rdma_node_close(&node);
	if (ret != 0) {
		node_main_logf(RDMA_NODE_LOG_ERROR, "closing the node: %s", pm_strerror(ret));
		return EX_SOFTWARE;
	}
	node_main_logf(RDMA_NODE_LOG_INFO, "shut down cleanly");
	return EX_OK;
}

/* cmd_status -- ask a node for its status and print it */
static int
cmd_status(const struct node_opts *o)
{
	char token[RDMA_TOKEN_MAX + 2];
	char host[RDMA__HOST_MAX + 1];
	char text[RDMA_WIRE_STATUS_MAX + 1];
	char def[32];
	const char *target = o->connect;
	uint16_t port;
	int ret;

	if (target == NULL) {
		snprintf(def, sizeof(def), "127.0.0.1:%d", RDMA_NODE_DEFAULT_PORT);
		target = def;
	}
	if (rdma__parse_hostport(target, host, &port) != 0)
		return usage_error("--connect: '%s' is not HOST:PORT", target);
	if (o->token_file != NULL) {
		ret = read_token_file(o->token_file, token, sizeof(token));
		if (ret != EX_OK)
			return ret;
	} else {
		snprintf(token, sizeof(token), "%s", o->token != NULL ? o->token : "");
	}
	ret = rdma_node_status_query(host, port, token, NODE_MAIN_STATUS_TIMEOUT_MS, text,
		sizeof(text));
	if (ret == 0) {
		fputs(text, stdout);
		return fflush(stdout) == 0 ? EX_OK : EX_IOERR;
	}
	if (ret == RDMA_E_AUTH) {
		fprintf(stderr, "dmkv-node: the node at %s refused the token\n", target);
		return EX_NOPERM;
	}
	fprintf(stderr, "dmkv-node: no node answers at %s: %s\n", target, pm_strerror(ret));
	return EX_UNAVAILABLE;
}

/* main -- subcommand, flags, config file, then serve or status */
int
main(int argc, char **argv)
{
	enum node_cmd cmd = CMD_SERVE;
	struct node_opts cli, file, o;
	static struct ini_state ini;
	int ret;

	/* SIGTERM during a long create must end the node as SIGTERM, not as
	 * an error exit (rdma.h, rdma_signals_restore). */
	if (rdma_signals_restore() != 0)
		return EX_OSERR;
	if (argc > 1 && strcmp(argv[1], "serve") == 0) {
		argv[1] = argv[0];
		argv++;
		argc--;
	} else if (argc > 1 && strcmp(argv[1], "status") == 0) {
		cmd = CMD_STATUS;
		argv[1] = argv[0];
		argv++;
		argc--;
	}
	opts_default(&cli);
	ret = parse_args(argc, argv, cmd, &cli);
	if (ret < 0)
		return EX_OK;
	if (ret != EX_OK)
		return ret;
	node_log_level = cli.log_level;
	if (cmd == CMD_STATUS)
		return cmd_status(&cli);
	opts_default(&file);
	if (cli.config != NULL) {
		ret = load_config(cli.config, &file, &ini);
		if (ret != EX_OK)
			return ret;
	}
	merge(&cli, &file, &o);
	return cmd_serve(&o);
}
