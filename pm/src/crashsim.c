/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pm/src/crashsim.c -- the crash simulator (contract in pm/crashsim.h).
 *
 * Processes. The workload runs in the calling process (the "parent"). At a
 * crash point the thread that hit it, holding pm_crashsim.lock, forks a
 * "point child": a frozen copy of the parent at that instant, single-threaded.
 * The point child computes the candidate values of every word and forks one
 * "image grandchild" per image, sequentially; each grandchild remaps the
 * tracked ranges privately, writes its image and runs the caller's check.
 * Results travel back through a MAP_SHARED anonymous page (struct
 * pm_crashsim_shared) that all three generations see. The parent only waits,
 * so the workload resumes exactly where it stopped.
 *
 * Why fork per point rather than re-running the workload to event k: one run
 * covers every point, and multi-threaded runs could not be re-run to the same
 * state anyway.
 *
 * Locking. pm_crashsim.lock serialises every persistence event on tracked
 * memory, the durable images and the per-thread pending lists; it is a leaf
 * lock except that it is held across the fork/wait of a crash point.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <pm/crashsim.h>
#include <pm/error.h>
#include <pm/persist.h>

#include "persist_internal.h"

#define PM_CRASHSIM_LINE_WORDS (PM_CACHELINE / 8)
#define PM_CRASHSIM_MSG_LEN 1024
#define PM_CRASHSIM_REPORT_LEN 4096
/* Exit statuses of an image process that wrote its own message. */
#define PM_CRASHSIM_EXIT_VERDICT 1  /* the check failed */

struct pm_crashsim_range {
	uint64_t *addr;    /* working memory (8-byte aligned) */
	size_t nwords;
	uint64_t *durable; /* shadow durable image, nwords long */
	/* Event number of the flush each durable word came from (0: initial).
	 * Write-backs of one cache line reach memory in coherence order, so a
	 * fence never makes a snapshot durable over a newer one: without this,
	 * thread A's stale flushed snapshot could overwrite the value thread B
	 * flushed and fenced later, and durable memory would go backwards. */
	uint64_t *durable_seq;
};

/* One flushed, not yet fenced, cache line (clipped to its range). */
struct pm_crashsim_pending {
	unsigned range;
	unsigned nwords;
	size_t first;
	uint64_t seq; /* event number of the flush; snapshots are ordered by it */
	uint64_t snap[PM_CRASHSIM_LINE_WORDS];
};

/* Pending flushes of one workload thread. */
struct pm_crashsim_thread {
	struct pm_crashsim_pending *lines;
	size_t n, cap;
	struct pm_crashsim_thread *next;
};

/* Written by point children and image grandchildren, read by the parent. */
struct pm_crashsim_shared {
	uint64_t images;      /* images checked at this point */
	uint64_t dirty_words; /* words with a non-durable candidate */
	int failed;
	uint64_t fail_image;
	int in_process;          /* the point's process checks its last image */
	uint64_t in_process_image;
	char msg[PM_CRASHSIM_MSG_LEN];
};

struct pm_crashsim {
	struct pm_crashsim_config cfg;
	char *name;
	struct pm_crashsim_range *ranges;
	unsigned nranges;

	pthread_mutex_t lock;
	uint64_t events;
	uint64_t rng;
	uint64_t run_id;
	bool running;
	bool stop_checking;
	int error; /* internal failure during the run (-ENOMEM) */
	struct pm_crashsim_thread *threads;
	struct pm_crashsim_stats stats;

	bool replay;
	uint64_t replay_point, replay_image;

	pm_crashsim_check_fn check;
	void *arg;
	struct pm_crashsim_shared *shared;
	char report[PM_CRASHSIM_REPORT_LEN];
};

/* The simulator whose hooks are installed; NULL when none runs. */
static struct pm_crashsim *_Atomic pm_crashsim_active;
/* This thread's pending list, valid only while pm_crashsim_self_run equals
 * the running simulator's run_id: lists are freed between runs, and run ids
 * are never reused, so a stale pointer is never dereferenced. */
static __thread struct pm_crashsim_thread *pm_crashsim_self;
static __thread uint64_t pm_crashsim_self_run;
static _Atomic uint64_t pm_crashsim_next_run_id = 1;

