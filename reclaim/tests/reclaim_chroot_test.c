/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reclaim/tests/reclaim_chroot_test.c -- a live thread is not evicted when
 * the process loses /proc (a daemon that chroots after start-up).
 *
 * The scenario runs in a child forked before any thread exists, so that the
 * chroot does not take /proc away from the sanitizers of the test process
 * (LeakSanitizer walks /proc/self/task at exit) and the child may start
 * threads. chroot needs CAP_SYS_CHROOT; without it the test passes vacuously
 * and says so (the deterministic version of the check, which needs no
 * privilege, is Eviction.LiveThreadWithoutProcIsNot).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <reclaim/reclaim.h>

#define SKIP_EXIT 77

static struct reclaim_domain *dom;
static _Atomic int holding, done, freed;

/* count_free -- the retired node's free function */
static void
count_free(void *node, void *ctx)
{
	(void)ctx;
	atomic_store(&freed, 1);
	free(node);
}

/* reader -- registers, stalls inside an operation until told to stop */
static void *
reader(void *arg)
{
	int *ret = arg;
	struct reclaim_thread *t;

	if (reclaim_thread_register(dom, &t) != 0) {
		*ret = -1;
		atomic_store(&holding, 1);
		return NULL;
	}
	reclaim_op_begin(t);
	atomic_store(&holding, 1);
	while (!atomic_load(&done))
		usleep(1000);
	reclaim_op_end(t);
	*ret = reclaim_thread_unregister(&t);
	return NULL;
}

/* scenario -- run in the child; 0 on success, SKIP_EXIT without chroot */
static int
scenario(const char *jail, enum reclaim_scheme scheme)
{
	struct reclaim_config cfg;
	struct reclaim_thread *t;
	struct reclaim_stats st;
	pthread_t th;
	int reader_ret = 0;

	reclaim_config_init(&cfg, scheme);
	cfg.max_threads = 4;
	cfg.quiescence_threshold = 1;
	cfg.liveness_check_ms = 10;
	cfg.fallback_threshold = 4;
	if (reclaim_domain_new(&dom, &cfg) != 0)
		return 1;
	if (pthread_create(&th, NULL, reader, &reader_ret) != 0)
		return 1;
	while (!atomic_load(&holding))
		usleep(100);
	if (reader_ret != 0 || reclaim_thread_register(dom, &t) != 0)
		return 1;
	if (chroot(jail) != 0 || chdir("/") != 0) {
		int err = errno;

		atomic_store(&done, 1);
		pthread_join(th, NULL);
		reclaim_thread_unregister(&t);
		reclaim_domain_delete(&dom);
		printf("chroot: %s: skipped\n", strerror(err));
		return SKIP_EXIT;
	}
	/* The reader may hold the node: it is inside an operation. */
	reclaim_op_begin(t);
	reclaim_retire(t, malloc(64), count_free, NULL);
	reclaim_op_end(t);
	/* Blocked grace periods until the reader, the only thread that can
	 * lag, was looked up three times, each after a liveness period: the
	 * verdicts below are relative to those lookups. The bound (20 s of
	 * 1 ms sleeps at least) is a hang guard. */
	int bad = 0;
	for (int i = 0;; i++) {
		reclaim_op_begin(t);
		reclaim_op_end(t);
		reclaim_drain(t);
		reclaim_domain_stats(dom, &st);
		if (st.liveness_checks >= 3)
			break;
		if (i == 20000) {
			printf("%s: the reader was never checked\n",
				reclaim_scheme_name(scheme));
			bad = 1;
			break;
		}
		usleep(1000);
	}
	/* QSense's fallback may free the node: the reader never protected
	 * it with a hazard pointer. */
	if (st.evicted != 0 || (scheme != RECLAIM_QSENSE && atomic_load(&freed))) {
		printf("%s: evicted=%llu freed=%d: a live thread was evicted\n",
			reclaim_scheme_name(scheme),
			(unsigned long long)st.evicted, atomic_load(&freed));
		bad = 1;
	}
	atomic_store(&done, 1);
	pthread_join(th, NULL);
	if (reader_ret != 0) {
		printf("%s: reader's unregister returned %d\n",
			reclaim_scheme_name(scheme), reader_ret);
		bad = 1;
	}
	if (reclaim_thread_unregister(&t) != 0 || reclaim_domain_delete(&dom) != 0)
		bad = 1;
	return bad;
}

/* run_child -- fork, run the scenario for @scheme in the child */
static int
run_child(const char *jail, enum reclaim_scheme scheme)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return 1;
	if (pid == 0) {
		int ret = scenario(jail, scheme);

		/* _exit: the child must not run the sanitizers' exit-time
		 * checks without /proc. */
		fflush(stdout);
		_exit(ret);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return 1;
	return WEXITSTATUS(status);
}

int
main(void)
{
	const char *tmp = getenv("TEST_TMPDIR");
	char jail[4096];

	snprintf(jail, sizeof(jail), "%s/reclaim_chroot_jail",
		tmp ? tmp : "/tmp");
	if (mkdir(jail, 0755) != 0 && errno != EEXIST) {
		perror(jail);
		return 1;
	}
	int bad = 0;
	enum reclaim_scheme schemes[] = { RECLAIM_QSBR, RECLAIM_EBR, RECLAIM_QSENSE };
	for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++) {
		int ret = run_child(jail, schemes[i]);

		if (ret == SKIP_EXIT)
			return 0;
		bad |= ret != 0;
	}
	printf(bad ? "FAILED\n" : "PASSED\n");
	return bad;
}
