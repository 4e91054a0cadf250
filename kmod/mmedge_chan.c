// SPDX-License-Identifier: GPL-2.0
/*
 * mmedge: channels: create, configure, destroy, queue and dequeue
 * buffers, stats, poll, and a channel's lifetime.
 *
 * A channel lives on the engine's list (mmedge_engine.chans) from
 * CHAN_CREATE until CHAN_DESTROY, the close of its file, or, dead but
 * listed, until that close after the instance was unbound. It is
 * reference counted (mmedge_chan.ref) so that a QBUF that waits for a
 * buffer's fences without mmedge_engine.lock keeps it. Destroying a
 * channel takes it off the list under mmedge_engine.lock, then, without
 * that lock, stops its timer and its DROP_OLDEST work and releases its
 * jobs, whose fences signal with -ECANCELED.
 *
 * Nothing here allocates, takes a reservation lock or waits for a fence
 * while holding mmedge_engine.lock: the engine thread signals fences
 * under it (see mmedge_engine.c).
 */

#include <linux/capability.h>
#include <linux/dma-buf.h>
#include <linux/dma-fence.h>
#include <linux/file.h>
#include <linux/ktime.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/sync_file.h>

#include "mmedge_chan.h"
#include "mmedge_clock.h"
#include "mmedge_compat.h"
#include "mmedge_drv.h"
#include "mmedge_fence.h"
#include "mmedge_nl.h"
#include "mmedge_src.h"
#include "mmedge_uapi.h"
#include "mmedge_trace.h"
#include "mmedge_user.h"

/* Undo a job's mappings for the DMA engine (none on the soft engine). */
static void mmedge_qb_dma_unmap(struct mmedge_qb *qb)
{
	if (qb->dsgt)
		dma_buf_unmap_attachment_unlocked(qb->att, qb->dsgt,
						  DMA_BIDIRECTIONAL);
	if (qb->att)
		dma_buf_detach(qb->dmabuf, qb->att);
	if (qb->src_sgt)
		dma_buf_unmap_attachment_unlocked(qb->src_att, qb->src_sgt,
						  DMA_TO_DEVICE);
	if (qb->src_att)
		dma_buf_detach(qb->src, qb->src_att);
	qb->dsgt = NULL;
	qb->att = NULL;
	qb->src_sgt = NULL;
	qb->src_att = NULL;
}

/* Release a job: its fence, if still pending, signals with @error. */
void mmedge_qb_free(struct mmedge_qb *qb, int error)
{
	if (qb->fence) {
		if (!dma_fence_is_signaled(qb->fence)) {
			dma_fence_set_error(qb->fence, error);
			dma_fence_signal(qb->fence);
		}
		dma_fence_put(qb->fence);
	}
	mmedge_qb_dma_unmap(qb);
	if (qb->map.vaddr)
		mmedge_dma_buf_vunmap(qb->dmabuf, &qb->map);
	if (qb->src_map.vaddr)
		mmedge_dma_buf_vunmap(qb->src, &qb->src_map);
	if (qb->src)
		dma_buf_put(qb->src);
	dma_buf_put(qb->dmabuf);
	kfree(qb);
}

/* Release the jobs of @list in order, so their fences signal in order. */
void mmedge_qb_free_list(struct list_head *list, int error)
{
	struct mmedge_qb *qb, *tmp;

	list_for_each_entry_safe(qb, tmp, list, node) {
		list_del(&qb->node);
		mmedge_qb_free(qb, error);
	}
}

/**
 * mmedge_chan_cancel_jobs() - take all jobs off a dead channel
 * @ch: the channel, dead, its timer and rearm work stopped
 * @out: the jobs are appended here in fence order: the one in flight,
 *	the queued ones, the one being re-armed, then the done ones
 *
 * The caller holds mmedge_engine.lock and releases the jobs with
 * mmedge_qb_free_list() after dropping it. Jobs that a QBUF is still
 * preparing (mmedge_chan.staging) stay: that QBUF fails.
 */
void mmedge_chan_cancel_jobs(struct mmedge_chan *ch, struct list_head *out)
{
	lockdep_assert_held(&ch->eng->lock);

	if (ch->cur) {
		ch->errors++;
		list_add_tail(&ch->cur->node, out);
		ch->cur = NULL;
	}
	list_splice_tail_init(&ch->queued, out);
	if (ch->rearm) {
		list_add_tail(&ch->rearm->node, out);
		ch->rearm = NULL;
	}
	list_splice_tail_init(&ch->done, out);
	ch->frame_pending = false;
	ch->nr_jobs = 0;
}

/* The channel of the instance with id @id, or NULL. */
struct mmedge_chan *mmedge_chan_find(struct mmedge_engine *eng, u32 id)
{
	struct mmedge_chan *ch;

	lockdep_assert_held(&eng->lock);
	list_for_each_entry(ch, &eng->chans, node)
		if (ch->id == id)
			return ch;
	return NULL;
}

/* The channel of the instance named @name, or NULL. */
struct mmedge_chan *mmedge_chan_find_name(struct mmedge_engine *eng,
					  const char *name)
{
	struct mmedge_chan *ch;

	lockdep_assert_held(&eng->lock);
	list_for_each_entry(ch, &eng->chans, node)
		if (!strcmp(ch->name, name))
			return ch;
	return NULL;
}

static struct mmedge_chan *mmedge_chan_find_own(struct mmedge_file *mf, u32 id)
{
	struct mmedge_chan *ch = mmedge_chan_find(&mf->mdev->eng, id);

	return ch && ch->mf == mf ? ch : NULL;
}

