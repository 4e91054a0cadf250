// SPDX-License-Identifier: GPL-2.0
/*
 * mmedge sensor clocks: a microphone and a camera with their own clock
 * (offset, drift) set at CHAN_CREATE; the sensor stamps of DQBUF and of
 * the in-band record must equal the documented mapping of the SoC stamps
 * bit for bit, XTS sensor triples must follow the same mapping, and bad
 * values must be refused.
 */
#include "../kselftest_harness.h"
#include "mmedge_util.h"

/* The ioctls at their first published sizes. */
#define CHAN_CREATE_V0	_IOC(_IOC_READ | _IOC_WRITE, MMEDGE_IOC_MAGIC, 0x06, \
			     MMEDGE_CHAN_CREATE_SIZE_VER0)
#define DQBUF_V0	_IOC(_IOC_READ | _IOC_WRITE, MMEDGE_IOC_MAGIC, 0x0a, \
			     MMEDGE_DQBUF_SIZE_VER0)
#define XTS_V0		_IOC(_IOC_READ | _IOC_WRITE, MMEDGE_IOC_MAGIC, 0x0d, \
			     MMEDGE_XTS_SIZE_VER0)

#define NBUF		2
#define FRAMES		6

struct sclk {
	__s64 offset;
	__s32 drift;
	__u64 epoch;
};

/* uapi/linux/mmedge.h, struct mmedge_chan_create, "Sensor clocks". */
static __u64 soc_ns(__u32 mult, __u32 shift, __u64 raw)
{
	return (__u64)(((unsigned __int128)raw * mult) >> shift);
}

static __u64 sensor_of(const struct sclk *c, __u64 soc)
{
	__s64 d = (__s64)(soc - c->epoch);
	__int128 corr = (__int128)c->drift * d / 1000000000;

	return soc + (__u64)c->offset + (__u64)(__s64)corr;
}

static int create(int fd, __u32 dir, const struct mmedge_src_config *src,
		  __s64 offset, __s32 drift, struct mmedge_chan_create *c)
{
	memset(c, 0, sizeof(*c));
	c->dir = dir;
	if (src)
		c->src = *src;
	c->sensor_offset_ns = offset;
	c->sensor_drift_ppb = drift;
	return xioctl(fd, MMEDGE_IOC_CHAN_CREATE, c);
}

static const struct mmedge_src_config mic = {
	.type = MMEDGE_SRC_MIC, .fourcc = MMEDGE_FMT_S16LE,
	.rate_num = 16000, .rate_den = 1, .period = 320,
};

static const struct mmedge_src_config cam = {
	.type = MMEDGE_SRC_CAMERA, .fourcc = MMEDGE_FMT_GREY,
	.width = 64, .height = 48, .rate_num = 30, .rate_den = 1,
};

FIXTURE(clock) {
	int fd;
	__u32 mult, shift;
};

FIXTURE_SETUP(clock)
{
	struct mmedge_xts x;
	const char *why;

	self->fd = open_dev();
	if (self->fd < 0 && errno == ENOENT)
		SKIP(return, "%s not present (is mmedge.ko loaded?)", DEVPATH);
	ASSERT_LE(0, self->fd);
	if (has_channels(self->fd, &why))
		SKIP(return, "%s", why);
	memset(&x, 0, sizeof(x));
	x.n_samples = 1;
	ASSERT_EQ(0, xioctl(self->fd, MMEDGE_IOC_XTS, &x));
	self->mult = x.mult;
	self->shift = x.shift;
	TH_LOG("counter %llu Hz, mult %u shift %u",
	       (unsigned long long)x.counter_hz, x.mult, x.shift);
}

FIXTURE_TEARDOWN(clock)
{
	if (self->fd >= 0)
		close(self->fd);
}

struct stream {
	struct mmedge_chan_create c;
	struct sclk clk;
	struct sbuf b[NBUF];
	unsigned int frames;
};

static int qbuf(int fd, __u32 chan, int buf_fd, __u64 cookie)
{
	struct mmedge_qbuf q;

	memset(&q, 0, sizeof(q));
	q.chan = chan;
	q.fd = buf_fd;
	q.cookie = cookie;
	return xioctl(fd, MMEDGE_IOC_QBUF, &q);
}

/*
 * A frame's sensor stamps, from DQBUF and from the record, against the
 * mapping of its SoC stamps. Returns 0 or a line number.
 */
