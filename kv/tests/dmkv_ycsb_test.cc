// SPDX-License-Identifier: BSD-3-Clause
// kv/tests/dmkv_ycsb_test.cc -- the dmkv driver's YCSB generator and
// histogram (kv/tools/dmkv/): op mixes, zipfian ranks against their exact
// and Gray et al.'s distribution, scrambling, uniformity, latest, inserts
// from two threads, keys; histogram quantiles against sorted samples,
// merges, clamping. Fixed seeds; every statistical bound is 5 standard
// deviations (or p = 1e-6 for chi-square): a correct generator exceeds
// one with a probability below 1e-6 (40 other seeds pass too).
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "kv/tools/dmkv/hist.h"
#include "kv/tools/dmkv/ycsb.h"

namespace {

constexpr double kSigmas = 5.0;
constexpr double kTheta = 0.99;

// ExpectBinomial: @hits of @n trials of probability @p, within kSigmas.
void ExpectBinomial(uint64_t hits, uint64_t n, double p, const std::string &what)
{
	const double mean = static_cast<double>(n) * p;
	const double sd = std::sqrt(static_cast<double>(n) * p * (1 - p));
	EXPECT_LE(std::fabs(static_cast<double>(hits) - mean), kSigmas * sd + 1e-9)
		<< what << ": " << hits << " of " << n << ", expected " << mean << " +- " << sd;
}

// ChiSquareBound: the chi-square value with @df degrees of freedom that is
// exceeded with probability 1e-6 (Wilson-Hilferty; z(1e-6) = 4.7534).
double ChiSquareBound(double df)
{
	const double a = 2.0 / (9.0 * df);
	return df * std::pow(1.0 - a + 4.7534 * std::sqrt(a), 3.0);
}

// Zeta: sum of 1/i^theta for i = 1..n.
double Zeta(uint64_t n, double theta)
{
	double s = 0;
	for (uint64_t i = n; i > 0; i--)
		s += 1.0 / std::pow(static_cast<double>(i), theta);
	return s;
}

// The distribution of ranks Gray et al.'s method draws (ycsb.c): ranks 0
// and 1 exactly zipfian, then floor(n * (eta * u - eta + 1)^alpha).
class GrayZipf {
public:
	GrayZipf(uint64_t n, double theta) : n_(n), theta_(theta), zetan_(Zeta(n, theta))
	{
		zeta2_ = 1.0 + std::pow(0.5, theta);
		eta_ = (1.0 - std::pow(2.0 / static_cast<double>(n), 1.0 - theta)) /
			(1.0 - zeta2_ / zetan_);
	}
	// Cdf: P(rank < k).
	double Cdf(uint64_t k) const
	{
		if (k == 0)
			return 0;
		if (k == 1)
			return 1.0 / zetan_;
		if (k >= n_)
			return 1;
		const double u = (std::pow(static_cast<double>(k) / static_cast<double>(n_),
					  1.0 - theta_) - 1.0 + eta_) / eta_;
		return std::max(zeta2_ / zetan_, u);
	}
	double P(uint64_t r) const { return Cdf(r + 1) - Cdf(r); }
	// Exact zipfian probability of rank r.
	double Exact(uint64_t r) const
	{
		return 1.0 / std::pow(static_cast<double>(r + 1), theta_) / zetan_;
	}

private:
	uint64_t n_;
	double theta_, zetan_, zeta2_, eta_;
};

// Fnv1a: FNV-1a 64 over the eight bytes of @v, least significant first.
uint64_t Fnv1a(uint64_t v)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (int i = 0; i < 8; i++) {
		h ^= (v >> (8 * i)) & 0xff;
		h *= 0x100000001b3ull;
	}
	return h;
}

struct dmkv_ycsb_workload Core(char letter)
{
	struct dmkv_ycsb_workload w;
	EXPECT_EQ(dmkv_ycsb_workload(letter, &w), 0) << letter;
	return w;
}