/* pm_crashsim_mix -- splitmix64 step: the seeded generator of all choices */
static uint64_t
pm_crashsim_mix(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* pm_crashsim_image_seed -- the generator seed of random image @image at @point */
static uint64_t
pm_crashsim_image_seed(uint64_t seed, uint64_t point, uint64_t image)
{
	uint64_t s = seed ^ (point * 0xd1342543de82ef95ULL);

	s = pm_crashsim_mix(&s) ^ image;
	return pm_crashsim_mix(&s);
}

void
pm_crashsim_config_init(struct pm_crashsim_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->mode = PM_CRASHSIM_EVERY;
	cfg->seed = 1;
	cfg->max_images = 64;
	cfg->sample_one_in = 64;
	cfg->image_timeout_s = 60;
}

/* pm_crashsim_new -- allocate a simulator and its shared result page */
int
pm_crashsim_new(struct pm_crashsim **out, const struct pm_crashsim_config *cfg)
{
	struct pm_crashsim *sim;

	pm_error_clear();
	if (cfg == NULL || cfg->name == NULL || cfg->name[0] == '\0' ||
			strchr(cfg->name, ':') != NULL)
		return pm_error_set(-EINVAL, "crashsim needs a name without ':'");
	if (cfg->mode != PM_CRASHSIM_EVERY && cfg->mode != PM_CRASHSIM_SAMPLE)
		return pm_error_set(-EINVAL, "unknown crashsim mode %d", (int)cfg->mode);
	if (cfg->max_images < 2 || cfg->sample_one_in == 0 || cfg->image_timeout_s == 0)
		return pm_error_set(-EINVAL,
			"crashsim needs max_images >= 2, sample_one_in >= 1, image_timeout_s >= 1");
	sim = calloc(1, sizeof(*sim));
	if (sim == NULL)
		return pm_error_set(-ENOMEM, "out of memory");
	sim->cfg = *cfg;
	sim->name = strdup(cfg->name);
	sim->shared = mmap(NULL, sizeof(*sim->shared), PROT_READ | PROT_WRITE,
		MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sim->name == NULL || sim->shared == MAP_FAILED) {
		if (sim->shared != MAP_FAILED)
			munmap(sim->shared, sizeof(*sim->shared));
		free(sim->name);
		free(sim);
		return pm_error_set(-ENOMEM, "out of memory");
	}
	sim->cfg.name = sim->name;
	pthread_mutex_init(&sim->lock, NULL);
	*out = sim;
	return 0;
}

/* pm_crashsim_overlaps -- whether [a, a + len) touches any tracked range */
static bool
pm_crashsim_overlaps(const struct pm_crashsim *sim, uintptr_t a, size_t len)
{
	for (unsigned i = 0; i < sim->nranges; i++) {
		uintptr_t s = (uintptr_t)sim->ranges[i].addr;

		if (a < s + sim->ranges[i].nwords * 8 && s < a + len)
			return true;
	}
	return false;
}

/* pm_crashsim_track -- add a range; its durable image is taken at run start */
int
pm_crashsim_track(struct pm_crashsim *sim, void *addr, size_t len)
{
	uintptr_t start = (uintptr_t)addr & ~(uintptr_t)7;
	uintptr_t end = ((uintptr_t)addr + len + 7) & ~(uintptr_t)7;
	struct pm_crashsim_range *ranges;

	pm_error_clear();
	if (sim->running)
		return pm_error_set(-EBUSY, "cannot track memory during a run");
	if (addr == NULL || len == 0 || end <= start)
		return pm_error_set(-EINVAL, "empty or wrapping range %p+%zu", addr, len);
	if (pm_crashsim_overlaps(sim, start, end - start))
		return pm_error_set(-EINVAL, "range %p+%zu overlaps a tracked range", addr, len);
	ranges = realloc(sim->ranges, (sim->nranges + 1) * sizeof(*ranges));
	if (ranges == NULL)
		return pm_error_set(-ENOMEM, "out of memory");
	sim->ranges = ranges;
	ranges[sim->nranges].addr = (uint64_t *)start;
	ranges[sim->nranges].nwords = (end - start) / 8;
	ranges[sim->nranges].durable = malloc(end - start);
	ranges[sim->nranges].durable_seq = malloc(end - start);
	if (ranges[sim->nranges].durable == NULL || ranges[sim->nranges].durable_seq == NULL) {
		free(ranges[sim->nranges].durable);
		free(ranges[sim->nranges].durable_seq);
		return pm_error_set(-ENOMEM, "out of memory");
	}
	sim->nranges++;
	return 0;
}

/* pm_crashsim_thread_get -- this thread's pending list for the current run */
static struct pm_crashsim_thread *
pm_crashsim_thread_get(struct pm_crashsim *sim)
{
	struct pm_crashsim_thread *t;

	if (pm_crashsim_self_run == sim->run_id)
		return pm_crashsim_self;
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return NULL;
	t->next = sim->threads;
	sim->threads = t;
	pm_crashsim_self = t;
	pm_crashsim_self_run = sim->run_id;
	return t;
}

/* ---- choosing images (point child) ---- */

/* A word that could hold something other than its durable value. */
struct pm_crashsim_cand {
	unsigned range;
	size_t word;
	uint64_t value;
};

/* Candidate values of one word, after sorting and de-duplication. */
struct pm_crashsim_dirty {
	unsigned range;
	size_t word;
	unsigned ncand;  /* non-durable candidates */
	size_t first;    /* index of the first candidate in the value array */
};

/* pm_crashsim_cand_cmp -- order candidates by range, word, value */
static int
pm_crashsim_cand_cmp(const void *pa, const void *pb)
{
	const struct pm_crashsim_cand *a = pa, *b = pb;

	if (a->range != b->range)
		return a->range < b->range ? -1 : 1;
	if (a->word != b->word)
		return a->word < b->word ? -1 : 1;
	if (a->value != b->value)
		return a->value < b->value ? -1 : 1;
	return 0;
}

struct pm_crashsim_plan {
	struct pm_crashsim_dirty *dirty;
	size_t ndirty;
	uint64_t *values;   /* candidates, grouped per dirty word */
	bool exhaustive;
	uint64_t nimages;
};

/* pm_crashsim_cand_push -- append a candidate, growing the array */
static int
pm_crashsim_cand_push(struct pm_crashsim_cand **c, size_t *n, size_t *cap,
	unsigned range, size_t word, uint64_t value)
{
	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 256;
		struct pm_crashsim_cand *nc = realloc(*c, ncap * sizeof(**c));

		if (nc == NULL)
			return -ENOMEM;
		*c = nc;
		*cap = ncap;
	}
	(*c)[*n].range = range;
	(*c)[*n].word = word;
	(*c)[*n].value = value;
	(*n)++;
	return 0;
}

