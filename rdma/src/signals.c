/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdma/src/signals.c -- undo the signal handlers a transport dependency
 * installs when it is loaded (rdma.h, rdma_signals_restore).
 */
#include <errno.h>
#include <signal.h>
#include <stddef.h>

#include <rdma/rdma.h>

int
rdma_signals_restore(void)
{
	static const int sigs[] = { SIGSEGV, SIGBUS, SIGILL, SIGABRT, SIGINT, SIGTERM };

	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		struct sigaction cur;

		if (sigaction(sigs[i], NULL, &cur) != 0)
			return -errno;
		/* SIG_DFL and SIG_IGN were chosen by the process or its parent;
		 * only an installed handler is a library's doing. */
		if (!(cur.sa_flags & SA_SIGINFO) &&
				(cur.sa_handler == SIG_DFL || cur.sa_handler == SIG_IGN))
			continue;
		cur.sa_handler = SIG_DFL;
		cur.sa_flags = 0;
		sigemptyset(&cur.sa_mask);
		if (sigaction(sigs[i], &cur, NULL) != 0)
			return -errno;
	}
	return 0;
}
