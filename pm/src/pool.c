/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pm/src/pool.c -- pools on libpmemobj with a versioned header and an
 * isolated pre-open check (see pm/pool.h for the contract).
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <libpmemobj.h>

#include <pm/area.h>
#include <pm/error.h>
#include <pm/pool.h>
#include <pm/ptr.h>

#include "pool_testing.h"

/* "DMEMPL02" in memory order: the second layout of the header, the first
 * on pm/area.h (the first, "DMEMPOOL", was pm's own struct). */
#define PM_POOL_MAGIC UINT64_C(0x32304c504d454d44)
#define PM_POOL_HDR_SIZE 64
/* Alignment of the caller's root. PMDK aligns the root object only to 16
 * bytes, so the root starts at the first 64-byte boundary after the header;
 * the pool's base is page-aligned in every run, so the padding never changes. */
#define PM_POOL_ALIGN 64
#define PM_POOL_ROOT_SPAN(root_size) (PM_POOL_HDR_SIZE + PM_POOL_ALIGN + (root_size))

/* The first 64 bytes of the pmemobj root object: a pm/area.h header whose
 * version is the caller's layout version and whose area is the root span. */
struct pm_pool_hdr {
	struct pm_area_hdr area;
	uint64_t root_size;
	uint8_t reserved[PM_POOL_HDR_SIZE - sizeof(struct pm_area_hdr) - 8];
};
_Static_assert(sizeof(struct pm_pool_hdr) == PM_POOL_HDR_SIZE, "header is one cache line");

struct pm_pool {
	PMEMobjpool *pop;
	char *base;
	size_t size;
	struct pm_pool_hdr *hdr; /* at the start of the pmemobj root object */
	char *root;              /* the caller's root: first 64-byte boundary after hdr */
	enum pm_durability durability;
	uint64_t uuid_lo;
};

/* Verdict of the isolated check, sent from the child over a pipe. */
struct pm_pool_verdict {
	int code;
	char msg[400];
};
/* Sent with one write, which is atomic (whole or nothing) up to PIPE_BUF. */
_Static_assert(sizeof(struct pm_pool_verdict) <= PIPE_BUF, "verdict fits one pipe write");

/* pm_pool_config_init -- documented defaults */
void
pm_pool_config_init(struct pm_pool_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->version = 1;
	cfg->pool_size = PM_POOL_DEFAULT_SIZE;
	cfg->durability = PM_DURABILITY_AUTO;
	cfg->file_mode = 0600;
	cfg->check_timeout_s = 60;
}

/* pm_pool_config_check -- validate the fields open and create share */
static int
pm_pool_config_check(const struct pm_pool_config *cfg)
{
	size_t layout_len;

	if (cfg == NULL || cfg->path == NULL || cfg->path[0] == '\0')
		return pm_error_set(-EINVAL, "pool config has no path");
	if (cfg->layout == NULL || cfg->layout[0] == '\0')
		return pm_error_set(-EINVAL, "pool config has no layout name");
	layout_len = strnlen(cfg->layout, PM_POOL_LAYOUT_MAX + 1);
	if (layout_len > PM_POOL_LAYOUT_MAX)
		return pm_error_set(-EINVAL, "layout name is longer than %d characters",
			PM_POOL_LAYOUT_MAX);
	return 0;
}

/* pm_pool_errno_code -- the pm code for a PMDK call that failed with @err
 * (a wrong layout also reads as EINVAL; callers that can tell it apart do) */
static int
pm_pool_errno_code(int err)
{
	if (err == EWOULDBLOCK || err == EAGAIN)
		return -EBUSY;
	if (err == EINVAL || err <= 0)
		return PM_E_CORRUPT;
	return -err;
}

/* pm_pool_check_child -- runs in the forked child: PMDK's own check, then a
 * trial open, so that PMDK crashing or hanging on either path kills only
 * this process. The trial open runs PMDK recovery, which the caller's open
 * would run anyway (it is idempotent). */