static void mmedge_chan_release(struct kref *ref)
{
	struct mmedge_chan *ch = container_of(ref, struct mmedge_chan, ref);

	mmedge_user_put(ch->user);
	mutex_destroy(&ch->qbuf_lock);
	kfree(ch);
}

void mmedge_chan_put(struct mmedge_chan *ch)
{
	kref_put(&ch->ref, mmedge_chan_release);
}

/* Append @qb to @ch's queue; a job that becomes the head starts its clock. */
void mmedge_chan_enqueue(struct mmedge_chan *ch, struct mmedge_qb *qb)
{
	lockdep_assert_held(&ch->eng->lock);

	if (!ch->cur && list_empty(&ch->queued))
		ch->progress_ns = ktime_get_ns();
	list_add_tail(&qb->node, &ch->queued);
	trace_mmedge_qbuf(ch, qb);
}

/* @n more of @ch's frames were lost (no buffer, overrun, injected). */
void mmedge_chan_drop(struct mmedge_chan *ch, u64 n)
{
	lockdep_assert_held(&ch->eng->lock);

	if (!n)
		return;
	ch->dropped += n;
	trace_mmedge_drop(ch, n);
}

/* Take @ch off the instance (first half of a destroy, under the lock). */
static void mmedge_chan_unlink(struct mmedge_chan *ch)
{
	struct mmedge_engine *eng = ch->eng;

	lockdep_assert_held(&eng->lock);
	ch->dead = true;
	mmedge_arb_remove(&eng->arb, &ch->arb);
	list_del(&ch->node);
	ch->mf->nr_chans--;
	mmedge_user_uncharge_chan(ch->user);
	atomic_inc(&eng->freeing);
}

/*
 * Second half of a destroy, without the lock: stop the timer and the
 * rearm work, release the jobs (pending fences signal with -ECANCELED),
 * announce it and drop the list's reference.
 */
static void mmedge_chan_finish(struct mmedge_chan *ch)
{
	struct mmedge_engine *eng = ch->eng;
	LIST_HEAD(jobs);

	cancel_work_sync(&ch->rearm_work);
	hrtimer_cancel(&ch->timer);
	/* Its segments still with the DMA engine land first. */
	mmedge_engine_dma_drain(eng, ch);
	mutex_lock(&eng->lock);
	mmedge_chan_cancel_jobs(ch, &jobs);
	atomic_inc(&ch->mf->done_events);
	mutex_unlock(&eng->lock);
	mmedge_qb_free_list(&jobs, -ECANCELED);
	wake_up_interruptible(&eng->done_wq);

	mmedge_nl_chan_event(eng->mdev, MMEDGE_CMD_CHAN_DEL, ch->id, ch->name,
			     ch->src.type, ch->dir);
	if (atomic_dec_and_test(&eng->freeing))
		wake_up_all(&eng->done_wq);
	mmedge_chan_put(ch);
}

void mmedge_file_destroy_chans(struct mmedge_file *mf)
{
	struct mmedge_engine *eng = &mf->mdev->eng;
	struct mmedge_chan *ch, *found;

	for (;;) {
		found = NULL;
		mutex_lock(&eng->lock);
		list_for_each_entry(ch, &eng->chans, node) {
			if (ch->mf == mf) {
				found = ch;
				mmedge_chan_unlink(ch);
				break;
			}
		}
		mutex_unlock(&eng->lock);
		if (!found)
			break;
		mmedge_chan_finish(found);
	}
}

__poll_t mmedge_chan_poll(struct mmedge_file *mf, struct file *file,
			  poll_table *wait)
{
	struct mmedge_engine *eng = &mf->mdev->eng;
	struct mmedge_chan *ch;
	__poll_t mask = 0;

	poll_wait(file, &eng->done_wq, wait);
	if (READ_ONCE(eng->dying))
		return EPOLLERR;
	mutex_lock(&eng->lock);
	list_for_each_entry(ch, &eng->chans, node)
		if (ch->mf == mf && !list_empty(&ch->done))
			mask |= EPOLLIN | EPOLLRDNORM;
	mutex_unlock(&eng->lock);
	return mask;
}

/**
 * mmedge_chan_rearm_work() - MMEDGE_OVERRUN_DROP_OLDEST: refill a done buffer
 * @work: mmedge_chan.rearm_work
 *
 * A frame is due and no buffer is queued: the engine took the oldest
 * filled buffer off the done list (mmedge_chan.rearm). Here, outside the
 * engine's signalling path, it gets a new fence, added to its reservation
 * object as a write fence, and goes back to the queue; the frame it held
 * counts as dropped. If someone still reads the buffer (an unsignalled
 * fence in its reservation object), it is not overwritten: it goes back
 * to the head of the done list and the new frame is dropped instead.
 */
static void mmedge_chan_rearm_work(struct work_struct *work)
{
	struct mmedge_chan *ch = container_of(work, struct mmedge_chan,
					      rearm_work);
	struct mmedge_engine *eng = ch->eng;
	struct dma_fence *fence = NULL;
	struct mmedge_qb *qb, *gone = NULL;
	struct mmedge_fence *f;
	int ret, error = -ECANCELED;

	f = mmedge_fence_alloc(GFP_KERNEL);
	mutex_lock(&ch->qbuf_lock);
	mutex_lock(&eng->lock);
	qb = ch->rearm;
	ret = ch->dead ? -ENOENT : f ? 0 : -ENOMEM;
	mutex_unlock(&eng->lock);
	if (!qb)
		goto out;

	if (!ret) {
		fence = mmedge_fence_rearm(qb->dmabuf, ch->fence_ctx,
					   &ch->fence_seqno, &f);
		if (IS_ERR(fence))
			fence = NULL;
	}

	mutex_lock(&eng->lock);
	ch->rearm = NULL;
	if (fence) {
		dma_fence_put(qb->fence);
		qb->fence = fence;
	}
	if (ch->dead) {
		gone = qb;
		if (eng->dead)
			error = -ENODEV;
	} else if (fence) {
		/* The frame it held was never dequeued: it is dropped. */
		mmedge_chan_drop(ch, 1);
		ch->drop_mark = true;
		mmedge_chan_enqueue(ch, qb);
	} else {
		list_add(&qb->node, &ch->done);
		if (ch->frame_pending && !ch->cur) {
			mmedge_chan_drop(ch, 1);
			ch->drop_mark = true;
			ch->frame_pending = false;
		}
	}
	mutex_unlock(&eng->lock);
out:
	mutex_unlock(&ch->qbuf_lock);
	kfree(f);
	if (gone)
		mmedge_qb_free(gone, error);
	else
		mmedge_engine_kick(eng);
}

