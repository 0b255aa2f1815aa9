/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kv/tools/dmkv_index.c -- dmkv-index, the index's administration commands:
 * a command-line front end to kv/index.h.
 *
 *   dmkv-index create  --node URI... [options]   format a new, empty index
 *   dmkv-index scrub   --node URI... [options]   bring lagging nodes up to date
 *   dmkv-index rebuild --node URI... --target I  restore node I after its pool
 *                                                was lost (a new, empty pool)
 *
 * The nodes are given in group order, one --node per memory node (the same
 * order every client uses). Exit codes (sysexits.h; also in --help):
 *   0  done
 *   64 usage or bad configuration
 *   65 the nodes do not hold this index (another group, damaged superblock)
 *   69 too few nodes answered in time (rebuild: every other node must)
 *   73 create: a node already holds an index; rebuild: the target is not
 *      empty (it still holds the group's superblock)
 *   70 other errors
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include <kv/index.h>
#include <pm/error.h>

static void
print_help(FILE *f)
{
	fprintf(f,
		"usage: dmkv-index create|scrub|rebuild --node URI [--node URI]... [options]\n"
		"\n"
		"  create             format a new, empty index on every node (all must be up)\n"
		"  scrub              give nodes that were down the decided words they missed\n"
		"  rebuild            restore --target after its pool was lost; waits one\n"
		"                     --timeout first, needs every other node\n"
		"\n"
		"options:\n"
		"  --node URI         a memory node (local:PATH, ofi+tcp://HOST:PORT, ...), in\n"
		"                     group order; 1, 3, 5 or 7 of them\n"
		"  --target I         rebuild: the node's position (0-based)\n"
		"  --region ID        region holding the index (default 0)\n"
		"  --token T          cluster token\n"
		"  --client-id N      client id to act as (default 0; no running client may\n"
		"                     use it)\n"
		"  --timeout MS       operation timeout (default 5000)\n"
		"  --max-clients N    create: client ids (default 64)\n"
		"  --recs-per-client N  create: classic-round records per client (default 4096)\n"
		"  -h, --help         this text\n"
		"\n"
		"exit codes: 0 done; 64 usage; 65 not this index; 69 too few nodes answered;\n"
		"73 create: already formatted / rebuild: target not empty; 70 other errors\n");
}

/* Stub key_at: these commands never split a bucket or compare keys. */
static int
no_keys(void *ctx, uint64_t loc, void *buf, size_t cap, size_t *len)
{
	(void)ctx;
	(void)loc;
	(void)buf;
	(void)cap;
	(void)len;
	return -EOPNOTSUPP;
}

static int
exit_code(int ret)
{
	switch (ret) {
	case 0:
		return 0;
	case -EINVAL:
		return EX_USAGE;
	case KV_E_GROUP:
	case PM_E_CORRUPT:
	case PM_E_LAYOUT:
	case PM_E_VERSION:
		return EX_DATAERR;
	case KV_E_UNAVAILABLE:
	case RDMA_E_CONN:
	case -ETIMEDOUT:
	case -ENOENT:
		return EX_UNAVAILABLE;
	case -EEXIST:
		return EX_CANTCREAT;
	default:
		return EX_SOFTWARE;
	}
}

/* parse_uint -- @s as a number in [0, @max]; false if it is not one */
static bool
parse_uint(const char *s, unsigned long max, unsigned *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v > max || s[0] == '-')
		return false;
	*out = (unsigned)v;
	return true;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "node", required_argument, NULL, 'n' },
		{ "target", required_argument, NULL, 'T' },
		{ "region", required_argument, NULL, 'r' },
		{ "token", required_argument, NULL, 't' },
		{ "client-id", required_argument, NULL, 'c' },
		{ "timeout", required_argument, NULL, 'o' },
		{ "max-clients", required_argument, NULL, 'm' },
		{ "recs-per-client", required_argument, NULL, 'R' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *nodes[KV_INDEX_MAX_NODES];
	struct kv_index_config cfg;
	struct kv_index *ix = NULL;
	unsigned target = ~0u, region = 0;
	const char *cmd;
	int opt, ret;

	kv_index_config_init(&cfg);
	cfg.key_at = no_keys;
	cfg.nodes = nodes;
	if (argc >= 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
		print_help(stdout);
		return 0;
	}
	if (argc < 2 || argv[1][0] == '-') {
		print_help(stderr);
		return EX_USAGE;
	}
	cmd = argv[1];
	optind = 2;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		bool ok = true;

		switch (opt) {
		case 'n':
			if (cfg.nnodes == KV_INDEX_MAX_NODES) {
				fprintf(stderr, "dmkv-index: at most %d --node\n", KV_INDEX_MAX_NODES);
				return EX_USAGE;
			}
			nodes[cfg.nnodes++] = optarg;
			break;
		case 'T':
			ok = parse_uint(optarg, KV_INDEX_MAX_NODES - 1, &target);
			break;
		case 'r':
			ok = parse_uint(optarg, UINT32_MAX, &region);
			cfg.region = region;
			break;
		case 't':
			cfg.conn.token = optarg;
			break;
		case 'c':
			ok = parse_uint(optarg, 1023, &cfg.client_id);
			break;
		case 'o':
			ok = parse_uint(optarg, 3600000, &cfg.timeout_ms) && cfg.timeout_ms > 0;
			break;
		case 'm':
			ok = parse_uint(optarg, 1024, &cfg.max_clients);
			break;
		case 'R':
			ok = parse_uint(optarg, 1u << 28, &cfg.recs_per_client);
			break;
		case 'h':
			print_help(stdout);
			return 0;
		default:
			print_help(stderr);
			return EX_USAGE;
		}
		if (!ok) {
			fprintf(stderr, "dmkv-index: bad value '%s' (see --help for the ranges)\n",
				optarg);
			return EX_USAGE;
		}
	}
	if (optind != argc || cfg.nnodes == 0) {
		fprintf(stderr, "dmkv-index: give the group's nodes with --node (and no other"
			" arguments)\n");
		return EX_USAGE;
	}
	if (strcmp(cmd, "create") == 0) {
		ret = kv_index_create(&ix, &cfg);
		if (ret == 0)
			printf("created an index on %u nodes\n", cfg.nnodes);
	} else if (strcmp(cmd, "scrub") == 0) {
		ret = kv_index_open(&ix, &cfg);
		if (ret == 0) {
			fprintf(stderr, "dmkv-index: scrubbing every bucket...\n");
			ret = kv_index_scrub(ix);
		}
		if (ret == 0) {
			struct kv_index_stats st;

			kv_index_stats_read(ix, &st);
			printf("scrubbed: %llu buckets repaired\n", (unsigned long long)st.repairs);
		}
	} else if (strcmp(cmd, "rebuild") == 0) {
		if (target == ~0u) {
			fprintf(stderr, "dmkv-index: rebuild needs --target\n");
			return EX_USAGE;
		}
		fprintf(stderr, "dmkv-index: waiting %u ms for client rounds begun before the loss,"
			" then copying decided words to node %u...\n", cfg.timeout_ms, target);
		ret = kv_index_rebuild(&cfg, target);
		if (ret == 0)
			printf("node %u rebuilt; clients count it again\n", target);
	} else {
		fprintf(stderr, "dmkv-index: unknown command '%s'\n", cmd);
		print_help(stderr);
		return EX_USAGE;
	}
	kv_index_close(&ix);
	if (ret != 0)
		fprintf(stderr, "dmkv-index %s: %s (%s)\n", cmd, pm_errormsg(), pm_strerror(ret));
	return exit_code(ret);
}
