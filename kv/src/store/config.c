/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kv/src/store/config.c -- kv_config_load(): a cluster config (kv/kv.h) from
 * an INI file.
 *
 * Hand-written rather than on inih, which rdma/ uses for the daemon's config
 * file: Debian's libinih is built with INI_MAX_LINE 200 and without
 * INI_ALLOW_REALLOC, so it cannot read a line holding a token of
 * RDMA_TOKEN_MAX (256) bytes or seven long node URIs; it reports only the
 * line of a syntax error, not what is wrong with it; and its multi-line
 * continuation turns an indented "key = value" line into more of the
 * previous value. The format here is small (two sections, no quoting, no
 * continuation lines), so a parser over the whole file in memory stays
 * short and checks every byte.
 *
 * The file is read whole (at most KV_CFG_FILE_MAX bytes) into one buffer
 * owned by the struct kv_config_file handed back; node URIs and the token
 * are cut out of that buffer in place (NUL-terminated), so the strings
 * cfg points to need no allocations of their own.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pm/error.h>

#include <kv/kv.h>

/* Largest config file read; a real one is well under 1 KiB. */
#define KV_CFG_FILE_MAX (1u << 20)
/* Longest key or value quoted in a message (the rest is cut). */
#define KV_CFG_QUOTE_MAX 64

struct kv_config_file {
	char *text;                      /* the file, cut into strings in place */
	const char *nodes[KV_MAX_NODES]; /* the loaded cfg->nodes points here */
};

enum kv_cfg_section { KV_CFG_NONE, KV_CFG_CLUSTER, KV_CFG_CREATE };

enum kv_cfg_key_id {
	KV_CFG_NODES,
	KV_CFG_NODE,
	KV_CFG_F,
	KV_CFG_TOKEN,
	KV_CFG_TIMEOUT_MS,
	KV_CFG_CONNECT_TIMEOUT_MS,
	KV_CFG_CACHE_ENTRIES,
	KV_CFG_INDEX_REGION,
	KV_CFG_STORE_REGION,
	KV_CFG_MAX_CLIENTS,
	KV_CFG_LOG_BYTES,
	KV_CFG_CHUNK_BYTES,
	KV_CFG_TICK_NS,
	KV_CFG_LEASE_MS,
	KV_CFG_REPL,
	KV_CFG_NKEYS
};

enum kv_cfg_kind { KV_CFG_LIST, KV_CFG_STRING, KV_CFG_NUMBER, KV_CFG_SIZE };

struct kv_cfg_key {
	const char *name;
	enum kv_cfg_section section;
	enum kv_cfg_kind kind;
	bool repeatable;
	uint64_t min, max; /* numbers and sizes, inclusive */
};

/* Indexed by enum kv_cfg_key_id; the ranges are the ones kv/kv.h documents
 * (kv_create() checks the finer rules, such as multiples of 1 MiB). */