/* Weight above the default and the latency class need CAP_SYS_NICE. */
static int mmedge_chan_check_perm(u32 weight, u32 class)
{
	if ((weight > MMEDGE_WEIGHT_DEFAULT || class == MMEDGE_CLASS_LATENCY) &&
	    !capable(CAP_SYS_NICE))
		return -EPERM;
	return 0;
}

/*
 * MMEDGE_IOC_CHAN_CREATE: create a channel: capture (on a source), feed
 * (to the virtual sink) or copy (memory to memory).
 *
 * Errors:
 *  -EINVAL: unknown dir or flags, bad source config (feed, copy: not all
 *	     zero), weight/class/cap out of range (cap above
 *	     MMEDGE_RATE_CAP_MAX, latency without a cap), bad segment or
 *	     overrun (feed, copy: not zero), reserved set; sensor clock
 *	     offset or drift out of range (MMEDGE_SENSOR_OFFSET_MAX,
 *	     MMEDGE_SENSOR_DRIFT_MAX) or set on a feed or copy channel,
 *	     sensor_pad set.
 *  -EPERM:  weight above the default or latency class without
 *	     CAP_SYS_NICE.
 *  -ENOSPC: the instance has MMEDGE_MAX_CHANS channels, this file
 *	     MMEDGE_MAX_FILE_CHANS (16), or the caller's uid uid_chan_limit
 *	     (on all instances) and the caller has no CAP_SYS_RESOURCE.
 *  -EEXIST: another channel of the instance has that name.
 *  -ENOMEM: out of memory.
 */
int mmedge_ioctl_chan_create(struct mmedge_file *mf, void *data,
			     struct mmedge_ioctl_ctx *ctx)
{
	struct mmedge_engine *eng = &mf->mdev->eng;
	struct mmedge_chan_create *c = data;
	struct mmedge_chan *ch, *o;
	u32 weight = c->weight ? c->weight : MMEDGE_WEIGHT_DEFAULT;
	u32 segment = c->segment ? c->segment : MMEDGE_SEGMENT_DEFAULT;
	char name[MMEDGE_NAME_LEN];
	u32 id, src_type, dir;
	u64 id_mask = 0;
	int ret;

	ret = mmedge_chan_create_check(c);
	if (ret)
		return ret;
	ret = mmedge_chan_check_perm(weight, c->class);
	if (ret)
		return ret;

	ch = kzalloc(sizeof(*ch), GFP_KERNEL_ACCOUNT);
	if (!ch)
		return -ENOMEM;
	kref_init(&ch->ref);
	ch->eng = eng;
	ch->mf = mf;
	ch->dir = c->dir;
	ch->src = c->src;
	if (ch->dir == MMEDGE_CHAN_CAPTURE) {
		ch->frame_bytes = mmedge_src_frame_bytes(&c->src);
		ch->meta_offset = ALIGN(ch->frame_bytes, 64);
		ch->period_ns = mmedge_src_period_ns(&c->src);
		ch->sclk.offset_ns = c->sensor_offset_ns;
		ch->sclk.drift_ppb = c->sensor_drift_ppb;
	}
	ch->segment = segment;
	ch->overrun = c->overrun;
	mmedge_arb_set(&ch->arb, weight, c->class, c->cap);
	INIT_LIST_HEAD(&ch->staging);
	INIT_LIST_HEAD(&ch->queued);
	INIT_LIST_HEAD(&ch->done);
	INIT_WORK(&ch->rearm_work, mmedge_chan_rearm_work);
	mutex_init(&ch->qbuf_lock);
	ch->fence_ctx = dma_fence_context_alloc(1);
	hrtimer_init(&ch->timer, CLOCK_MONOTONIC, HRTIMER_MODE_REL_SOFT);
	ch->timer.function = mmedge_chan_timer;
	ch->user = mmedge_user_get_current();
	if (!ch->user) {
		ret = -ENOMEM;
		goto err_free;
	}
	ret = mmedge_user_charge_chan(ch->user);
	if (ret)
		goto err_user;

