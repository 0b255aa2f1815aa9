/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdma/src/ofi_common.c -- libfabric endpoint setup, address handling,
 * messages and completions shared by the ofi client and server.
 *
 * One endpoint per client connection and one per server: the endpoint, its
 * address vector and its completion queue belong to one fabric and domain
 * that nothing else shares, so closing a connection can never disturb
 * another one, and a broken peer affects one connection only.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ofi_common.h"

#define OFI_API_VERSION FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION)

/* Completion queue depth: a batch has at most 32 operations plus a send
 * and a receive; a server has its receive pool and its replies. */
#define OFI_CQ_SIZE 1024

/* Everything the client could use: RMA and atomic ordering of every kind,
 * and message ordering against both. */
#define OFI_ORDER_WAR_FAMILY \
	(FI_ORDER_WAR | FI_ORDER_RMA_WAR | FI_ORDER_ATOMIC_WAR | FI_ORDER_SAR)
#define OFI_ORDER_ALL \
	(FI_ORDER_STRICT | FI_ORDER_RMA_RAR | FI_ORDER_RMA_RAW | \
	 FI_ORDER_RMA_WAR | FI_ORDER_RMA_WAW | FI_ORDER_ATOMIC_RAR | \
	 FI_ORDER_ATOMIC_RAW | FI_ORDER_ATOMIC_WAR | FI_ORDER_ATOMIC_WAW)

/*
 * MR keys of this process. The tcp provider (mr_mode 0) takes the key we
 * request and refuses a key already registered in its domain, and a key
 * reused across a node restart inside one process could let a stale client
 * address new memory; a process-wide counter avoids both.
 */
static uint64_t ofi_next_key = 1;

/* Something a client parked with a server of this process. */
struct rdma__ofi_parked {
	struct rdma__ofi_parked *next;
	rdma__ofi_release_fn fn;
	void *arg;
};

/* A server endpoint of this process (rdma__ofi_local_*). */
struct rdma__ofi_local {
	struct rdma__ofi_local *next;
	size_t len;
	uint8_t addr[RDMA_WIRE_ADDR_MAX];
	struct rdma__ofi_parked *parked; /* under ofi_locals_lock */
	atomic_uint nparked;        /* a lock-free hint of parked != NULL */
	const struct rdma__ofi *ofi; /* the server's endpoint, woken when
	                              * something is parked */
};

/*
 * Protects ofi_locals and every entry's parked list; taken alone, and never
 * while calling libfabric or a release function.
 */
static pthread_mutex_t ofi_locals_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rdma__ofi_local *ofi_locals;

/*
 * ofi_prov_name -- the provider string fi_getinfo matches.
 */
static const char *
ofi_prov_name(enum rdma__ofi_prov prov)
{
	switch (prov) {
	case RDMA__OFI_SHM:
		return "shm";
	case RDMA__OFI_VERBS:
		return "verbs;ofi_rxm";
	default:
		return "tcp;ofi_rxm";
	}
}

/*
 * rdma__ofi_local_add -- remember a server endpoint of this process.
 */
int
rdma__ofi_local_add(const struct rdma__ofi *o, struct rdma__ofi_local **out)
{
	struct rdma__ofi_local *l = calloc(1, sizeof(*l));

	*out = NULL;
	if (l == NULL)
		return -ENOMEM;
	l->len = o->name_len;
	memcpy(l->addr, o->name, o->name_len);
	l->ofi = o;
	atomic_init(&l->nparked, 0);
	pthread_mutex_lock(&ofi_locals_lock);
	l->next = ofi_locals;
	ofi_locals = l;
	pthread_mutex_unlock(&ofi_locals_lock);
	*out = l;
	return 0;
}

/*
 * rdma__ofi_parked_release -- release parked items (no lock held).
 */
void
rdma__ofi_parked_release(struct rdma__ofi_parked *p)
{
	while (p != NULL) {
		struct rdma__ofi_parked *next = p->next;

		p->fn(p->arg);
		free(p);
		p = next;
	}
}

/*
 * rdma__ofi_local_take -- move what was parked with @l in front of @held.
 */
struct rdma__ofi_parked *
rdma__ofi_local_take(struct rdma__ofi_local *l, struct rdma__ofi_parked *held)
{
	struct rdma__ofi_parked *p, *tail;

	/* relaxed: only a hint; the lock below orders the list itself */
	if (atomic_load_explicit(&l->nparked, memory_order_relaxed) == 0)
		return held;
	pthread_mutex_lock(&ofi_locals_lock);
	p = l->parked;
	l->parked = NULL;
	atomic_store_explicit(&l->nparked, 0, memory_order_relaxed);
	pthread_mutex_unlock(&ofi_locals_lock);
	if (p == NULL)
		return held;
	for (tail = p; tail->next != NULL; tail = tail->next)
		;
	tail->next = held;
	return p;
}