/* pm_crashsim_plan_build -- collect every word's non-durable candidates:
 * its working value and the snapshots of unfenced flushes */
static int
pm_crashsim_plan_build(const struct pm_crashsim *sim, struct pm_crashsim_plan *plan)
{
	struct pm_crashsim_cand *c = NULL;
	size_t n = 0, cap = 0, nd = 0;
	uint64_t combos = 1;

	memset(plan, 0, sizeof(*plan));
	for (unsigned r = 0; r < sim->nranges; r++) {
		const struct pm_crashsim_range *rg = &sim->ranges[r];

		for (size_t w = 0; w < rg->nwords; w++)
			if (rg->addr[w] != rg->durable[w] &&
					pm_crashsim_cand_push(&c, &n, &cap, r, w, rg->addr[w]))
				goto oom;
	}
	/* The list holds this run's threads only: it is emptied at run start. */
	for (const struct pm_crashsim_thread *t = sim->threads; t; t = t->next) {
		for (size_t i = 0; i < t->n; i++) {
			const struct pm_crashsim_pending *p = &t->lines[i];
			const struct pm_crashsim_range *rg = &sim->ranges[p->range];

			/* A snapshot older than the durable word can no longer
			 * reach memory (see durable_seq). */
			for (unsigned j = 0; j < p->nwords; j++)
				if (p->seq > rg->durable_seq[p->first + j] &&
						p->snap[j] != rg->durable[p->first + j] &&
						pm_crashsim_cand_push(&c, &n, &cap, p->range,
							p->first + j, p->snap[j]))
					goto oom;
		}
	}
	qsort(c, n, sizeof(*c), pm_crashsim_cand_cmp);

	plan->values = malloc((n ? n : 1) * sizeof(*plan->values));
	plan->dirty = malloc((n ? n : 1) * sizeof(*plan->dirty));
	if (plan->values == NULL || plan->dirty == NULL)
		goto oom;
	for (size_t i = 0, nv = 0; i < n; i++) {
		bool same_word = nd > 0 && plan->dirty[nd - 1].range == c[i].range &&
			plan->dirty[nd - 1].word == c[i].word;

		if (same_word && plan->values[nv - 1] == c[i].value)
			continue; /* duplicate candidate */
		if (!same_word) {
			plan->dirty[nd].range = c[i].range;
			plan->dirty[nd].word = c[i].word;
			plan->dirty[nd].ncand = 0;
			plan->dirty[nd].first = nv;
			nd++;
		}
		plan->values[nv++] = c[i].value;
		plan->dirty[nd - 1].ncand++;
	}
	plan->ndirty = nd;
	free(c);

	for (size_t i = 0; i < nd && combos <= sim->cfg.max_images; i++)
		combos *= 1 + (uint64_t)plan->dirty[i].ncand;
	plan->exhaustive = combos <= sim->cfg.max_images;
	plan->nimages = plan->exhaustive ? combos : sim->cfg.max_images;
	return 0;
oom:
	free(c);
	free(plan->values);
	free(plan->dirty);
	return -ENOMEM;
}