static void
pm_pool_check_child(const char *path, const char *layout, struct pm_pool_verdict *v)
{
	int ok = pmemobj_check(path, layout);
	PMEMobjpool *pop;

	if (ok == 1) {
		pop = pmemobj_open(path, layout);
		if (pop != NULL) {
			pmemobj_close(pop);
			v->code = 0;
			return;
		}
		ok = -1;
	}
	snprintf(v->msg, sizeof(v->msg), "%s: %s", path, pmemobj_errormsg());
	if (ok == 0)
		v->code = PM_E_CORRUPT;
	else if (errno == EINVAL && pmemobj_check(path, NULL) == 1)
		/* PMDK reports a wrong layout name as EINVAL, like most damage;
		 * a check without a layout name tells the two apart. */
		v->code = PM_E_LAYOUT;
	else
		v->code = pm_pool_errno_code(errno);
}

/* pm_pool_ms_until -- milliseconds left until @deadline (CLOCK_MONOTONIC),
 * rounded up so a poll never wakes just before it; 0 once it has passed */
static int
pm_pool_ms_until(const struct timespec *deadline)
{
	struct timespec now;
	int64_t ns;

	clock_gettime(CLOCK_MONOTONIC, &now);
	ns = (int64_t)(deadline->tv_sec - now.tv_sec) * 1000000000 +
		(deadline->tv_nsec - now.tv_nsec);
	if (ns <= 0)
		return 0;
	if (ns / 1000000 >= INT_MAX)
		return INT_MAX;
	return (int)((ns + 999999) / 1000000);
}

/* pm_pool_check_wait -- collect the child's verdict in *@v (*@got bytes so
 * far) until it is complete, the child is gone, or @timeout_s (0: no limit)
 * has passed. Return: 0 when the child is done (verdict or not), 1 on
 * expiry, -errno if waiting failed; after 1 or -errno the child may still
 * run.
 *
 * The pipe's EOF alone would say when the child is gone, but a fork made by
 * another of the caller's threads before our close(write end) holds that
 * end open too; the pidfd, where the kernel has one, does not depend on it.
 * The child sends the verdict with one write of less than PIPE_BUF bytes,
 * which is atomic, so once the child has exited it is all in the pipe or
 * not there at all. */
static int
pm_pool_check_wait(int rfd, int pidfd, unsigned timeout_s, struct pm_pool_verdict *v,
	size_t *got)
{
	struct pollfd pfd[2] = {
		{ .fd = rfd, .events = POLLIN },
		{ .fd = pidfd, .events = POLLIN },
	};
	nfds_t nfds = pidfd >= 0 ? 2 : 1;
	struct timespec deadline;

	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += (time_t)timeout_s;
	for (;;) {
		int ms = timeout_s == 0 ? -1 : pm_pool_ms_until(&deadline);
		int exited;
		ssize_t n;

		if (ms == 0)
			return 1;
		n = poll(pfd, nfds, ms);
		if (n < 0 && errno != EINTR)
			return -errno;
		if (n <= 0)
			continue;
		exited = nfds == 2 && pfd[1].revents != 0;
		n = read(rfd, (char *)v + *got, sizeof(*v) - *got);
		if (n > 0)
			*got += (size_t)n;
		if (n == 0 || *got == sizeof(*v) || exited)
			return 0;
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
	}
}

/* pm_pool_kill_child -- SIGKILL the check child; through its pidfd where
 * there is one, so that a pid recycled after a caller's SIGCHLD handler
 * reaped the child can never be hit */
static void
pm_pool_kill_child(pid_t pid, int pidfd)
{
	if (pidfd >= 0)
		(void)pidfd_send_signal(pidfd, SIGKILL, NULL, 0);
	else
		(void)kill(pid, SIGKILL);
}

/* pm_pool_reap -- wait for the check child to end. Return: 1 with its
 * *@status; 0 if it ended but someone else collected it (the caller ignores
 * SIGCHLD, or its SIGCHLD handler waits for any child), when the status is
 * unknown. Only this pid is waited for, so other children are left alone. */
static int
pm_pool_reap(pid_t pid, int *status)
{
	for (;;) {
		if (waitpid(pid, status, 0) == pid)
			return 1;
		if (errno != EINTR)
			return 0;
	}
}