	mutex_lock(&eng->lock);
	if (mf->nr_chans >= MMEDGE_MAX_FILE_CHANS) {
		ret = -ENOSPC;
		goto err_unlock;
	}
	list_for_each_entry(o, &eng->chans, node)
		id_mask |= BIT_ULL(o->id - 1);
	if (id_mask == U64_MAX) {
		ret = -ENOSPC;
		goto err_unlock;
	}
	ch->id = ffz(id_mask) + 1;
	if (c->name[0]) {
		strscpy(ch->name, c->name, sizeof(ch->name));
	} else {
		static const char * const kind[] = {
			[MMEDGE_SRC_CAMERA] = "camera",
			[MMEDGE_SRC_MIC] = "mic",
			[MMEDGE_SRC_IMU] = "imu",
		};
		const char *base = c->dir == MMEDGE_CHAN_FEED ? "feed" :
				   c->dir == MMEDGE_CHAN_COPY ? "copy" :
				   kind[c->src.type];
		unsigned int n = 0;

		do {
			snprintf(ch->name, sizeof(ch->name), "%s%u", base, n++);
		} while (mmedge_chan_find_name(eng, ch->name));
	}
	if (mmedge_chan_find_name(eng, ch->name)) {
		ret = -EEXIST;
		goto err_unlock;
	}
	ch->bw_start_ns = ktime_get_ns();
	/* The sensor's epoch: fixed before anyone can find the channel. */
	if (ch->dir == MMEDGE_CHAN_CAPTURE)
		ch->sclk.epoch_ns = mmedge_ts_soc_ns(&eng->tc_mono,
						     mmedge_counter_read(eng));
	mmedge_arb_add(&eng->arb, &ch->arb, ch->bw_start_ns);
	list_add_tail(&ch->node, &eng->chans);
	mf->nr_chans++;
	/* Once unlocked, a sibling thread may destroy it: copy what we need. */
	id = ch->id;
	strscpy(name, ch->name, sizeof(name));
	src_type = ch->src.type;
	dir = ch->dir;
	c->frame_size = ch->frame_bytes;
	c->meta_offset = ch->meta_offset;
	c->sensor_epoch = ch->sclk.epoch_ns;
	mutex_unlock(&eng->lock);

	c->weight = weight;
	c->segment = segment;
	c->id = id;
	strscpy(c->name, name, sizeof(c->name));
	mmedge_nl_chan_event(eng->mdev, MMEDGE_CMD_CHAN_NEW, id, name,
			     src_type, dir);
	return 0;

err_unlock:
	mutex_unlock(&eng->lock);
	mmedge_user_uncharge_chan(ch->user);
err_user:
	mmedge_user_put(ch->user);
err_free:
	mutex_destroy(&ch->qbuf_lock);
	kfree(ch);
	return ret;
}

/*
 * MMEDGE_IOC_CHAN_CONFIG: read or change a channel's weight, class and
 * cap. Any file of the instance may read any channel's; changing a
 * channel another file created needs CAP_NET_ADMIN or CAP_SYS_NICE (the
 * operator's tool, like netlink's CHAN_SET). On its own channel a file
 * may lower the weight and the cap and move to best effort. Changes apply
 * from the next segment.
 *
 * Errors:
 *  -ENOENT: no channel with that id.
 *  -EINVAL: unknown set bits, value out of range (cap above
 *	     MMEDGE_RATE_CAP_MAX), latency without cap, reserved set.
 *  -EPERM:  changing another file's channel without CAP_NET_ADMIN or
 *	     CAP_SYS_NICE; raising the weight above 100, switching to the
 *	     latency class or raising a latency channel's cap without
 *	     CAP_SYS_NICE.
 *  -ENOMEM: out of memory.
 */
int mmedge_ioctl_chan_config(struct mmedge_file *mf, void *data,
			     struct mmedge_ioctl_ctx *ctx)
{
	struct mmedge_chan_config *c = data;
	struct mmedge_chan_setting st = {
		.id = c->id, .set = c->set, .weight = c->weight,
		.class = c->class, .cap = c->cap,
	};
	struct mmedge_chan_perm perm = { .owner = mf };
	const char *why;
	unsigned int bad;
	int ret;

	ret = mmedge_chan_config_check(c);
	if (ret)
		return ret;
	if (c->set) {
		perm.can_nice = capable(CAP_SYS_NICE);
		perm.can_other = perm.can_nice || capable(CAP_NET_ADMIN);
	}
	ret = mmedge_engine_apply(&mf->mdev->eng, &st, 1, &perm, &bad, &why);
	if (ret)
		return ret;
	c->weight = st.weight;
	c->class = st.class;
	c->cap = st.cap;
	return 0;
}

/*
 * MMEDGE_IOC_CHAN_DESTROY: destroy a channel of this file; its buffers
 * complete with an error and their fences signal with -ECANCELED.
 *
 * Errors:
 *  -ENOENT: no channel with that id in this file.
 *  -EINVAL: flags or reserved set.
 */
int mmedge_ioctl_chan_destroy(struct mmedge_file *mf, void *data,
			      struct mmedge_ioctl_ctx *ctx)
{
	struct mmedge_engine *eng = &mf->mdev->eng;
	struct mmedge_chan_destroy *d = data;
	struct mmedge_chan *ch;
	int ret;

	ret = mmedge_chan_destroy_check(d);
	if (ret)
		return ret;
	mutex_lock(&eng->lock);
	ch = mmedge_chan_find_own(mf, d->id);
	if (ch)
		mmedge_chan_unlink(ch);
	mutex_unlock(&eng->lock);
	if (!ch)
		return -ENOENT;
	mmedge_chan_finish(ch);
	return 0;
}

static bool mmedge_qb_uses(const struct mmedge_qb *qb, struct dma_buf *db)
{
	return qb && (qb->dmabuf == db || qb->src == db);
}

static bool mmedge_list_uses(const struct list_head *list, struct dma_buf *db)
{
	struct mmedge_qb *qb;

	list_for_each_entry(qb, list, node)
		if (mmedge_qb_uses(qb, db))
			return true;
	return false;
}

/* Does a channel of the instance hold @db, in any state? */
static bool mmedge_chan_holds(struct mmedge_engine *eng, struct dma_buf *db)
{
	struct mmedge_chan *ch;

	lockdep_assert_held(&eng->lock);
	list_for_each_entry(ch, &eng->chans, node) {
		if (mmedge_qb_uses(ch->cur, db) || mmedge_qb_uses(ch->rearm, db) ||
		    mmedge_list_uses(&ch->staging, db) ||
		    mmedge_list_uses(&ch->queued, db) ||
		    mmedge_list_uses(&ch->done, db))
			return true;
	}
	return false;
}