/*
 * rdma__ofi_local_del -- forget a server and release what it holds.
 */
void
rdma__ofi_local_del(struct rdma__ofi_local *l)
{
	struct rdma__ofi_local **pp;
	struct rdma__ofi_parked *p;

	if (l == NULL)
		return;
	pthread_mutex_lock(&ofi_locals_lock);
	for (pp = &ofi_locals; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == l) {
			*pp = l->next;
			break;
		}
	}
	p = l->parked;
	l->parked = NULL;
	pthread_mutex_unlock(&ofi_locals_lock);
	rdma__ofi_parked_release(p);
	free(l);
}

/*
 * ofi_local_find -- the entry for @addr; ofi_locals_lock held.
 */
static struct rdma__ofi_local *
ofi_local_find(const void *addr, size_t len)
{
	for (struct rdma__ofi_local *l = ofi_locals; l != NULL; l = l->next)
		if (l->len == len && memcmp(l->addr, addr, len) == 0)
			return l;
	return NULL;
}

/*
 * rdma__ofi_local_has -- whether @addr is a server endpoint of this process.
 */
bool
rdma__ofi_local_has(const void *addr, size_t len)
{
	bool found;

	pthread_mutex_lock(&ofi_locals_lock);
	found = ofi_local_find(addr, len) != NULL;
	pthread_mutex_unlock(&ofi_locals_lock);
	return found;
}

/*
 * rdma__ofi_local_park -- hand a client's endpoint to its in-process node.
 */
bool
rdma__ofi_local_park(const void *addr, size_t len, rdma__ofi_release_fn fn,
	void *arg)
{
	struct rdma__ofi_parked *p = malloc(sizeof(*p));
	struct rdma__ofi_local *l;

	if (p == NULL)
		return false;
	p->fn = fn;
	p->arg = arg;
	pthread_mutex_lock(&ofi_locals_lock);
	l = ofi_local_find(addr, len);
	if (l != NULL) {
		p->next = l->parked;
		l->parked = p;
		atomic_fetch_add_explicit(&l->nparked, 1, memory_order_relaxed);
		/* under the lock: rdma__ofi_local_del, which runs before the
		 * server's endpoint closes, cannot pass us */
		rdma__ofi_wake(l->ofi);
	}
	pthread_mutex_unlock(&ofi_locals_lock);
	if (l == NULL)
		free(p);
	return l != NULL;
}

/*
 * rdma__ofi_err -- a libfabric return value (-FI_E*) as a -errno.
 */
int
rdma__ofi_err(ssize_t ret)
{
	if (ret >= 0)
		return 0;
	/* below FI_ERRNO_OFFSET the codes are the errno values */
	if (-ret < FI_ERRNO_OFFSET)
		return (int)ret;
	switch (-ret) {
	case FI_ETRUNC:
	case FI_ETOOSMALL:
		return -EMSGSIZE;
	case FI_ENOKEY:
		return -EKEYREJECTED;
	case FI_EOVERRUN:
		return -ENOBUFS;
	default:
		return -EIO;
	}
}

/*
 * ofi_hints -- the fi_getinfo hints for @prov asking for capabilities
 * @caps (beyond messages, RMA and atomics) and ordering @order.
 */
static struct fi_info *
ofi_hints(enum rdma__ofi_prov prov, uint64_t caps, uint64_t order)
{
	struct fi_info *h = fi_allocinfo();

	if (h == NULL)
		return NULL;
	h->ep_attr->type = FI_EP_RDM;
	h->caps = FI_MSG | FI_RMA | FI_ATOMIC | caps;
	/* no FI_CONTEXT and no FI_MR_LOCAL: the client reads into and writes
	 * from the caller's unregistered buffers */
	h->mode = 0;
	/* what we can cope with: remote addresses either virtual or offsets
	 * (the WELCOME carries which), provider-chosen keys, and memory that
	 * is always allocated before it is registered */
	h->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
		FI_MR_PROV_KEY;
	h->domain_attr->threading = FI_THREAD_SAFE;
	h->tx_attr->msg_order = order;
	h->rx_attr->msg_order = order;
	h->fabric_attr->prov_name = strdup(ofi_prov_name(prov));
	if (h->fabric_attr->prov_name == NULL) {
		fi_freeinfo(h);
		return NULL;
	}
	return h;
}

