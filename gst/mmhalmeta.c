// SPDX-License-Identifier: MIT
/*
 * mmhalmeta.c - GstMmhalAnswerMeta (see mmhalmeta.h)
 */
#include <string.h>

#include "mmhalmeta.h"

GType gst_mmhal_answer_meta_api_get_type(void)
{
	static GType type;
	static const gchar *tags[] = { NULL };

	if (g_once_init_enter(&type)) {
		GType t = gst_meta_api_type_register("GstMmhalAnswerMetaAPI",
						     tags);

		g_once_init_leave(&type, t);
	}
	return type;
}

static gboolean mmhal_answer_meta_init(GstMeta *meta, gpointer params,
				       GstBuffer *buffer)
{
	GstMmhalAnswerMeta *m = (GstMmhalAnswerMeta *)meta;

	(void)params;
	(void)buffer;
	memset((char *)m + sizeof(GstMeta), 0, sizeof(*m) - sizeof(GstMeta));
	m->frame_pts = GST_CLOCK_TIME_NONE;
	m->sof_running_time = GST_CLOCK_TIME_NONE;
	m->eof_running_time = GST_CLOCK_TIME_NONE;
	m->audio_start = GST_CLOCK_TIME_NONE;
	m->audio_end = GST_CLOCK_TIME_NONE;
	return TRUE;
}

/* Copied with the buffer: the fields are plain values. */
static gboolean mmhal_answer_meta_transform(GstBuffer *dest, GstMeta *meta,
					    GstBuffer *buffer, GQuark type,
					    gpointer data)
{
	GstMmhalAnswerMeta *d;

	(void)buffer;
	(void)type;
	(void)data;
	d = gst_buffer_add_mmhal_answer_meta(dest);
	if (!d)
		return FALSE;
	memcpy((char *)d + sizeof(GstMeta), (char *)meta + sizeof(GstMeta),
	       sizeof(*d) - sizeof(GstMeta));
	return TRUE;
}

const GstMetaInfo *gst_mmhal_answer_meta_get_info(void)
{
	static const GstMetaInfo *info;

	if (g_once_init_enter(&info)) {
		const GstMetaInfo *i = gst_meta_register(
			GST_MMHAL_ANSWER_META_API_TYPE, "GstMmhalAnswerMeta",
			sizeof(GstMmhalAnswerMeta), mmhal_answer_meta_init,
			NULL, mmhal_answer_meta_transform);

		g_once_init_leave(&info, i);
	}
	return info;
}

GstMmhalAnswerMeta *gst_buffer_add_mmhal_answer_meta(GstBuffer *buf)
{
	return (GstMmhalAnswerMeta *)gst_buffer_add_meta(
		buf, GST_MMHAL_ANSWER_META_INFO, NULL);
}