/*
 * QBUF, under mmedge_engine.lock: check that @qb may join @ch and put it
 * on the staging list, where it holds its buffers but the engine does
 * not see it.
 */
static int mmedge_qbuf_stage(struct mmedge_chan *ch, struct mmedge_qb *qb)
{
	struct mmedge_engine *eng = ch->eng;
	u64 size = qb->dmabuf->size;

	lockdep_assert_held(&eng->lock);

	/* Destroyed meanwhile. */
	if (ch->dead)
		return eng->dead ? -ENODEV : -ENOENT;
	if ((ch->dir == MMEDGE_CHAN_CAPTURE &&
	     size < ch->meta_offset + sizeof(struct mmedge_frame_meta)) ||
	    (ch->dir == MMEDGE_CHAN_COPY &&
	     size < ALIGN(qb->len, 64) + sizeof(struct mmedge_frame_meta)))
		return -ENOSPC;
	if (mmedge_chan_holds(eng, qb->dmabuf) ||
	    (qb->src && mmedge_chan_holds(eng, qb->src)))
		return -EBUSY;
	if (ch->nr_jobs >= MMEDGE_MAX_CHAN_JOBS)
		return -ENOBUFS;
	list_add_tail(&qb->node, &ch->staging);
	ch->nr_jobs++;
	return 0;
}

/* Get @fd's dma-buf for a job: mmedge's or imported by this file. */
static struct dma_buf *mmedge_qbuf_get(struct mmedge_file *mf, int fd)
{
	struct dma_buf *dmabuf = dma_buf_get(fd);

	if (IS_ERR(dmabuf))
		return dmabuf;
	if (!mmedge_buf_usable(mf, dmabuf)) {
		dma_buf_put(dmabuf);
		return ERR_PTR(-EINVAL);
	}
	return dmabuf;
}

/* Map a job's buffer for the CPU: the engine reads and writes through it. */
static int mmedge_qbuf_vmap(struct dma_buf *dmabuf, struct iosys_map *map)
{
	int ret = mmedge_dma_buf_vmap(dmabuf, map);

	if (ret) {
		iosys_map_clear(map);
		return ret;
	}
	return map->is_iomem ? -EINVAL : 0;
}

/*
 * Map a job's buffers for a hardware DMA engine (nothing on the soft
 * engine), under mmedge_dev.lock with the instance alive: the engine's
 * device goes with the unbind, which waits for that lock.
 *
 * A feed's buffer is only read, by the CPU-side virtual sink. The others
 * are mapped both ways: the DMA engine writes the data, the CPU the
 * in-band record, which a DMA_FROM_DEVICE unmap would discard. A copy's
 * source is read by the DMA engine straight into the destination. The
 * exporter keeps the mapping in step with CPU writes (end_cpu_access) and
 * the engine reads it only after the job is queued, that is after
 * mmedge_fence_publish() saw the source's write fences signalled.
 */
static int mmedge_qbuf_dma_map(struct mmedge_engine *eng, struct mmedge_qb *qb,
			       bool written)
{
	struct device *dev = mmedge_dmaeng_dev(&eng->dmaeng);
	int ret;

	lockdep_assert_held(&eng->mdev->lock);
	if (!dev || !written)
		return 0;
	qb->att = dma_buf_attach(qb->dmabuf, dev);
	if (IS_ERR(qb->att)) {
		ret = PTR_ERR(qb->att);
		qb->att = NULL;
		return ret;
	}
	qb->dsgt = dma_buf_map_attachment_unlocked(qb->att, DMA_BIDIRECTIONAL);
	if (IS_ERR(qb->dsgt)) {
		ret = PTR_ERR(qb->dsgt);
		qb->dsgt = NULL;
		return ret;
	}
	if (!qb->src)
		return 0;
	qb->src_att = dma_buf_attach(qb->src, dev);
	if (IS_ERR(qb->src_att)) {
		ret = PTR_ERR(qb->src_att);
		qb->src_att = NULL;
		return ret;
	}
	qb->src_sgt = dma_buf_map_attachment_unlocked(qb->src_att,
						      DMA_TO_DEVICE);
	if (IS_ERR(qb->src_sgt)) {
		ret = PTR_ERR(qb->src_sgt);
		qb->src_sgt = NULL;
		return ret;
	}
	return 0;
}

/*
 * QBUF's first half, under mmedge_dev.lock with the instance alive: find
 * the channel (a reference in *@chp), check the job against it, map its
 * buffers for the CPU and put it on the channel's staging list (*@qbp),
 * where it holds its buffers. On error nothing is left.
 */
static int mmedge_qbuf_prepare(struct mmedge_file *mf, struct mmedge_qbuf *q,
			       struct mmedge_chan **chp, struct mmedge_qb **qbp)
{
	struct mmedge_engine *eng = &mf->mdev->eng;
	bool has_src = q->flags & MMEDGE_QBUF_SRC;
	struct mmedge_chan *ch;
	struct dma_buf *dmabuf;
	struct mmedge_qb *qb;
	bool written;
	int ret;

