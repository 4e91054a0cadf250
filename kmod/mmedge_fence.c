// SPDX-License-Identifier: GPL-2.0
/*
 * mmedge: the channels' dma-fences.
 *
 * Every job (a buffer queued on a channel) gets a fence of its channel's
 * timeline, which the engine thread signals when the job completes (see
 * mmedge_engine.c). This file knows buffers, reservation objects and
 * timelines (a context and the last seqno), not channels: the channel
 * code calls it with its qbuf_lock held. A fence is its own object with its own lock, like
 * vgem's: sync_files and reservation objects keep it after the channel,
 * the file and the instance are gone, and it keeps the module, whose
 * text its ops are, loaded until the last reference is dropped.
 *
 * Fences are created and published here, never by the engine thread:
 * publishing allocates (the reservation object's slot, the sync_file)
 * and takes reservation locks, which a fence signalling path must not.
 * A job's fence is added to its buffers' reservation objects only after
 * the buffers' earlier fences have signalled (a job must not overwrite a
 * buffer someone still reads, nor read one someone still writes), and
 * before the engine can see the job.
 */

#include <linux/dma-resv.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/sync_file.h>

#include "mmedge_fence.h"

static_assert(offsetof(struct mmedge_fence, base) == 0);

static const char *mmedge_fence_driver_name(struct dma_fence *fence)
{
	return "mmedge";
}

static const char *mmedge_fence_timeline_name(struct dma_fence *fence)
{
	return "mmedge-chan";
}

static void mmedge_fence_release(struct dma_fence *fence)
{
	/* Frees the struct mmedge_fence (base is its first member). */
	dma_fence_free(fence);
	module_put(THIS_MODULE);
}

static const struct dma_fence_ops mmedge_fence_ops = {
	.get_driver_name = mmedge_fence_driver_name,
	.get_timeline_name = mmedge_fence_timeline_name,
	.release = mmedge_fence_release,
};

/**
 * mmedge_fence_alloc() - allocate a fence, not initialised yet
 * @gfp: allocation flags
 *
 * Free it with kfree() until mmedge_fence_init(); after, with
 * dma_fence_put().
 *
 * Return: the fence or NULL.
 */
struct mmedge_fence *mmedge_fence_alloc(gfp_t gfp)
{
	struct mmedge_fence *f = kzalloc(sizeof(*f), gfp);

	if (f)
		spin_lock_init(&f->lock);
	return f;
}

/**
 * mmedge_fence_init() - initialise a fence allocated by mmedge_fence_alloc()
 * @f: the fence
 * @context: its channel's fence context
 * @seqno: its number on the channel's timeline; fences of a channel
 *	signal in seqno order
 *
 * Takes a module reference, which the fence's release drops.
 *
 * Return: the dma_fence, with one reference.
 */
struct dma_fence *mmedge_fence_init(struct mmedge_fence *f, u64 context,
				    u64 seqno)
{
	__module_get(THIS_MODULE);
	dma_fence_init(&f->base, &mmedge_fence_ops, &f->lock, context, seqno);
	return &f->base;
}

/* Lock @a and, if not NULL, @b, in the ww order. */
static int mmedge_resv_lock2(struct dma_resv *a, struct dma_resv *b,
			     struct ww_acquire_ctx *ctx)
{
	int ret;

	ww_acquire_init(ctx, &reservation_ww_class);
	ret = dma_resv_lock_interruptible(a, ctx);
	if (ret)
		goto err_fini;
	while (b) {
		ret = dma_resv_lock_interruptible(b, ctx);
		if (!ret)
			break;
		dma_resv_unlock(a);
		if (ret != -EDEADLK)
			goto err_fini;
		/* Wait for the contended one, then retry the other. */
		ret = dma_resv_lock_slow_interruptible(b, ctx);
		if (ret)
			goto err_fini;
		swap(a, b);
	}
	ww_acquire_done(ctx);
	return 0;

err_fini:
	ww_acquire_fini(ctx);
	return ret;
}

/**
 * mmedge_fence_wait() - wait, holding no lock, until a job's buffers are idle
 * @dst: the job's buffer (copy: the destination)
 * @dst_written: the engine writes @dst (capture, copy); a feed only reads
 *	it
 * @src: copy: the source, which the engine only reads; else NULL
 * @timeout: jiffies to wait at most, > 0
 *
 * Waits (interruptibly) until what the job conflicts with is done: on a
 * buffer the engine writes every fence (readers and writers), on one it
 * only reads the writers' fences. Takes no lock, the reservation
 * objects' included: the caller must hold none that unbind, another
 * file or another user of the buffers needs. mmedge_fence_publish()
 * checks again under the reservation locks.
 *
 * Return: the jiffies left (> 0); -ETIMEDOUT; -ERESTARTSYS if a signal
 * arrived.
 */
long mmedge_fence_wait(struct dma_buf *dst, bool dst_written,
		       struct dma_buf *src, long timeout)
{
	long left;