/*
 * ofi_getinfo_order -- fi_getinfo for @prov with ordering @order.
 * Return: 0 and *@out; a negative libfabric code.
 */
static int
ofi_getinfo_order(enum rdma__ofi_prov prov, const char *host, uint64_t caps,
	uint64_t order, struct fi_info **out)
{
	struct fi_info *h = ofi_hints(prov, caps, order);
	const char *node = NULL;
	const char *service = NULL;
	uint64_t flags = 0;
	int ret;

	if (h == NULL)
		return -FI_ENOMEM;
	/* tcp and verbs bind to host with port 0, i.e. an ephemeral port;
	 * shm names its endpoints itself (pid and index, unique in the
	 * process) */
	if (rdma__ofi_prov_ip(prov) && host != NULL) {
		node = host;
		service = "0";
		flags = FI_SOURCE;
	}
	*out = NULL;
	ret = fi_getinfo(OFI_API_VERSION, node, service, flags, h, out);
	fi_freeinfo(h);
	return ret;
}

/*
 * ofi_getinfo -- find @prov with as much ordering as it grants, and record
 * the grant in o->order (see the top of ofi_common.h).
 */
static int
ofi_getinfo(struct rdma__ofi *o, const char *host, uint64_t caps)
{
	const uint64_t tries[2] = {
		OFI_ORDER_ALL, OFI_ORDER_ALL & ~OFI_ORDER_WAR_FAMILY,
	};
	struct fi_info *info = NULL;
	uint64_t reported;
	int ret;

	for (unsigned i = 0; i < 2; i++) {
		ret = ofi_getinfo_order(o->prov, host, caps, tries[i], &info);
		if (ret == 0) {
			o->info = info;
			o->order = tries[i];
			return 0;
		}
		if (ret != -FI_ENODATA)
			return ret;
	}
	/*
	 * Neither: take what the provider offers by default, then ask for
	 * exactly that, so the order we rely on is one the provider agreed
	 * to, not only one it happened to print.
	 */
	ret = ofi_getinfo_order(o->prov, host, caps, FI_ORDER_NONE, &info);
	if (ret != 0)
		return ret;
	reported = info->tx_attr->msg_order & info->rx_attr->msg_order;
	if (reported != FI_ORDER_NONE) {
		struct fi_info *again = NULL;

		if (ofi_getinfo_order(o->prov, host, caps, reported,
				&again) == 0) {
			fi_freeinfo(info);
			o->info = again;
			o->order = reported;
			return 0;
		}
	}
	o->info = info;
	o->order = FI_ORDER_NONE;
	return 0;
}

/*
 * ofi_atomics_valid -- whether the endpoint runs 8-byte CAS and FAA.
 */
static bool
ofi_atomics_valid(struct rdma__ofi *o)
{
	size_t count = 0;

	if (!(o->info->caps & FI_ATOMIC))
		return false;
	if (fi_compare_atomicvalid(o->ep, FI_UINT64, FI_CSWAP, &count) != 0 ||
			count < 1)
		return false;
	count = 0;
	if (fi_fetch_atomicvalid(o->ep, FI_UINT64, FI_SUM, &count) != 0 ||
			count < 1)
		return false;
	return true;
}

/*
 * ofi_cq_open -- open o->cq; with @wait, with a file descriptor to sleep on
 * (o->wait_fd) and an eventfd to be woken through (o->wake_fd) where the
 * provider supports FI_WAIT_FD (then o->waits).
 *
 * FI_WAIT_FD rather than FI_WAIT_UNSPEC: an fd is the one kind that is
 * certain to block in the kernel. Measured with libfabric 1.17: tcp;ofi_rxm
 * takes FI_WAIT_FD (and makes an epoll fd over its sockets: bytes arriving
 * for a client's RMA or atomic make it readable too), shm refuses it
 * (-FI_ENOSYS), and shm's FI_WAIT_UNSPEC queue spins in fi_cq_sread without
 * ever returning.
 */