// Reads only, by the given distribution: ranks and ids without an op mix.
constexpr struct dmkv_ycsb_workload kReadOnly = { 'R', 1.0, 0, 0, 0, DMKV_YCSB_ZIPFIAN };

TEST(DmkvYcsb, Workloads)
{
	struct dmkv_ycsb_workload w;

	w = Core('a');
	EXPECT_EQ(w.name, 'A');
	EXPECT_EQ(w.read, 0.5);
	EXPECT_EQ(w.update, 0.5);
	EXPECT_EQ(w.dist, DMKV_YCSB_ZIPFIAN);
	w = Core('D');
	EXPECT_EQ(w.insert, 0.05);
	EXPECT_EQ(w.dist, DMKV_YCSB_LATEST);
	w = Core('F');
	EXPECT_EQ(w.rmw, 0.5);
	for (char c : { 'A', 'B', 'C', 'D', 'F' }) {
		w = Core(c);
		EXPECT_DOUBLE_EQ(w.read + w.update + w.insert + w.rmw, 1.0) << c;
	}

	w.name = '?';
	EXPECT_EQ(dmkv_ycsb_workload('E', &w), -ENOTSUP);
	EXPECT_EQ(dmkv_ycsb_workload('e', &w), -ENOTSUP);
	for (char c : { 'G', 'z', '0', ' ', '\0', '\xc1' })
		EXPECT_EQ(dmkv_ycsb_workload(c, &w), -EINVAL) << static_cast<int>(c);
	EXPECT_EQ(w.name, '?');
	EXPECT_EQ(dmkv_ycsb_workload('A', nullptr), -EINVAL);
}

TEST(DmkvYcsb, KeyspaceInit)
{
	struct dmkv_ycsb_keyspace ks;

	EXPECT_EQ(dmkv_ycsb_keyspace_init(&ks, 0, kTheta), -EINVAL);
	EXPECT_EQ(dmkv_ycsb_keyspace_init(&ks, (1ull << 53) + 1, kTheta), -EINVAL);
	for (double t : { 0.0, 1.0, -0.5, 1.5, std::nan("") })
		EXPECT_EQ(dmkv_ycsb_keyspace_init(&ks, 10, t), -EINVAL) << t;
	ASSERT_EQ(dmkv_ycsb_keyspace_init(&ks, 1000, kTheta), 0);
	EXPECT_EQ(ks.loaded, 1000u);
	EXPECT_EQ(ks.next_id.load(), 1000u);
	EXPECT_EQ(ks.theta, kTheta);
	EXPECT_NEAR(ks.zetan, Zeta(1000, kTheta), 1e-9);
}

// Each op's count over 200000 draws is binomial with the workload's share.
TEST(DmkvYcsb, OpProportions)
{
	constexpr uint64_t kDraws = 200000;

	for (char c : { 'A', 'B', 'C', 'D', 'F' }) {
		struct dmkv_ycsb_workload w = Core(c);
		struct dmkv_ycsb_keyspace ks;
		struct dmkv_ycsb_gen g;
		struct dmkv_ycsb_req r;
		uint64_t n[4] = {};

		ASSERT_EQ(dmkv_ycsb_keyspace_init(&ks, 1000, kTheta), 0);
		dmkv_ycsb_gen_init(&g, &w, w.dist, &ks, 1234, 0);
		for (uint64_t i = 0; i < kDraws; i++) {
			dmkv_ycsb_next(&g, &r);
			ASSERT_LT(static_cast<unsigned>(r.op), 4u);
			n[r.op]++;
		}
		const std::string name(1, c);
		ExpectBinomial(n[DMKV_YCSB_READ], kDraws, w.read, name + " read");
		ExpectBinomial(n[DMKV_YCSB_UPDATE], kDraws, w.update, name + " update");
		ExpectBinomial(n[DMKV_YCSB_INSERT], kDraws, w.insert, name + " insert");
		ExpectBinomial(n[DMKV_YCSB_RMW], kDraws, w.rmw, name + " rmw");
		EXPECT_EQ(ks.next_id.load(), 1000 + n[DMKV_YCSB_INSERT]) << c;
	}
}

