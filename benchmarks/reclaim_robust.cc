// SPDX-License-Identifier: BSD-3-Clause
// benchmarks/reclaim_robust.cc -- the thesis's path-switching experiment
// (sect. 6.7.3, Fig. 6.7): N threads run the 50 %-update mix on one set
// while one of them is delayed again and again, and the throughput and the
// retired-but-not-freed nodes are sampled over time, per scheme.
//
// The delayed thread (worker 0) stays registered and sleeps *inside* an
// operation -- after reclaim_op_begin(), before reclaim_op_end() -- as a
// preempted thread would: it declares no quiescent state, keeps its epoch
// and its hazard pointers. QSBR then cannot free anything until it comes
// back (the thesis's run died of it: out of memory at the first delay);
// QSense should switch to its Cadence fallback while the thread is away
// and back to QSBR once it returns. The thesis ran 100 s, delaying one of
// 8 processes for 10 s every 20 s and sampling every second; the defaults
// here are a 20 s run, a 2 s delay every 4 s (windows 2-4, 6-8, ... s) and
// 200 ms samples.
//
// Standing in for the thesis's out-of-memory failure, a scheme's run stops
// early when the pending nodes (retired - freed, reclaim_domain_stats())
// exceed --mem-cap-nodes; the row of that sample says "oom". Default
// 100000 nodes: the thesis's list pool was 2 MiB (about 131000 nodes of 16
// bytes, 2000 of them live).
//
// Output: CSV (--out FILE, default stdout), one row per sample:
//   scheme, t_ms (end of the sample, from the start of the run),
//   ops_in_sample, ops_per_s, pending (at the sample's end), mode
//   (fast/fallback: QSense's path at the sample's end), delayed (1 if the
//   delayed thread slept during the sample), then to_fallback, to_fast
//   (QSense's switches so far), retired, freed (so far), cap, bound and
//   c_legal (the scheme's memory bound from reclaim_bound_compute(): Cadence
//   N(K + Y + R), QSense 2NC and whether C is legal, with Y -- the nodes
//   one thread retires during one rooster round -- estimated as the
//   highest per-thread retire rate of a sample times the longest rooster
//   round of a sample, at least T + epsilon; empty for the other
//   schemes), threads (--threads), event ("oom" when the cap was
//   exceeded).
// Progress goes to stderr, about one line per second and one per event.
//
// Exit status: 0 done; 64 bad usage; 70 a structure check failed after a
// run, or setup or an operation failed.
#include <getopt.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "benchmarks/bench_util.h"
#include "benchmarks/reclaim_sets.h" // and <reclaim/reclaim.h>, see there