	lockdep_assert_held(&mf->mdev->lock);
	dmabuf = mmedge_qbuf_get(mf, q->fd);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);

	mutex_lock(&eng->lock);
	ch = mmedge_chan_find_own(mf, q->chan);
	if (ch)
		kref_get(&ch->ref);
	mutex_unlock(&eng->lock);
	if (!ch) {
		dma_buf_put(dmabuf);
		return -ENOENT;
	}
	/* Copy needs a source; capture takes no length, the others need one. */
	ret = mmedge_qbuf_check_dir(q, ch->dir);
	/* The channel writes a capture buffer or a copy's destination. */
	written = ch->dir != MMEDGE_CHAN_FEED;
	if (!ret && !(dmabuf->file->f_mode & (written ? FMODE_WRITE : FMODE_READ)))
		ret = -EBADF;
	if (ret) {
		dma_buf_put(dmabuf);
		mmedge_chan_put(ch);
		return ret;
	}

	qb = kzalloc(sizeof(*qb), GFP_KERNEL_ACCOUNT);
	if (!qb) {
		dma_buf_put(dmabuf);
		mmedge_chan_put(ch);
		return -ENOMEM;
	}
	INIT_LIST_HEAD(&qb->node);
	qb->dmabuf = dmabuf;
	qb->cookie = q->cookie;
	qb->len = q->bytesused;
	ret = mmedge_qbuf_vmap(dmabuf, &qb->map);
	if (ret)
		goto err_free;
	if (has_src) {
		qb->src = mmedge_qbuf_get(mf, q->src_fd);
		if (IS_ERR(qb->src)) {
			ret = PTR_ERR(qb->src);
			qb->src = NULL;
			goto err_free;
		}
		if (qb->src == dmabuf) {
			ret = -EINVAL;
			goto err_free;
		}
		if (!(qb->src->file->f_mode & FMODE_READ)) {
			ret = -EBADF;
			goto err_free;
		}
		ret = mmedge_qbuf_vmap(qb->src, &qb->src_map);
		if (ret)
			goto err_free;
	}
	if (ch->dir == MMEDGE_CHAN_FEED ? q->bytesused > dmabuf->size :
	    has_src && q->bytesused > qb->src->size) {
		ret = -EINVAL;
		goto err_free;
	}

	mutex_lock(&eng->lock);
	ret = mmedge_qbuf_stage(ch, qb);
	mutex_unlock(&eng->lock);
	if (ret)
		goto err_free;
	*chp = ch;
	*qbp = qb;
	return 0;

err_free:
	mmedge_qb_free(qb, -ECANCELED);
	mmedge_chan_put(ch);
	return ret;
}

/*
 * QBUF's second half, under mmedge_dev.lock with the instance alive, once
 * mmedge_fence_wait() saw the buffers idle: map them for the DMA engine,
 * then, under the channel's qbuf_lock, publish the job's fence (which
 * takes the channel's next seqno) and append the job to the queue, so
 * that jobs queue in seqno order. On error the job stays on the staging
 * list, without DMA mappings (the engine's device may go once the lock
 * is dropped); -EAGAIN: a conflicting fence appeared since the wait,
 * nothing was published.
 */
static int mmedge_qbuf_commit(struct mmedge_chan *ch, struct mmedge_qb *qb,
			      struct mmedge_fence **fp, struct sync_file **sync)
{
	struct mmedge_engine *eng = ch->eng;
	bool written = ch->dir != MMEDGE_CHAN_FEED;
	int ret;

	lockdep_assert_held(&eng->mdev->lock);
	ret = mmedge_qbuf_dma_map(eng, qb, written);
	if (ret)
		goto err_unmap;
	ret = mutex_lock_interruptible(&ch->qbuf_lock);
	if (ret)
		goto err_unmap;
	ret = mmedge_fence_publish(qb->dmabuf, written, qb->src, ch->fence_ctx,
				   &ch->fence_seqno, fp, &qb->fence, sync);
	if (!ret) {
		mutex_lock(&eng->lock);
		/* A fence published on a channel destroyed meanwhile signals. */
		if (ch->dead) {
			ret = eng->dead ? -ENODEV : -ENOENT;
		} else {
			list_del(&qb->node);
			qb->queued_ns = ktime_get_ns();
			mmedge_chan_enqueue(ch, qb);
			if (!ch->streaming) {
				ch->streaming = true;
				if (ch->dir == MMEDGE_CHAN_CAPTURE)
					hrtimer_start(&ch->timer,
						      ns_to_ktime(ch->period_ns),
						      HRTIMER_MODE_REL_SOFT);
			}
		}
		mutex_unlock(&eng->lock);
	}
	mutex_unlock(&ch->qbuf_lock);
	if (!ret) {
		mmedge_engine_kick(eng);
		return 0;
	}
err_unmap:
	mmedge_qb_dma_unmap(qb);
	return ret;
}