/* pm_pool_isolated_check -- pmemobj_check and a trial open in a child, so
 * damage that crashes or hangs PMDK becomes an error code here.
 *
 * The time limit is enforced here, in the parent, and not by the child
 * (alarm() there would inherit a blocked or ignored SIGALRM from the
 * caller, and a child deadlocked after forking a multi-threaded caller
 * never reaches its own timer code anyway): on expiry the child is killed
 * and reaped. */
static int
pm_pool_isolated_check(const char *path, const char *layout, unsigned timeout_s)
{
	struct pm_pool_verdict v;
	int fds[2], status = 0, reaped, wait_ret, pidfd;
	size_t got = 0;
	pid_t pid;

	/* Non-blocking: the parent polls the read end. The child's single
	 * write of sizeof(v) < PIPE_BUF bytes into the empty pipe fits whole. */
	if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0)
		return pm_error_set(-errno, "pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0) {
		int err = errno;

		close(fds[0]);
		close(fds[1]);
		return pm_error_set(-err, "fork for the pool check: %s", strerror(err));
	}
	if (pid == 0) {
		close(fds[0]);
		pm_pool__testing_child_point();
		memset(&v, 0, sizeof(v));
		pm_pool_check_child(path, layout, &v);
		_exit(write(fds[1], &v, sizeof(v)) == (ssize_t)sizeof(v) ? 0 : 2);
	}
	close(fds[1]);
	/* Without a pidfd (kernels before 5.3) the pipe alone tells us. */
	pidfd = pidfd_open(pid, 0);
	wait_ret = pm_pool_check_wait(fds[0], pidfd, timeout_s, &v, &got);
	if (wait_ret != 0)
		pm_pool_kill_child(pid, pidfd);
	reaped = pm_pool_reap(pid, &status);
	if (pidfd >= 0)
		close(pidfd);
	close(fds[0]);
	/* A SIGKILL after our kill is the time limit; any other signal (an OOM
	 * kill included) ended the check by itself. */
	if (reaped && WIFSIGNALED(status) && (wait_ret == 0 || WTERMSIG(status) != SIGKILL))
		return pm_error_set(PM_E_CORRUPT,
			"%s: PMDK crashed (signal %d) while checking the pool: it is damaged",
			path, WTERMSIG(status));
	if (wait_ret < 0)
		return pm_error_set(wait_ret, "%s: waiting for the pool check: %s", path,
			strerror(-wait_ret));
	if (wait_ret == 1)
		return pm_error_set(PM_E_CORRUPT,
			"%s: PMDK did not finish checking the pool within %u s: it is damaged "
			"(or larger than check_timeout_s allows)", path, timeout_s);
	if (got != sizeof(v) || (reaped && (!WIFEXITED(status) || WEXITSTATUS(status) != 0)))
		return pm_error_set(PM_E_CORRUPT, "%s: the pool check did not complete", path);
	if (v.code != 0)
		return pm_error_set(v.code, "%s", v.msg);
	return 0;
}

/* pm_pool_precheck -- cheap checks PMDK does not survive (empty or tiny files) */
static int
pm_pool_precheck(const char *path, struct stat *st)
{
	char sig[8];
	ssize_t n;
	int fd;

	if (stat(path, st) != 0)
		return pm_error_set(-errno, "%s: %s", path, strerror(errno));
	if (!S_ISREG(st->st_mode))
		return pm_error_set(PM_E_CORRUPT, "%s: not a regular file", path);
	if ((size_t)st->st_size < PM_POOL_MIN_SIZE)
		return pm_error_set(PM_E_CORRUPT, "%s: %lld bytes, smaller than any pool (%zu)",
			path, (long long)st->st_size, PM_POOL_MIN_SIZE);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return pm_error_set(-errno, "%s: %s", path, strerror(errno));
	n = pread(fd, sig, sizeof(sig), 0);
	close(fd);
	if (n != (ssize_t)sizeof(sig) || memcmp(sig, "PMEMOBJ", 8) != 0)
		return pm_error_set(PM_E_CORRUPT, "%s: no pmemobj signature: not a pool", path);
	return 0;
}