static int check_frame(const struct stream *s, __u32 mult, __u32 shift,
		       const struct mmedge_dqbuf *d, char *why, size_t len)
{
	const struct sbuf *b = &s->b[d->cookie];
	struct mmedge_frame_meta m;
	__u64 sof = sensor_of(&s->clk, soc_ns(mult, shift, d->ts.sof_raw));
	__u64 eof = sensor_of(&s->clk, soc_ns(mult, shift, d->ts.eof_raw));

	if (!(d->frame_flags & MMEDGE_FRAME_TS_SENSOR))
		return snprintf(why, len, "no MMEDGE_FRAME_TS_SENSOR: %#x",
				d->frame_flags), __LINE__;
	if (d->sensor_sof != sof || d->sensor_eof != eof)
		return snprintf(why, len,
				"dqbuf sensor %llu/%llu, mapping %llu/%llu",
				(unsigned long long)d->sensor_sof,
				(unsigned long long)d->sensor_eof,
				(unsigned long long)sof,
				(unsigned long long)eof), __LINE__;
	if (dmabuf_sync(b->fd, DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ))
		return snprintf(why, len, "sync start"), __LINE__;
	memcpy(&m, b->map + s->c.meta_offset, sizeof(m));
	dmabuf_sync(b->fd, DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ);
	if (m.magic != MMEDGE_META_MAGIC || m.sequence != d->sequence)
		return snprintf(why, len, "no record for seq %llu",
				(unsigned long long)d->sequence), __LINE__;
	if (m.sensor_sof != sof || m.sensor_eof != eof ||
	    !(m.flags & MMEDGE_FRAME_TS_SENSOR))
		return snprintf(why, len,
				"record sensor %llu/%llu flags %#x, mapping %llu/%llu",
				(unsigned long long)m.sensor_sof,
				(unsigned long long)m.sensor_eof, m.flags,
				(unsigned long long)sof,
				(unsigned long long)eof), __LINE__;
	/* The sensor runs 1 +- 0.001 times as fast: eof stays after sof. */
	if (eof < sof)
		return snprintf(why, len, "sensor eof before sof"), __LINE__;
	return 0;
}

/*
 * A microphone at +3 ms / +50 ppm and a camera at -2 ms / -30 ppm, both
 * streaming: every frame's sensor stamps are the mapping of its SoC
 * stamps, in DQBUF and in the record; XTS triples of each follow the
 * mapping and put the two sources 5 ms apart at the same SoC instant.
 */
