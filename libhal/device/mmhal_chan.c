// SPDX-License-Identifier: MIT
/*
 * Channels: create, queue, dequeue, tune, count, destroy; the in-band
 * frame record. Ioctls go through mmhal_ioctl().
 *
 * The driver hands back a 64-bit cookie with every dequeued buffer. The
 * HAL passes the index of a slot of its own there, which remembers the
 * buffer handle and the caller's cookie, so mmhal_frame.buf can be given
 * back without a lookup by fd.
 */
#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mmhal_internal.h"

/* The HAL's public constants and structs mirror the uapi. */
static_assert(MMHAL_SRC_CAMERA == MMEDGE_SRC_CAMERA, "src drift");
static_assert(MMHAL_SRC_MIC == MMEDGE_SRC_MIC, "src drift");
static_assert(MMHAL_SRC_IMU == MMEDGE_SRC_IMU, "src drift");
static_assert(MMHAL_FMT_GREY == MMEDGE_FMT_GREY, "fourcc drift");
static_assert(MMHAL_FMT_RGB24 == MMEDGE_FMT_RGB24, "fourcc drift");
static_assert(MMHAL_FMT_NV12 == MMEDGE_FMT_NV12, "fourcc drift");
static_assert(MMHAL_FMT_S16LE == MMEDGE_FMT_S16LE, "fourcc drift");
static_assert(MMHAL_FMT_IMU6 == MMEDGE_FMT_IMU6, "fourcc drift");
static_assert(MMHAL_SIGNAL_TONE == MMEDGE_SIGNAL_TONE, "signal drift");
static_assert(MMHAL_SIGNAL_CHIRP == MMEDGE_SIGNAL_CHIRP, "signal drift");
static_assert(MMHAL_SIGNAL_SILENCE == MMEDGE_SIGNAL_SILENCE, "signal drift");
static_assert(MMHAL_SIGNAL_NOISE == MMEDGE_SIGNAL_NOISE, "signal drift");
static_assert(MMHAL_PATTERN_MOVING == MMEDGE_PATTERN_MOVING, "pattern drift");
static_assert(MMHAL_PATTERN_STATIC == MMEDGE_PATTERN_STATIC, "pattern drift");
static_assert(MMHAL_CLASS_BEST_EFFORT == MMEDGE_CLASS_BEST_EFFORT, "class drift");
static_assert(MMHAL_CLASS_LATENCY == MMEDGE_CLASS_LATENCY, "class drift");
static_assert(MMHAL_WEIGHT_MIN == MMEDGE_WEIGHT_MIN, "weight drift");
static_assert(MMHAL_WEIGHT_DEFAULT == MMEDGE_WEIGHT_DEFAULT, "weight drift");
static_assert(MMHAL_WEIGHT_MAX == MMEDGE_WEIGHT_MAX, "weight drift");
static_assert(MMHAL_OVERRUN_DROP_NEWEST == MMEDGE_OVERRUN_DROP_NEWEST,
	      "overrun drift");
static_assert(MMHAL_OVERRUN_DROP_OLDEST == MMEDGE_OVERRUN_DROP_OLDEST,
	      "overrun drift");
static_assert(MMHAL_FRAME_ERROR == MMEDGE_FRAME_ERROR, "frame flag drift");
static_assert(MMHAL_FRAME_DROPPED_BEFORE == MMEDGE_FRAME_DROPPED_BEFORE,
	      "frame flag drift");
static_assert(MMHAL_FRAME_TS_SOF_SOURCE == MMEDGE_FRAME_TS_SOF_SOURCE,
	      "frame flag drift");
static_assert(MMHAL_WAIT_BUCKETS == MMEDGE_WAIT_BUCKETS, "histogram drift");
static_assert(MMHAL_CHAN_CAPTURE == MMEDGE_CHAN_CAPTURE &&
	      MMHAL_CHAN_FEED == MMEDGE_CHAN_FEED &&
	      MMHAL_CHAN_COPY == MMEDGE_CHAN_COPY, "direction drift");