// Unscrambled ranks, read through `latest` with no inserts (id = n-1 -
// rank): ranks 0 and 1 match the exact zipfian probabilities, the top ten
// and every rank bin match Gray's distribution (which is not zipfian
// above rank 1: that is the method).
TEST(DmkvYcsb, ZipfianRanks)
{
	constexpr uint64_t kN = 1000, kDraws = 1000000;
	struct dmkv_ycsb_keyspace ks;
	struct dmkv_ycsb_gen g;
	struct dmkv_ycsb_req r;
	std::vector<uint64_t> hits(kN);
	const GrayZipf z(kN, kTheta);

	ASSERT_EQ(dmkv_ycsb_keyspace_init(&ks, kN, kTheta), 0);
	dmkv_ycsb_gen_init(&g, &kReadOnly, DMKV_YCSB_LATEST, &ks, 99, 3);
	for (uint64_t i = 0; i < kDraws; i++) {
		dmkv_ycsb_next(&g, &r);
		ASSERT_EQ(r.op, DMKV_YCSB_READ);
		ASSERT_LT(r.id, kN);
		hits[kN - 1 - r.id]++;
	}
	EXPECT_EQ(std::max_element(hits.begin(), hits.end()) - hits.begin(), 0);
	ExpectBinomial(hits[0], kDraws, z.Exact(0), "rank 0 (exact zipfian)");
	ExpectBinomial(hits[1], kDraws, z.Exact(1), "rank 1 (exact zipfian)");
	EXPECT_DOUBLE_EQ(z.P(0), z.Exact(0));
	EXPECT_NEAR(z.P(1), z.Exact(1), 1e-15);

	uint64_t top10 = 0;
	for (int i = 0; i < 10; i++)
		top10 += hits[i];
	ExpectBinomial(top10, kDraws, z.Cdf(10), "ranks 0..9 (Gray)");
	// The deviation from the exact distribution ycsb.h states.
	double exact10 = 0;
	for (int i = 0; i < 10; i++)
		exact10 += z.Exact(i);
	EXPECT_NEAR(z.Cdf(10), 0.398, 0.0005);
	EXPECT_NEAR(exact10, 0.382, 0.0005);

	// Goodness of fit: ranks 0..29 one bin each, then bins of 50 ranks.
	std::vector<std::pair<uint64_t, uint64_t>> bins;
	for (uint64_t k = 0; k < 30; k++)
		bins.push_back({ k, k + 1 });
	for (uint64_t k = 30; k < kN; k += 50)
		bins.push_back({ k, std::min(k + 50, kN) });
	double chi2 = 0;
	for (auto [lo, hi] : bins) {
		uint64_t o = 0;
		for (uint64_t k = lo; k < hi; k++)
			o += hits[k];
		const double e = static_cast<double>(kDraws) * (z.Cdf(hi) - z.Cdf(lo));
		ASSERT_GT(e, 100.0) << lo;
		chi2 += (static_cast<double>(o) - e) * (static_cast<double>(o) - e) / e;
	}
	EXPECT_LT(chi2, ChiSquareBound(static_cast<double>(bins.size() - 1)));
}