namespace {

constexpr int kExitOk = 0;
constexpr int kExitUsage = 64;    // EX_USAGE
constexpr int kExitSoftware = 70; // EX_SOFTWARE

const char kUsage[] =
	"Usage: reclaim_robust [options]\n"
	"The path-switching experiment: THREADS threads run 50% contains / 25% insert /\n"
	"25% remove on a set; worker 0 sleeps inside an operation (registered, after\n"
	"reclaim_op_begin) for DELAY s every EVERY s (the last DELAY s of each period);\n"
	"throughput and pending nodes are sampled every SAMPLE ms, per scheme.\n"
	"\n"
	"  --scheme LIST        schemes, comma-separated or repeated\n"
	"                       (default qsbr,hp,cadence,qsense; also none, ebr, urcu-qsbr)\n"
	"  --structure NAME     list | skiplist | bst (default list)\n"
	"  --size N             initial size (default: the thesis's 2000 / 20000 /\n"
	"                       2000000, or RECLAIM_BENCH_*_SIZE); key range 2N\n"
	"  --threads N          workers, 2..16 (default 8)\n"
	"  --duration-s S       length of each scheme's run (default 20)\n"
	"  --delay-every-s S    delay period (default 4)\n"
	"  --delay-s S          delay length, < the period (default 2)\n"
	"  --sample-ms MS       sample interval, >= 10 (default 200)\n"
	"  --mem-cap-nodes N    stop a scheme's run when pending exceeds N\n"
	"                       (\"out of memory budget\"; default 100000; 0: no cap)\n"
	"  --out FILE           CSV output (default stdout)\n"
	"  -h, --help           this text\n"
	"Exit status: 0 done; 64 bad usage; 70 a structure check, setup or operation failed.\n";

struct Options {
	std::vector<enum reclaim_scheme> schemes;
	rsets::Structure structure = rsets::Structure::kList;
	uint64_t size = 0; // 0: rsets::InitialSize()
	unsigned threads = 8;
	double duration_s = 20, every_s = 4, delay_s = 2;
	unsigned sample_ms = 200;
	uint64_t cap = 100000;
	std::string out;
};

bool ParseDouble(const char *s, double lo, double *out)
{
	char *end;
	errno = 0;
	double v = std::strtod(s, &end);
	if (errno != 0 || end == s || *end != '\0' || !(v >= lo) || !std::isfinite(v))
		return false;
	*out = v;
	return true;
}

bool ParseU64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end;
	errno = 0;
	if (*s == '-')
		return false;
	unsigned long long v = std::strtoull(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

// 0 and *@o from the command line, -1 after --help, or kExitUsage (with a
// message on stderr).
int ParseArgs(int argc, char **argv, Options *o)
{
	enum { kScheme = 256, kStructure, kSize, kThreads, kDuration, kEvery, kDelay,
		kSample, kCap, kOut };
	static const option longopts[] = {
		{ "scheme", required_argument, nullptr, kScheme },
		{ "structure", required_argument, nullptr, kStructure },
		{ "size", required_argument, nullptr, kSize },
		{ "threads", required_argument, nullptr, kThreads },
		{ "duration-s", required_argument, nullptr, kDuration },
		{ "delay-every-s", required_argument, nullptr, kEvery },
		{ "delay-s", required_argument, nullptr, kDelay },
		{ "sample-ms", required_argument, nullptr, kSample },
		{ "mem-cap-nodes", required_argument, nullptr, kCap },
		{ "out", required_argument, nullptr, kOut },
		{ "help", no_argument, nullptr, 'h' },
		{ nullptr, 0, nullptr, 0 },
	};
	auto bad = [](const char *what, const char *arg) {
		std::fprintf(stderr, "reclaim_robust: bad %s \"%s\" (try --help)\n", what, arg);
		return kExitUsage;
	};
	int c;
	uint64_t v;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", longopts, nullptr)) != -1) {
		switch (c) {
		case 'h':
			std::fputs(kUsage, stdout);
			return -1;
		case kScheme: {
			std::string list = optarg;
			size_t pos = 0;
			while (pos <= list.size()) {
				size_t comma = list.find(',', pos);
				std::string name = list.substr(pos, comma - pos);
				enum reclaim_scheme sc;
				if (reclaim_scheme_parse(name.c_str(), &sc) != 0)
					return bad("scheme", name.c_str());
				o->schemes.push_back(sc);
				if (comma == std::string::npos)
					break;
				pos = comma + 1;
			}
			break;
		}
		case kStructure:
			if (rsets::ParseStructure(optarg, &o->structure) != 0)
				return bad("structure", optarg);
			break;
		case kSize:
			if (!ParseU64(optarg, 1, 1ull << 30, &o->size))
				return bad("size", optarg);
			break;
		case kThreads:
			if (!ParseU64(optarg, 2, 16, &v))
				return bad("thread count (2..16)", optarg);
			o->threads = static_cast<unsigned>(v);
			break;
		case kDuration:
			if (!ParseDouble(optarg, 0.01, &o->duration_s))
				return bad("duration", optarg);
			break;
		case kEvery:
			if (!ParseDouble(optarg, 0.01, &o->every_s))
				return bad("delay period", optarg);
			break;
		case kDelay:
			if (!ParseDouble(optarg, 0, &o->delay_s))
				return bad("delay", optarg);
			break;
		case kSample:
			if (!ParseU64(optarg, 10, 3600000, &v))
				return bad("sample interval (>= 10 ms)", optarg);
			o->sample_ms = static_cast<unsigned>(v);
			break;
		case kCap:
			if (!ParseU64(optarg, 0, UINT64_MAX, &o->cap))
				return bad("memory cap", optarg);
			break;
		case kOut:
			o->out = optarg;
			break;
		default:
			std::fprintf(stderr, "reclaim_robust: unknown or incomplete option %s "
				"(try --help)\n", argv[optind - 1]);
			return kExitUsage;
		}
	}
	if (optind < argc) {
		std::fprintf(stderr, "reclaim_robust: unexpected argument \"%s\" (try --help)\n",
			argv[optind]);
		return kExitUsage;
	}
	if (o->delay_s >= o->every_s) {
		std::fprintf(stderr, "reclaim_robust: --delay-s must be below --delay-every-s\n");
		return kExitUsage;
	}
	if (o->schemes.empty())
		o->schemes = { RECLAIM_QSBR, RECLAIM_HP, RECLAIM_CADENCE, RECLAIM_QSENSE };
	if (o->size == 0)
		o->size = rsets::InitialSize(o->structure);
	return 0;
}

double Now()
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

void SleepUntil(double t)
{
	timespec ts;
	ts.tv_sec = static_cast<time_t>(t);
	ts.tv_nsec = static_cast<long>((t - std::floor(t)) * 1e9);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
	}
}