/* pm_crashsim_plan_choice -- which candidate (0 = durable) word @i takes in @image */
static unsigned
pm_crashsim_plan_choice(const struct pm_crashsim_plan *plan, size_t i, uint64_t image,
	uint64_t *radix_rest, uint64_t *rng)
{
	unsigned options = 1 + plan->dirty[i].ncand;

	if (plan->exhaustive) {
		unsigned digit = (unsigned)(*radix_rest % options);

		*radix_rest /= options;
		return digit;
	}
	if (image == 0)
		return 0;
	if (image == 1)
		return options; /* newest: resolved by the caller to the working value */
	return (unsigned)(pm_crashsim_mix(rng) % options);
}

/* pm_crashsim_remap_private -- replace the pages under @r with private
 * anonymous memory holding the same bytes, so writes stay in this process */
static int
pm_crashsim_remap_private(const struct pm_crashsim_range *r)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t s = (uintptr_t)r->addr & ~(page - 1);
	uintptr_t e = ((uintptr_t)(r->addr + r->nwords) + page - 1) & ~(page - 1);
	void *copy = mmap(NULL, e - s, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		-1, 0);

	if (copy == MAP_FAILED)
		return -errno;
	memcpy(copy, (void *)s, e - s);
	/* Moves the copy's pages over the range (one copy, not two through a
	 * buffer), unmapping what was there. */
	if (mremap(copy, e - s, e - s, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)s) == MAP_FAILED) {
		int ret = -errno;

		munmap(copy, e - s);
		return ret;
	}
	return 0;
}

/* pm_crashsim_image_apply -- write image @image into the (private) ranges */
static void
pm_crashsim_image_apply(const struct pm_crashsim *sim, const struct pm_crashsim_plan *plan,
	uint64_t image, uint64_t seed)
{
	uint64_t radix_rest = image, rng = seed;
	/* Even random images choose per 64-byte line (every dirty word of a
	 * line durable, or every one newest), as hardware evicts: a state
	 * that needs many words of one line to agree is then as likely as any
	 * other, where per-word choices would almost never produce it. */
	bool by_line = !plan->exhaustive && image >= 2 && image % 2 == 0;
	uintptr_t line = UINTPTR_MAX;
	bool line_newest = false;

	/* The point child made the ranges private (pm_crashsim_point_child), so
	 * this process has its own copy-on-write pages of them. Words that are
	 * not dirty hold their durable value already (working == durable), so
	 * only dirty words are written. */
	for (size_t i = 0; i < plan->ndirty; i++) {
		const struct pm_crashsim_dirty *d = &plan->dirty[i];
		uint64_t *w = &sim->ranges[d->range].addr[d->word];
		unsigned pick;

		if (by_line) {
			if ((uintptr_t)w / 64 != line) {
				line = (uintptr_t)w / 64;
				line_newest = pm_crashsim_mix(&rng) & 1;
			}
			pick = line_newest ? d->ncand + 1 : 0;
		} else {
			pick = pm_crashsim_plan_choice(plan, i, image, &radix_rest, &rng);
		}

		if (pick == 0)
			*w = sim->ranges[d->range].durable[d->word];
		else if (pick <= d->ncand)
			*w = plan->values[d->first + pick - 1];
		/* else: the newest value, which is the working value in place */
	}
}

/* ---- processes ---- */

/* pm_crashsim_check_image -- image grandchild: apply, check, report, exit */
static void __attribute__((noreturn))
pm_crashsim_check_image(struct pm_crashsim *sim, const struct pm_crashsim_plan *plan,
	uint64_t image, uint64_t seed)
{
	char msg[PM_CRASHSIM_MSG_LEN] = "";

	alarm(sim->cfg.image_timeout_s);
	pm_crashsim_image_apply(sim, plan, image, seed);
	if (sim->check(sim->arg, msg, sizeof(msg)) != 0) {
		msg[sizeof(msg) - 1] = '\0';
		snprintf(sim->shared->msg, sizeof(sim->shared->msg), "%s",
			msg[0] ? msg : "check failed (no message)");
		_exit(PM_CRASHSIM_EXIT_VERDICT);
	}
	_exit(0);
}

