/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mmedge: a channel and its jobs.
 *
 * mmedge_chan.c has the channel ioctls, a channel's lifetime and its
 * DROP_OLDEST work; mmedge_engine.c moves the channel's frames. The
 * structures below are shared by the two.
 */
#ifndef _MMEDGE_CHAN_H
#define _MMEDGE_CHAN_H

#include <linux/dma-fence.h>
#include <linux/hrtimer.h>
#include <linux/iosys-map.h>
#include <linux/kref.h>
#include <linux/kthread.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/poll.h>
#include <linux/sizes.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/mmedge.h>

#include "mmedge_arb.h"
#include "mmedge_engine.h"
#include "mmedge_ts.h"

/* Channels one open file may have. */
#define MMEDGE_MAX_FILE_CHANS		16
/* Jobs (queued, in flight and done, not dequeued) one channel may hold. */
#define MMEDGE_MAX_CHAN_JOBS		64

struct mmedge_file;

/**
 * struct mmedge_qb - a job: a buffer queued on a channel
 * @node: in the channel's staging, queued or done list.
 * @dmabuf: the buffer (referenced).
 * @map: its kernel mapping.
 * @cookie: userspace's tag.
 * @fence: signalled when the buffer is filled (feed: consumed); an
 *	mmedge fence (struct mmedge_fence).
 * @src: copy: the source buffer (referenced); else NULL.
 * @src_map: its kernel mapping.
 * @len: feed, copy: bytes to move; capture: 0.
 * @queued_ns: when the job was queued (feed, copy: its first segment is
 *	ready then).
 * @crc: feed: running CRC-32 of what the sink read, then the final one.
 * @flags: MMEDGE_FRAME_* of the frame it holds.
 * @sequence: frame number.
 * @bytesused: bytes of data.
 * @ts: the frame's timestamps.
 * @sensor_sof: capture: @ts.sof_raw on the source's sensor clock.
 * @sensor_eof: capture: @ts.eof_raw on the source's sensor clock.
 * @dropped: the channel's drop count when the frame completed.
 * @att: attachment to the dmaengine back end's device, if there is one.
 * @dsgt: the buffer mapped for it (DMA_BIDIRECTIONAL: the CPU writes the
 *	in-band record, the DMA engine the data).
 * @src_att: copy: the source's attachment to that device, if there is one.
 * @src_sgt: copy: the source mapped for it (DMA_TO_DEVICE): the DMA
 *	engine reads it straight into @dsgt.
 */
struct mmedge_qb {
	struct list_head node;
	struct dma_buf *dmabuf;
	struct iosys_map map;
	u64 cookie;
	struct dma_fence *fence;
	struct dma_buf *src;
	struct iosys_map src_map;
	u64 len;
	u64 queued_ns;
	u32 crc;
	u32 flags;
	u64 sequence;
	u64 bytesused;
	struct mmedge_timestamps ts;
	u64 sensor_sof;
	u64 sensor_eof;
	u64 dropped;
	struct dma_buf_attachment *att;
	struct sg_table *dsgt;
	struct dma_buf_attachment *src_att;
	struct sg_table *src_sgt;
};