// Scrambled zipfian ids: rank r lands on FNV-1a(r) mod n, so an id's
// probability is the sum over the ranks hashing to it.
TEST(DmkvYcsb, ZipfianScrambled)
{
	constexpr uint64_t kN = 1000, kDraws = 1000000;
	struct dmkv_ycsb_workload c = Core('C');
	struct dmkv_ycsb_keyspace ks;
	struct dmkv_ycsb_gen g;
	struct dmkv_ycsb_req r;
	std::vector<uint64_t> hits(kN);
	std::vector<double> p(kN);
	const GrayZipf z(kN, kTheta);

	for (uint64_t k = 0; k < kN; k++)
		p[Fnv1a(k) % kN] += z.P(k);
	ASSERT_EQ(dmkv_ycsb_keyspace_init(&ks, kN, kTheta), 0);
	dmkv_ycsb_gen_init(&g, &c, c.dist, &ks, 7, 0);
	for (uint64_t i = 0; i < kDraws; i++) {
		dmkv_ycsb_next(&g, &r);
		ASSERT_LT(r.id, kN);
		hits[r.id]++;
	}
	const uint64_t top = Fnv1a(0) % kN;
	EXPECT_EQ(static_cast<uint64_t>(std::max_element(hits.begin(), hits.end()) - hits.begin()),
		top);
	ExpectBinomial(hits[top], kDraws, p[top], "the most popular id");
	// Rank 530 hashes to rank 0's id too, adding 0.00025 to the exact
	// zipfian 0.129: well within 5 sigma of it as well.
	EXPECT_NEAR(p[top], z.Exact(0) + z.P(530), 1e-12);
	ExpectBinomial(hits[top], kDraws, z.Exact(0), "the most popular id (exact zipfian)");
	// Hashing is not one-to-one: 352 of the 1000 ids get no rank.
	EXPECT_EQ(std::count(hits.begin(), hits.end(), 0u), 352);

	std::set<uint64_t> top10;
	for (uint64_t k = 0; k < 10; k++)
		top10.insert(Fnv1a(k) % kN);
	uint64_t o = 0;
	double e = 0;
	for (uint64_t id : top10) {
		o += hits[id];
		e += p[id];
	}
	ExpectBinomial(o, kDraws, e, "the ids of ranks 0..9");
	// The hash spreads them: not bunched at low ids as plain ranks are.
	EXPECT_GT(*top10.rbegin(), kN / 2);
}

// Uniform ids: chi-square over 100 equal bins.
TEST(DmkvYcsb, Uniform)
{
	constexpr uint64_t kN = 100000, kDraws = 1000000, kBins = 100;
	struct dmkv_ycsb_workload c = Core('C');
	struct dmkv_ycsb_keyspace ks;
	struct dmkv_ycsb_gen g;
	struct dmkv_ycsb_req r;
	std::vector<uint64_t> hits(kBins);

	ASSERT_EQ(dmkv_ycsb_keyspace_init(&ks, kN, kTheta), 0);
	dmkv_ycsb_gen_init(&g, &c, DMKV_YCSB_UNIFORM, &ks, 5, 1);
	for (uint64_t i = 0; i < kDraws; i++) {
		dmkv_ycsb_next(&g, &r);
		ASSERT_LT(r.id, kN);
		hits[r.id * kBins / kN]++;
	}
	const double e = static_cast<double>(kDraws) / kBins;
	double chi2 = 0;
	for (uint64_t h : hits)
		chi2 += (static_cast<double>(h) - e) * (static_cast<double>(h) - e) / e;
	EXPECT_LT(chi2, ChiSquareBound(kBins - 1));
}