static const struct kv_cfg_key kv_cfg_keys[KV_CFG_NKEYS] = {
	[KV_CFG_NODES] = { "nodes", KV_CFG_CLUSTER, KV_CFG_LIST, false, 0, 0 },
	[KV_CFG_NODE] = { "node", KV_CFG_CLUSTER, KV_CFG_LIST, true, 0, 0 },
	[KV_CFG_F] = { "f", KV_CFG_CLUSTER, KV_CFG_NUMBER, false, 0, (KV_MAX_NODES - 1) / 2 },
	[KV_CFG_TOKEN] = { "token", KV_CFG_CLUSTER, KV_CFG_STRING, false, 0, 0 },
	[KV_CFG_TIMEOUT_MS] = { "timeout_ms", KV_CFG_CLUSTER, KV_CFG_NUMBER, false, 1, UINT_MAX },
	[KV_CFG_CONNECT_TIMEOUT_MS] = { "connect_timeout_ms", KV_CFG_CLUSTER, KV_CFG_NUMBER,
		false, 1, UINT_MAX },
	[KV_CFG_CACHE_ENTRIES] = { "cache_entries", KV_CFG_CLUSTER, KV_CFG_NUMBER, false, 0,
		UINT_MAX },
	[KV_CFG_INDEX_REGION] = { "index_region", KV_CFG_CLUSTER, KV_CFG_NUMBER, false, 0,
		UINT32_MAX },
	[KV_CFG_STORE_REGION] = { "store_region", KV_CFG_CLUSTER, KV_CFG_NUMBER, false, 0,
		UINT32_MAX },
	[KV_CFG_MAX_CLIENTS] = { "max_clients", KV_CFG_CREATE, KV_CFG_NUMBER, false, 1,
		KV_MAX_CLIENTS },
	[KV_CFG_LOG_BYTES] = { "log_bytes", KV_CFG_CREATE, KV_CFG_SIZE, false, 1u << 20,
		256u << 20 },
	[KV_CFG_CHUNK_BYTES] = { "chunk_bytes", KV_CFG_CREATE, KV_CFG_SIZE, false, 4096,
		UINT64_C(1) << 32 },
	[KV_CFG_TICK_NS] = { "tick_ns", KV_CFG_CREATE, KV_CFG_NUMBER, false, 1, UINT_MAX },
	[KV_CFG_LEASE_MS] = { "lease_ms", KV_CFG_CREATE, KV_CFG_NUMBER, false, 1, UINT_MAX },
	[KV_CFG_REPL] = { "repl", KV_CFG_CREATE, KV_CFG_STRING, false, 0, 0 },
};

/* The parse of one file; the caller's cfg is written only at the end, on
 * success. */
struct kv_cfg_parse {
	const char *path;
	unsigned line;                      /* 1-based, of the line being read */
	enum kv_cfg_section section;
	unsigned seen_line[KV_CFG_NKEYS];   /* where each key was given, 0: not */
	unsigned node_line[KV_MAX_NODES];
	unsigned nnodes;
	uint64_t f;
	struct kv_config cfg;               /* the caller's, updated */
	struct kv_config_file *file;
};

/* kv_cfg_fail -- KV_E_CONFIG with "kv_config_load: PATH:LINE: what" */
static int __attribute__((format(printf, 2, 3)))
kv_cfg_fail(const struct kv_cfg_parse *p, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return pm_error_set(KV_E_CONFIG, "kv_config_load: %s:%u: %s", p->path, p->line, what);
}

/* kv_cfg_errno -- @err (a positive errno) as a code with a message */
static int
kv_cfg_errno(const char *path, const char *what, int err)
{
	char buf[128];

	return pm_error_set(-err, "kv_config_load: %s: %s: %s", path, what,
		strerror_r(err, buf, sizeof(buf)));
}

/* kv_cfg_read -- the whole of @path into a new NUL-terminated buffer */
static int
kv_cfg_read(const char *path, char **textp, size_t *lenp)
{
	size_t len = 0, cap = 4096;
	char *text = NULL;
	int fd, ret = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return kv_cfg_errno(path, "cannot open", errno);
	for (;;) {
		ssize_t n;

		if (text == NULL || len == cap) {
			char *bigger;

			if (text != NULL)
				cap *= 2;
			/* +1 for the terminating NUL; one byte past the limit
			 * is enough to tell the file is too large */
			bigger = realloc(text, cap + 1);
			if (bigger == NULL) {
				ret = pm_error_set(-ENOMEM, "kv_config_load: out of memory");
				break;
			}
			text = bigger;
		}
		n = read(fd, text + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = kv_cfg_errno(path, "cannot read", errno);
			break;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > KV_CFG_FILE_MAX) {
			ret = pm_error_set(KV_E_CONFIG, "kv_config_load: %s: larger than %u bytes",
				path, KV_CFG_FILE_MAX);
			break;
		}
	}
	close(fd);
	if (ret != 0) {
		free(text);
		return ret;
	}
	text[len] = '\0';
	*textp = text;
	*lenp = len;
	return 0;
}