static_assert(MMHAL_JOB_MAX == (__u32)-1, "job length drift");
static_assert(MMHAL_META_MAGIC == MMEDGE_META_MAGIC, "meta magic drift");
static_assert(MMHAL_META_VERSION == MMEDGE_META_VERSION, "meta version drift");
static_assert(MMHAL_IOCTL_CHAN_CREATE == _IOC_NR(MMEDGE_IOC_CHAN_CREATE), "nr drift");
static_assert(MMHAL_IOCTL_CHAN_CONFIG == _IOC_NR(MMEDGE_IOC_CHAN_CONFIG), "nr drift");
static_assert(MMHAL_IOCTL_CHAN_DESTROY == _IOC_NR(MMEDGE_IOC_CHAN_DESTROY), "nr drift");
static_assert(MMHAL_IOCTL_QBUF == _IOC_NR(MMEDGE_IOC_QBUF), "nr drift");
static_assert(MMHAL_IOCTL_DQBUF == _IOC_NR(MMEDGE_IOC_DQBUF), "nr drift");
static_assert(MMHAL_IOCTL_CHAN_STATS == _IOC_NR(MMEDGE_IOC_CHAN_STATS), "nr drift");
static_assert(MMHAL_IOCTL_BUS_CONFIG == _IOC_NR(MMEDGE_IOC_BUS_CONFIG), "nr drift");
static_assert(MMHAL_IOCTL_XTS == _IOC_NR(MMEDGE_IOC_XTS), "nr drift");