// One worker's published state, on its own cache line.
struct alignas(64) Slot {
	std::atomic<uint64_t> ops { 0 };
	rsets::OpCounts counts; // read after the join
	std::string error;      // registration failure, read after the join
};

// What one scheme's run shares between the sampler and the workers.
struct Run {
	const Options *opt = nullptr;
	rsets::Instance *inst = nullptr;
	std::vector<Slot> slots;
	std::atomic<unsigned> ready { 0 };
	std::atomic<bool> go { false }, stop { false };
	std::atomic<bool> delayed_now { false }, delayed_seen { false };
	double t0 = 0; // start of the measured run (set before go)
};

void Worker(Run *r, unsigned id)
{
	Slot &slot = r->slots[id];
	reclaim_thread *t = nullptr;
	int ret = reclaim_thread_register(r->inst->domain(), &t);

	if (ret != 0)
		slot.error = rsets::Err(ret, "reclaim_thread_register");
	r->ready.fetch_add(1);
	while (!r->go.load(std::memory_order_acquire))
		std::this_thread::yield();
	if (t == nullptr)
		return;

	const rsets::SetOps &o = r->inst->ops();
	void *s = r->inst->set();
	const uint64_t range = r->inst->range();
	const double every = r->opt->every_s, delay = r->opt->delay_s;
	bench::Rng rng(id + 1);
	rsets::OpCounts &c = slot.counts;
	double window_done = -1; // the end of the last delay window served

	while (!r->stop.load(std::memory_order_relaxed)) {
		if (id == 0 && delay > 0 && (c.ops & 15) == 0) {
			double now = Now() - r->t0;
			double period = std::floor(now / every);
			double end = (period + 1) * every;
			if (now - period * every >= every - delay && end > window_done) {
				// Preempted inside an operation: no quiescent state,
				// the epoch and hazard pointers stay as they are.
				reclaim_op_begin(t);
				r->delayed_now.store(true);
				r->delayed_seen.store(true);
				while (!r->stop.load() && Now() - r->t0 < end)
					SleepUntil(std::min(Now() + 0.005, r->t0 + end));
				r->delayed_now.store(false);
				reclaim_op_end(t);
				window_done = end;
				continue;
			}
		}
		rsets::MixedOp(o, s, t, range, &rng, &c);
		slot.ops.store(c.ops, std::memory_order_relaxed);
		if (c.errors != 0)
			break;
	}
	reclaim_thread_unregister(&t);
}

struct Sample {
	double t_ms, ops_per_s;
	uint64_t ops, pending, to_fallback, to_fast, retired, freed, wakeups;
	bool fallback, delayed;
	std::string event;
};