static bool
kv_cfg_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* kv_cfg_trim -- @s without leading and trailing blanks (cut in place) */
static char *
kv_cfg_trim(char *s)
{
	size_t n;

	while (kv_cfg_blank(*s))
		s++;
	n = strlen(s);
	while (n > 0 && kv_cfg_blank(s[n - 1]))
		s[--n] = '\0';
	return s;
}

/* kv_cfg_number -- @v as a decimal number, with a K/M/G suffix for sizes,
 * within the key's range */
static int
kv_cfg_number(const struct kv_cfg_parse *p, const struct kv_cfg_key *k, const char *v,
	uint64_t *out)
{
	uint64_t n = 0, mult = 1;
	const char *s = v;

	if (*s < '0' || *s > '9')
		goto bad;
	for (; *s >= '0' && *s <= '9'; s++) {
		unsigned d = (unsigned)(*s - '0');

		if (n > (UINT64_MAX - d) / 10)
			goto range;
		n = n * 10 + d;
	}
	if (k->kind == KV_CFG_SIZE && *s != '\0') {
		switch (*s++) {
		case 'K': case 'k': mult = UINT64_C(1) << 10; break;
		case 'M': case 'm': mult = UINT64_C(1) << 20; break;
		case 'G': case 'g': mult = UINT64_C(1) << 30; break;
		default: goto bad;
		}
	}
	if (*s != '\0')
		goto bad;
	if (n > UINT64_MAX / mult)
		goto range;
	n *= mult;
	if (n < k->min || n > k->max)
		goto range;
	*out = n;
	return 0;
bad:
	return kv_cfg_fail(p, "%s: bad number '%.*s'%s", k->name, KV_CFG_QUOTE_MAX, v,
		k->kind == KV_CFG_SIZE ? " (decimal, optionally with K, M or G)" : " (decimal)");
range:
	return kv_cfg_fail(p, "%s: number '%.*s' out of range (%llu..%llu)", k->name,
		KV_CFG_QUOTE_MAX, v, (unsigned long long)k->min, (unsigned long long)k->max);
}

/* kv_cfg_nodes -- append the comma-separated URIs of @v to the node list */
static int
kv_cfg_nodes(struct kv_cfg_parse *p, const struct kv_cfg_key *k, char *v)
{
	for (;;) {
		char *comma = strchr(v, ',');
		char *uri;

		if (comma != NULL)
			*comma = '\0';
		uri = kv_cfg_trim(v);
		if (uri[0] == '\0')
			return kv_cfg_fail(p, "%s: empty node URI", k->name);
		if (p->nnodes == KV_MAX_NODES)
			return kv_cfg_fail(p, "too many nodes (at most KV_MAX_NODES = %d)",
				KV_MAX_NODES);
		for (unsigned i = 0; i < p->nnodes; i++)
			if (strcmp(p->file->nodes[i], uri) == 0)
				return kv_cfg_fail(p, "duplicate node URI '%.*s' (first on line %u)",
					KV_CFG_QUOTE_MAX, uri, p->node_line[i]);
		p->node_line[p->nnodes] = p->line;
		p->file->nodes[p->nnodes++] = uri;
		if (comma == NULL)
			return 0;
		v = comma + 1;
	}
}