/* Same layout as the driver's records: checked member by member. */
#define MMHAL_SAME_MEMBER(a, b, m)					\
	static_assert(offsetof(struct a, m) == offsetof(struct b, m) &&	\
		      sizeof(((struct a *)0)->m) ==			\
		      sizeof(((struct b *)0)->m), #a "." #m " layout")
static_assert(sizeof(struct mmhal_frame_meta) ==
	      sizeof(struct mmedge_frame_meta), "frame meta size");
MMHAL_SAME_MEMBER(mmhal_frame_meta, mmedge_frame_meta, magic);
MMHAL_SAME_MEMBER(mmhal_frame_meta, mmedge_frame_meta, version);
MMHAL_SAME_MEMBER(mmhal_frame_meta, mmedge_frame_meta, size);
MMHAL_SAME_MEMBER(mmhal_frame_meta, mmedge_frame_meta, chan);
MMHAL_SAME_MEMBER(mmhal_frame_meta, mmedge_frame_meta, flags);
MMHAL_SAME_MEMBER(mmhal_frame_meta, mmedge_frame_meta, sequence);
MMHAL_SAME_MEMBER(mmhal_frame_meta, mmedge_frame_meta, bytesused);
MMHAL_SAME_MEMBER(mmhal_frame_meta, mmedge_frame_meta, ts);
MMHAL_SAME_MEMBER(mmhal_frame_meta, mmedge_frame_meta, dropped);
MMHAL_SAME_MEMBER(mmhal_frame_meta, mmedge_frame_meta, sensor_sof);
MMHAL_SAME_MEMBER(mmhal_frame_meta, mmedge_frame_meta, sensor_eof);
static_assert(MMHAL_FRAME_TS_SENSOR == MMEDGE_FRAME_TS_SENSOR,
	      "frame flag drift");
static_assert(MMHAL_SENSOR_OFFSET_MAX == MMEDGE_SENSOR_OFFSET_MAX &&
	      MMHAL_SENSOR_DRIFT_MAX == MMEDGE_SENSOR_DRIFT_MAX,
	      "sensor clock limits drift");
static_assert(sizeof(struct mmhal_timestamps) ==
	      sizeof(struct mmedge_timestamps), "timestamps size");
MMHAL_SAME_MEMBER(mmhal_timestamps, mmedge_timestamps, sof_raw);
MMHAL_SAME_MEMBER(mmhal_timestamps, mmedge_timestamps, eof_boot);
static_assert(sizeof(struct mmhal_imu_sample) ==
	      sizeof(struct mmedge_imu_sample) &&
	      sizeof(struct mmhal_imu_sample) == 24, "imu sample size");
MMHAL_SAME_MEMBER(mmhal_imu_sample, mmedge_imu_sample, index);
MMHAL_SAME_MEMBER(mmhal_imu_sample, mmedge_imu_sample, ax);
MMHAL_SAME_MEMBER(mmhal_imu_sample, mmedge_imu_sample, gz);
static_assert(sizeof(struct mmhal_src) == sizeof(struct mmedge_src_config),
	      "source config size");
MMHAL_SAME_MEMBER(mmhal_src, mmedge_src_config, type);
MMHAL_SAME_MEMBER(mmhal_src, mmedge_src_config, signal);
static_assert(sizeof(struct mmedge_chan_create) == MMEDGE_CHAN_CREATE_SIZE_VER1,
	      "struct mmedge_chan_create size");
static_assert(sizeof(struct mmedge_chan_config) == MMEDGE_CHAN_CONFIG_SIZE_VER0,
	      "struct mmedge_chan_config size");
static_assert(sizeof(struct mmedge_chan_destroy) ==
	      MMEDGE_CHAN_DESTROY_SIZE_VER0, "struct mmedge_chan_destroy size");
static_assert(sizeof(struct mmedge_qbuf) == MMEDGE_QBUF_SIZE_VER0,
	      "struct mmedge_qbuf size");
static_assert(sizeof(struct mmedge_dqbuf) == MMEDGE_DQBUF_SIZE_VER1,
	      "struct mmedge_dqbuf size");
static_assert(sizeof(struct mmedge_chan_stats) == MMEDGE_CHAN_STATS_SIZE_VER0,
	      "struct mmedge_chan_stats size");

/* A queued buffer, by the cookie the driver carries (index + 1). */
struct mmhal_slot {
	struct mmhal_buf *buf;	/* NULL if freed while queued */
	struct mmhal_buf *src;	/* a copy's source; NULL if none or freed */
	uint64_t cookie;	/* the caller's */
	int used;
};

/*
 * Everything but the slot table is set at creation and only read after:
 * any thread may read it without a lock.
 */
struct mmhal_chan {
	struct mmhal_dev *dev;
	uint32_t id;
	uint32_t dir;		/* MMHAL_CHAN_* */
	uint32_t frame_size;
	uint32_t meta_offset;
	struct mmhal_sensor_clock clock;
	/* Under the device handle's lock (mmhal_dev_lock()). */
	struct mmhal_slot *slots;
	size_t nr_slots;
};

struct mmhal_src mmhal_src_camera(uint32_t width, uint32_t height,
				  uint32_t fourcc, uint32_t fps)
{
	struct mmhal_src s;

	memset(&s, 0, sizeof(s));
	s.type = MMHAL_SRC_CAMERA;
	s.fourcc = fourcc;
	s.width = width;
	s.height = height;
	s.rate_num = fps;
	s.rate_den = 1;
	return s;
}

struct mmhal_src mmhal_src_mic(uint32_t rate, uint32_t period, uint32_t signal)
{
	struct mmhal_src s;

	memset(&s, 0, sizeof(s));
	s.type = MMHAL_SRC_MIC;
	s.fourcc = MMHAL_FMT_S16LE;
	s.rate_num = rate;
	s.rate_den = 1;
	s.period = period;
	s.signal = signal;
	return s;
}

struct mmhal_src mmhal_src_imu(uint32_t rate, uint32_t period)
{
	struct mmhal_src s;

	memset(&s, 0, sizeof(s));
	s.type = MMHAL_SRC_IMU;
	s.fourcc = MMHAL_FMT_IMU6;
	s.rate_num = rate;
	s.rate_den = 1;
	s.period = period;
	return s;
}

struct mmhal_chan_params mmhal_chan_default_params(void)
{
	struct mmhal_chan_params p;

	memset(&p, 0, sizeof(p));
	p.weight = MMHAL_WEIGHT_DEFAULT;
	p.class = MMHAL_CLASS_BEST_EFFORT;
	p.cap = 0;
	p.segment = 0;
	p.overrun = MMHAL_OVERRUN_DROP_NEWEST;
	return p;
}

/* What the HAL can tell is wrong; the driver checks the rate ranges. */
static int mmhal_src_check(const struct mmhal_src *s)
{
	if (!s->rate_num || !s->rate_den)
		return -EINVAL;
	switch (s->type) {
	case MMHAL_SRC_CAMERA:
		if (s->fourcc != MMHAL_FMT_GREY && s->fourcc != MMHAL_FMT_RGB24 &&
		    s->fourcc != MMHAL_FMT_NV12)
			return -EINVAL;
		if (s->width < MMHAL_CAM_MIN || s->width > MMHAL_CAM_MAX ||
		    s->height < MMHAL_CAM_MIN || s->height > MMHAL_CAM_MAX)
			return -EINVAL;
		if (s->fourcc == MMHAL_FMT_NV12 && (s->width | s->height) & 1)
			return -EINVAL;
		if (s->period || (s->signal != MMHAL_PATTERN_MOVING &&
				  s->signal != MMHAL_PATTERN_STATIC))
			return -EINVAL;
		return 0;
	case MMHAL_SRC_MIC:
		if (s->fourcc != MMHAL_FMT_S16LE || !s->period ||
		    s->width || s->height ||
		    (s->signal != MMHAL_SIGNAL_TONE &&
		     s->signal != MMHAL_SIGNAL_CHIRP &&
		     s->signal != MMHAL_SIGNAL_SILENCE &&
		     s->signal != MMHAL_SIGNAL_NOISE))
			return -EINVAL;
		return 0;
	case MMHAL_SRC_IMU:
		if (s->fourcc != MMHAL_FMT_IMU6 || !s->period ||
		    s->width || s->height || s->signal)
			return -EINVAL;
		return 0;
	default:
		return -EINVAL;
	}
}

static int mmhal_chan_params_check(const struct mmhal_chan_params *p)
{
	size_t i;

	if (p->weight < MMHAL_WEIGHT_MIN || p->weight > MMHAL_WEIGHT_MAX)
		return -EINVAL;
	if (p->class > MMHAL_CLASS_LATENCY ||
	    (p->class == MMHAL_CLASS_LATENCY && !p->cap))
		return -EINVAL;
	if (p->segment && (p->segment < MMHAL_SEGMENT_MIN ||
			   p->segment > MMHAL_SEGMENT_MAX || p->segment % 64))
		return -EINVAL;
	if (p->overrun > MMHAL_OVERRUN_DROP_OLDEST)
		return -EINVAL;
	if (p->sensor_offset_ns < -MMHAL_SENSOR_OFFSET_MAX ||
	    p->sensor_offset_ns > MMHAL_SENSOR_OFFSET_MAX ||
	    p->sensor_drift_ppb < -MMHAL_SENSOR_DRIFT_MAX ||
	    p->sensor_drift_ppb > MMHAL_SENSOR_DRIFT_MAX || p->pad)
		return -EINVAL;
	for (i = 0; i < MMHAL_ARRAY_SIZE(p->reserved); i++)
		if (p->reserved[i])
			return -EINVAL;
	return 0;
}

int mmhal_chan_create(struct mmhal_dev *dev, const struct mmhal_src *src,
		      const struct mmhal_chan_params *params,
		      struct mmhal_chan **out)
{
	struct mmhal_chan_params def = mmhal_chan_default_params();
	struct mmedge_chan_create c;
	struct mmedge_chan_destroy d;
	struct mmhal_chan *chan;
	int ret;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!params)
		params = &def;
	if (!dev || !src)
		return -EINVAL;
	ret = mmhal_src_check(src);
	if (ret < 0)
		return ret;
	ret = mmhal_chan_params_check(params);
	if (ret < 0)
		return ret;

	chan = calloc(1, sizeof(*chan));
	if (!chan)
		return -ENOMEM;

	memset(&c, 0, sizeof(c));
	c.dir = MMEDGE_CHAN_CAPTURE;
	c.src.type = src->type;
	c.src.fourcc = src->fourcc;
	c.src.width = src->width;
	c.src.height = src->height;
	c.src.rate_num = src->rate_num;
	c.src.rate_den = src->rate_den;
	c.src.period = src->period;
	c.src.signal = src->signal;
	c.weight = params->weight;
	c.class = params->class;
	c.cap = params->cap;
	c.segment = params->segment;
	c.overrun = params->overrun;
	c.sensor_offset_ns = params->sensor_offset_ns;
	c.sensor_drift_ppb = params->sensor_drift_ppb;
	ret = mmhal_ioctl(mmhal_dev_fd(dev), MMEDGE_IOC_CHAN_CREATE, &c);
	if (ret < 0) {
		free(chan);
		return ret;
	}
	/* A driver that answers nonsense gets its channel back. */
	if (!c.id || c.meta_offset < c.frame_size || c.meta_offset % 8) {
		memset(&d, 0, sizeof(d));
		d.id = c.id;
		(void)mmhal_ioctl(mmhal_dev_fd(dev), MMEDGE_IOC_CHAN_DESTROY,
				  &d);
		free(chan);
		return -EPROTO;
	}
	chan->dev = dev;
	chan->id = c.id;
	chan->dir = MMHAL_CHAN_CAPTURE;
	chan->frame_size = c.frame_size;
	chan->meta_offset = c.meta_offset;
	chan->clock.offset_ns = c.sensor_offset_ns;
	chan->clock.drift_ppb = c.sensor_drift_ppb;
	chan->clock.epoch = c.sensor_epoch;
	*out = chan;
	return 0;
}

