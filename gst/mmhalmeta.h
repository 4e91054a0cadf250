/* SPDX-License-Identifier: MIT */
/*
 * mmhalmeta.h - GstMmhalAnswerMeta: where an answer of mmhalinfer came from
 *
 * Attached to every text buffer mmhalinfer pushes: the PTS of the camera
 * frame the answer stands for (equal to the text buffer's PTS), the
 * mmedge hardware stamps of that frame's feed job (raw counter and
 * CLOCK_MONOTONIC, start and end, mapped onto the pipeline clock as
 * running times), the audio window's PTS range, and the SLO timings of
 * the ask. The same fields go out in the element message
 * "mmhalinfer-answer" (Documentation/gst-mmhalinfer.rst).
 */
#ifndef MMHALMETA_H
#define MMHALMETA_H

#include <gst/gst.h>

G_BEGIN_DECLS

typedef struct {
	GstMeta meta;

	GstClockTime frame_pts;		/* the frame's PTS (NONE: audio only) */
	guint64 sequence;		/* mmedge job sequence of the frame */
	guint64 sof_raw, eof_raw;	/* hardware counter, start/end */
	guint64 sof_mono, eof_mono;	/* the same on CLOCK_MONOTONIC, ns */
	GstClockTime sof_running_time;	/* sof_mono on the pipeline clock,
					 * minus the base time (NONE: no clock) */
	GstClockTime eof_running_time;
	GstClockTime audio_start;	/* the audio window's PTS range */
	GstClockTime audio_end;		/* (NONE: no audio) */
	gdouble sof_to_first_token_ms;
	gdouble sof_to_last_token_ms;
	gdouble encode_ms;
	gdouble prefill_ms;
	gdouble decode_ms;
	guint64 bytes_copied;		/* the element's payload CPU copies so far */
} GstMmhalAnswerMeta;

GType gst_mmhal_answer_meta_api_get_type(void);
const GstMetaInfo *gst_mmhal_answer_meta_get_info(void);

#define GST_MMHAL_ANSWER_META_API_TYPE (gst_mmhal_answer_meta_api_get_type())
#define GST_MMHAL_ANSWER_META_INFO (gst_mmhal_answer_meta_get_info())

#define gst_buffer_get_mmhal_answer_meta(b) \
	((GstMmhalAnswerMeta *)gst_buffer_get_meta((b), GST_MMHAL_ANSWER_META_API_TYPE))

GstMmhalAnswerMeta *gst_buffer_add_mmhal_answer_meta(GstBuffer *buf);

G_END_DECLS

#endif /* MMHALMETA_H */