static int
ofi_cq_open(struct rdma__ofi *o, bool wait)
{
	struct fi_cq_attr cq_attr;
	int ret;

	memset(&cq_attr, 0, sizeof(cq_attr));
	cq_attr.format = FI_CQ_FORMAT_MSG;
	cq_attr.size = OFI_CQ_SIZE;
	if (wait) {
		int fd = -1;

		cq_attr.wait_obj = FI_WAIT_FD;
		ret = fi_cq_open(o->domain, &cq_attr, &o->cq, NULL);
		if (ret == 0 && fi_control(&o->cq->fid, FI_GETWAIT, &fd) == 0 &&
				fd >= 0) {
			o->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
			if (o->wake_fd < 0)
				return -errno;
			o->wait_fd = fd;
			o->waits = true;
			return 0;
		}
		/* no usable wait object: a queue without one, which costs
		 * no signalling on every completion */
		if (ret == 0)
			fi_close(&o->cq->fid);
		o->cq = NULL;
	}
	cq_attr.wait_obj = FI_WAIT_NONE;
	return fi_cq_open(o->domain, &cq_attr, &o->cq, NULL);
}

/*
 * Naming shm endpoints. The shm provider names a region after the process id
 * and an endpoint index unless told otherwise, and a SIGKILLed process leaves
 * its region in /dev/shm. A later process that happens to get the same pid
 * then finds a region whose recorded owner (itself) is alive and fi_enable
 * fails with -FI_EBUSY: with pid_max at 32768 that happens within one test run
 * (found by CI). So every shm endpoint is named here by its pid namespace,
 * pid, the process's start time (together they name a process uniquely until
 * reboot) and a per-process counter, and opening one first unlinks the
 * regions of our own naming, in our pid namespace, whose process is gone, so
 * crashed daemons and clients do not leak their 16 MiB regions either. (A
 * region named in another pid namespace that shares /dev/shm is left alone:
 * its pids mean nothing here.)
 */
#define OFI_SHM_PREFIX "dmem-"

/*
 * ofi_proc_start -- start time of process @pid in clock ticks since boot.
 * Return: 0 and *@start; -1 if there is no such process.
 */
static int
ofi_proc_start(long pid, unsigned long long *start)
{
	char path[64], buf[1024];
	const char *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	f = fopen(path, "re");
	if (f == NULL)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* field 2 is "(comm)" and may hold spaces: count from its end; the
	 * start time is field 22, the 20th after it */
	p = strrchr(buf, ')');
	if (p == NULL)
		return -1;
	for (int field = 2; field < 22 && p != NULL; field++)
		p = strchr(p + 1, ' ');
	if (p == NULL || sscanf(p + 1, "%llu", start) != 1)
		return -1;
	return 0;
}

/*
 * ofi_pid_ns -- the inode number of this process's pid namespace (0 if
 * unknown).
 */
static unsigned long long
ofi_pid_ns(void)
{
	char link[64];
	unsigned long long ino = 0;
	ssize_t n = readlink("/proc/self/ns/pid", link, sizeof(link) - 1);

	if (n > 0) {
		link[n] = '\0';
		(void)sscanf(link, "pid:[%llu]", &ino);
	}
	return ino;
}

/*
 * ofi_shm_sweep -- unlink the shm regions named by ofi_shm_name whose
 * process is gone. Best effort: a region that cannot be removed stays.
 */
static void
ofi_shm_sweep(unsigned long long ns)
{
	DIR *d = opendir("/dev/shm");
	struct dirent *e;

	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		unsigned long long their_ns, start, now;
		long pid;
		char path[300];

		if (sscanf(e->d_name, OFI_SHM_PREFIX "%llu-%ld-%llu-", &their_ns,
				&pid, &start) != 3 || their_ns != ns)
			continue;
		if (ofi_proc_start(pid, &now) == 0 && now == start)
			continue;
		snprintf(path, sizeof(path), "/dev/shm/%s", e->d_name);
		(void)unlink(path);
	}
	closedir(d);
}

/*
 * ofi_shm_name -- name shm endpoint @ep uniquely until reboot (see above).
 * Return: 0; a negative libfabric code.
 */
static int
ofi_shm_name(struct fid_ep *ep)
{
	static atomic_uint next;
	unsigned long long ns = ofi_pid_ns(), start = 0;
	char name[128];

	ofi_shm_sweep(ns);
	(void)ofi_proc_start((long)getpid(), &start);
	snprintf(name, sizeof(name), OFI_SHM_PREFIX "%llu-%ld-%llu-%u", ns,
		(long)getpid(), start, atomic_fetch_add(&next, 1));
	return fi_setname(&ep->fid, name, strlen(name) + 1);
}

/*
 * rdma__ofi_open -- open an endpoint on @prov into *@o.
 */