int mmhal_chan_create_dir(struct mmhal_dev *dev, uint32_t dir,
			  const struct mmhal_chan_params *params,
			  struct mmhal_chan **out)
{
	struct mmhal_chan_params def = mmhal_chan_default_params();
	struct mmedge_chan_create c;
	struct mmedge_chan_destroy d;
	struct mmhal_chan *chan;
	int ret;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!params)
		params = &def;
	if (!dev || (dir != MMHAL_CHAN_FEED && dir != MMHAL_CHAN_COPY))
		return -EINVAL;
	ret = mmhal_chan_params_check(params);
	if (ret < 0)
		return ret;
	/* No source, so no sensor clock; jobs are never dropped. */
	if (params->sensor_offset_ns || params->sensor_drift_ppb ||
	    params->overrun != MMHAL_OVERRUN_DROP_NEWEST)
		return -EINVAL;

	chan = calloc(1, sizeof(*chan));
	if (!chan)
		return -ENOMEM;

	memset(&c, 0, sizeof(c));
	c.dir = dir;
	c.weight = params->weight;
	c.class = params->class;
	c.cap = params->cap;
	c.segment = params->segment;
	ret = mmhal_ioctl(mmhal_dev_fd(dev), MMEDGE_IOC_CHAN_CREATE, &c);
	if (ret < 0) {
		free(chan);
		return ret;
	}
	/* Feed and copy channels have no frame layout of their own. */
	if (!c.id || c.frame_size || c.meta_offset) {
		memset(&d, 0, sizeof(d));
		d.id = c.id;
		(void)mmhal_ioctl(mmhal_dev_fd(dev), MMEDGE_IOC_CHAN_DESTROY,
				  &d);
		free(chan);
		return -EPROTO;
	}
	chan->dev = dev;
	chan->id = c.id;
	chan->dir = dir;
	*out = chan;
	return 0;
}