// Workload D: inserts take consecutive fresh ids; reads fall on ids
// allocated so far, zipfian back from the newest.
TEST(DmkvYcsb, LatestD)
{
	constexpr uint64_t kN = 1000, kDraws = 200000;
	struct dmkv_ycsb_workload d = Core('D');
	struct dmkv_ycsb_keyspace ks;
	struct dmkv_ycsb_gen g;
	struct dmkv_ycsb_req r;
	std::vector<uint64_t> back(kN);
	uint64_t last = kN - 1, reads = 0;
	const GrayZipf z(kN, kTheta);

	ASSERT_EQ(dmkv_ycsb_keyspace_init(&ks, kN, kTheta), 0);
	dmkv_ycsb_gen_init(&g, &d, d.dist, &ks, 11, 0);
	for (uint64_t i = 0; i < kDraws; i++) {
		dmkv_ycsb_next(&g, &r);
		if (r.op == DMKV_YCSB_INSERT) {
			ASSERT_EQ(r.id, last + 1);
			last = r.id;
			continue;
		}
		ASSERT_EQ(r.op, DMKV_YCSB_READ);
		ASSERT_LE(r.id, last);
		ASSERT_LT(last - r.id, kN);
		back[last - r.id]++;
		reads++;
	}
	EXPECT_EQ(ks.next_id.load(), last + 1);
	EXPECT_GT(last, kN + 9000);
	EXPECT_EQ(std::max_element(back.begin(), back.end()) - back.begin(), 0);
	ExpectBinomial(back[0], reads, z.Exact(0), "the newest id");

	// Reads alone now: the most read id is the last one inserted.
	std::map<uint64_t, uint64_t> hits;
	dmkv_ycsb_gen_init(&g, &kReadOnly, DMKV_YCSB_LATEST, &ks, 12, 0);
	for (int i = 0; i < 100000; i++) {
		dmkv_ycsb_next(&g, &r);
		hits[r.id]++;
	}
	EXPECT_EQ(std::max_element(hits.begin(), hits.end(),
			  [](auto &a, auto &b) { return a.second < b.second; })->first,
		last);
	EXPECT_LE(hits.rbegin()->first, last);

	// Uniform over D draws from every allocated id, the inserted ones too.
	uint64_t fresh = 0;
	dmkv_ycsb_gen_init(&g, &d, DMKV_YCSB_UNIFORM, &ks, 13, 0);
	for (int i = 0; i < 100000; i++) {
		dmkv_ycsb_next(&g, &r);
		if (r.op == DMKV_YCSB_INSERT) {
			last = r.id;
			continue;
		}
		ASSERT_LE(r.id, last);
		fresh += r.id >= kN;
	}
	EXPECT_GT(fresh, 0u);
}

// Two threads inserting through one keyspace take every id once.
TEST(DmkvYcsb, InsertsFromTwoThreads)
{
	constexpr uint64_t kN = 1000;
	constexpr int kDraws = 50000;
	struct dmkv_ycsb_workload d = Core('D');
	struct dmkv_ycsb_keyspace ks;
	std::vector<uint64_t> ids[2];

	ASSERT_EQ(dmkv_ycsb_keyspace_init(&ks, kN, kTheta), 0);
	std::thread t[2];
	for (unsigned i = 0; i < 2; i++) {
		t[i] = std::thread([&, i] {
			struct dmkv_ycsb_gen g;
			struct dmkv_ycsb_req r;

			dmkv_ycsb_gen_init(&g, &d, d.dist, &ks, 21, i);
			for (int k = 0; k < kDraws; k++) {
				dmkv_ycsb_next(&g, &r);
				if (r.op == DMKV_YCSB_INSERT)
					ids[i].push_back(r.id);
			}
		});
	}
	for (auto &th : t)
		th.join();
	std::vector<uint64_t> all(ids[0]);
	all.insert(all.end(), ids[1].begin(), ids[1].end());
	std::sort(all.begin(), all.end());
	ASSERT_FALSE(all.empty());
	for (size_t i = 0; i < all.size(); i++)
		ASSERT_EQ(all[i], kN + i);
	EXPECT_EQ(ks.next_id.load(), kN + all.size());
	// Each thread's own ids increase.
	for (auto &v : ids)
		EXPECT_TRUE(std::is_sorted(v.begin(), v.end()));
}

// Streams: equal (seed, thread) repeat, other threads and seeds differ.
TEST(DmkvYcsb, Reproducible)
{
	struct dmkv_ycsb_workload a = Core('A');
	struct dmkv_ycsb_keyspace ks;
	struct dmkv_ycsb_gen g1, g2, g3, g4;

	ASSERT_EQ(dmkv_ycsb_keyspace_init(&ks, 1000, kTheta), 0);
	dmkv_ycsb_gen_init(&g1, &a, a.dist, &ks, 42, 0);
	dmkv_ycsb_gen_init(&g2, &a, a.dist, &ks, 42, 0);
	dmkv_ycsb_gen_init(&g3, &a, a.dist, &ks, 42, 1);
	dmkv_ycsb_gen_init(&g4, &a, a.dist, &ks, 43, 0);
	int same3 = 0, same4 = 0;
	for (int i = 0; i < 1000; i++) {
		struct dmkv_ycsb_req r1, r2;

		dmkv_ycsb_next(&g1, &r1);
		dmkv_ycsb_next(&g2, &r2);
		ASSERT_EQ(r1.op, r2.op);
		ASSERT_EQ(r1.id, r2.id);
		const uint64_t x = dmkv_ycsb_rand(&g1);
		ASSERT_EQ(x, dmkv_ycsb_rand(&g2));
		same3 += x == dmkv_ycsb_rand(&g3);
		same4 += x == dmkv_ycsb_rand(&g4);
	}
	EXPECT_EQ(same3, 0);
	EXPECT_EQ(same4, 0);
}