int
rdma__ofi_open(struct rdma__ofi *o, enum rdma__ofi_prov prov,
	const char *host, unsigned flags)
{
	uint64_t caps = (flags & RDMA__OFI_SOURCE) ? FI_SOURCE : 0;
	bool source = (flags & RDMA__OFI_SOURCE) != 0;
	struct fi_av_attr av_attr;
	size_t len;
	int ret;

	memset(o, 0, sizeof(*o));
	o->prov = prov;
	ret = -FI_ENODATA;
	/* remote-access events are a nicety: without them if need be */
	if (flags & RDMA__OFI_RMA_EVENTS)
		ret = ofi_getinfo(o, host, caps | FI_RMA_EVENT);
	if (ret == -FI_ENODATA)
		ret = ofi_getinfo(o, host, caps);
	if (ret != 0) {
		/* no such provider, or not with messages, RMA and atomics */
		ret = (ret == -FI_ENODATA || ret == -FI_ENOSYS) ?
			RDMA_E_NO_DEVICE : rdma__ofi_err(ret);
		goto fail;
	}
	o->reported_virt = (o->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) != 0;
	o->rma_virt = o->atomic_virt = o->reported_virt;
	o->prov_key = (o->info->domain_attr->mr_mode & FI_MR_PROV_KEY) != 0;
	o->source = source && (o->info->caps & FI_SOURCE) != 0;
	if (source && !o->source) {
		ret = RDMA_E_NO_DEVICE;
		goto fail;
	}

	ret = fi_fabric(o->info->fabric_attr, &o->fabric, NULL);
	if (ret != 0)
		goto fail_fi;
	ret = fi_domain(o->fabric, o->info, &o->domain, NULL);
	if (ret != 0)
		goto fail_fi;

	memset(&av_attr, 0, sizeof(av_attr));
	av_attr.type = FI_AV_TABLE;
	ret = fi_av_open(o->domain, &av_attr, &o->av, NULL);
	if (ret != 0)
		goto fail_fi;

	ret = ofi_cq_open(o, (flags & RDMA__OFI_WAIT_FD) != 0);
	if (ret != 0)
		goto fail_fi;

	ret = fi_endpoint(o->domain, o->info, &o->ep, NULL);
	if (ret != 0)
		goto fail_fi;
	ret = fi_ep_bind(o->ep, &o->av->fid, 0);
	if (ret != 0)
		goto fail_fi;
	ret = fi_ep_bind(o->ep, &o->cq->fid, FI_TRANSMIT | FI_RECV);
	if (ret != 0)
		goto fail_fi;
	if (prov == RDMA__OFI_SHM) {
		ret = ofi_shm_name(o->ep);
		if (ret != 0)
			goto fail_fi;
	}
	if ((flags & RDMA__OFI_RMA_EVENTS) && (o->info->caps & FI_RMA_EVENT)) {
		struct fi_cntr_attr cntr_attr;

		memset(&cntr_attr, 0, sizeof(cntr_attr));
		cntr_attr.events = FI_CNTR_EVENTS_COMP;
		cntr_attr.wait_obj = FI_WAIT_NONE;
		ret = fi_cntr_open(o->domain, &cntr_attr, &o->rma_cntr, NULL);
		if (ret != 0)
			goto fail_fi;
		ret = fi_ep_bind(o->ep, &o->rma_cntr->fid,
			FI_REMOTE_READ | FI_REMOTE_WRITE);
		if (ret != 0)
			goto fail_fi;
	}
	ret = fi_enable(o->ep);
	if (ret != 0)
		goto fail_fi;

	len = sizeof(o->name);
	ret = fi_getname(&o->ep->fid, o->name, &len);
	if (ret != 0)
		goto fail_fi;
	if (len > sizeof(o->name)) {
		ret = -EOVERFLOW;
		goto fail;
	}
	o->name_len = len;
	o->atomics = ofi_atomics_valid(o);
	if (o->atomics) {
		size_t count = 0;

		o->atomic_read = fi_fetch_atomicvalid(o->ep, FI_UINT64,
			FI_ATOMIC_READ, &count) == 0 && count >= 1;
	}
	return 0;

fail_fi:
	ret = rdma__ofi_err(ret);
	if (ret == 0)
		ret = -EIO;
fail:
	rdma__ofi_close(o);
	return ret;
}

/*
 * rdma__ofi_close -- close whatever *@o holds and zero it.
 */
void
rdma__ofi_close(struct rdma__ofi *o)
{
	/* the endpoint before what it is bound to */
	if (o->ep != NULL)
		fi_close(&o->ep->fid);
	if (o->rma_cntr != NULL)
		fi_close(&o->rma_cntr->fid);
	if (o->av != NULL)
		fi_close(&o->av->fid);
	if (o->cq != NULL)
		fi_close(&o->cq->fid);
	if (o->domain != NULL)
		fi_close(&o->domain->fid);
	if (o->fabric != NULL)
		fi_close(&o->fabric->fid);
	if (o->info != NULL)
		fi_freeinfo(o->info);
	if (o->waits)
		close(o->wake_fd);
	memset(o, 0, sizeof(*o));
}

