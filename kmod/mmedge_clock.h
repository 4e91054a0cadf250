/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mmedge: the counter that stamps frames, its calibration and
 * cross-timestamps (mmedge_clock.c).
 */
#ifndef _MMEDGE_CLOCK_H
#define _MMEDGE_CLOCK_H

#include <linux/types.h>

struct mmedge_engine;
struct mmedge_sclk;

u64 mmedge_counter_read(const struct mmedge_engine *eng);
u64 mmedge_clock_sensor_at(const struct mmedge_engine *eng,
			   const struct mmedge_sclk *sc, u64 raw);
void mmedge_clock_anchor(struct mmedge_engine *eng);
void mmedge_clock_calibrate(struct mmedge_engine *eng);

#endif /* _MMEDGE_CLOCK_H */