/* pm_crashsim_wait -- waitpid retrying on EINTR; returns the status */
static int
pm_crashsim_wait(pid_t pid)
{
	int status = 0;

	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return status;
}

/* pm_crashsim_verdict -- record in @sh how the check of @image ended, from
 * the wait status of the process that ran it; whether it passed */
static bool
pm_crashsim_verdict(struct pm_crashsim_shared *sh, const struct pm_crashsim_config *cfg,
	uint64_t image, int status)
{
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return true;
	sh->failed = 1;
	sh->fail_image = image;
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
		snprintf(sh->msg, sizeof(sh->msg), "check timed out after %u s",
			cfg->image_timeout_s);
	else if (WIFSIGNALED(status))
		snprintf(sh->msg, sizeof(sh->msg), "check crashed with signal %d (%s)",
			WTERMSIG(status), strsignal(WTERMSIG(status)));
	else if (WEXITSTATUS(status) != PM_CRASHSIM_EXIT_VERDICT || sh->msg[0] == '\0')
		/* Not the check's own verdict: exit() in the check, or a
		 * sanitizer that turned a crash into an exit status. */
		snprintf(sh->msg, sizeof(sh->msg),
			"check process exited with status %d (crash under a sanitizer, or exit())",
			WEXITSTATUS(status));
	return false;
}

/* pm_crashsim_point_child -- point child: enumerate and check images */
static void __attribute__((noreturn))
pm_crashsim_point_child(struct pm_crashsim *sim, uint64_t point)
{
	struct pm_crashsim_shared *sh = sim->shared;
	struct pm_crashsim_plan plan;
	uint64_t first = 0, last;

	/* Recovery code in the check flushes and fences like any code; in
	 * these processes that is real work on private memory, not events. */
	pm_persist__set_hooks(NULL);
	atomic_store_explicit(&pm_crashsim_active, NULL, memory_order_relaxed);
	if (pm_crashsim_plan_build(sim, &plan) != 0) {
		sh->failed = 1;
		snprintf(sh->msg, sizeof(sh->msg), "out of memory building images");
		_exit(0);
	}
	/* Once per point, not per image: each image's process then inherits
	 * copy-on-write pages and copies only what it writes. Copying every
	 * range for each image was most of a crash test's time (fork, page
	 * faults and two copies of every tracked byte per image). */
	for (unsigned r = 0; r < sim->nranges; r++) {
		int ret = pm_crashsim_remap_private(&sim->ranges[r]);

		if (ret != 0) {
			sh->failed = 1;
			snprintf(sh->msg, sizeof(sh->msg), "could not build the images: %s",
				strerror(-ret));
			_exit(0);
		}
	}
	sh->dirty_words = plan.ndirty;
	last = plan.nimages;
	if (sim->replay) {
		first = sim->replay_image;
		last = first + 1;
	}
	for (uint64_t image = first; image < last; image++) {
		uint64_t seed = plan.exhaustive ? 0 :
			pm_crashsim_image_seed(sim->cfg.seed, point, image);
		pid_t pid;

		if (image + 1 == last) {
			/* The last image is checked in this process, which
			 * exits with the check's status (pm_crashsim_point
			 * reads it): one fork fewer per point, and forks were
			 * most of the time of the tests with a second life. */
			sh->images++;
			sh->in_process_image = image;
			sh->in_process = 1;
			pm_crashsim_check_image(sim, &plan, image, seed);
		}
		pid = fork();
		if (pid < 0) {
			sh->failed = 1;
			snprintf(sh->msg, sizeof(sh->msg), "fork: %s", strerror(errno));
			break;
		}
		if (pid == 0)
			pm_crashsim_check_image(sim, &plan, image, seed);
		sh->images++;
		if (!pm_crashsim_verdict(sh, &sim->cfg, image, pm_crashsim_wait(pid)))
			break;
	}
	_exit(0);
}