/*
 * rdma__ofi_rma_events -- remote accesses counted so far.
 */
uint64_t
rdma__ofi_rma_events(const struct rdma__ofi *o)
{
	return o->rma_cntr != NULL ? fi_cntr_read(o->rma_cntr) : 0;
}

/*
 * rdma__ofi_addr_check -- whether @addr is a plausible address for @o.
 */
int
rdma__ofi_addr_check(const struct rdma__ofi *o, const void *addr, size_t len)
{
	sa_family_t family;

	if (addr == NULL || len == 0 || len > RDMA_WIRE_ADDR_MAX)
		return RDMA_E_PROTO;
	switch (o->info->addr_format) {
	case FI_ADDR_STR:
		/* shm runs strlen and string parsing on it */
		return memchr(addr, '\0', len) != NULL ? 0 : RDMA_E_PROTO;
	case FI_SOCKADDR_IN:
	case FI_SOCKADDR_IN6:
	case FI_SOCKADDR:
		if (len < sizeof(family))
			return RDMA_E_PROTO;
		memcpy(&family, addr, sizeof(family));
		if (len == sizeof(struct sockaddr_in) && family == AF_INET)
			return 0;
		if (len == sizeof(struct sockaddr_in6) && family == AF_INET6)
			return 0;
		return RDMA_E_PROTO;
	default:
		return RDMA_E_PROTO;
	}
}

/*
 * rdma__ofi_insert -- check and insert a peer address.
 */
int
rdma__ofi_insert(struct rdma__ofi *o, const void *addr, size_t len,
	fi_addr_t *out)
{
	int ret = rdma__ofi_addr_check(o, addr, len);

	if (ret != 0)
		return ret;
	ret = fi_av_insert(o->av, addr, 1, out, 0, NULL);
	if (ret == 1)
		return 0;
	return ret < 0 ? rdma__ofi_err(ret) : RDMA_E_PROTO;
}

/*
 * rdma__ofi_mr_reg -- register memory under a unique key.
 */
int
rdma__ofi_mr_reg(struct rdma__ofi *o, void *buf, size_t len, uint64_t access,
	struct fid_mr **mr, uint64_t *key)
{
	uint64_t want = __atomic_fetch_add(&ofi_next_key, 1, __ATOMIC_RELAXED);
	int ret;

	ret = fi_mr_reg(o->domain, buf, len, access, 0, want, 0, mr, NULL);
	if (ret != 0)
		return rdma__ofi_err(ret);
	/* the key in force, whoever chose it: a provider layered over
	 * another (rxm over tcp) may report the mode of one and use the
	 * keys of the other */
	*key = fi_mr_key(*mr);
	if (*key == FI_KEY_NOTAVAIL) {
		fi_close(&(*mr)->fid);
		*mr = NULL;
		return -EIO;
	}
	return 0;
}

/*
 * rdma__ofi_recv -- post a receive.
 */
int
rdma__ofi_recv(struct rdma__ofi *o, void *buf, size_t len, void *desc,
	void *ctx)
{
	return rdma__ofi_err(fi_recv(o->ep, buf, len, desc, FI_ADDR_UNSPEC, ctx));
}

/*
 * rdma__ofi_send -- post a send.
 */
int
rdma__ofi_send(struct rdma__ofi *o, const void *buf, size_t len, void *desc,
	fi_addr_t dest, void *ctx)
{
	return rdma__ofi_err(fi_send(o->ep, buf, len, desc, dest, ctx));
}

/*
 * ofi_read_error -- take the error entry that made the queue report
 * -FI_EAVAIL and describe it in *@out.
 */
static int
ofi_read_error(struct rdma__ofi *o, struct rdma__ofi_comp *out)
{
	struct fi_cq_err_entry err;
	ssize_t ret;

	memset(&err, 0, sizeof(err));
	ret = fi_cq_readerr(o->cq, &err, 0);
	if (ret == -FI_EAGAIN)
		return 0;
	if (ret < 0)
		return rdma__ofi_err(ret);
	out->context = err.op_context;
	out->flags = err.flags;
	out->len = err.len;
	out->src = FI_ADDR_NOTAVAIL;
	out->status = rdma__ofi_err(-(ssize_t)(err.err != 0 ? err.err : FI_EOTHER));
	if (out->status == 0)
		out->status = -EIO;
	return 1;
}