/* kv_cfg_set -- apply "@k = @v" (value trimmed, cut out of the file) */
static int
kv_cfg_set(struct kv_cfg_parse *p, enum kv_cfg_key_id id, char *v)
{
	const struct kv_cfg_key *k = &kv_cfg_keys[id];
	struct kv_config *cfg = &p->cfg;
	uint64_t n = 0;
	int ret;

	if (k->kind == KV_CFG_LIST)
		return kv_cfg_nodes(p, k, v);
	if (id == KV_CFG_REPL) {
		static const char *const names[] = { [KV_REPL_SWARM] = "swarm",
			[KV_REPL_ABD] = "abd", [KV_REPL_RAW] = "raw" };

		for (unsigned r = 0; r < sizeof(names) / sizeof(names[0]); r++)
			if (strcmp(v, names[r]) == 0) {
				cfg->repl = (enum kv_replication)r;
				return 0;
			}
		return kv_cfg_fail(p, "repl is \"%s\", not swarm, abd or raw", v);
	}
	if (k->kind == KV_CFG_STRING) {
		/* the token is the only other string key */
		size_t len = strlen(v);

		if (len > RDMA_TOKEN_MAX)
			return kv_cfg_fail(p, "token of %zu bytes, longer than RDMA_TOKEN_MAX (%d)",
				len, RDMA_TOKEN_MAX);
		cfg->conn.token = v;
		return 0;
	}
	ret = kv_cfg_number(p, k, v, &n);
	if (ret != 0)
		return ret;
	/* every range in kv_cfg_keys fits the field's type */
	switch (id) {
	case KV_CFG_F: p->f = n; break;
	case KV_CFG_TIMEOUT_MS: cfg->timeout_ms = (unsigned)n; break;
	case KV_CFG_CONNECT_TIMEOUT_MS: cfg->conn.timeout_ms = (unsigned)n; break;
	case KV_CFG_CACHE_ENTRIES: cfg->cache_entries = (unsigned)n; break;
	case KV_CFG_INDEX_REGION: cfg->index_region = (uint32_t)n; break;
	case KV_CFG_STORE_REGION: cfg->store_region = (uint32_t)n; break;
	case KV_CFG_MAX_CLIENTS: cfg->max_clients = (unsigned)n; break;
	case KV_CFG_LOG_BYTES: cfg->log_bytes = n; break;
	case KV_CFG_CHUNK_BYTES: cfg->chunk_bytes = n; break;
	case KV_CFG_TICK_NS: cfg->tick_ns = (unsigned)n; break;
	case KV_CFG_LEASE_MS: cfg->lease_ms = (unsigned)n; break;
	default: break; /* lists and strings returned above */
	}
	return 0;
}

/* kv_cfg_section_line -- "[name]" (@s trimmed, starting with '[') */
static int
kv_cfg_section_line(struct kv_cfg_parse *p, char *s)
{
	size_t n = strlen(s);
	char *name;

	if (s[n - 1] != ']')
		return kv_cfg_fail(p, "malformed section header (expected [cluster] or [create])");
	s[n - 1] = '\0';
	name = kv_cfg_trim(s + 1);
	if (strcmp(name, "cluster") == 0)
		p->section = KV_CFG_CLUSTER;
	else if (strcmp(name, "create") == 0)
		p->section = KV_CFG_CREATE;
	else
		return kv_cfg_fail(p, "unknown section [%.*s] (expected [cluster] or [create])",
			KV_CFG_QUOTE_MAX, name);
	return 0;
}

/* kv_cfg_line -- one line of @n bytes (its end of line already cut off) */
static int
kv_cfg_line(struct kv_cfg_parse *p, char *s, size_t n)
{
	static const char *const section_names[] = { "", "[cluster]", "[create]" };
	char *eq, *key, *value;
	unsigned id;

	/* by length, not up to a NUL: a NUL byte inside the line must be
	 * seen, not end it early */
	for (char *c = s; c < s + n; c++) {
		unsigned char u = (unsigned char)*c;

		/* the strings go to URIs, tokens and messages: no control
		 * bytes (a NUL would also end the line early) */
		if ((u < 0x20 && u != '\t') || u == 0x7f)
			return kv_cfg_fail(p, "control character 0x%02x", u);
		/* ';' or '#' first on the line or after a blank starts a
		 * comment; elsewhere it is part of the value (a token "a#b") */
		if ((u == ';' || u == '#') && (c == s || kv_cfg_blank(c[-1]))) {
			*c = '\0';
			break;
		}
	}
	s = kv_cfg_trim(s);
	if (s[0] == '\0')
		return 0;
	if (s[0] == '[')
		return kv_cfg_section_line(p, s);
	eq = strchr(s, '=');
	if (eq == NULL)
		return kv_cfg_fail(p, "missing '=' (expected key = value, a [section] or a comment)");
	*eq = '\0';
	key = kv_cfg_trim(s);
	value = kv_cfg_trim(eq + 1);
	if (key[0] == '\0')
		return kv_cfg_fail(p, "missing key before '='");
	if (p->section == KV_CFG_NONE)
		return kv_cfg_fail(p, "key '%.*s' before any section ([cluster] or [create])",
			KV_CFG_QUOTE_MAX, key);
	for (id = 0; id < KV_CFG_NKEYS; id++)
		if (kv_cfg_keys[id].section == p->section && strcmp(kv_cfg_keys[id].name, key) == 0)
			break;
	if (id == KV_CFG_NKEYS)
		return kv_cfg_fail(p, "unknown key '%.*s' in %s", KV_CFG_QUOTE_MAX, key,
			section_names[p->section]);
	if (p->seen_line[id] != 0 && !kv_cfg_keys[id].repeatable)
		return kv_cfg_fail(p, "duplicate key '%s' (first on line %u)", key,
			p->seen_line[id]);
	p->seen_line[id] = p->line;
	return kv_cfg_set(p, (enum kv_cfg_key_id)id, value);
}