int mmhal_chan_dir(const struct mmhal_chan *chan)
{
	return chan ? (int)chan->dir : -EINVAL;
}

int mmhal_chan_sensor_clock(const struct mmhal_chan *chan,
			    struct mmhal_sensor_clock *out)
{
	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (!chan)
		return -EINVAL;
	*out = chan->clock;
	return 0;
}

int mmhal_chan_wrap(struct mmhal_dev *dev, uint32_t id, uint32_t frame_size,
		    uint32_t meta_offset, struct mmhal_chan **out)
{
	struct mmhal_chan *chan = calloc(1, sizeof(*chan));

	*out = NULL;
	if (!chan)
		return -ENOMEM;
	chan->dev = dev;
	chan->id = id;
	chan->frame_size = frame_size;
	chan->meta_offset = meta_offset;
	*out = chan;
	return 0;
}

void mmhal_chan_destroy(struct mmhal_chan *chan)
{
	struct mmedge_chan_destroy d;
	size_t i;

	if (!chan)
		return;
	memset(&d, 0, sizeof(d));
	d.id = chan->id;
	/* Fails only if the channel is gone already. */
	(void)mmhal_ioctl(mmhal_dev_fd(chan->dev), MMEDGE_IOC_CHAN_DESTROY,
			  &d);
	/* The queued buffers may be freed on other threads meanwhile. */
	mmhal_dev_lock(chan->dev);
	for (i = 0; i < chan->nr_slots; i++) {
		if (!chan->slots[i].used)
			continue;
		if (chan->slots[i].buf)
			mmhal_buf_detach(chan->slots[i].buf);
		if (chan->slots[i].src)
			mmhal_buf_detach(chan->slots[i].src);
	}
	mmhal_dev_unlock(chan->dev);
	free(chan->slots);
	free(chan);
}

int mmhal_chan_id(const struct mmhal_chan *chan)
{
	return chan ? (int)chan->id : -EINVAL;
}

uint32_t mmhal_chan_frame_size(const struct mmhal_chan *chan)
{
	return chan ? chan->frame_size : 0;
}

uint32_t mmhal_chan_meta_offset(const struct mmhal_chan *chan)
{
	return chan ? chan->meta_offset : 0;
}

uint64_t mmhal_chan_buf_size(const struct mmhal_chan *chan)
{
	return chan ? (uint64_t)chan->meta_offset +
		      sizeof(struct mmhal_frame_meta) : 0;
}