/*
 * rdma__ofi_poll -- progress and read completions without blocking.
 */
int
rdma__ofi_poll(struct rdma__ofi *o, struct rdma__ofi_comp *out, unsigned max)
{
	struct fi_cq_msg_entry ent[16];
	fi_addr_t src[16];
	ssize_t ret;

	if (max == 0)
		return 0;
	if (max > 16)
		max = 16;
	if (o->source)
		ret = fi_cq_readfrom(o->cq, ent, max, src);
	else
		ret = fi_cq_read(o->cq, ent, max);
	if (ret == -FI_EAGAIN)
		return 0;
	if (ret == -FI_EAVAIL)
		return ofi_read_error(o, out);
	if (ret < 0)
		return rdma__ofi_err(ret);
	for (ssize_t i = 0; i < ret; i++) {
		out[i].context = ent[i].op_context;
		out[i].flags = ent[i].flags;
		out[i].len = ent[i].len;
		out[i].src = o->source ? src[i] : FI_ADDR_NOTAVAIL;
		out[i].status = 0;
	}
	return (int)ret;
}

/*
 * rdma__ofi_wait -- sleep on the queue's wait object and the wake eventfd.
 */
int
rdma__ofi_wait(struct rdma__ofi *o, int timeout_ms)
{
	struct fid *fid = &o->cq->fid;
	struct pollfd pfd[2] = {
		{ .fd = o->wait_fd, .events = POLLIN },
		{ .fd = o->wake_fd, .events = POLLIN },
	};
	uint64_t n;
	int ret;

	/* fi_trywait arms the wait object, or refuses when the provider
	 * holds something that would not make the fd readable (queued
	 * completions, bytes it already read): then the caller polls again */
	ret = fi_trywait(o->fabric, &fid, 1);
	if (ret == -FI_EAGAIN)
		return 1;
	if (ret != 0)
		return rdma__ofi_err(ret);
	ret = poll(pfd, 2, timeout_ms);
	if (ret < 0)
		return errno == EINTR ? 1 : -errno;
	if (pfd[1].revents & POLLIN) {
		/* consume the wake only now, so one that came after the
		 * caller's last look at its flags is never lost */
		while (read(o->wake_fd, &n, sizeof(n)) < 0 && errno == EINTR)
			;
	}
	return ret > 0 ? 1 : 0;
}

/*
 * rdma__ofi_wake -- make rdma__ofi_wait return.
 */
void
rdma__ofi_wake(const struct rdma__ofi *o)
{
	const uint64_t one = 1;

	if (!o->waits)
		return;
	/* EAGAIN: the counter is saturated, a wake is pending anyway */
	while (write(o->wake_fd, &one, sizeof(one)) < 0 && errno == EINTR)
		;
}

/* What an operation type is, for ordering purposes. */
#define OFI_ROLE_READ 1u
#define OFI_ROLE_WRITE 2u

/*
 * ofi_roles -- READ reads, WRITE writes, a CAS or FAA does both.
 */
static unsigned
ofi_roles(unsigned type)
{
	switch (type) {
	case RDMA_OP_READ:
		return OFI_ROLE_READ;
	case RDMA_OP_WRITE:
		return OFI_ROLE_WRITE;
	case RDMA_OP_CAS:
	case RDMA_OP_FAA:
		return OFI_ROLE_READ | OFI_ROLE_WRITE;
	default:
		return 0;
	}
}

/*
 * ofi_pair_bits -- the generic, RMA-only and atomic-only bits that order a
 * later @later_role after an earlier @earlier_role.
 */
static void
ofi_pair_bits(unsigned earlier_role, unsigned later_role, uint64_t bits[3])
{
	if (earlier_role == OFI_ROLE_READ && later_role == OFI_ROLE_READ) {
		bits[0] = FI_ORDER_RAR;
		bits[1] = FI_ORDER_RMA_RAR;
		bits[2] = FI_ORDER_ATOMIC_RAR;
	} else if (earlier_role == OFI_ROLE_WRITE && later_role == OFI_ROLE_READ) {
		bits[0] = FI_ORDER_RAW;
		bits[1] = FI_ORDER_RMA_RAW;
		bits[2] = FI_ORDER_ATOMIC_RAW;
	} else if (earlier_role == OFI_ROLE_READ) {
		bits[0] = FI_ORDER_WAR;
		bits[1] = FI_ORDER_RMA_WAR;
		bits[2] = FI_ORDER_ATOMIC_WAR;
	} else {
		bits[0] = FI_ORDER_WAW;
		bits[1] = FI_ORDER_RMA_WAW;
		bits[2] = FI_ORDER_ATOMIC_WAW;
	}
}

