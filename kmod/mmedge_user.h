/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mmedge: per-user accounting (mmedge_user.c).
 */
#ifndef _MMEDGE_USER_H
#define _MMEDGE_USER_H

#include <linux/atomic.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/uidgid.h>

/**
 * struct mmedge_user - what one uid holds across all instances
 * @ref: one reference per object charged to the user (buffer, import,
 *	channel), dropped when the object goes.
 * @uid: the user.
 * @mem_used: bytes of buffers and imports charged to the user, against
 *	the uid_mem_limit_mb parameter.
 * @nr_chans: live channels the user created, against uid_chan_limit.
 * @node: entry in the table of users.
 */
struct mmedge_user {
	struct kref ref;
	kuid_t uid;
	atomic64_t mem_used;
	atomic_t nr_chans;
	struct hlist_node node;
};

struct mmedge_user *mmedge_user_get_current(void);
void mmedge_user_put(struct mmedge_user *u);
int mmedge_user_charge_mem(struct mmedge_user *u, u64 bytes);
void mmedge_user_uncharge_mem(struct mmedge_user *u, u64 bytes);
int mmedge_user_charge_chan(struct mmedge_user *u);
void mmedge_user_uncharge_chan(struct mmedge_user *u);

#endif /* _MMEDGE_USER_H */