/* Index of a free slot, growing the table; -ENOMEM. Dev lock held. */
static long mmhal_chan_get_slot(struct mmhal_chan *chan)
{
	struct mmhal_slot *s;
	size_t i, n;

	for (i = 0; i < chan->nr_slots; i++)
		if (!chan->slots[i].used)
			return (long)i;
	n = chan->nr_slots ? chan->nr_slots * 2 : 8;
	s = realloc(chan->slots, n * sizeof(*s));
	if (!s)
		return -ENOMEM;
	memset(s + chan->nr_slots, 0, (n - chan->nr_slots) * sizeof(*s));
	chan->slots = s;
	/* The table moved: the queued buffers point at their new places. */
	for (i = 0; i < chan->nr_slots; i++) {
		if (s[i].buf)
			mmhal_buf_attach(s[i].buf, chan, &s[i].buf);
		if (s[i].src)
			mmhal_buf_attach(s[i].src, chan, &s[i].src);
	}
	i = chan->nr_slots;
	chan->nr_slots = n;
	return (long)i;
}

/* Frees slot @i and unlinks its buffers. Dev lock held. */
static void mmhal_chan_put_slot(struct mmhal_chan *chan, size_t i)
{
	struct mmhal_slot *s = &chan->slots[i];

	if (s->buf)
		mmhal_buf_detach(s->buf);
	if (s->src)
		mmhal_buf_detach(s->src);
	memset(s, 0, sizeof(*s));
}

/*
 * QBUF of a job into a free slot: @src only for a copy, @bytesused 0 for
 * a capture buffer. The arguments are checked by the callers, all but
 * "already queued" (-EBUSY), which only holds under the lock.
 *
 * The slot is taken before the ioctl, since another thread's DQBUF may
 * hand its cookie back before QBUF returns here, and given back if QBUF
 * fails; the lock is not held across the ioctl.
 */
static int mmhal_chan_qbuf(struct mmhal_chan *chan, struct mmhal_buf *buf,
			   struct mmhal_buf *src, uint32_t bytesused,
			   uint64_t cookie, int *fence_fd)
{
	struct mmedge_qbuf q;
	struct mmhal_slot *s;
	long slot;
	int ret;

	mmhal_dev_lock(chan->dev);
	if (mmhal_buf_chan(buf) || (src && mmhal_buf_chan(src))) {
		mmhal_dev_unlock(chan->dev);
		return -EBUSY;
	}
	slot = mmhal_chan_get_slot(chan);
	if (slot < 0) {
		mmhal_dev_unlock(chan->dev);
		return (int)slot;
	}
	s = &chan->slots[slot];
	s->used = 1;
	s->buf = buf;
	s->src = src;
	s->cookie = cookie;
	mmhal_buf_attach(buf, chan, &s->buf);
	if (src)
		mmhal_buf_attach(src, chan, &s->src);
	mmhal_dev_unlock(chan->dev);

	memset(&q, 0, sizeof(q));
	q.chan = chan->id;
	q.fd = mmhal_buf_fd(buf);
	q.flags = fence_fd ? MMEDGE_QBUF_FENCE : 0;
	q.cookie = (uint64_t)slot + 1;
	if (src) {
		q.flags |= MMEDGE_QBUF_SRC;
		q.src_fd = mmhal_buf_fd(src);
	}
	q.bytesused = bytesused;
	ret = mmhal_ioctl(mmhal_dev_fd(chan->dev), MMEDGE_IOC_QBUF, &q);
	if (ret < 0) {
		mmhal_dev_lock(chan->dev);
		mmhal_chan_put_slot(chan, (size_t)slot);
		mmhal_dev_unlock(chan->dev);
		return ret;
	}
	if (fence_fd)
		*fence_fd = q.fence_fd;
	return 0;
}

int mmhal_chan_queue(struct mmhal_chan *chan, struct mmhal_buf *buf,
		     uint64_t cookie, int *fence_fd)
{
	if (fence_fd)
		*fence_fd = -1;
	if (!chan || !buf || mmhal_buf_dev(buf) != chan->dev ||
	    chan->dir != MMHAL_CHAN_CAPTURE)
		return -EINVAL;
	if (mmhal_buf_size(buf) < mmhal_chan_buf_size(chan))
		return -ENOSPC;
	return mmhal_chan_qbuf(chan, buf, NULL, 0, cookie, fence_fd);
}