/*
 * rdma__ofi_order_covers -- whether @granted orders @later after @earlier.
 */
bool
rdma__ofi_order_covers(uint64_t granted, unsigned earlier, unsigned later)
{
	unsigned re = ofi_roles(earlier), rl = ofi_roles(later);
	bool e_atomic = earlier == RDMA_OP_CAS || earlier == RDMA_OP_FAA;
	bool l_atomic = later == RDMA_OP_CAS || later == RDMA_OP_FAA;
	const unsigned roles[2] = { OFI_ROLE_READ, OFI_ROLE_WRITE };

	/* a persist is done by the node's CPU, outside the fabric */
	if (re == 0 || rl == 0)
		return false;
	for (unsigned i = 0; i < 2; i++) {
		for (unsigned j = 0; j < 2; j++) {
			uint64_t bits[3];
			bool ok;

			if (!(re & roles[i]) || !(rl & roles[j]))
				continue;
			ofi_pair_bits(roles[i], roles[j], bits);
			ok = (granted & bits[0]) != 0;
			/* the RMA_ and ATOMIC_ bits order only within their
			 * own kind of operation */
			if (!e_atomic && !l_atomic)
				ok = ok || (granted & bits[1]) != 0;
			if (e_atomic && l_atomic)
				ok = ok || (granted & bits[2]) != 0;
			if (!ok)
				return false;
		}
	}
	return true;
}

/*
 * rdma__ofi_order_str -- names of the bits of @order.
 */
char *
rdma__ofi_order_str(uint64_t order, char *buf, size_t cap)
{
	static const struct {
		uint64_t bit;
		const char *name;
	} names[] = {
		{ FI_ORDER_RAR, "RAR" }, { FI_ORDER_RAW, "RAW" },
		{ FI_ORDER_RAS, "RAS" }, { FI_ORDER_WAR, "WAR" },
		{ FI_ORDER_WAW, "WAW" }, { FI_ORDER_WAS, "WAS" },
		{ FI_ORDER_SAR, "SAR" }, { FI_ORDER_SAW, "SAW" },
		{ FI_ORDER_SAS, "SAS" },
		{ FI_ORDER_RMA_RAR, "RMA_RAR" }, { FI_ORDER_RMA_RAW, "RMA_RAW" },
		{ FI_ORDER_RMA_WAR, "RMA_WAR" }, { FI_ORDER_RMA_WAW, "RMA_WAW" },
		{ FI_ORDER_ATOMIC_RAR, "ATOMIC_RAR" },
		{ FI_ORDER_ATOMIC_RAW, "ATOMIC_RAW" },
		{ FI_ORDER_ATOMIC_WAR, "ATOMIC_WAR" },
		{ FI_ORDER_ATOMIC_WAW, "ATOMIC_WAW" },
	};
	size_t used = 0;

	if (cap == 0)
		return buf;
	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		int n;

		if (!(order & names[i].bit))
			continue;
		n = snprintf(buf + used, cap - used, "%s%s",
			used != 0 ? "," : "", names[i].name);
		if (n < 0 || (size_t)n >= cap - used)
			break;
		used += (size_t)n;
	}
	if (used == 0)
		snprintf(buf, cap, "NONE");
	return buf;
}

/*
 * rdma__ofi_route_source -- the local address used to reach @host.
 */
int
rdma__ofi_route_source(const char *host, char *buf, size_t cap)
{
	struct addrinfo hints, *res = NULL;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int fd, ret;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_DGRAM;
	/* the port is irrelevant: connect() on UDP only picks the route */
	if (getaddrinfo(host, "9", &hints, &res) != 0 || res == NULL)
		return -EINVAL;
	fd = socket(res->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	if (connect(fd, res->ai_addr, res->ai_addrlen) != 0 ||
			getsockname(fd, (struct sockaddr *)&ss, &sl) != 0) {
		ret = -errno;
		goto out;
	}
	if (ss.ss_family == AF_INET)
		ret = inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr,
			buf, (socklen_t)cap) != NULL ? 0 : -ENOSPC;
	else if (ss.ss_family == AF_INET6)
		ret = inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr,
			buf, (socklen_t)cap) != NULL ? 0 : -ENOSPC;
	else
		ret = -EAFNOSUPPORT;
out:
	if (fd >= 0)
		close(fd);
	freeaddrinfo(res);
	return ret;
}