	might_sleep();
	left = dma_resv_wait_timeout(dst->resv, dst_written ?
				     DMA_RESV_USAGE_READ : DMA_RESV_USAGE_WRITE,
				     true, timeout);
	if (left > 0 && src && src->resv != dst->resv)
		left = dma_resv_wait_timeout(src->resv, DMA_RESV_USAGE_WRITE,
					     true, left);
	return left ? left : -ETIMEDOUT;
}

/**
 * mmedge_fence_publish() - give a job its fence if its buffers are idle
 * @dst: the job's buffer (copy: the destination)
 * @dst_written: the engine writes @dst (capture, copy)
 * @src: copy: the source, which the engine only reads; else NULL
 * @context: the channel's fence context
 * @seqno: the channel's last seqno; the fence takes the next one. The
 *	caller serialises publications on the channel (its qbuf_lock).
 * @fp: the fence from mmedge_fence_alloc(); taken (*@fp = NULL) when
 *	it becomes *@fence
 * @fence: on success and on -ENOMEM from the sync_file, the job's fence
 * @sync: if not NULL, a sync_file of the fence is created here
 *
 * With the reservation objects of both buffers locked, checks that what
 * the job conflicts with (see mmedge_fence_wait()) has signalled, then
 * gives the fence the next seqno and adds it to both buffers, as a write
 * fence to a written buffer and as a read fence to a read one: to both
 * or to neither. Never waits for a fence.
 *
 * Must not be called with mmedge_engine.lock held (it allocates and locks
 * reservation objects).
 *
 * Return: 0; -EAGAIN if a fence the job conflicts with has not signalled
 * (added since the caller's wait): nothing was done; -ERESTARTSYS or
 * -EINTR if a signal arrived while locking; -ENOMEM (nothing added).
 */
int mmedge_fence_publish(struct dma_buf *dst, bool dst_written,
			 struct dma_buf *src, u64 context, u64 *seqno,
			 struct mmedge_fence **fp, struct dma_fence **fence,
			 struct sync_file **sync)
{
	struct dma_resv *a = dst->resv;
	struct dma_resv *b = src ? src->resv : NULL;
	struct ww_acquire_ctx ctx;
	int ret;

	if (b == a)
		b = NULL;
	ret = mmedge_resv_lock2(a, b, &ctx);
	if (ret)
		return ret;
	if (!dma_resv_test_signaled(a, dst_written ? DMA_RESV_USAGE_READ :
						     DMA_RESV_USAGE_WRITE) ||
	    (b && !dma_resv_test_signaled(b, DMA_RESV_USAGE_WRITE))) {
		ret = -EAGAIN;
		goto unlock;
	}
	ret = dma_resv_reserve_fences(a, 1);
	if (!ret && b)
		ret = dma_resv_reserve_fences(b, 1);
	if (ret)
		goto unlock;
	*fence = mmedge_fence_init(*fp, context, ++*seqno);
	*fp = NULL;
	if (sync) {
		*sync = sync_file_create(*fence);
		if (!*sync) {
			ret = -ENOMEM;
			goto unlock;
		}
	}
	dma_resv_add_fence(a, *fence, dst_written ? DMA_RESV_USAGE_WRITE :
						    DMA_RESV_USAGE_READ);
	if (b)
		dma_resv_add_fence(b, *fence, DMA_RESV_USAGE_READ);
unlock:
	if (b)
		dma_resv_unlock(b);
	dma_resv_unlock(a);
	ww_acquire_fini(&ctx);
	return ret;
}

/**
 * mmedge_fence_rearm() - give an idle buffer a new write fence
 * @buf: the buffer
 * @context: its channel's fence context
 * @seqno: the channel's last seqno; the fence takes the next one. The
 *	caller serialises publications on the channel (its qbuf_lock).
 * @fp: the fence from mmedge_fence_alloc(); taken (*@fp = NULL) when
 *	it is returned
 *
 * For MMEDGE_OVERRUN_DROP_OLDEST: a filled buffer goes back to the
 * engine to be overwritten. It is not if anyone still reads it (an
 * unsignalled fence in its reservation object). Never waits for a fence.
 *
 * Return: the fence, added to @buf's reservation object as a write
 * fence; ERR_PTR(-EBUSY) if the buffer is not idle, ERR_PTR(-ENOMEM).
 */
struct dma_fence *mmedge_fence_rearm(struct dma_buf *buf, u64 context,
				     u64 *seqno, struct mmedge_fence **fp)
{
	struct dma_resv *resv = buf->resv;
	struct dma_fence *fence = NULL;
	int ret;

	dma_resv_lock(resv, NULL);
	if (!dma_resv_test_signaled(resv, DMA_RESV_USAGE_READ))
		ret = -EBUSY;
	else
		ret = dma_resv_reserve_fences(resv, 1);
	if (!ret) {
		fence = mmedge_fence_init(*fp, context, ++*seqno);
		*fp = NULL;
		dma_resv_add_fence(resv, fence, DMA_RESV_USAGE_WRITE);
	}
	dma_resv_unlock(resv);
	return ret ? ERR_PTR(ret) : fence;
}
