// SPDX-License-Identifier: BSD-3-Clause
// kv/tests/store_config.h -- the store configuration the kv/ tests that
// need short leases share (three nodes, small logs and chunks).
#ifndef KV_TESTS_STORE_CONFIG_H
#define KV_TESTS_STORE_CONFIG_H

#include <cstdint>
#include <vector>

#include <kv/kv.h>

namespace kvtest {

// A configuration over @nodes (the caller keeps them alive) with @clients
// client ids, @log_bytes logs, @chunk_bytes object chunks, and the given
// operation timeout and lease; the rest kv_config_init()'s defaults.
inline kv_config StoreConfig(const std::vector<const char *> &nodes, unsigned clients,
	uint64_t log_bytes, uint64_t chunk_bytes, unsigned timeout_ms, unsigned lease_ms)
{
	kv_config cfg;

	kv_config_init(&cfg);
	cfg.nodes = nodes.data();
	cfg.nnodes = static_cast<unsigned>(nodes.size());
	cfg.max_clients = clients;
	cfg.log_bytes = log_bytes;
	cfg.chunk_bytes = chunk_bytes;
	cfg.timeout_ms = timeout_ms;
	cfg.lease_ms = lease_ms;
	return cfg;
}

}  // namespace kvtest

#endif  // KV_TESTS_STORE_CONFIG_H