TEST_F(clock, two_sources)
{
	struct stream st[2];
	struct mmedge_xts x[2];
	unsigned int i, k, done = 0;
	char why[160];
	int line;

	memset(st, 0, sizeof(st));
	ASSERT_EQ(0, create(self->fd, MMEDGE_CHAN_CAPTURE, &mic, 3000000, 50000,
			    &st[0].c));
	ASSERT_EQ(0, create(self->fd, MMEDGE_CHAN_CAPTURE, &cam, -2000000, -30000,
			    &st[1].c));
	for (i = 0; i < 2; i++) {
		st[i].clk.offset = st[i].c.sensor_offset_ns;
		st[i].clk.drift = st[i].c.sensor_drift_ppb;
		st[i].clk.epoch = st[i].c.sensor_epoch;
		EXPECT_NE(0, st[i].clk.epoch);
		for (k = 0; k < NBUF; k++) {
			ASSERT_EQ(0, sbuf_alloc(self->fd, st[i].c.meta_offset +
						sizeof(struct mmedge_frame_meta),
						&st[i].b[k]));
			ASSERT_EQ(0, qbuf(self->fd, st[i].c.id, st[i].b[k].fd, k));
		}
	}
	/* Both epochs are SoC ns at creation, the mic's first. */
	EXPECT_LE(st[0].clk.epoch, st[1].clk.epoch);

	while (done < 2) {
		done = 0;
		for (i = 0; i < 2; i++) {
			struct mmedge_dqbuf d;

			if (st[i].frames >= FRAMES) {
				done++;
				continue;
			}
			ASSERT_EQ(0, dqbuf(self->fd, st[i].c.id, 0, 3000, &d));
			ASSERT_EQ(0, d.frame_flags & MMEDGE_FRAME_ERROR);
			ASSERT_GT(NBUF, d.cookie);
			line = check_frame(&st[i], self->mult, self->shift, &d,
					   why, sizeof(why));
			EXPECT_EQ(0, line) TH_LOG("chan %u seq %llu: %s", i,
						  (unsigned long long)d.sequence,
						  why);
			st[i].frames++;
			ASSERT_EQ(0, qbuf(self->fd, st[i].c.id,
					  st[i].b[d.cookie].fd, d.cookie));
		}
	}

	for (i = 0; i < 2; i++) {
		memset(&x[i], 0, sizeof(x[i]));
		x[i].n_samples = MMEDGE_XTS_MAX_SAMPLES;
		x[i].flags = MMEDGE_XTS_SENSOR;
		x[i].chan = st[i].c.id;
		ASSERT_EQ(0, xioctl(self->fd, MMEDGE_IOC_XTS, &x[i]));
		EXPECT_EQ(st[i].clk.offset, x[i].sensor_offset_ns);
		EXPECT_EQ(st[i].clk.drift, x[i].sensor_drift_ppb);
		EXPECT_EQ(st[i].clk.epoch, x[i].sensor_epoch);
		for (k = 0; k < x[i].n_samples; k++) {
			const struct mmedge_xts_sample *s = &x[i].samples[k];
			__u64 soc = soc_ns(x[i].mult, x[i].shift, s->raw);
			__s64 elapsed = soc - st[i].clk.epoch;
			__s64 rel = x[i].sensor[k] - soc - st[i].clk.offset;

			EXPECT_EQ(sensor_of(&st[i].clk, soc), x[i].sensor[k])
				TH_LOG("chan %u sample %u", i, k);
			EXPECT_LE(s->sys_before, s->sys_after);
			if (k)
				EXPECT_LT(x[i].sensor[k - 1], x[i].sensor[k]);
			/* The drift term: drift * elapsed / 1e9, in ns. */
			EXPECT_GE(elapsed, 0);
			EXPECT_LE(llabs(rel), llabs((long long)st[i].clk.drift) *
					      (elapsed / 1000000000 + 1));
			EXPECT_EQ(rel < 0, st[i].clk.drift < 0 && rel);
		}
	}
	/* Same SoC instant on both: 5 ms apart, plus the drift terms. */
	{
		__u64 soc = soc_ns(x[0].mult, x[0].shift, x[0].samples[0].raw);
		__s64 gap = sensor_of(&st[0].clk, soc) - sensor_of(&st[1].clk, soc);

		EXPECT_LE(llabs(gap - 5000000), 80000 *
			  ((soc - st[0].clk.epoch) / 1000000000 + 1));
		TH_LOG("mic - camera at one SoC instant: %lld ns", (long long)gap);
	}

	for (i = 0; i < 2; i++) {
		EXPECT_EQ(0, chan_destroy(self->fd, st[i].c.id));
		for (k = 0; k < NBUF; k++)
			sbuf_free(&st[i].b[k]);
	}
}

/* Callers of the first published sizes: the SoC timeline, no change. */
TEST_F(clock, old_sizes)
{
	struct mmedge_chan_create c;
	struct mmedge_xts x;
	struct mmedge_dqbuf d;
	struct sclk zero = { 0 };
	struct sbuf b;
	unsigned int k;

	memset(&c, 0xaa, sizeof(c));
	memset(&c, 0, MMEDGE_CHAN_CREATE_SIZE_VER0);
	c.dir = MMEDGE_CHAN_CAPTURE;
	c.src = mic;
	ASSERT_EQ(0, xioctl(self->fd, CHAN_CREATE_V0, &c));
	/* Nothing written past the caller's size. */
	EXPECT_EQ(0xaaaaaaaaaaaaaaaaULL, c.sensor_epoch);

	ASSERT_EQ(0, sbuf_alloc(self->fd, c.meta_offset +
				sizeof(struct mmedge_frame_meta), &b));
	ASSERT_EQ(0, qbuf(self->fd, c.id, b.fd, 0));
	memset(&d, 0x55, sizeof(d));
	memset(&d, 0, MMEDGE_DQBUF_SIZE_VER0);
	d.chan = c.id;
	d.timeout_ms = 3000;
	ASSERT_EQ(0, xioctl(self->fd, DQBUF_V0, &d));
	EXPECT_EQ(0x5555555555555555ULL, d.sensor_sof);
	EXPECT_NE(0, d.frame_flags & MMEDGE_FRAME_TS_SENSOR);

	/* The old XTS size gets the old answer; the sensor flag needs more. */
	memset(&x, 0, sizeof(x));
	x.n_samples = 4;
	EXPECT_EQ(0, xioctl(self->fd, XTS_V0, &x));
	x.flags = MMEDGE_XTS_SENSOR;
	x.chan = c.id;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, XTS_V0, &x));
	/* 0/0: the sensor clock is the SoC counter's ns. */
	ASSERT_EQ(0, xioctl(self->fd, MMEDGE_IOC_XTS, &x));
	EXPECT_EQ(0, x.sensor_offset_ns);
	EXPECT_EQ(0, x.sensor_drift_ppb);
	for (k = 0; k < 4; k++)
		EXPECT_EQ(sensor_of(&zero, soc_ns(x.mult, x.shift,
						  x.samples[k].raw)),
			  x.sensor[k]);
	EXPECT_EQ(0, chan_destroy(self->fd, c.id));
	sbuf_free(&b);
}