/*
 * MMEDGE_IOC_QBUF: queue a buffer on a channel of this file: capture, an
 * empty buffer to fill (the first one starts the source); feed, a filled
 * buffer for the device to read; copy, a job (MMEDGE_QBUF_SRC: src_fd's
 * first bytesused bytes into fd). Feed and copy jobs are due at once.
 *
 * Runs without mmedge_dev.lock (see mmedge_ioctl_unlocked()) and takes it
 * for its two halves. What can fail for want of memory or fds comes
 * first: the fence and, with MMEDGE_QBUF_FENCE, the fd. Then, under the
 * lock, the job is checked and staged on the channel (it holds its
 * buffers). Without any lock QBUF waits until the buffer's earlier fences
 * have signalled (for a buffer the channel writes all of them, for one it
 * reads the writers'), at most MMEDGE_JOB_TIMEOUT_MS (2 s) in all; so a
 * fence nobody signals holds off neither an unbind nor other files.
 * Then, under the lock again and the channel's qbuf_lock, it checks the
 * buffers once more under their reservation locks (a fence added since
 * means waiting again), gives the fence the channel's next seqno, creates
 * the sync_file, adds the fence to the buffers' reservation objects and
 * only then hands the job to the engine.
 *
 * The fence is bounded: it signals when the job completes; with
 * -ETIMEDOUT (MMEDGE_FRAME_ERROR) if the job, once at the head of the
 * channel's queue, makes no progress (a frame, a segment) for 2 s plus a
 * frame period; with -ECANCELED when the channel is destroyed or its
 * file closed; with -ENODEV when the instance is unbound.
 *
 * Errors:
 *  -ENOENT: no channel with that id in this file (or destroyed meanwhile).
 *  -ENODEV: the instance was unbound (also while waiting).
 *  -EBADF:  fd (or src_fd) is not open; or it is not open for writing
 *	     (FMODE_WRITE) and the channel writes the buffer (capture, a
 *	     copy's destination), or not for reading (FMODE_READ) and the
 *	     channel reads it (feed, a copy's source).
 *  -EINVAL: not a dma-buf, or a foreign one this file did not import;
 *	     unknown flags, reserved set; a buffer without a CPU mapping;
 *	     capture: bytesused or MMEDGE_QBUF_SRC set; feed: MMEDGE_QBUF_SRC
 *	     set; copy: MMEDGE_QBUF_SRC missing, the source is the
 *	     destination; feed, copy: bytesused 0 or past the end of the
 *	     (source) buffer; src_fd set without MMEDGE_QBUF_SRC.
 *  -ENOSPC: capture: the buffer is smaller than meta_offset + the in-band
 *	     record; copy: the destination is smaller than
 *	     ALIGN(bytesused, 64) + the in-band record.
 *  -EBUSY:  the buffer (or source) is already held by a channel: queued,
 *	     in flight, or done and not dequeued.
 *  -ENOBUFS: the channel holds MMEDGE_MAX_CHAN_JOBS (64) jobs, queued,
 *	     in flight or done and not dequeued.
 *  -ETIMEDOUT: the buffer's earlier fences did not signal within 2 s.
 *  -EINTR, -ERESTARTSYS: a signal arrived while waiting for another
 *	     QBUF of the channel, a reservation lock or earlier fences.
 *  -ENOMEM, -EMFILE: no memory or fd for the job or its fence.
 */
int mmedge_ioctl_qbuf(struct mmedge_file *mf, void *data,
		      struct mmedge_ioctl_ctx *ctx)
{
	struct mmedge_dev *mdev = mf->mdev;
	struct mmedge_engine *eng = &mdev->eng;
	struct mmedge_qbuf *q = data;
	struct sync_file *sync = NULL;
	struct mmedge_fence *f;
	struct mmedge_chan *ch;
	struct mmedge_qb *qb;
	unsigned long deadline;
	int ret, fd = -1;
	long left;

	q->fence_fd = -1;
	ret = mmedge_qbuf_check(q);
	if (ret)
		return ret;

	f = mmedge_fence_alloc(GFP_KERNEL);
	if (!f)
		return -ENOMEM;
	if (q->flags & MMEDGE_QBUF_FENCE) {
		fd = get_unused_fd_flags(O_CLOEXEC);
		if (fd < 0) {
			kfree(f);
			return fd;
		}
	}

	down_read(&mdev->lock);
	ret = mdev->alive ? mmedge_qbuf_prepare(mf, q, &ch, &qb) : -ENODEV;
	up_read(&mdev->lock);
	if (ret)
		goto err_fd;

	deadline = jiffies + msecs_to_jiffies(MMEDGE_JOB_TIMEOUT_MS);
	do {
		left = (long)(deadline - jiffies);
		left = left > 0 ? mmedge_fence_wait(qb->dmabuf,
						    ch->dir != MMEDGE_CHAN_FEED,
						    qb->src, left) : -ETIMEDOUT;
		if (left < 0) {
			ret = left;
			break;
		}
		down_read(&mdev->lock);
		ret = mdev->alive ? mmedge_qbuf_commit(ch, qb, &f,
						       fd >= 0 ? &sync : NULL) :
				    -ENODEV;
		up_read(&mdev->lock);
	} while (ret == -EAGAIN);
	if (ret) {
		mutex_lock(&eng->lock);
		list_del(&qb->node);
		ch->nr_jobs--;
		mutex_unlock(&eng->lock);
		/* A fence already published signals. */
		mmedge_qb_free(qb, -ECANCELED);
		mmedge_chan_put(ch);
		goto err_fd;
	}

	mmedge_chan_put(ch);
	if (sync) {
		q->fence_fd = fd;
		ctx->install_file = sync->file;
		ctx->install_fd = fd;
	}
	return 0;

err_fd:
	if (sync)
		fput(sync->file);
	if (fd >= 0)
		put_unused_fd(fd);
	kfree(f);
	return ret;
}

/*
 * The oldest done job of channel @id of @mf, off the channel, with a
 * reference on the channel in *@chp (the job can only go back to it).
 */
static struct mmedge_qb *mmedge_chan_take_done(struct mmedge_file *mf, u32 id,
					       struct mmedge_chan **chp,
					       int *err)
{
	struct mmedge_engine *eng = &mf->mdev->eng;
	struct mmedge_chan *ch;
	struct mmedge_qb *qb = NULL;

	mutex_lock(&eng->lock);
	ch = mmedge_chan_find_own(mf, id);
	if (!ch || ch->dead) {
		*err = ch && eng->dead ? -ENODEV : -ENOENT;
	} else if (!list_empty(&ch->done)) {
		qb = list_first_entry(&ch->done, struct mmedge_qb, node);
		list_del(&qb->node);
		ch->nr_jobs--;
		kref_get(&ch->ref);
		*chp = ch;
	} else {
		*err = -EAGAIN;
	}
	mutex_unlock(&eng->lock);
	return qb;
}