TEST(DmkvYcsb, Keys)
{
	char buf[64];
	uint64_t id;

	EXPECT_EQ(dmkv_ycsb_key(42, 24, buf), 24u);
	EXPECT_EQ(std::string(buf, 24), "user00000000000000000042");
	EXPECT_EQ(dmkv_ycsb_key(UINT64_MAX, 24, buf), 24u);
	EXPECT_EQ(std::string(buf, 24), "user18446744073709551615");
	std::memset(buf, 'x', sizeof(buf));
	EXPECT_EQ(dmkv_ycsb_key(7, DMKV_YCSB_KEY_MIN - 1, buf), 0u);
	EXPECT_EQ(dmkv_ycsb_key(7, 0, buf), 0u);
	EXPECT_EQ(buf[0], 'x');

	std::mt19937_64 rng(3);
	for (size_t size : { 24, 25, 32, 64 }) {
		for (int i = 0; i < 1000; i++) {
			const uint64_t v = i < 3 ? (i == 0 ? 0 : i == 1 ? UINT64_MAX : 1) :
						   rng() >> (rng() % 64);
			std::memset(buf, 'x', sizeof(buf));
			ASSERT_EQ(dmkv_ycsb_key(v, size, buf), size);
			ASSERT_NE(buf[size - 1], 'x');
			if (size < sizeof(buf)) {
				ASSERT_EQ(buf[size], 'x');
			}
			ASSERT_EQ(dmkv_ycsb_key_id(buf, size, &id), 0);
			ASSERT_EQ(id, v);
		}
	}

	std::set<std::string> keys;
	for (uint64_t i = 0; i < 100000; i++) {
		ASSERT_EQ(dmkv_ycsb_key(i, 24, buf), 24u);
		keys.insert(std::string(buf, 24));
	}
	EXPECT_EQ(keys.size(), 100000u);

	id = 5;
	for (const char *bad : {
		     "user0000000000000000004",   // 23 bytes
		     "usr000000000000000000042",  // prefix
		     "User00000000000000000042",
		     "user0000000000000000004x",  // not a digit
		     "user-0000000000000000042",
		     "user 0000000000000000042",
		     "user18446744073709551616",  // 2^64
		     "user99999999999999999999",
		     "user000018446744073709551616",
	     })
		EXPECT_EQ(dmkv_ycsb_key_id(bad, std::strlen(bad), &id), -EINVAL) << bad;
	EXPECT_EQ(id, 5u);
	EXPECT_EQ(dmkv_ycsb_key_id("user0000000018446744073709551615", 32, &id), 0);
	EXPECT_EQ(id, UINT64_MAX);
	EXPECT_EQ(dmkv_ycsb_key_id(nullptr, 24, &id), -EINVAL);
	EXPECT_EQ(dmkv_ycsb_key_id("user00000000000000000042", 24, nullptr), -EINVAL);
}

// Histograms are large: the tests keep them on the heap.
struct Hist {
	Hist() { dmkv_hist_init(h.get()); }
	std::unique_ptr<struct dmkv_hist> h = std::make_unique<struct dmkv_hist>();
	struct dmkv_hist *operator->() { return h.get(); }
	struct dmkv_hist *get() { return h.get(); }
};