/**
 * struct mmedge_chan - a channel
 * @ref: reference count: the engine's list holds one, a QBUF in progress
 *	another, so the channel (and @qbuf_lock) outlives a concurrent
 *	destroy.
 * @eng: the engine it belongs to.
 * @mf: the file that created it (not referenced: it dies with the file).
 * @user: the user it is charged to (uid_chan_limit; referenced). The
 *	charge goes when the channel is taken off the instance, the
 *	reference with the last reference to the channel.
 * @id: channel id, unique in the instance.
 * @name: channel name, unique in the instance.
 * @node: in mmedge_engine.chans.
 * @dead: destroyed, or the engine stopped: it takes no new job.
 * @dir: MMEDGE_CHAN_*.
 * @src: the source configuration (capture).
 * @frame_bytes: data bytes per frame (capture).
 * @meta_offset: where the in-band record goes.
 * @segment: bytes per arbitration segment.
 * @overrun: MMEDGE_OVERRUN_*.
 * @period_ns: time between frames.
 * @sclk: capture: the source's sensor clock; set before the channel is
 *	published and never changed, so readers need no lock beyond the one
 *	that found the channel.
 * @arb: the arbiter's view.
 * @staging: jobs a QBUF is preparing (waiting for the buffer's fences);
 *	the engine does not see them, but they hold their buffers.
 * @queued: empty buffers, in order.
 * @done: filled buffers waiting for dequeue.
 * @cur: the buffer being filled.
 * @rearm: MMEDGE_OVERRUN_DROP_OLDEST: the oldest done buffer, taken for
 *	the pending frame and getting a new fence in @rearm_work.
 * @rearm_work: arms @rearm's new fence outside the engine thread.
 * @nr_jobs: jobs on @staging, @queued, @done, @cur and @rearm, and
 *	dequeued ones until DQBUF has handed them over.
 * @progress_ns: when the job at the head last made progress (became the
 *	head, got its frame, moved a segment): the fence bound's clock.
 * @cur_off: bytes of the current frame moved so far.
 * @cur_seq: the current frame's number.
 * @cur_sof_raw: its start-of-frame counter value.
 * @frame_pending: a frame is due or in progress.
 * @seg_ready_ns: when the next segment became ready (for the wait
 *	histogram).
 * @seq_next: number of the next frame.
 * @drop_mark: frames were dropped since the last completed one.
 * @streaming: the timer runs (started by the first queued buffer).
 * @timer: paces the virtual source.
 * @frames_due: frames the timer produced that the engine has not taken
 *	(under mmedge_engine.irq_lock).
 * @due_raw: counter value when the first of them became due.
 * @due_ns: CLOCK_MONOTONIC then.
 * @qbuf_lock: serialises fence creation and publication on the channel,
 *	and the order in which QBUF appends jobs to @queued
 *	(QBUF and @rearm_work); never taken by the engine thread.
 * @fence_ctx: the channel's dma-fence context.
 * @fence_seqno: last fence seqno (under @qbuf_lock).
 * @bytes: stats: bytes moved.
 * @segments: stats: segments moved.
 * @frames: stats: frames completed.
 * @dropped: stats: frames dropped.
 * @errors: stats: frames completed with an error.
 * @bw_ewma: stats: achieved bandwidth.
 * @bw_bytes: bytes since @bw_start_ns.
 * @bw_start_ns: start of the current bandwidth window.
 * @wait_hist: stats: segment queue-wait histogram.
 * @drops_reported: drops announced on netlink so far.
 * @drop_event_ns: when the last drop event went out.
 *
 * Unless said otherwise, fields are under mmedge_engine.lock.
 */
struct mmedge_chan {
	struct kref ref;
	struct mmedge_engine *eng;
	struct mmedge_file *mf;
	struct mmedge_user *user;
	u32 id;
	char name[MMEDGE_NAME_LEN];
	struct list_head node;
	bool dead;
	u32 dir;
	struct mmedge_src_config src;
	u64 frame_bytes;
	u32 meta_offset;
	u32 segment;
	u32 overrun;
	u64 period_ns;
	struct mmedge_sclk sclk;
	struct mmedge_arb_chan arb;

	struct list_head staging;
	struct list_head queued;
	struct list_head done;
	struct mmedge_qb *cur;
	struct mmedge_qb *rearm;
	struct work_struct rearm_work;
	unsigned int nr_jobs;
	u64 progress_ns;
	u64 cur_off;
	u64 cur_seq;
	u64 cur_sof_raw;
	bool frame_pending;
	u64 seg_ready_ns;
	u64 seq_next;
	bool drop_mark;
	bool streaming;

	struct hrtimer timer;
	unsigned int frames_due;
	u64 due_raw;
	u64 due_ns;

	/* Serialises fence seqnos and their publication (QBUF, rearm). */
	struct mutex qbuf_lock;
	u64 fence_ctx;
	u64 fence_seqno;

	u64 bytes;
	u64 segments;
	u64 frames;
	u64 dropped;
	u64 errors;
	u64 bw_ewma;
	u64 bw_bytes;
	u64 bw_start_ns;
	u64 wait_hist[MMEDGE_WAIT_BUCKETS];
	u64 drops_reported;
	u64 drop_event_ns;
};

struct mmedge_chan *mmedge_chan_find(struct mmedge_engine *eng, u32 id);
struct mmedge_chan *mmedge_chan_find_name(struct mmedge_engine *eng,
					  const char *name);
void mmedge_file_destroy_chans(struct mmedge_file *mf);
__poll_t mmedge_chan_poll(struct mmedge_file *mf, struct file *file,
			  poll_table *wait);
void mmedge_chan_put(struct mmedge_chan *ch);
void mmedge_chan_enqueue(struct mmedge_chan *ch, struct mmedge_qb *qb);
void mmedge_chan_drop(struct mmedge_chan *ch, u64 n);
void mmedge_qb_free(struct mmedge_qb *qb, int error);
void mmedge_qb_free_list(struct list_head *list, int error);
void mmedge_chan_cancel_jobs(struct mmedge_chan *ch, struct list_head *out);

#endif /* _MMEDGE_CHAN_H */