int mmhal_chan_feed(struct mmhal_chan *chan, struct mmhal_buf *buf,
		    uint64_t bytesused, uint64_t cookie, int *fence_fd)
{
	if (fence_fd)
		*fence_fd = -1;
	if (!chan || !buf || mmhal_buf_dev(buf) != chan->dev ||
	    chan->dir != MMHAL_CHAN_FEED || !bytesused ||
	    bytesused > MMHAL_JOB_MAX || bytesused > mmhal_buf_size(buf))
		return -EINVAL;
	return mmhal_chan_qbuf(chan, buf, NULL, (uint32_t)bytesused, cookie,
			       fence_fd);
}

uint64_t mmhal_copy_buf_size(uint64_t bytesused)
{
	if (!bytesused || bytesused > MMHAL_JOB_MAX)
		return 0;
	return ((bytesused + 63) & ~63ULL) + sizeof(struct mmhal_frame_meta);
}

int mmhal_chan_copy(struct mmhal_chan *chan, struct mmhal_buf *dst,
		    struct mmhal_buf *src, uint64_t bytesused, uint64_t cookie,
		    int *fence_fd)
{
	if (fence_fd)
		*fence_fd = -1;
	if (!chan || !dst || !src || dst == src ||
	    mmhal_buf_dev(dst) != chan->dev ||
	    mmhal_buf_dev(src) != chan->dev || chan->dir != MMHAL_CHAN_COPY ||
	    !bytesused || bytesused > MMHAL_JOB_MAX ||
	    bytesused > mmhal_buf_size(src))
		return -EINVAL;
	if (mmhal_buf_size(dst) < mmhal_copy_buf_size(bytesused))
		return -ENOSPC;
	return mmhal_chan_qbuf(chan, dst, src, (uint32_t)bytesused, cookie,
			       fence_fd);
}

int mmhal_chan_dequeue(struct mmhal_chan *chan, int timeout_ms,
		       struct mmhal_frame *out)
{
	struct mmedge_dqbuf d;
	struct mmhal_slot *s;
	int ret;

	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (!chan)
		return -EINVAL;

	memset(&d, 0, sizeof(d));
	d.chan = chan->id;
	if (timeout_ms == MMHAL_NONBLOCK)
		d.flags = MMEDGE_DQBUF_NONBLOCK;
	else if (timeout_ms > 0)
		d.timeout_ms = (uint32_t)timeout_ms;
	/* else forever: the ioctl's timeout 0 */
	/* mmhal_ioctl() returns EAGAIN as it is: no spinning here. No lock
	 * is held while the driver waits: queueing on other threads goes
	 * on meanwhile. */
	ret = mmhal_ioctl(mmhal_dev_fd(chan->dev), MMEDGE_IOC_DQBUF, &d);
	if (ret < 0)
		return ret;

	out->chan = chan->id;
	out->flags = d.frame_flags;
	out->sequence = d.sequence;
	out->bytesused = d.bytesused;
	out->ts.sof_raw = d.ts.sof_raw;
	out->ts.eof_raw = d.ts.eof_raw;
	out->ts.sof_mono = d.ts.sof_mono;
	out->ts.eof_mono = d.ts.eof_mono;
	out->ts.sof_boot = d.ts.sof_boot;
	out->ts.eof_boot = d.ts.eof_boot;
	out->dropped = d.dropped;
	out->sensor_sof = d.sensor_sof;
	out->sensor_eof = d.sensor_eof;
	out->checksum = d.checksum;

	/* The wait is over: only the bookkeeping is locked. */
	mmhal_dev_lock(chan->dev);
	if (d.cookie >= 1 && d.cookie <= chan->nr_slots &&
	    chan->slots[d.cookie - 1].used) {
		s = &chan->slots[d.cookie - 1];
		out->buf = s->buf;
		out->cookie = s->cookie;
		mmhal_chan_put_slot(chan, (size_t)(d.cookie - 1));
	}
	mmhal_dev_unlock(chan->dev);
	return 0;
}

static int mmhal_chan_config(struct mmhal_chan *chan, uint32_t set,
			     uint32_t weight, uint32_t class, uint64_t cap)
{
	struct mmedge_chan_config c;
	int ret;

	memset(&c, 0, sizeof(c));
	c.id = chan->id;
	c.set = set;
	c.weight = weight;
	c.class = class;
	c.cap = cap;
	ret = mmhal_ioctl(mmhal_dev_fd(chan->dev), MMEDGE_IOC_CHAN_CONFIG, &c);
	return ret < 0 ? ret : 0;
}