/* pm_pool_area_type -- what a pool header of @cfg's layout version is */
static struct pm_area_type
pm_pool_area_type(const struct pm_pool_config *cfg)
{
	return (struct pm_area_type){ "pm pool", PM_POOL_MAGIC, cfg->version,
		sizeof(struct pm_pool_hdr) };
}

/* pm_pool_check_header -- validate the pm header at the start of the root */
static int
pm_pool_check_header(PMEMobjpool *pop, const struct pm_pool_config *cfg)
{
	const struct pm_pool_hdr *hdr = pmemobj_direct(pmemobj_root(pop, 0));
	struct pm_area_type type = pm_pool_area_type(cfg);
	int ret;

	if (pmemobj_root_size(pop) < PM_POOL_HDR_SIZE || hdr == NULL)
		return pm_error_set(PM_E_CORRUPT, "%s: no pm header: not made by pm_pool_create",
			cfg->path);
	ret = pm_area_check(&hdr->area, &type, cfg->path);
	if (ret != 0)
		return ret;
	if (hdr->root_size != cfg->root_size)
		return pm_error_set(PM_E_LAYOUT, "%s: root object is %llu bytes, expected %zu",
			cfg->path, (unsigned long long)hdr->root_size, cfg->root_size);
	if (hdr->area.area_size != PM_POOL_ROOT_SPAN(hdr->root_size) ||
			pmemobj_root_size(pop) < PM_POOL_ROOT_SPAN(hdr->root_size))
		return pm_error_set(PM_E_CORRUPT, "%s: root object smaller than its header says",
			cfg->path);
	return 0;
}

/* pm_pool_wrap -- turn an open PMEMobjpool of @size bytes into a pm_pool:
 * resolve durability, register its region (the header is the caller's:
 * checked at open, written next at create). On failure nothing is
 * allocated or registered; the caller closes @pop. */
static int
pm_pool_wrap(PMEMobjpool *pop, size_t size, const struct pm_pool_config *cfg,
	struct pm_pool **out)
{
	struct pm_pool *pool;
	PMEMoid root;
	int mode, ret;

	pool = calloc(1, sizeof(*pool));
	if (pool == NULL)
		return pm_error_set(-ENOMEM, "out of memory");
	root = pmemobj_root(pop, 0);
	pool->pop = pop;
	/* PMEMobjpool is the start of the pool's mapping. */
	pool->base = (char *)pop;
	pool->size = size;
	pool->hdr = pmemobj_direct(root);
	pool->root = (char *)(((uintptr_t)pool->hdr + PM_POOL_HDR_SIZE + PM_POOL_ALIGN - 1) &
		~(uintptr_t)(PM_POOL_ALIGN - 1));
	pool->uuid_lo = root.pool_uuid_lo;
	mode = pm_durability_resolve(pool->base, pool->size, cfg->durability);
	ret = mode < 0 ? mode : pm_region_add(pool->base, pool->size, (enum pm_durability)mode);
	if (ret != 0) {
		free(pool);
		return ret;
	}
	pool->durability = (enum pm_durability)mode;
	*out = pool;
	return 0;
}

/* pm_pool_locked_elsewhere -- whether another open file description holds
 * PMDK's lock on @path (libpmemobj takes flock(LOCK_EX) on every pool it
 * opens or creates, for as long as it has it open) */
static bool
pm_pool_locked_elsewhere(const char *path)
{
	/* O_NONBLOCK: a FIFO at @path must not block the open forever. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	bool busy = false;

	if (fd < 0)
		return false;
	if (flock(fd, LOCK_EX | LOCK_NB) != 0)
		busy = errno == EWOULDBLOCK;
	else
		flock(fd, LOCK_UN);
	close(fd);
	return busy;
}

/* pm_pool_sync_dir -- make the directory entry of @path durable */
static int
pm_pool_sync_dir(const char *path)
{
	char *copy = strdup(path);
	int fd, ret = 0;

	if (copy == NULL)
		return -ENOMEM;
	fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fsync(fd) != 0)
		ret = -errno;
	if (fd >= 0)
		close(fd);
	free(copy);
	return ret;
}

