// SPDX-License-Identifier: MIT
/*
 * Host tests of mmhal_ioctl(), the EINTR-restarting ioctl wrapper.
 *
 * To get a real ioctl that really fails with EINTR without an mmedge
 * device, the EINTR tests use SECCOMP_IOCTL_NOTIF_RECV on a seccomp
 * user-notification listener: it sleeps interruptibly until a filtered
 * syscall arrives and returns -EINTR (never restarted by the kernel) when a
 * signal is delivered. In a forked child (the filter cannot be removed
 * again), the main thread waits in that ioctl while a second thread
 * (1) sends it SIGUSR1 each time /proc shows it asleep in ioctl(2), then
 * (2) makes the filtered syscall, which the main thread receives and
 * answers. The control test shows the same setup makes plain ioctl(2)
 * return EINTR, so the retry test cannot pass by accident.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "device/mmhal_internal.h"
#include "tests/tap.h"

/* Child exit codes */
#define CHILD_PASS	0
#define CHILD_FAIL	1
#define CHILD_SKIP	77

#define MAGIC_ARG	0x6d6d6863	/* "mmhc": the syscall the filter traps */
#define EINTR_SIGNALS	3		/* signals sent during the retry test */
#define WAIT_MS		5000

static void test_ioctl_success(void)
{
	int p[2], avail = -1;

	if (pipe(p) < 0)
		FAIL("pipe: %s", strerror(errno));
	CHECK(write(p[1], "abc", 3) == 3);
	CHECK_INT(mmhal_ioctl(p[0], FIONREAD, &avail), 0);
	CHECK_INT(avail, 3);
	close(p[0]);
	close(p[1]);
}

static void test_ioctl_returns_negative_errno(void)
{
	struct mmedge_caps caps;
	int p[2], avail;

	if (pipe(p) < 0)
		FAIL("pipe: %s", strerror(errno));
	/* A pipe does not know mmedge's ioctls. */
	memset(&caps, 0, sizeof(caps));
	CHECK_INT(mmhal_ioctl(p[0], MMEDGE_IOC_QUERY_CAPS, &caps), -ENOTTY);
	close(p[0]);
	close(p[1]);
	CHECK_INT(mmhal_ioctl(p[0], FIONREAD, &avail), -EBADF);
	CHECK_INT(mmhal_ioctl(-1, FIONREAD, &avail), -EBADF);
}

/* --- EINTR, in a child process --- */

static pthread_t main_thread;
static pid_t main_tid;
static volatile sig_atomic_t signals_seen;
static int use_wrapper;
static long worker_ret;
static int worker_err;

static void on_sigusr1(int sig)
{
	(void)sig;
	signals_seen++;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000 };

	nanosleep(&ts, NULL);
}

/* Is the thread asleep in ioctl(2)? */
static int thread_in_ioctl(pid_t tid)
{
	char path[64], buf[512];
	char *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || p[2] != 'S')
		return 0;

	/* Where the kernel shows it, also check the syscall number. */
	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 1;
	buf[n] = '\0';
	return strtol(buf, NULL, 10) == SYS_ioctl;
}

static int wait_for(int (*cond)(void))
{
	int ms;

	for (ms = 0; ms < WAIT_MS; ms++) {
		if (cond())
			return 0;
		sleep_ms(1);
	}
	return -1;
}

static int main_in_ioctl(void)
{
	return thread_in_ioctl(main_tid);
}

static int last_seen;

static int main_handled_signal(void)
{
	return signals_seen > last_seen;
}

static void *eintr_worker(void *arg)
{
	int i, n = use_wrapper ? EINTR_SIGNALS : 1;

	(void)arg;
	for (i = 0; i < n; i++) {
		if (wait_for(main_in_ioctl) < 0) {
			worker_err = ETIMEDOUT;
			return NULL;
		}
		last_seen = signals_seen;
		pthread_kill(main_thread, SIGUSR1);
		if (wait_for(main_handled_signal) < 0) {
			worker_err = ETIMEDOUT;
			return NULL;
		}
	}
	if (!use_wrapper)
		return NULL;

	/* Wake the listener for good: it receives this syscall. */
	if (wait_for(main_in_ioctl) < 0) {
		worker_err = ETIMEDOUT;
		return NULL;
	}
	worker_ret = syscall(SYS_getpriority, MAGIC_ARG, 0);
	if (worker_ret < 0)
		worker_err = errno;
	return NULL;
}

