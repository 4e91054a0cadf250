/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mmedge: hardware counter to nanoseconds.
 *
 * Pure logic: the conversion and its calibration arithmetic. Reading the
 * counter and the clocks is done by the caller.
 */
#ifndef _MMEDGE_TS_H
#define _MMEDGE_TS_H

#include <linux/types.h>
#include <linux/mmedge.h>

/**
 * struct mmedge_tsconv - raw counter to ns, anchored at a base pair
 * @base_raw: counter value at the anchor.
 * @base_ns: clock value (ns) at the anchor.
 * @mult: ns = (delta * mult) >> shift.
 * @shift: see @mult.
 * @mask: the counter wraps at @mask + 1 (2^bits).
 */
struct mmedge_tsconv {
	u64 base_raw;
	u64 base_ns;
	u32 mult;
	u32 shift;
	u64 mask;
};

int mmedge_ts_calc(struct mmedge_tsconv *tc, u64 hz, unsigned int bits);
u64 mmedge_ts_hz(u64 raw_delta, u64 ns_delta);
void mmedge_ts_anchor(struct mmedge_tsconv *tc, u64 raw, u64 ns);
u64 mmedge_ts_to_ns(const struct mmedge_tsconv *tc, u64 raw);

/**
 * struct mmedge_sclk - a source's sensor clock, derived from the SoC counter
 * @offset_ns: offset from the SoC counter's ns timeline.
 * @drift_ppb: rate error, parts per billion.
 * @epoch_ns: SoC counter ns where the drift term is zero.
 *
 * Immutable once the channel is published; see struct mmedge_chan_create
 * in uapi/linux/mmedge.h for the formula.
 */
struct mmedge_sclk {
	s64 offset_ns;
	s32 drift_ppb;
	u64 epoch_ns;
};

int mmedge_sclk_check(s64 offset_ns, s32 drift_ppb);
u64 mmedge_ts_soc_ns(const struct mmedge_tsconv *tc, u64 raw);
u64 mmedge_sclk_from_soc(const struct mmedge_sclk *sc, u64 soc_ns);

#endif /* _MMEDGE_TS_H */