/* pm_crashsim_replay_cmd -- how to re-run exactly one failing image */
static void
pm_crashsim_replay_cmd(const struct pm_crashsim *sim, uint64_t point, uint64_t image,
	char *buf, size_t len)
{
	const char *target = getenv("TEST_TARGET");
	char cmd[1024] = "";
	FILE *f;

	if (target != NULL) {
		snprintf(buf, len, "bazel test %s --test_output=all "
			"--test_env=PM_CRASHSIM_REPLAY=%s:%" PRIu64 ":%" PRIu64 ":%" PRIu64,
			target, sim->name, point, image, sim->cfg.seed);
		return;
	}
	f = fopen("/proc/self/cmdline", "r");
	if (f != NULL) {
		size_t n = fread(cmd, 1, sizeof(cmd) - 1, f);

		fclose(f);
		for (size_t i = 0; i + 1 < n; i++)
			if (cmd[i] == '\0')
				cmd[i] = ' ';
		cmd[n] = '\0';
	}
	snprintf(buf, len, "PM_CRASHSIM_REPLAY=%s:%" PRIu64 ":%" PRIu64 ":%" PRIu64 " %s",
		sim->name, point, image, sim->cfg.seed, cmd);
}

/* pm_crashsim_should_check -- whether crash point @point is checked (lock held) */
static bool
pm_crashsim_should_check(struct pm_crashsim *sim, uint64_t point, bool final)
{
	if (sim->stop_checking)
		return false;
	if (sim->replay)
		return point == sim->replay_point;
	if (sim->cfg.mode == PM_CRASHSIM_SAMPLE && !final)
		return pm_crashsim_mix(&sim->rng) % sim->cfg.sample_one_in == 0;
	return true;
}

/* pm_crashsim_point -- check crash point @point (lock held) */
static void
pm_crashsim_point(struct pm_crashsim *sim, uint64_t point, bool final)
{
	struct pm_crashsim_shared *sh = sim->shared;
	int status;
	pid_t pid;

	if (!pm_crashsim_should_check(sim, point, final))
		return;
	memset(sh, 0, sizeof(*sh));
	pid = fork();
	if (pid < 0) {
		sim->error = -errno;
		sim->stop_checking = true;
		return;
	}
	if (pid == 0)
		pm_crashsim_point_child(sim, point);
	status = pm_crashsim_wait(pid);
	if (sh->in_process) {
		pm_crashsim_verdict(sh, &sim->cfg, sh->in_process_image, status);
	} else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		sh->failed = 1;
		snprintf(sh->msg, sizeof(sh->msg), "crash-point process died (status %d)",
			status);
	}
	sim->stats.points++;
	sim->stats.images += sh->images;
	if (sh->dirty_words > sim->stats.max_dirty_words)
		sim->stats.max_dirty_words = sh->dirty_words;
	if (sh->failed) {
		char replay[1536];

		sim->stats.failures++;
		sim->stop_checking = true;
		pm_crashsim_replay_cmd(sim, point, sh->fail_image, replay, sizeof(replay));
		snprintf(sim->report, sizeof(sim->report),
			"%s: crash point %" PRIu64 " (after %" PRIu64 " persistence events), "
			"image %" PRIu64 " (%" PRIu64
			" words could differ from the durable image): %s\nreplay: %s",
			sim->name, point, point, sh->fail_image, sh->dirty_words,
			sh->msg, replay);
	}
	if (sim->cfg.max_points != 0 && sim->stats.points >= sim->cfg.max_points)
		sim->stop_checking = true;
	if (sim->cfg.progress != NULL)
		sim->cfg.progress(sim->cfg.progress_arg, &sim->stats);
}

/* pm_crashsim_event -- count an event, checking the point before it (lock held) */
static void
pm_crashsim_event(struct pm_crashsim *sim)
{
	pm_crashsim_point(sim, sim->events, false);
	sim->events++;
}

/* ---- hooks (installed in pm/persist.c during a run) ---- */