// One scheme's run; appends its rows to @csv. Returns 0 or kExitSoftware.
int RunScheme(const Options &opt, enum reclaim_scheme scheme, FILE *csv)
{
	const char *name = reclaim_scheme_name(scheme);
	rsets::Instance inst;
	double f0 = Now();
	std::string err = inst.Open(opt.structure, scheme, opt.size);

	if (!err.empty()) {
		std::fprintf(stderr, "reclaim_robust: %s: %s\n", name, err.c_str());
		return kExitSoftware;
	}
	std::fprintf(stderr, "reclaim_robust: %s: %s of %llu keys filled in %.2f s; %u threads, "
		"%.1f s, worker 0 delayed %.1f s every %.1f s\n", name, inst.ops().name,
		static_cast<unsigned long long>(opt.size), Now() - f0, opt.threads,
		opt.duration_s, opt.delay_s, opt.every_s);

	Run r;
	r.opt = &opt;
	r.inst = &inst;
	r.slots = std::vector<Slot>(opt.threads);
	std::vector<std::thread> workers;
	for (unsigned i = 0; i < opt.threads; i++)
		workers.emplace_back(Worker, &r, i);
	while (r.ready.load() < opt.threads)
		std::this_thread::yield();
	r.t0 = Now();
	r.go.store(true, std::memory_order_release);

	std::vector<Sample> samples;
	const double dt = opt.sample_ms / 1000.0;
	const unsigned per_line = std::max(1u, 1000 / opt.sample_ms);
	uint64_t last_ops = 0;
	double last_t = r.t0;
	bool oom = false;
	for (unsigned k = 1, line = 0; !oom; k++) {
		double target = r.t0 + k * dt;
		if (target > r.t0 + opt.duration_s + 1e-9)
			break;
		SleepUntil(target);
		double t = Now();
		// Woken late (an oversubscribed machine): the next sample is the
		// next multiple of dt still ahead, not an immediate one.
		while (r.t0 + (k + 1) * dt <= t)
			k++;
		uint64_t ops = 0;
		for (const Slot &s : r.slots)
			ops += s.ops.load(std::memory_order_relaxed);
		reclaim_stats st;
		reclaim_domain_stats(inst.domain(), &st);
		Sample s;
		s.t_ms = (t - r.t0) * 1000.0;
		s.ops = ops - last_ops;
		s.ops_per_s = static_cast<double>(s.ops) / (t - last_t);
		s.pending = st.pending;
		s.to_fallback = st.to_fallback;
		s.to_fast = st.to_fast;
		s.retired = st.retired;
		s.freed = st.freed;
		s.wakeups = st.rooster_wakeups;
		s.fallback = st.mode == RECLAIM_MODE_FALLBACK;
		s.delayed = r.delayed_seen.exchange(false) || r.delayed_now.load();
		if (opt.cap != 0 && st.pending > opt.cap) {
			s.event = "oom";
			oom = true;
			std::fprintf(stderr, "reclaim_robust: %s: out of memory budget at t=%.2f s "
				"(pending %llu > cap %llu); run stopped\n", name, s.t_ms / 1000.0,
				static_cast<unsigned long long>(st.pending),
				static_cast<unsigned long long>(opt.cap));
		} else if (++line % per_line == 0) {
			std::fprintf(stderr, "reclaim_robust: %s: t=%5.1f s %9.0f ops/s pending %8llu "
				"%-8s%s switches %llu/%llu\n", name, s.t_ms / 1000.0, s.ops_per_s,
				static_cast<unsigned long long>(st.pending),
				s.fallback ? "fallback" : "fast", s.delayed ? " delayed" : "",
				static_cast<unsigned long long>(st.to_fallback),
				static_cast<unsigned long long>(st.to_fast));
		}
		samples.push_back(s);
		last_ops = ops;
		last_t = t;
	}
	r.stop.store(true);
	for (std::thread &w : workers)
		w.join();

	// The set must hold the initial keys plus the inserts minus the removes.
	int status = kExitOk;
	uint64_t expect = opt.size, total_ops = 0;
	for (const Slot &s : r.slots) {
		if (!s.error.empty()) {
			std::fprintf(stderr, "reclaim_robust: %s: %s\n", name, s.error.c_str());
			status = kExitSoftware;
		}
		if (s.counts.errors != 0) {
			std::fprintf(stderr, "reclaim_robust: %s: %s\n", name,
				rsets::Err(s.counts.last_error, "operation").c_str());
			status = kExitSoftware;
		}
		expect += s.counts.inserted - s.counts.removed;
		total_ops += s.counts.ops;
	}
	err = inst.Check(expect);
	if (!err.empty()) {
		std::fprintf(stderr, "reclaim_robust: %s: CHECK FAILED: %s\n", name, err.c_str());
		status = kExitSoftware;
	}

	// The bound of Prop. 6.6.3 / 6.6.5 for the measured rates: Y = the
	// highest per-thread retire rate of a sample times the longest rooster
	// round of a sample (at least T + epsilon; a round is one wake-up of
	// every rooster, and an oversubscribed machine stretches it).
	reclaim_config cfg;
	reclaim_domain_config(inst.domain(), &cfg);
	cpu_set_t cpus;
	const double ncpu = sched_getaffinity(0, sizeof(cpus), &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
	double peak_rate = 0; // retires per second per thread, highest sample
	double round_s = (cfg.rooster_interval_us + cfg.epsilon_us) / 1e6;
	uint64_t last_retired = samples.empty() ? 0 : samples[0].retired;
	uint64_t last_wakeups = samples.empty() ? 0 : samples[0].wakeups;
	double last_ms = samples.empty() ? 0 : samples[0].t_ms;
	for (const Sample &s : samples) {
		if (s.t_ms > last_ms) {
			double dt_s = (s.t_ms - last_ms) / 1000.0;
			peak_rate = std::max(peak_rate, (s.retired - last_retired) / dt_s / opt.threads);
			if (s.wakeups > last_wakeups)
				round_s = std::max(round_s, dt_s * ncpu / (s.wakeups - last_wakeups));
		}
		last_retired = s.retired;
		last_wakeups = s.wakeups;
		last_ms = s.t_ms;
	}
	uint64_t young = static_cast<uint64_t>(std::ceil(peak_rate * round_s));
	struct reclaim_bound b {};
	std::string bound, legal;
	if ((scheme == RECLAIM_QSENSE || scheme == RECLAIM_CADENCE) &&
		reclaim_bound_compute(&cfg, opt.threads, inst.ops().retire_per_op, young, &b) == 0) {
		bound = std::to_string(scheme == RECLAIM_QSENSE ? b.qsense : b.cadence);
		legal = scheme == RECLAIM_QSENSE ? (b.c_legal ? "1" : "0") : "";
	}

	uint64_t max_pending = 0;
	for (const Sample &s : samples) {
		max_pending = std::max(max_pending, s.pending);
		std::fprintf(csv, "%s,%.0f,%llu,%.0f,%llu,%s,%d,%llu,%llu,%llu,%llu,%llu,%s,%s,%u,%s\n",
			name, s.t_ms, static_cast<unsigned long long>(s.ops), s.ops_per_s,
			static_cast<unsigned long long>(s.pending), s.fallback ? "fallback" : "fast",
			s.delayed ? 1 : 0, static_cast<unsigned long long>(s.to_fallback),
			static_cast<unsigned long long>(s.to_fast),
			static_cast<unsigned long long>(s.retired),
			static_cast<unsigned long long>(s.freed),
			static_cast<unsigned long long>(opt.cap), bound.c_str(), legal.c_str(),
			opt.threads, s.event.c_str());
	}
	std::fflush(csv);
	std::fprintf(stderr, "reclaim_robust: %s: done: %llu ops, max pending %llu%s%s, C %u, "
		"Y est. %llu, switches to fallback %llu, to fast %llu; check %s\n", name,
		static_cast<unsigned long long>(total_ops),
		static_cast<unsigned long long>(max_pending), bound.empty() ? "" : ", bound ",
		bound.c_str(), cfg.fallback_threshold, static_cast<unsigned long long>(young),
		static_cast<unsigned long long>(samples.empty() ? 0 : samples.back().to_fallback),
		static_cast<unsigned long long>(samples.empty() ? 0 : samples.back().to_fast),
		err.empty() ? "ok" : "FAILED");
	return status;
}

} // namespace

int main(int argc, char **argv)
{
	Options opt;
	int ret = ParseArgs(argc, argv, &opt);

	if (ret < 0)
		return kExitOk;
	if (ret != 0)
		return ret;
	FILE *csv = stdout;
	if (!opt.out.empty() && opt.out != "-") {
		csv = std::fopen(opt.out.c_str(), "w");
		if (csv == nullptr) {
			std::fprintf(stderr, "reclaim_robust: %s: %s\n", opt.out.c_str(),
				std::strerror(errno));
			return kExitUsage;
		}
	}
	std::fprintf(csv, "scheme,t_ms,ops_in_sample,ops_per_s,pending,mode,delayed,"
		"to_fallback,to_fast,retired,freed,cap,bound,c_legal,threads,event\n");
	int status = kExitOk;
	for (enum reclaim_scheme sc : opt.schemes) {
		int r = RunScheme(opt, sc, csv);
		if (r != kExitOk)
			status = r;
	}
	if (csv != stdout && std::fclose(csv) != 0) {
		std::fprintf(stderr, "reclaim_robust: %s: %s\n", opt.out.c_str(), std::strerror(errno));
		return kExitSoftware;
	}
	return status;
}