/*
 * After DQBUF's copy to userspace: the frame is released, or, if the copy
 * failed (-EFAULT), put back at the head of the done list of the channel
 * it came from (the very channel, held since the dequeue: never another
 * one that got its id after a destroy), so the next DQBUF returns it.
 * If that channel was destroyed meanwhile (or the instance went), it is
 * released.
 */
static void mmedge_dqbuf_finish(struct mmedge_file *mf,
				struct mmedge_ioctl_ctx *ctx, bool copied)
{
	struct mmedge_dev *mdev = mf->mdev;
	struct mmedge_engine *eng = &mdev->eng;
	struct mmedge_qb *qb = ctx->finish_obj;
	struct mmedge_chan *ch = ctx->finish_owner;

	if (!copied) {
		down_read(&mdev->lock);
		if (mdev->alive) {
			mutex_lock(&eng->lock);
			if (!ch->dead) {
				list_add(&qb->node, &ch->done);
				ch->nr_jobs++;
				qb = NULL;
			}
			mutex_unlock(&eng->lock);
		}
		up_read(&mdev->lock);
		if (!qb) {
			atomic_inc(&mf->done_events);
			wake_up_interruptible(&eng->done_wq);
			mmedge_chan_put(ch);
			return;
		}
	}
	mmedge_qb_free(qb, copied ? 0 : -ECANCELED);
	mmedge_chan_put(ch);
}

/*
 * MMEDGE_IOC_DQBUF: dequeue the oldest filled buffer (feed, copy: finished
 * job) of a channel of this file, with its sequence number and
 * timestamps, and for a feed the CRC-32 of what the sink read.
 *
 * timeout_ms is relative: a call interrupted by a signal returns
 * -ERESTARTSYS, and if the kernel restarts it (SA_RESTART) the whole
 * timeout_ms starts again.
 *
 * Errors:
 *  -ENOENT:    no channel with that id in this file (or it was destroyed
 *		while waiting).
 *  -EINVAL:    unknown flags, pad or reserved set.
 *  -EAGAIN:    MMEDGE_DQBUF_NONBLOCK and nothing filled.
 *  -ETIMEDOUT: nothing filled within timeout_ms.
 *  -ERESTARTSYS: a signal arrived.
 *  -ENODEV:    the instance went away while waiting.
 *  -EFAULT:    the result could not be written; the frame stays first in
 *		line for the next DQBUF.
 */
int mmedge_ioctl_dqbuf(struct mmedge_file *mf, void *data,
		       struct mmedge_ioctl_ctx *ctx)
{
	struct mmedge_engine *eng = &mf->mdev->eng;
	struct mmedge_dqbuf *d = data;
	struct mmedge_chan *ch = NULL;
	struct mmedge_qb *qb;
	long left;
	int err = 0;

	err = mmedge_dqbuf_check(d);
	if (err)
		return err;

	left = d->timeout_ms ? msecs_to_jiffies(d->timeout_ms) :
			       MAX_SCHEDULE_TIMEOUT;
	for (;;) {
		/* Read before looking, so a completion in between is seen. */
		int seen = atomic_read(&mf->done_events);

		qb = mmedge_chan_take_done(mf, d->chan, &ch, &err);
		if (qb || err != -EAGAIN || d->flags & MMEDGE_DQBUF_NONBLOCK)
			break;
		left = wait_event_interruptible_timeout(eng->done_wq,
							READ_ONCE(eng->dying) ||
							atomic_read(&mf->done_events) != seen,
							left);
		if (left < 0)
			return left;
		if (READ_ONCE(eng->dying))
			return -ENODEV;
		if (!left)
			return -ETIMEDOUT;
	}
	if (!qb)
		return err;

	d->frame_flags = qb->flags;
	d->cookie = qb->cookie;
	d->sequence = qb->sequence;
	d->bytesused = qb->bytesused;
	d->ts = qb->ts;
	d->sensor_sof = qb->sensor_sof;
	d->sensor_eof = qb->sensor_eof;
	d->dropped = qb->dropped;
	d->checksum = qb->len && !qb->src ? qb->crc : 0;
	/* Released once the result reached userspace (mmedge_dqbuf_finish). */
	ctx->finish = mmedge_dqbuf_finish;
	ctx->finish_obj = qb;
	ctx->finish_owner = ch;
	return 0;
}

/*
 * MMEDGE_IOC_CHAN_STATS: a channel's counters (any channel of the
 * instance).
 *
 * Errors:
 *  -ENOENT: no channel with that id.
 *  -EINVAL: flags or reserved set.
 */
int mmedge_ioctl_chan_stats(struct mmedge_file *mf, void *data,
			    struct mmedge_ioctl_ctx *ctx)
{
	struct mmedge_chan_stats *st = data;
	struct mmedge_chan_info *ci;
	int ret;

	ret = mmedge_chan_stats_check(st);
	if (ret)
		return ret;
	ci = kzalloc(sizeof(*ci), GFP_KERNEL);
	if (!ci)
		return -ENOMEM;
	ret = mmedge_engine_chan_info(&mf->mdev->eng, 0, st->id, NULL, ci);
	if (!ret) {
		st->bytes = ci->bytes;
		st->segments = ci->segments;
		st->frames = ci->frames;
		st->dropped = ci->dropped;
		st->errors = ci->errors;
		st->bw_ewma = ci->bw;
		st->weight = ci->weight;
		st->class = ci->class;
		st->cap = ci->cap;
		memcpy(st->wait_hist, ci->wait_hist, sizeof(st->wait_hist));
	}
	kfree(ci);
	return ret;
}