/* pm_crashsim_hook_flush -- snapshot the tracked words of the flushed lines */
static void
pm_crashsim_hook_flush(const void *addr, size_t len)
{
	struct pm_crashsim *sim = atomic_load_explicit(&pm_crashsim_active,
		memory_order_acquire);
	uintptr_t a = (uintptr_t)addr;
	uintptr_t line_end = (a + len + PM_CACHELINE - 1) & ~(uintptr_t)(PM_CACHELINE - 1);
	struct pm_crashsim_thread *t;

	if (sim == NULL || !pm_crashsim_overlaps(sim, a, len))
		return;
	pthread_mutex_lock(&sim->lock);
	pm_crashsim_event(sim);
	t = pm_crashsim_thread_get(sim);
	for (uintptr_t l = a & ~(uintptr_t)(PM_CACHELINE - 1); t && l < line_end;
			l += PM_CACHELINE) {
		for (unsigned r = 0; r < sim->nranges; r++) {
			const struct pm_crashsim_range *rg = &sim->ranges[r];
			uintptr_t rs = (uintptr_t)rg->addr, re = rs + rg->nwords * 8;
			uintptr_t s = l > rs ? l : rs, e = l + PM_CACHELINE < re ? l + PM_CACHELINE : re;
			struct pm_crashsim_pending *p;

			if (s >= e)
				continue;
			if (t->n == t->cap) {
				size_t ncap = t->cap ? t->cap * 2 : 64;
				struct pm_crashsim_pending *nl = realloc(t->lines, ncap * sizeof(*nl));

				if (nl == NULL) {
					sim->error = -ENOMEM;
					sim->stop_checking = true;
					goto out;
				}
				t->lines = nl;
				t->cap = ncap;
			}
			p = &t->lines[t->n++];
			p->seq = sim->events; /* already counted: >= 1 */
			p->range = r;
			p->first = (s - rs) / 8;
			p->nwords = (unsigned)((e - s) / 8);
			/* Word by word, atomically: other threads of the workload
			 * may store to these words (8-byte stores, never torn). */
			for (unsigned j = 0; j < p->nwords; j++)
				p->snap[j] = __atomic_load_n((const uint64_t *)s + j,
					__ATOMIC_RELAXED);
		}
	}
	if (t == NULL) {
		sim->error = -ENOMEM;
		sim->stop_checking = true;
	}
out:
	pthread_mutex_unlock(&sim->lock);
}

/* pm_crashsim_drain -- make this thread's flushed snapshots durable (with
 * sim->lock held) */
static void
pm_crashsim_drain(struct pm_crashsim *sim)
{
	struct pm_crashsim_thread *t = pm_crashsim_self;

	if (pm_crashsim_self_run == sim->run_id) {
		for (size_t i = 0; i < t->n; i++) {
			const struct pm_crashsim_pending *p = &t->lines[i];
			struct pm_crashsim_range *rg = &sim->ranges[p->range];

			for (unsigned j = 0; j < p->nwords; j++) {
				if (p->seq <= rg->durable_seq[p->first + j])
					continue;
				rg->durable[p->first + j] = p->snap[j];
				rg->durable_seq[p->first + j] = p->seq;
			}
		}
		t->n = 0;
	}
}

/* pm_crashsim_hook_fence -- make this thread's flushed snapshots durable */
static void
pm_crashsim_hook_fence(void)
{
	struct pm_crashsim *sim = atomic_load_explicit(&pm_crashsim_active,
		memory_order_acquire);

	if (sim == NULL)
		return;
	pthread_mutex_lock(&sim->lock);
	pm_crashsim_event(sim);
	pm_crashsim_drain(sim);
	pthread_mutex_unlock(&sim->lock);
}

/* pm_crashsim_hook_cas -- a CAS on tracked memory is a crash point; any CAS
 * also drains the caller's flushes (a LOCK-prefixed instruction orders
 * earlier clwb/clflushopt, see pm_cas()) */
static bool
pm_crashsim_hook_cas(uint64_t *word, uint64_t *expected, uint64_t desired)
{
	struct pm_crashsim *sim = atomic_load_explicit(&pm_crashsim_active,
		memory_order_acquire);
	bool tracked, ok;

	if (sim == NULL)
		return pm__cas_seq_cst(word, expected, desired);
	tracked = pm_crashsim_overlaps(sim, (uintptr_t)word, sizeof(*word));
	if (!tracked && (pm_crashsim_self_run != sim->run_id || pm_crashsim_self->n == 0))
		return pm__cas_seq_cst(word, expected, desired);
	pthread_mutex_lock(&sim->lock);
	if (tracked)
		pm_crashsim_event(sim);
	pm_crashsim_drain(sim);
	ok = pm__cas_seq_cst(word, expected, desired);
	pthread_mutex_unlock(&sim->lock);
	return ok;
}

static const struct pm_persist__hooks pm_crashsim_hooks = {
	.flush = pm_crashsim_hook_flush,
	.fence = pm_crashsim_hook_fence,
	.cas = pm_crashsim_hook_cas,
};

/* ---- runs ---- */