/* pm_pool_claimed -- whether a live pm_pool_create holds @tmp (its OFD lock;
 * see pm_pool_claim) */
static bool
pm_pool_claimed(const char *tmp)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	int fd = open(tmp, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	bool live;

	if (fd < 0)
		return false;
	live = fcntl(fd, F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
	close(fd);
	return live;
}

/* pm_pool_claim -- make @tmp (PATH.creating) an empty file of @size bytes
 * and @mode that this process holds locked from the moment it has that
 * name: it is made under a unique name, locked, renamed to @tmp without
 * replacing anything, then sized. The lock is an OFD record lock, which
 * PMDK's flock on the same file does not conflict with. A @tmp already
 * there is a live create's (locked: -EBUSY) or an interrupted one's (not
 * locked: it never was the pool at PATH, so it is removed).
 * Return: the descriptor holding the lock (the caller closes it once the
 * pool is renamed into place or @tmp removed), or -errno with the message
 * set. */
static int
pm_pool_claim(const char *path, const char *tmp, size_t size, unsigned mode)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	char *uniq;
	int fd, ret;

	if (asprintf(&uniq, "%s.XXXXXX", tmp) < 0)
		return pm_error_set(-ENOMEM, "out of memory");
	fd = mkostemp(uniq, O_CLOEXEC);
	if (fd < 0) {
		ret = pm_error_set(-errno, "%s: cannot create: %s", uniq, strerror(errno));
		free(uniq);
		return ret;
	}
	ret = fchmod(fd, mode) == 0 && fcntl(fd, F_OFD_SETLK, &fl) == 0 ? 0 : -errno;
	for (int attempt = 0; ret == 0; attempt++) {
		if (renameat2(AT_FDCWD, uniq, AT_FDCWD, tmp, RENAME_NOREPLACE) == 0)
			break;
		ret = -errno;
		if (ret != -EEXIST || attempt > 0)
			break;
		if (pm_pool_claimed(tmp)) {
			ret = pm_error_set(-EBUSY, "%s: another process is creating this pool",
				path);
			break;
		}
		ret = unlink(tmp) == 0 || errno == ENOENT ? 0 : -errno;
	}
	if (ret != 0) {
		unlink(uniq);
		close(fd);
		free(uniq);
		return ret == -EBUSY ? ret : pm_error_set(ret, "%s: cannot claim: %s", tmp,
			strerror(-ret));
	}
	free(uniq);
	ret = posix_fallocate(fd, 0, (off_t)size);
	if (ret != 0) {
		unlink(tmp);
		close(fd);
		return pm_error_set(-ret, "%s: cannot allocate %zu bytes: %s", tmp, size,
			strerror(ret));
	}
	return fd;
}

/* pm_pool_create_at -- create the pool in the claimed, sized file @tmp:
 * header, wrap, format */
static int
pm_pool_create_at(const char *tmp, size_t size, const struct pm_pool_config *cfg,
	struct pm_pool **out)
{
	struct pm_area_type type;
	struct pm_pool *pool;
	PMEMobjpool *pop;
	PMEMoid root;
	int ret;

	/* Size 0: PMDK uses the existing (zeroed) file, which pm_pool_claim
	 * sized. */
	pop = pmemobj_create(tmp, cfg->layout, 0, cfg->file_mode);
	if (pop == NULL)
		return pm_error_set(errno > 0 ? -errno : -EINVAL, "%s: %s", tmp,
			pmemobj_errormsg());
	root = pmemobj_root(pop, PM_POOL_ROOT_SPAN(cfg->root_size));
	if (OID_IS_NULL(root)) {
		pmemobj_close(pop);
		return pm_error_set(-ENOMEM, "%s: root object of %zu bytes does not fit: %s",
			cfg->path, cfg->root_size, pmemobj_errormsg());
	}
	ret = pm_pool_wrap(pop, size, cfg, &pool);
	if (ret != 0) {
		pmemobj_close(pop);
		return ret;
	}
	/* The root is zeroed and durable (PMDK); the header is sealed once
	 * the region is registered, so its persist takes the pool's
	 * durability mode. */
	type = pm_pool_area_type(cfg);
	pool->hdr->root_size = cfg->root_size;
	pm_area_seal(&pool->hdr->area, &type, PM_POOL_ROOT_SPAN(cfg->root_size));
	if (cfg->format != NULL) {
		ret = cfg->format(pool, cfg->format_ctx);
		if (ret != 0) {
			/* Closing clears the message; keep format's. */
			char *why = strdup(pm_errormsg());

			pm_pool_close(&pool);
			pm_error_set(ret, "%s", why != NULL ? why : "format failed");
			free(why);
			return ret;
		}
	}
	*out = pool;
	return 0;
}