// ExpectQuantiles: every quantile of @h in steps of 1/1000 against the
// sorted @v: the nearest-rank sample, or at most 1/128 above it.
void ExpectQuantiles(const struct dmkv_hist *h, std::vector<uint64_t> v)
{
	std::sort(v.begin(), v.end());
	for (int i = 0; i <= 1000; i++) {
		const double q = i / 1000.0;
		uint64_t rank = static_cast<uint64_t>(std::ceil(q * static_cast<double>(v.size())));
		rank = std::max<uint64_t>(rank, 1);
		const uint64_t want = v[rank - 1];
		const uint64_t got = dmkv_hist_quantile(h, q);
		ASSERT_GE(got, want) << q;
		ASSERT_LE(static_cast<double>(got - want), static_cast<double>(want) / 128.0) << q;
	}
	EXPECT_EQ(dmkv_hist_quantile(h, 0), v.front());
	EXPECT_EQ(dmkv_hist_quantile(h, 1), v.back());
}

TEST(DmkvHist, Empty)
{
	Hist h;

	EXPECT_EQ(h->count, 0u);
	EXPECT_EQ(dmkv_hist_quantile(h.get(), 0), 0u);
	EXPECT_EQ(dmkv_hist_quantile(h.get(), 0.5), 0u);
	EXPECT_EQ(dmkv_hist_quantile(h.get(), 1), 0u);
	EXPECT_EQ(dmkv_hist_mean(h.get()), 0.0);
	EXPECT_LT(sizeof(struct dmkv_hist), 64u * 1024);
}

TEST(DmkvHist, OneToHundredThousand)
{
	Hist h;
	std::vector<uint64_t> v;

	for (uint64_t i = 1; i <= 100000; i++) {
		dmkv_hist_add(h.get(), i);
		v.push_back(i);
	}
	EXPECT_EQ(h->count, 100000u);
	EXPECT_EQ(h->min, 1u);
	EXPECT_EQ(h->max, 100000u);
	EXPECT_EQ(dmkv_hist_mean(h.get()), 50000.5);
	const uint64_t p50 = dmkv_hist_quantile(h.get(), 0.5);
	const uint64_t p99 = dmkv_hist_quantile(h.get(), 0.99);
	EXPECT_GE(p50, 50000u);
	EXPECT_LE(p50, 50000u + 50000u / 128);
	EXPECT_GE(p99, 99000u);
	EXPECT_LE(p99, 99000u + 99000u / 128);
	EXPECT_EQ(dmkv_hist_quantile(h.get(), 0), 1u);
	EXPECT_EQ(dmkv_hist_quantile(h.get(), 1), 100000u);
	EXPECT_EQ(dmkv_hist_quantile(h.get(), -1), 1u);
	EXPECT_EQ(dmkv_hist_quantile(h.get(), 2), 100000u);
	EXPECT_EQ(dmkv_hist_quantile(h.get(), std::nan("")), 1u);
	ExpectQuantiles(h.get(), v);
}

// Values below 256 have buckets of their own: exact quantiles.
TEST(DmkvHist, SmallValuesExact)
{
	Hist h;
	std::vector<uint64_t> v;

	for (uint64_t i = 0; i < 256; i++) {
		for (uint64_t k = 0; k <= i % 3; k++) {
			dmkv_hist_add(h.get(), i);
			v.push_back(i);
		}
	}
	std::sort(v.begin(), v.end());
	for (size_t rank = 1; rank <= v.size(); rank++) {
		const double q = (static_cast<double>(rank) - 0.5) / static_cast<double>(v.size());
		ASSERT_EQ(dmkv_hist_quantile(h.get(), q), v[rank - 1]) << rank;
	}
}