/* kv_cfg_parse_text -- every line of @text (@len bytes, NUL-terminated),
 * then the checks that need the whole file */
static int
kv_cfg_parse_text(struct kv_cfg_parse *p, char *text, size_t len)
{
	char *s = text, *end = text + len;
	int ret;

	/* a UTF-8 byte order mark, as some editors write */
	if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
		s += 3;
	while (s < end) {
		char *nl = memchr(s, '\n', (size_t)(end - s));
		char *eol = nl != NULL ? nl : end;

		p->line++;
		if (eol > s && eol[-1] == '\r')
			eol--; /* CRLF */
		*eol = '\0';
		ret = kv_cfg_line(p, s, (size_t)(eol - s));
		if (ret != 0)
			return ret;
		s = nl != NULL ? nl + 1 : end;
	}
	if (p->nnodes == 0) {
		if (p->line == 0)
			p->line = 1;
		return kv_cfg_fail(p, "no nodes (give nodes = URI, ... or node = URI lines in "
			"[cluster])");
	}
	if (p->seen_line[KV_CFG_F] != 0 && p->nnodes != 2 * p->f + 1) {
		p->line = p->seen_line[KV_CFG_F];
		return kv_cfg_fail(p, "f = %llu needs 2f+1 = %llu nodes, but %u are listed",
			(unsigned long long)p->f, (unsigned long long)(2 * p->f + 1), p->nnodes);
	}
	if (p->nnodes % 2 == 0) {
		p->line = p->node_line[p->nnodes - 1];
		return kv_cfg_fail(p, "%u nodes; a cluster has 2f+1 (1, 3, 5 or 7)", p->nnodes);
	}
	return 0;
}

int
kv_config_load(struct kv_config_file **out, struct kv_config *cfg, const char *path)
{
	struct kv_cfg_parse p;
	char *text = NULL;
	size_t len = 0;
	int ret;

	pm_error_clear();
	if (out != NULL)
		*out = NULL;
	if (cfg == NULL || path == NULL || out == NULL)
		return pm_error_set(-EINVAL, "kv_config_load: NULL config, path or output");
	ret = kv_cfg_read(path, &text, &len);
	if (ret != 0)
		return ret;
	memset(&p, 0, sizeof(p));
	p.path = path;
	p.cfg = *cfg;
	p.file = calloc(1, sizeof(*p.file));
	if (p.file == NULL) {
		free(text);
		return pm_error_set(-ENOMEM, "kv_config_load: out of memory");
	}
	p.file->text = text;
	ret = kv_cfg_parse_text(&p, text, len);
	if (ret != 0) {
		free(text);
		free(p.file);
		return ret;
	}
	p.cfg.nodes = p.file->nodes;
	p.cfg.nnodes = p.nnodes;
	*cfg = p.cfg;
	*out = p.file;
	return 0;
}

int
kv_config_file_delete(struct kv_config_file **fp)
{
	if (fp == NULL || *fp == NULL)
		return 0;
	free((*fp)->text);
	free(*fp);
	*fp = NULL;
	return 0;
}