/* pm_pool_create -- build the pool under PATH.creating, then rename it into
 * place (pool.h, "Creation is atomic") */
int
pm_pool_create(struct pm_pool **out, const struct pm_pool_config *cfg)
{
	struct pm_pool *pool = NULL; /* GCC -O2 cannot tell it is set where used */
	struct stat st;
	size_t size;
	char *tmp;
	int ret, claim;

	pm_error_clear();
	ret = pm_pool_config_check(cfg);
	if (ret != 0)
		return ret;
	size = cfg->pool_size != 0 ? cfg->pool_size : PM_POOL_DEFAULT_SIZE;
	if (size < PM_POOL_MIN_SIZE)
		return pm_error_set(-EINVAL, "pool size %zu is below the minimum %zu", size,
			PM_POOL_MIN_SIZE);
	if (stat(cfg->path, &st) == 0)
		return pm_error_set(-EEXIST, "%s: already exists", cfg->path);
	if (asprintf(&tmp, "%s" PM_POOL_CREATING_SUFFIX, cfg->path) < 0)
		return pm_error_set(-ENOMEM, "out of memory");
	claim = pm_pool_claim(cfg->path, tmp, size, cfg->file_mode);
	if (claim < 0) {
		ret = claim;
		goto out;
	}
	ret = pm_pool_create_at(tmp, size, cfg, &pool);
	if (ret != 0) {
		unlink(tmp);
		goto out;
	}
	if (renameat2(AT_FDCWD, tmp, AT_FDCWD, cfg->path, RENAME_NOREPLACE) != 0) {
		ret = -errno;
		pm_pool_close(&pool);
		unlink(tmp);
		pm_error_set(ret, "%s: cannot rename %s into place: %s", cfg->path, tmp,
			strerror(-ret));
		goto out;
	}
	ret = pm_pool_sync_dir(cfg->path);
	if (ret != 0) {
		/* The pool is complete; only its name may not survive a crash. */
		pm_pool_close(&pool);
		unlink(cfg->path);
		pm_error_set(ret, "%s: cannot sync its directory: %s", cfg->path,
			strerror(-ret));
		goto out;
	}
	*out = pool;
out:
	if (claim >= 0)
		close(claim);
	free(tmp);
	return ret;
}

/* pm_pool_open -- validate, open, check the header, register */
int
pm_pool_open(struct pm_pool **out, const struct pm_pool_config *cfg)
{
	PMEMobjpool *pop;
	struct stat st;
	int ret;

	pm_error_clear();
	ret = pm_pool_config_check(cfg);
	if (ret != 0)
		return ret;
	ret = pm_pool_precheck(cfg->path, &st);
	if (ret != 0)
		return ret;
	/* PMDK's check and open fail on a locked pool with whatever error
	 * they meet first; say what it is. */
	if (pm_pool_locked_elsewhere(cfg->path))
		return pm_error_set(-EBUSY, "%s: open in another process", cfg->path);
	if (!(cfg->flags & PM_POOL_TRUSTED)) {
		ret = pm_pool_isolated_check(cfg->path, cfg->layout, cfg->check_timeout_s);
		if (ret != 0)
			return ret;
	}
	pop = pmemobj_open(cfg->path, cfg->layout);
	if (pop == NULL)
		return pm_error_set(pm_pool_errno_code(errno), "%s: %s", cfg->path,
			pmemobj_errormsg());
	ret = pm_pool_check_header(pop, cfg);
	if (ret == 0)
		ret = pm_pool_wrap(pop, (size_t)st.st_size, cfg, out);
	if (ret != 0)
		pmemobj_close(pop);
	return ret;
}