TEST_F(clock, bad_values)
{
	struct mmedge_chan_create c, f;
	struct mmedge_xts x;

	EXPECT_EQ(-EINVAL, create(self->fd, MMEDGE_CHAN_CAPTURE, &mic, 0,
				  MMEDGE_SENSOR_DRIFT_MAX + 1, &c));
	EXPECT_EQ(-EINVAL, create(self->fd, MMEDGE_CHAN_CAPTURE, &mic, 0,
				  -MMEDGE_SENSOR_DRIFT_MAX - 1, &c));
	EXPECT_EQ(-EINVAL, create(self->fd, MMEDGE_CHAN_CAPTURE, &cam,
				  MMEDGE_SENSOR_OFFSET_MAX + 1, 0, &c));
	EXPECT_EQ(-EINVAL, create(self->fd, MMEDGE_CHAN_CAPTURE, &cam,
				  -MMEDGE_SENSOR_OFFSET_MAX - 1, 0, &c));
	EXPECT_EQ(-EINVAL, create(self->fd, MMEDGE_CHAN_CAPTURE, &cam,
				  INT64_MIN, INT32_MIN, &c));
	memset(&c, 0, sizeof(c));
	c.dir = MMEDGE_CHAN_CAPTURE;
	c.src = cam;
	c.sensor_pad = 1;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_CHAN_CREATE, &c));
	/* Feed and copy channels have no source clock. */
	EXPECT_EQ(-EINVAL, create(self->fd, MMEDGE_CHAN_FEED, NULL, 1, 0, &c));
	EXPECT_EQ(-EINVAL, create(self->fd, MMEDGE_CHAN_COPY, NULL, 0, -1, &c));
	/* The limits themselves are fine. */
	ASSERT_EQ(0, create(self->fd, MMEDGE_CHAN_CAPTURE, &cam,
			    -MMEDGE_SENSOR_OFFSET_MAX, MMEDGE_SENSOR_DRIFT_MAX, &c));
	ASSERT_EQ(0, create(self->fd, MMEDGE_CHAN_FEED, NULL, 0, 0, &f));
	EXPECT_EQ(0, f.sensor_epoch);

	memset(&x, 0, sizeof(x));
	x.n_samples = 1;
	x.flags = MMEDGE_XTS_SENSOR;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_XTS, &x));	/* chan 0 */
	x.chan = 63;
	if (x.chan != c.id && x.chan != f.id)
		EXPECT_EQ(-ENOENT, xioctl(self->fd, MMEDGE_IOC_XTS, &x));
	x.chan = f.id;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_XTS, &x));	/* feed */
	x.flags = 0;
	x.chan = c.id;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_XTS, &x));	/* no flag */
	x.flags = MMEDGE_XTS_SENSOR << 1;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_XTS, &x));
	x.flags = MMEDGE_XTS_SENSOR;
	ASSERT_EQ(0, xioctl(self->fd, MMEDGE_IOC_XTS, &x));
	EXPECT_EQ(-MMEDGE_SENSOR_OFFSET_MAX, x.sensor_offset_ns);
	EXPECT_EQ(MMEDGE_SENSOR_DRIFT_MAX, x.sensor_drift_ppb);
	EXPECT_EQ(chan_destroy(self->fd, c.id), 0);
	EXPECT_EQ(chan_destroy(self->fd, f.id), 0);
}

TEST_HARNESS_MAIN
