// SPDX-License-Identifier: MIT
/*
 * threadpool.c - persistent workers woken by a generation counter.
 *
 * The caller publishes (fn, arg), bumps gen and futex-wakes sleepers.
 * Workers that finished the previous job spin on gen for MM_POOL_SPIN
 * iterations (about 100 us) before futex-waiting on it. Completion is a
 * countdown (pending) that the caller spins on, then futex-waits on.
 */
#include "threadpool.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MM_POOL_SPIN 20000

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
	_Atomic uint32_t pending;	/* futex word: workers still running */
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

/* Waits until *addr != old: spin, then sleep. Returns the new value. */
static uint32_t mm_wait_change(_Atomic uint32_t *addr, uint32_t old)
{
	uint32_t v;

	for (int i = 0; i < MM_POOL_SPIN; i++) {
		v = atomic_load_explicit(addr, memory_order_acquire);
		if (v != old)
			return v;
		mm_cpu_relax();
	}
	for (;;) {
		v = atomic_load_explicit(addr, memory_order_acquire);
		if (v != old)
			return v;
		mm_futex(addr, FUTEX_WAIT, old);
	}
}

static void *mm_pool_main(void *p)
{
	struct mm_pool_worker *w = p;
	struct mm_pool *pool = w->pool;
	uint32_t seen = 0;

	for (;;) {
		seen = mm_wait_change(&pool->gen, seen);
		if (atomic_load_explicit(&pool->stop, memory_order_acquire))
			break;
		pool->fn(w->tid, pool->nthreads, pool->arg);
		if (atomic_fetch_sub_explicit(&pool->pending, 1,
					      memory_order_acq_rel) == 1)
			mm_futex(&pool->pending, FUTEX_WAKE, INT_MAX);
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
	atomic_init(&pool->pending, 0);
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
	atomic_fetch_add_explicit(&pool->gen, 1, memory_order_acq_rel);
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
	uint32_t left;

	if (pool->nthreads == 1) {
		fn(0, 1, arg);
		return;
	}
	pool->fn = fn;
	pool->arg = arg;
	atomic_store_explicit(&pool->pending, pool->nthreads - 1,
			      memory_order_relaxed);
	atomic_fetch_add_explicit(&pool->gen, 1, memory_order_release);
	mm_futex(&pool->gen, FUTEX_WAKE, INT_MAX);
	fn(0, pool->nthreads, arg);
	while ((left = atomic_load_explicit(&pool->pending,
					    memory_order_acquire)) != 0)
		mm_wait_change(&pool->pending, left);
}
