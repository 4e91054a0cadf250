// SPDX-License-Identifier: MIT
/*
 * threadpool.c - persistent workers woken by a generation counter.
 *
 * The caller publishes (fn, arg) and a job word (generation << 32 | count
 * of workers inside the job), bumps gen and futex-wakes sleepers (only if
 * some worker is actually asleep: no syscall on the hot path). A worker
 * joins the job by a CAS on the job word that checks the generation and
 * the CLOSED bit, so a worker that wakes late (descheduled on a busy
 * machine) never delays the caller: once the caller has finished fn (job
 * functions claim their work dynamically, so the caller does whatever no
 * worker took), it sets CLOSED and waits only for the workers that did
 * join, which are already running. Workers spin on gen for MM_POOL_SPIN
 * iterations before futex-waiting on it.
 */
#include "threadpool.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MM_POOL_SPIN 20000
#define MM_JOB_CLOSED (1ull << 31)
#define MM_JOB_COUNT 0x7fffffffull

struct mm_pool_worker {
	struct mm_pool *pool;
	pthread_t thread;
	int tid;
};

struct mm_pool {
	int nthreads;
	/* The job; written by the caller before gen is bumped. */
	mm_pool_fn fn;
	void *arg;
	_Atomic uint32_t gen;		/* futex word: job generation */
	_Atomic uint64_t job;		/* gen << 32 | CLOSED | joined */
	_Atomic int sleepers;		/* workers in (or entering) FUTEX_WAIT */
	_Atomic int stop;
	struct mm_pool_worker *workers;	/* nthreads - 1 of them */
};

static long mm_futex(_Atomic uint32_t *addr, int op, uint32_t val)
{
	return syscall(SYS_futex, (uint32_t *)addr, op | FUTEX_PRIVATE_FLAG,
		       val, NULL, NULL, 0);
}

static inline void mm_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

/* Waits until gen != old: spin, then sleep. Returns the new value. */
static uint32_t mm_wait_gen(struct mm_pool *pool, uint32_t old)
{
	uint32_t v;

	for (int i = 0; i < MM_POOL_SPIN; i++) {
		v = atomic_load_explicit(&pool->gen, memory_order_acquire);
		if (v != old)
			return v;
		mm_cpu_relax();
	}
	for (;;) {
		atomic_fetch_add(&pool->sleepers, 1);	/* seq_cst */
		v = atomic_load(&pool->gen);		/* seq_cst */
		if (v == old)
			mm_futex(&pool->gen, FUTEX_WAIT, old);
		atomic_fetch_sub(&pool->sleepers, 1);
		v = atomic_load_explicit(&pool->gen, memory_order_acquire);
		if (v != old)
			return v;
	}
}

/* Joins job generation g unless it is closed or superseded. */
static int mm_pool_join(struct mm_pool *pool, uint32_t g)
{
	uint64_t s = atomic_load_explicit(&pool->job, memory_order_acquire);

	for (;;) {
		if ((uint32_t)(s >> 32) != g || (s & MM_JOB_CLOSED))
			return 0;
		if (atomic_compare_exchange_weak_explicit(&pool->job, &s, s + 1,
							  memory_order_acq_rel,
							  memory_order_acquire))
			return 1;
	}
}

static void *mm_pool_main(void *p)
{
	struct mm_pool_worker *w = p;
	struct mm_pool *pool = w->pool;
	uint32_t seen = 0;

	for (;;) {
		seen = mm_wait_gen(pool, seen);
		if (atomic_load_explicit(&pool->stop, memory_order_acquire))
			break;
		if (!mm_pool_join(pool, seen))
			continue;
		pool->fn(w->tid, pool->nthreads, pool->arg);
		atomic_fetch_sub_explicit(&pool->job, 1, memory_order_release);
	}
	return NULL;
}

int mm_pool_create(int nthreads, struct mm_pool **out)
{
	struct mm_pool *pool;
	int i, err;

	if (nthreads < 1)
		return -EINVAL;
	pool = calloc(1, sizeof(*pool));
	if (!pool)
		return -ENOMEM;
	pool->nthreads = nthreads;
	atomic_init(&pool->gen, 0);
	atomic_init(&pool->job, MM_JOB_CLOSED);
	atomic_init(&pool->sleepers, 0);
	atomic_init(&pool->stop, 0);
	if (nthreads > 1) {
		pool->workers = calloc(nthreads - 1, sizeof(*pool->workers));
		if (!pool->workers) {
			free(pool);
			return -ENOMEM;
		}
	}
	for (i = 0; i < nthreads - 1; i++) {
		pool->workers[i].pool = pool;
		pool->workers[i].tid = i + 1;
		err = pthread_create(&pool->workers[i].thread, NULL,
				     mm_pool_main, &pool->workers[i]);
		if (err) {
			pool->nthreads = i + 1;
			mm_pool_destroy(pool);
			return -err;
		}
	}
	*out = pool;
	return 0;
}

void mm_pool_destroy(struct mm_pool *pool)
{
	int i;

	if (!pool)
		return;
	atomic_store_explicit(&pool->stop, 1, memory_order_release);
	atomic_fetch_add(&pool->gen, 1);
	mm_futex(&pool->gen, FUTEX_WAKE, INT_MAX);
	for (i = 0; i < pool->nthreads - 1; i++)
		pthread_join(pool->workers[i].thread, NULL);
	free(pool->workers);
	free(pool);
}

int mm_pool_threads(const struct mm_pool *pool)
{
	return pool->nthreads;
}

void mm_pool_run(struct mm_pool *pool, mm_pool_fn fn, void *arg)
{
	uint32_t g;
	uint64_t s;

	if (pool->nthreads == 1) {
		fn(0, 1, arg);
		return;
	}
	pool->fn = fn;
	pool->arg = arg;
	g = atomic_load_explicit(&pool->gen, memory_order_relaxed) + 1;
	atomic_store_explicit(&pool->job, (uint64_t)g << 32,
			      memory_order_release);
	atomic_store(&pool->gen, g);			/* seq_cst */
	if (atomic_load(&pool->sleepers) > 0)		/* seq_cst */
		mm_futex(&pool->gen, FUTEX_WAKE, INT_MAX);
	fn(0, pool->nthreads, arg);
	s = atomic_fetch_or_explicit(&pool->job, MM_JOB_CLOSED,
				     memory_order_acq_rel);
	for (int i = 0; (s & MM_JOB_COUNT) != 0; i++) {
		if (i < MM_POOL_SPIN)
			mm_cpu_relax();
		else
			sched_yield();
		s = atomic_load_explicit(&pool->job, memory_order_acquire);
	}
}