int mmhal_chan_set_weight(struct mmhal_chan *chan, uint32_t weight)
{
	if (!chan || weight < MMHAL_WEIGHT_MIN || weight > MMHAL_WEIGHT_MAX)
		return -EINVAL;
	return mmhal_chan_config(chan, MMEDGE_CHAN_SET_WEIGHT, weight, 0, 0);
}

int mmhal_chan_set_class(struct mmhal_chan *chan, uint32_t class)
{
	if (!chan || class > MMHAL_CLASS_LATENCY)
		return -EINVAL;
	return mmhal_chan_config(chan, MMEDGE_CHAN_SET_CLASS, 0, class, 0);
}

int mmhal_chan_set_cap(struct mmhal_chan *chan, uint64_t cap)
{
	if (!chan)
		return -EINVAL;
	return mmhal_chan_config(chan, MMEDGE_CHAN_SET_CAP, 0, 0, cap);
}

int mmhal_dev_chan_stats(struct mmhal_dev *dev, uint32_t id,
			 struct mmhal_chan_stats *out)
{
	struct mmedge_chan_stats st;
	int ret;

	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (!dev || !id)
		return -EINVAL;
	memset(&st, 0, sizeof(st));
	st.id = id;
	ret = mmhal_ioctl(mmhal_dev_fd(dev), MMEDGE_IOC_CHAN_STATS, &st);
	if (ret < 0)
		return ret;
	out->id = id;
	out->weight = st.weight;
	out->class = st.class;
	out->cap = st.cap;
	out->bytes = st.bytes;
	out->segments = st.segments;
	out->frames = st.frames;
	out->dropped = st.dropped;
	out->errors = st.errors;
	out->bw_ewma = st.bw_ewma;
	memcpy(out->wait_hist, st.wait_hist, sizeof(out->wait_hist));
	return 0;
}

int mmhal_chan_stats(struct mmhal_chan *chan, struct mmhal_chan_stats *out)
{
	if (!chan) {
		if (out)
			memset(out, 0, sizeof(*out));
		return -EINVAL;
	}
	return mmhal_dev_chan_stats(chan->dev, chan->id, out);
}

uint64_t mmhal_wait_bucket_ns(unsigned int bucket)
{
	if (bucket >= MMHAL_WAIT_BUCKETS - 1)
		return UINT64_MAX;
	return 1ULL << (bucket + 10);
}

/* The record of channel @id at @offset of @buf, checked. */
static int mmhal_meta_at(struct mmhal_buf *buf, uint32_t id, uint64_t offset,
			 const struct mmhal_frame_meta **out)
{
	const struct mmhal_frame_meta *m;
	void *base;
	int ret;

	if (mmhal_buf_size(buf) < offset ||
	    mmhal_buf_size(buf) - offset < sizeof(*m))
		return -ENOSPC;
	ret = mmhal_buf_map(buf, &base);
	if (ret < 0)
		return ret;
	m = (const struct mmhal_frame_meta *)((char *)base + offset);
	if (m->magic != MMHAL_META_MAGIC || m->chan != id)
		return -EBADMSG;
	if (m->version < 1)
		return -EPROTO;
	/* A newer driver may write a longer record, never a shorter one. */
	if (m->size < sizeof(*m) || m->size > mmhal_buf_size(buf) - offset)
		return -EBADMSG;
	*out = m;
	return 0;
}

int mmhal_frame_meta(struct mmhal_buf *buf, const struct mmhal_chan *chan,
		     const struct mmhal_frame_meta **out)
{
	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!buf || !chan)
		return -EINVAL;
	return mmhal_meta_at(buf, chan->id, chan->meta_offset, out);
}

int mmhal_frame_record(const struct mmhal_chan *chan,
		       const struct mmhal_frame *frame,
		       const struct mmhal_frame_meta **out)
{
	const struct mmhal_frame_meta *m;
	uint64_t offset;
	int ret;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!chan || !frame || !frame->buf)
		return -EINVAL;
	switch (chan->dir) {
	case MMHAL_CHAN_CAPTURE:
		offset = chan->meta_offset;
		break;
	case MMHAL_CHAN_COPY:
		if (!frame->bytesused || frame->bytesused > MMHAL_JOB_MAX)
			return -EBADMSG;
		offset = (frame->bytesused + 63) & ~63ULL;
		break;
	default:
		return -ENOENT;
	}
	ret = mmhal_meta_at(frame->buf, chan->id, offset, &m);
	if (ret < 0)
		return ret;
	if (m->sequence != frame->sequence || m->bytesused != frame->bytesused)
		return -EBADMSG;
	*out = m;
	return 0;
}
