/* SPDX-License-Identifier: MIT */
/*
 * threadpool.h - persistent pthread workers for the model kernels.
 *
 * mm_pool_run() runs fn(tid, nth, arg) on the caller (tid 0) and on each
 * worker that wakes up in time (tids 1..nth-1); a worker that comes late
 * skips the job. fn must therefore claim its work dynamically so that
 * the caller alone can complete it. The call returns when the caller's
 * fn has returned and every worker that joined has finished. Workers spin
 * briefly after a job (so back-to-back kernel calls wake fast), then sleep
 * on a futex: an idle pool uses no CPU. One mm_pool_run at a time per pool
 * (not reentrant).
 */
#ifndef MM_THREADPOOL_H
#define MM_THREADPOOL_H

struct mm_pool;

typedef void (*mm_pool_fn)(int tid, int nth, void *arg);

/* nthreads >= 1. Returns 0 or -errno. */
int mm_pool_create(int nthreads, struct mm_pool **out);
void mm_pool_destroy(struct mm_pool *pool);
int mm_pool_threads(const struct mm_pool *pool);
void mm_pool_run(struct mm_pool *pool, mm_pool_fn fn, void *arg);

#endif
