// SPDX-License-Identifier: GPL-2.0
/*
 * mmedge: the clock: the free-running counter that stamps every frame,
 * its calibration and conversion to CLOCK_MONOTONIC / BOOTTIME, the
 * capture channels' sensor clocks, and MMEDGE_IOC_XTS, which lets
 * userspace correlate the counter with the system clocks.
 *
 * The conversion (mmedge_engine.tc_mono, boot_offset, counter_hz) lives
 * in the engine, whose thread re-anchors it every second under
 * mmedge_engine.lock; the math is in mmedge_ts.c.
 */

#include <linux/delay.h>
#include <linux/irqflags.h>
#include <linux/ktime.h>
#include <linux/lockdep.h>
#include <linux/string.h>
#include <linux/timekeeping.h>
#include <linux/timex.h>
#ifdef CONFIG_X86_TSC
#include <asm/tsc.h>
#endif

#include "mmedge_chan.h"
#include "mmedge_clock.h"
#include "mmedge_drv.h"
#include "mmedge_uapi.h"

/* The free-running counter: the cycle counter, or the raw monotonic clock. */
u64 mmedge_counter_read(const struct mmedge_engine *eng)
{
	if (!eng->counter_hz || eng->counter_hz == NSEC_PER_SEC)
		return ktime_get_raw_ns();
	return get_cycles();
}

/* Counter value @raw on sensor clock @sc (mult and shift never change). */
u64 mmedge_clock_sensor_at(const struct mmedge_engine *eng,
			   const struct mmedge_sclk *sc, u64 raw)
{
	return mmedge_sclk_from_soc(sc, mmedge_ts_soc_ns(&eng->tc_mono, raw));
}

/* Anchor the counter conversion on a (mono, counter, mono) sandwich. */
void mmedge_clock_anchor(struct mmedge_engine *eng)
{
	u64 before, raw, after;

	lockdep_assert_held(&eng->lock);
	before = ktime_get_ns();
	raw = mmedge_counter_read(eng);
	after = ktime_get_ns();
	mmedge_ts_anchor(&eng->tc_mono, raw, before + (after - before) / 2);
	eng->boot_offset = ktime_to_ns(ktime_mono_to_any(0, TK_OFFS_BOOT));
}

/*
 * The cycle counter is only a timestamp source if it is one clock for all
 * CPUs. On x86 the kernel finds out at boot (and from its clocksource
 * watchdog) whether the TSCs are synchronised; a guest whose vCPUs' TSCs
 * drift apart gets "Marking TSC unstable" and so does this driver.
 */
static bool mmedge_cycles_usable(void)
{
#ifdef CONFIG_X86_TSC
	return !check_tsc_unstable();
#else
	return true;
#endif
}

/*
 * A cycle counter value and the raw monotonic clock at the same moment.
 * Where the timekeeping clocksource is the cycle counter itself (the arch
 * counter on arm64), ktime_get_snapshot() gives both from one read.
 * Elsewhere the clock is read right after the counter, and a pause in
 * between (a vCPU descheduled) goes into the calibration.
 */
static void mmedge_counter_pair(u64 *raw, u64 *ns)
{
	struct system_time_snapshot snap;

	ktime_get_snapshot(&snap);
	if (snap.cs_id == CSID_ARM_ARCH_COUNTER) {
		*raw = snap.cycles;
		*ns = ktime_to_ns(snap.raw);
		return;
	}
	*raw = get_cycles();
	*ns = ktime_get_raw_ns();
}

/*
 * Measure the counter's frequency over 20 ms and set the conversion to
 * CLOCK_MONOTONIC; without a usable cycle counter the raw monotonic
 * clock is the counter.
 */