// Log-uniform values over 0 .. 2^41: the error bound at every scale.
TEST(DmkvHist, WideRange)
{
	Hist h;
	std::vector<uint64_t> v;
	std::mt19937_64 rng(17);

	for (int i = 0; i < 200000; i++) {
		const uint64_t x = rng() >> (23 + rng() % 41);
		dmkv_hist_add(h.get(), x);
		v.push_back(x);
	}
	ExpectQuantiles(h.get(), v);
	uint64_t sum = 0;
	for (uint64_t x : v)
		sum += x;
	EXPECT_EQ(h->sum, sum);
	EXPECT_DOUBLE_EQ(dmkv_hist_mean(h.get()), static_cast<double>(sum) / 200000.0);
}

TEST(DmkvHist, MergeEqualsAddingBoth)
{
	Hist a, b, both, empty;
	std::mt19937_64 rng(5);

	for (int i = 0; i < 50000; i++) {
		const uint64_t x = rng() >> (20 + rng() % 44);
		dmkv_hist_add(i % 3 == 0 ? a.get() : b.get(), x);
		dmkv_hist_add(both.get(), x);
	}
	dmkv_hist_add(b.get(), 1ull << 50);
	dmkv_hist_add(both.get(), 1ull << 50);
	dmkv_hist_merge(a.get(), b.get());
	EXPECT_EQ(std::memcmp(a.get(), both.get(), sizeof(struct dmkv_hist)), 0);

	// Empty on either side.
	Hist c;
	dmkv_hist_merge(c.get(), empty.get());
	EXPECT_EQ(std::memcmp(c.get(), empty.get(), sizeof(struct dmkv_hist)), 0);
	dmkv_hist_merge(c.get(), both.get());
	EXPECT_EQ(std::memcmp(c.get(), both.get(), sizeof(struct dmkv_hist)), 0);
	dmkv_hist_merge(c.get(), empty.get());
	EXPECT_EQ(std::memcmp(c.get(), both.get(), sizeof(struct dmkv_hist)), 0);

	// Minimum from the source; a merge into itself doubles every count.
	Hist d;
	dmkv_hist_add(d.get(), 1000);
	dmkv_hist_merge(c.get(), d.get());
	dmkv_hist_merge(d.get(), c.get());
	EXPECT_EQ(d->min, c->min);
	EXPECT_EQ(d->count, c->count + 1);
	dmkv_hist_merge(d.get(), d.get());
	EXPECT_EQ(d->count, 2 * (c->count + 1));
	EXPECT_EQ(d->min, c->min);
	EXPECT_EQ(d->max, 1ull << 50);
}

// Values past DMKV_HIST_LIMIT share the last bucket; max stays exact.
TEST(DmkvHist, HugeValuesClamp)
{
	Hist h;

	dmkv_hist_add(h.get(), 5);
	dmkv_hist_add(h.get(), 1ull << 40);
	dmkv_hist_add(h.get(), DMKV_HIST_LIMIT);
	dmkv_hist_add(h.get(), 1ull << 60);
	dmkv_hist_add(h.get(), UINT64_MAX);
	EXPECT_EQ(h->count, 5u);
	EXPECT_EQ(h->min, 5u);
	EXPECT_EQ(h->max, UINT64_MAX);
	EXPECT_EQ(h->bucket[DMKV_HIST_BUCKETS - 1], 3u);
	EXPECT_EQ(dmkv_hist_quantile(h.get(), 1), UINT64_MAX);
	EXPECT_EQ(dmkv_hist_quantile(h.get(), 0), 5u);
	// Ranks in the last bucket report max, whatever their sample.
	EXPECT_EQ(dmkv_hist_quantile(h.get(), 0.6), UINT64_MAX);
	const uint64_t p40 = dmkv_hist_quantile(h.get(), 0.4);
	EXPECT_GE(p40, 1ull << 40);
	EXPECT_LE(p40, (1ull << 40) + (1ull << 40) / 128);

	// Up to the limit the bound holds.
	Hist g;
	std::vector<uint64_t> v;
	for (uint64_t x = 1; x < DMKV_HIST_LIMIT; x = x * 3 + 1) {
		dmkv_hist_add(g.get(), x);
		v.push_back(x);
	}
	ExpectQuantiles(g.get(), v);
}

} // namespace
