/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mmedge: the generic netlink family "mmedge".
 */
#ifndef _MMEDGE_NL_H
#define _MMEDGE_NL_H

#include <linux/types.h>

struct mmedge_dev;
struct mmedge_chan_info;

int mmedge_nl_init(void);
void mmedge_nl_exit(void);
void mmedge_nl_chan_event(struct mmedge_dev *mdev, u8 cmd, u32 id,
			  const char *name, u32 src_type, u32 dir);
void mmedge_nl_chan_changed(struct mmedge_dev *mdev,
			    const struct mmedge_chan_info *ci, u32 old_weight,
			    bool adaptive);
void mmedge_nl_chan_drop(struct mmedge_dev *mdev, u32 id, const char *name,
			 u64 dropped);
void mmedge_nl_engine_stall(struct mmedge_dev *mdev, u64 stall_ns);

/* The live instances, by index, for netlink's requests. */
void mmedge_nl_dev_add(struct mmedge_dev *mdev);
void mmedge_nl_dev_del(struct mmedge_dev *mdev);
struct mmedge_dev *mmedge_dev_get(u32 index);
void mmedge_dev_put(struct mmedge_dev *mdev);

#endif /* _MMEDGE_NL_H */
