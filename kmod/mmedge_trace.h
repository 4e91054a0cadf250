/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mmedge: tracepoints (trace system "mmedge"), for perf trace, trace-cmd
 * or tracefs: a buffer joins a channel's queue, the engine moves a
 * segment, a frame or job completes, its fence signals, frames are
 * dropped. Each names the instance and the channel; stamps are the
 * frame's hardware timestamps on CLOCK_MONOTONIC.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM mmedge

#if !defined(_MMEDGE_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _MMEDGE_TRACE_H

#include <linux/dma-fence.h>
#include <linux/tracepoint.h>

#include "mmedge_chan.h"
#include "mmedge_drv.h"

TRACE_EVENT(mmedge_qbuf,
	    TP_PROTO(const struct mmedge_chan *ch, const struct mmedge_qb *qb),
	    TP_ARGS(ch, qb),
	    TP_STRUCT__entry(__field(int, dev)
			     __field(u32, chan)
			     __field(u32, dir)
			     __field(u64, cookie)
			     __field(u64, len)),
	    TP_fast_assign(__entry->dev = ch->eng->mdev->id;
			   __entry->chan = ch->id;
			   __entry->dir = ch->dir;
			   __entry->cookie = qb->cookie;
			   __entry->len = qb->len;),
	    TP_printk("dev=%d chan=%u dir=%u cookie=%llu len=%llu",
		      __entry->dev, __entry->chan, __entry->dir, __entry->cookie,
		      __entry->len)
);

TRACE_EVENT(mmedge_segment,
	    TP_PROTO(const struct mmedge_chan *ch, u64 len, u64 wait_ns),
	    TP_ARGS(ch, len, wait_ns),
	    TP_STRUCT__entry(__field(int, dev)
			     __field(u32, chan)
			     __field(u64, len)
			     __field(u64, wait_ns)),
	    TP_fast_assign(__entry->dev = ch->eng->mdev->id;
			   __entry->chan = ch->id;
			   __entry->len = len;
			   __entry->wait_ns = wait_ns;),
	    TP_printk("dev=%d chan=%u len=%llu wait_ns=%llu",
		      __entry->dev, __entry->chan, __entry->len, __entry->wait_ns)
);

TRACE_EVENT(mmedge_frame_done,
	    TP_PROTO(const struct mmedge_chan *ch, const struct mmedge_qb *qb,
		     int error),
	    TP_ARGS(ch, qb, error),
	    TP_STRUCT__entry(__field(int, dev)
			     __field(u32, chan)
			     __field(u64, cookie)
			     __field(u64, seq)
			     __field(u64, bytesused)
			     __field(u32, flags)
			     __field(int, error)
			     __field(u64, sof_mono)
			     __field(u64, eof_mono)),
	    TP_fast_assign(__entry->dev = ch->eng->mdev->id;
			   __entry->chan = ch->id;
			   __entry->cookie = qb->cookie;
			   __entry->seq = qb->sequence;
			   __entry->bytesused = qb->bytesused;
			   __entry->flags = qb->flags;
			   __entry->error = error;
			   __entry->sof_mono = qb->ts.sof_mono;
			   __entry->eof_mono = qb->ts.eof_mono;),
	    TP_printk("dev=%d chan=%u cookie=%llu seq=%llu bytes=%llu flags=%#x error=%d sof=%llu eof=%llu",
		      __entry->dev, __entry->chan, __entry->cookie, __entry->seq,
		      __entry->bytesused, __entry->flags, __entry->error,
		      __entry->sof_mono, __entry->eof_mono)
);

TRACE_EVENT(mmedge_fence_signal,
	    TP_PROTO(const struct mmedge_chan *ch, const struct dma_fence *fence),
	    TP_ARGS(ch, fence),
	    TP_STRUCT__entry(__field(int, dev)
			     __field(u32, chan)
			     __field(u64, context)
			     __field(u64, seqno)
			     __field(int, error)),
	    TP_fast_assign(__entry->dev = ch->eng->mdev->id;
			   __entry->chan = ch->id;
			   __entry->context = fence->context;
			   __entry->seqno = fence->seqno;
			   __entry->error = fence->error;),
	    TP_printk("dev=%d chan=%u context=%llu seqno=%llu error=%d",
		      __entry->dev, __entry->chan, __entry->context,
		      __entry->seqno, __entry->error)
);

TRACE_EVENT(mmedge_drop,
	    TP_PROTO(const struct mmedge_chan *ch, u64 n),
	    TP_ARGS(ch, n),
	    TP_STRUCT__entry(__field(int, dev)
			     __field(u32, chan)
			     __field(u64, n)
			     __field(u64, total)),
	    TP_fast_assign(__entry->dev = ch->eng->mdev->id;
			   __entry->chan = ch->id;
			   __entry->n = n;
			   __entry->total = ch->dropped;),
	    TP_printk("dev=%d chan=%u n=%llu total=%llu",
		      __entry->dev, __entry->chan, __entry->n, __entry->total)
);

#endif /* _MMEDGE_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE mmedge_trace
#include <trace/define_trace.h>