void mmedge_clock_calibrate(struct mmedge_engine *eng)
{
	u64 t0, r0, t1, r1, hz = 0;

	eng->counter_hz = 0;
	if (mmedge_cycles_usable()) {
		mmedge_counter_pair(&r0, &t0);
		usleep_range(20000, 21000);
		mmedge_counter_pair(&r1, &t1);
		hz = r1 > r0 ? mmedge_ts_hz(r1 - r0, t1 - t0) : 0;
	}
	if (!hz || mmedge_ts_calc(&eng->tc_mono, hz, 64)) {
		/* No usable cycle counter: use the raw monotonic clock. */
		hz = NSEC_PER_SEC;
		mmedge_ts_calc(&eng->tc_mono, hz, 64);
	}
	eng->counter_hz = hz;
}

/*
 * The sensor clock of capture channel @id, for MMEDGE_XTS_SENSOR: it never
 * changes once the channel exists, so a copy serves the whole call.
 */
static int mmedge_clock_sclk(struct mmedge_engine *eng, u32 id,
			     struct mmedge_sclk *sc)
{
	struct mmedge_chan *ch;
	int ret = -ENOENT;

	mutex_lock(&eng->lock);
	ch = mmedge_chan_find(eng, id);
	if (ch) {
		ret = ch->dir == MMEDGE_CHAN_CAPTURE ? 0 : -EINVAL;
		*sc = ch->sclk;
	}
	mutex_unlock(&eng->lock);
	return ret;
}

/*
 * MMEDGE_IOC_XTS: cross-timestamp the hardware counter against
 * CLOCK_MONOTONIC (and BOOTTIME through boot_offset); with
 * MMEDGE_XTS_SENSOR also give each sample's counter on a channel's sensor
 * clock: (sensor, SoC counter, CLOCK_MONOTONIC) triples.
 *
 * Errors:
 *  -EINVAL: n_samples 0 or above MMEDGE_XTS_MAX_SAMPLES, unknown flags,
 *	     pad/reserved set, chan set without MMEDGE_XTS_SENSOR or 0
 *	     with it,
 *	     MMEDGE_XTS_SENSOR with a structure smaller than
 *	     MMEDGE_XTS_SIZE_VER1 or on a feed or copy channel.
 *  -ENOENT: MMEDGE_XTS_SENSOR and no channel chan in the instance.
 */
int mmedge_ioctl_xts(struct mmedge_file *mf, void *data,
		     struct mmedge_ioctl_ctx *ctx)
{
	struct mmedge_engine *eng = &mf->mdev->eng;
	struct mmedge_xts *x = data;
	bool sensor = x->flags & MMEDGE_XTS_SENSOR;
	struct mmedge_sclk sc = { 0 };
	unsigned int i;
	int ret;

	ret = mmedge_xts_check(x, ctx->usize);
	if (ret)
		return ret;
	/* Out fields: whatever the caller left there goes. */
	x->sensor_drift_ppb = 0;
	x->sensor_offset_ns = 0;
	x->sensor_epoch = 0;
	memset(x->sensor, 0, sizeof(x->sensor));
	if (sensor) {
		ret = mmedge_clock_sclk(eng, x->chan, &sc);
		if (ret)
			return ret;
		x->sensor_drift_ppb = sc.drift_ppb;
		x->sensor_offset_ns = sc.offset_ns;
		x->sensor_epoch = sc.epoch_ns;
	}
	x->counter_hz = eng->counter_hz;
	x->mult = eng->tc_mono.mult;
	x->shift = eng->tc_mono.shift;
	x->counter_bits = 64;
	for (i = 0; i < x->n_samples; i++) {
		struct mmedge_xts_sample *s = &x->samples[i];
		unsigned long flags;

		local_irq_save(flags);
		s->sys_before = ktime_get_ns();
		s->raw = mmedge_counter_read(eng);
		s->sys_after = ktime_get_ns();
		local_irq_restore(flags);
		s->boot_offset = ktime_to_ns(ktime_mono_to_any(0, TK_OFFS_BOOT));
		if (sensor)
			x->sensor[i] = mmedge_clock_sensor_at(eng, &sc, s->raw);
	}
	return 0;
}
