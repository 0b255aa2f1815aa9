// SPDX-License-Identifier: BSD-3-Clause
// pm/tests/pool_open_fuzz_main.cc -- runs the pool-open fuzz target without
// libFuzzer: over the files named on the command line, or else over a fixed
// set of seeded inputs that damage every metadata area of a pool. Prints the
// plain "N passed, 0 failed" line; a failing input aborts the process.
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <random>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
	unsigned runs = 0;
	if (argc > 1) {
		for (int i = 1; i < argc; i++) {
			std::ifstream f(argv[i], std::ios::binary);
			std::vector<uint8_t> in((std::istreambuf_iterator<char>(f)),
				std::istreambuf_iterator<char>());
			LLVMFuzzerTestOneInput(in.data(), in.size());
			runs++;
		}
	} else {
		// Offsets cover the pool header, the layout name, lanes, heap
		// headers and zone metadata; lengths from one byte to 64 KiB.
		const uint32_t offsets[] = {0, 8, 64, 4096, 4100, 8192, 12288, 65536,
			1 << 20, (1 << 20) + 4096, 3 << 20, 7 << 20};
		const size_t lengths[] = {1, 8, 256, 65536};
		std::mt19937 gen(2026);
		for (uint32_t off : offsets) {
			for (size_t len : lengths) {
				std::vector<uint8_t> in(4 + len);
				for (int b = 0; b < 4; b++)
					in[b] = static_cast<uint8_t>(off >> (8 * b));
				for (size_t i = 4; i < in.size(); i++)
					in[i] = static_cast<uint8_t>(gen());
				LLVMFuzzerTestOneInput(in.data(), in.size());
				runs++;
			}
		}
	}
	std::printf("pool_open_fuzz: %u passed, 0 failed\n", runs);
	return 0;
}