/* pm_crashsim_parse_replay -- honour PM_CRASHSIM_REPLAY=name:point:image:seed */
static int
pm_crashsim_parse_replay(struct pm_crashsim *sim)
{
	const char *env = getenv("PM_CRASHSIM_REPLAY");
	size_t nlen = strlen(sim->name);
	uint64_t point, image, seed;
	char tail;

	sim->replay = false;
	if (env == NULL || strncmp(env, sim->name, nlen) != 0 || env[nlen] != ':')
		return 0;
	if (sscanf(env + nlen + 1, "%" SCNu64 ":%" SCNu64 ":%" SCNu64 "%c", &point, &image,
			&seed, &tail) != 3)
		return pm_error_set(-EINVAL, "PM_CRASHSIM_REPLAY=%s is not name:point:image:seed", env);
	sim->replay = true;
	sim->replay_point = point;
	sim->replay_image = image;
	sim->cfg.seed = seed;
	return 0;
}

/* pm_crashsim_free_threads -- drop the pending lists of earlier runs */
static void
pm_crashsim_free_threads(struct pm_crashsim *sim)
{
	while (sim->threads != NULL) {
		struct pm_crashsim_thread *t = sim->threads;

		sim->threads = t->next;
		free(t->lines);
		free(t);
	}
}

/* pm_crashsim_run -- run the workload with the hooks installed */
int
pm_crashsim_run(struct pm_crashsim *sim, pm_crashsim_run_fn run,
	pm_crashsim_check_fn check, void *arg)
{
	struct pm_crashsim *none = NULL;
	int ret;

	pm_error_clear();
	if (sim->nranges == 0)
		return pm_error_set(-EINVAL, "crashsim %s tracks no memory", sim->name);
	ret = pm_crashsim_parse_replay(sim);
	if (ret != 0)
		return ret;
	if (!atomic_compare_exchange_strong(&pm_crashsim_active, &none, sim))
		return pm_error_set(-EBUSY, "another crash simulator is running");

	pm_crashsim_free_threads(sim);
	memset(&sim->stats, 0, sizeof(sim->stats));
	sim->report[0] = '\0';
	sim->events = 0;
	sim->error = 0;
	sim->stop_checking = false;
	sim->rng = sim->cfg.seed;
	sim->run_id = atomic_fetch_add(&pm_crashsim_next_run_id, 1);
	sim->check = check;
	sim->arg = arg;
	sim->running = true;
	for (unsigned r = 0; r < sim->nranges; r++) {
		memcpy(sim->ranges[r].durable, sim->ranges[r].addr,
			sim->ranges[r].nwords * sizeof(uint64_t));
		memset(sim->ranges[r].durable_seq, 0,
			sim->ranges[r].nwords * sizeof(uint64_t));
	}
	pm_persist__set_hooks(&pm_crashsim_hooks);

	ret = run(arg);

	pm_persist__set_hooks(NULL);
	pthread_mutex_lock(&sim->lock);
	pm_crashsim_point(sim, sim->events, true);
	sim->stats.events = sim->events;
	pthread_mutex_unlock(&sim->lock);
	atomic_store(&pm_crashsim_active, NULL);
	sim->running = false;

	if (ret != 0)
		return ret;
	if (sim->error != 0)
		return pm_error_set(sim->error, "crashsim %s: internal failure: %s", sim->name,
			strerror(-sim->error));
	if (sim->stats.failures != 0)
		return pm_error_set(PM_E_CHECK_FAILED, "%s", sim->report);
	return 0;
}

void
pm_crashsim_get_stats(const struct pm_crashsim *sim, struct pm_crashsim_stats *out)
{
	*out = sim->stats;
}

const char *
pm_crashsim_report(const struct pm_crashsim *sim)
{
	return sim->report;
}

/* pm_crashsim_delete -- free a simulator that is not running */
int
pm_crashsim_delete(struct pm_crashsim **simp)
{
	struct pm_crashsim *sim;

	pm_error_clear();
	if (simp == NULL || *simp == NULL)
		return 0;
	sim = *simp;
	if (sim->running)
		return pm_error_set(-EBUSY, "crash simulator %s is running", sim->name);
	pm_crashsim_free_threads(sim);
	for (unsigned r = 0; r < sim->nranges; r++) {
		free(sim->ranges[r].durable);
		free(sim->ranges[r].durable_seq);
	}
	free(sim->ranges);
	munmap(sim->shared, sizeof(*sim->shared));
	pthread_mutex_destroy(&sim->lock);
	free(sim->name);
	free(sim);
	*simp = NULL;
	return 0;
}