/* Returns a listener fd, or -errno. */
static int install_listener(void)
{
	/* Low 32 bits of args[0]. */
	const unsigned int arg0 = offsetof(struct seccomp_data, args[0]) +
				  (__BYTE_ORDER == __LITTLE_ENDIAN ? 0 : 4);
	/*
	 * The arch is not checked: the worst a foreign-ABI syscall with the
	 * same number and MAGIC_ARG could do in this short-lived child is
	 * wake the listener.
	 */
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getpriority, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, arg0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, MAGIC_ARG, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {
		.len = TAP_COUNT(filter),
		.filter = filter,
	};
	long fd;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
		     SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	return fd < 0 ? -errno : (int)fd;
}

static int eintr_child(void)
{
	struct sigaction sa = { .sa_handler = on_sigusr1 };	/* no SA_RESTART */
	struct seccomp_notif req;
	struct seccomp_notif_resp resp;
	pthread_t worker;
	int listener, ret, err = 0;

	alarm(20);	/* a wrapper that spins forever fails, not hangs */
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL) < 0)
		return CHILD_FAIL;

	listener = install_listener();
	if (listener < 0) {
		tap_diag("seccomp user notification unavailable: %s",
			 strerror(-listener));
		return CHILD_SKIP;
	}

	main_thread = pthread_self();
	main_tid = gettid();
	if (pthread_create(&worker, NULL, eintr_worker, NULL))
		return CHILD_FAIL;

	/* The kernel insists on a zeroed request. */
	memset(&req, 0, sizeof(req));
	if (use_wrapper) {
		ret = mmhal_ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req);
	} else {
		ret = ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req);
		err = errno;
	}

	if (!use_wrapper) {
		pthread_join(worker, NULL);
		if (worker_err) {
			tap_diag("worker: %s", strerror(worker_err));
			return CHILD_FAIL;
		}
		if (ret != -1 || err != EINTR || signals_seen != 1) {
			tap_diag("plain ioctl: ret %d errno %d signals %d, want -1 EINTR 1",
				 ret, err, (int)signals_seen);
			return CHILD_FAIL;
		}
		return CHILD_PASS;
	}

	if (ret == 0) {
		memset(&resp, 0, sizeof(resp));
		resp.id = req.id;
		resp.val = 42;
		if (mmhal_ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0)
			tap_diag("NOTIF_SEND failed");
	}
	if (ret != 0) {
		tap_diag("mmhal_ioctl returned %d (%s) after %d signals",
			 ret, strerror(-ret), (int)signals_seen);
		return CHILD_FAIL;
	}
	pthread_join(worker, NULL);

	if (worker_err) {
		tap_diag("worker: %s", strerror(worker_err));
		return CHILD_FAIL;
	}
	if (signals_seen != EINTR_SIGNALS) {
		tap_diag("%d signals handled, want %d", (int)signals_seen,
			 EINTR_SIGNALS);
		return CHILD_FAIL;
	}
	if (req.data.nr != SYS_getpriority ||
	    (unsigned int)req.data.args[0] != MAGIC_ARG || worker_ret != 42) {
		tap_diag("wrong notification: nr %d arg0 %#llx, worker got %ld",
			 req.data.nr, (unsigned long long)req.data.args[0],
			 worker_ret);
		return CHILD_FAIL;
	}
	return CHILD_PASS;
}

static void run_eintr_child(int wrapper)
{
	pid_t pid;
	int status;

	use_wrapper = wrapper;
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		FAIL("fork: %s", strerror(errno));
	if (pid == 0) {
		int code = eintr_child();

		fflush(stdout);
		exit(code);
	}
	if (waitpid(pid, &status, 0) < 0)
		FAIL("waitpid: %s", strerror(errno));
	if (WIFSIGNALED(status))
		FAIL("child killed by signal %d", WTERMSIG(status));
	if (WEXITSTATUS(status) == CHILD_SKIP)
		SKIP("seccomp user notification unavailable");
	CHECK_INT(WEXITSTATUS(status), CHILD_PASS);
}

/* The setup really makes ioctl(2) fail with EINTR. */
static void test_ioctl_eintr_control(void)
{
	run_eintr_child(0);
}

/* mmhal_ioctl() restarts through several EINTRs and returns the result. */
static void test_ioctl_eintr_retry(void)
{
	run_eintr_child(1);
}

static const struct tap_test tests[] = {
	TAP_TEST(test_ioctl_success),
	TAP_TEST(test_ioctl_returns_negative_errno),
	TAP_TEST(test_ioctl_eintr_control),
	TAP_TEST(test_ioctl_eintr_retry),
};

int main(void)
{
	return tap_run(tests, TAP_COUNT(tests));
}