/* pm_pool_check -- open and close */
int
pm_pool_check(const struct pm_pool_config *cfg)
{
	struct pm_pool *pool;
	int ret = pm_pool_open(&pool, cfg);

	if (ret != 0)
		return ret;
	return pm_pool_close(&pool);
}

/* pm_pool_close -- unregister and close */
int
pm_pool_close(struct pm_pool **pool)
{
	int ret;

	pm_error_clear();
	if (pool == NULL || *pool == NULL)
		return 0;
	ret = pm_region_remove((*pool)->base);
	pmemobj_close((*pool)->pop);
	free(*pool);
	*pool = NULL;
	return ret;
}

void *
pm_pool_root(const struct pm_pool *pool)
{
	return pool->root;
}

size_t
pm_pool_root_size(const struct pm_pool *pool)
{
	return pool->hdr->root_size;
}

uint32_t
pm_pool_version(const struct pm_pool *pool)
{
	return pool->hdr->area.version;
}

enum pm_durability
pm_pool_durability(const struct pm_pool *pool)
{
	return pool->durability;
}

void *
pm_pool_base(const struct pm_pool *pool)
{
	return pool->base;
}

size_t
pm_pool_size(const struct pm_pool *pool)
{
	return pool->size;
}

struct pmemobjpool *
pm_pool_pmemobj(const struct pm_pool *pool)
{
	return pool->pop;
}

/* pm_pool_off -- offset of a pointer into the pool */
uint64_t
pm_pool_off(const struct pm_pool *pool, const void *ptr)
{
	return pm_off_from_ptr(pool->base, ptr);
}

/* pm_pool_ptr -- bounds-checked offset to pointer */
int
pm_pool_ptr(const struct pm_pool *pool, uint64_t off, size_t len, void **out)
{
	pm_error_clear();
	if (off == PM_OFF_NULL || !pm_off_in_range(off, len, pool->size))
		return pm_error_set(-ERANGE, "offset %llu+%zu is outside the pool (%zu bytes)",
			(unsigned long long)off, len, pool->size);
	*out = pm_off_to_addr((uintptr_t)pool->base, off);
	return 0;
}

/* pm_pool_area -- an aligned area inside the pool, with a message */
int
pm_pool_area(const struct pm_pool *pool, uint64_t off, size_t len, size_t align,
	const char *who, void **out)
{
	if (off % align != 0)
		return pm_error_set(-EINVAL, "%s: area offset %#llx is not %zu-byte aligned", who,
			(unsigned long long)off, align);
	if (pm_pool_ptr(pool, off, len, out) != 0)
		return pm_error_set(-ERANGE, "%s: area [%#llx, +%zu) is not inside the pool", who,
			(unsigned long long)off, len);
	return 0;
}

/* pm_pool_alloc -- zeroed PMDK allocation returned as an offset */
int
pm_pool_alloc(struct pm_pool *pool, size_t size, uint64_t type_num, uint64_t *off)
{
	PMEMoid oid;

	pm_error_clear();
	if (size == 0)
		return pm_error_set(-EINVAL, "allocation of 0 bytes");
	if (pmemobj_zalloc(pool->pop, &oid, size, type_num) != 0)
		return pm_error_set(-ENOMEM, "allocation of %zu bytes: %s", size,
			pmemobj_errormsg());
	*off = oid.off;
	return 0;
}

/* pm_pool_free -- free a PMDK allocation by offset */
int
pm_pool_free(struct pm_pool *pool, uint64_t off)
{
	PMEMoid oid = { .pool_uuid_lo = pool->uuid_lo, .off = off };

	pm_error_clear();
	if (off == PM_OFF_NULL || off >= pool->size)
		return pm_error_set(-ERANGE, "offset %llu is outside the pool",
			(unsigned long long)off);
	pmemobj_free(&oid);
	return 0;
}
