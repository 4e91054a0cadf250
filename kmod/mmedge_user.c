// SPDX-License-Identifier: GPL-2.0
/*
 * mmedge: per-user limits.
 *
 * Buffers, imports and channels are charged to the uid of the task whose
 * ioctl created them (its real uid, as RLIMIT_NPROC counts), in one
 * table for all instances, against the uid_mem_limit_mb and
 * uid_chan_limit module parameters. A charge past a limit is refused
 * unless the caller has CAP_SYS_RESOURCE (asked only then); refused
 * charges leave nothing behind. Each charged object holds a reference on
 * its user's entry and gives its charge back when it goes, whoever
 * holds it by then; the entry is freed with the last reference.
 */

#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/hashtable.h>
#include <linux/slab.h>
#include <linux/spinlock.h>

#include "mmedge_drv.h"
#include "mmedge_limits.h"
#include "mmedge_uapi.h"
#include "mmedge_user.h"

#define MMEDGE_USERS_BITS	6

/* Protects mmedge_users: lookup, insertion and removal of entries. */
static DEFINE_SPINLOCK(mmedge_users_lock);
static DEFINE_HASHTABLE(mmedge_users, MMEDGE_USERS_BITS);

static struct mmedge_user *mmedge_user_find(kuid_t uid)
{
	struct mmedge_user *u;

	lockdep_assert_held(&mmedge_users_lock);

	hash_for_each_possible(mmedge_users, u, node, __kuid_val(uid))
		if (uid_eq(u->uid, uid))
			return u;
	return NULL;
}

/**
 * mmedge_user_get_current() - the caller's entry, with a reference
 *
 * Return: the entry of current's real uid, created if needed (charged
 * to the caller's memory cgroup), or NULL without memory.
 */
struct mmedge_user *mmedge_user_get_current(void)
{
	kuid_t uid = current_uid();
	struct mmedge_user *u, *n;

	spin_lock(&mmedge_users_lock);
	u = mmedge_user_find(uid);
	if (u)
		kref_get(&u->ref);
	spin_unlock(&mmedge_users_lock);
	if (u)
		return u;

	n = kzalloc(sizeof(*n), GFP_KERNEL_ACCOUNT);
	if (!n)
		return NULL;
	kref_init(&n->ref);
	n->uid = uid;
	atomic64_set(&n->mem_used, 0);
	atomic_set(&n->nr_chans, 0);

	spin_lock(&mmedge_users_lock);
	u = mmedge_user_find(uid);
	if (u) {
		kref_get(&u->ref);
	} else {
		hash_add(mmedge_users, &n->node, __kuid_val(uid));
		u = n;
		n = NULL;
	}
	spin_unlock(&mmedge_users_lock);
	kfree(n);
	return u;
}

static void mmedge_user_release(struct kref *ref)
	__releases(&mmedge_users_lock)
{
	struct mmedge_user *u = container_of(ref, struct mmedge_user, ref);

	hash_del(&u->node);
	spin_unlock(&mmedge_users_lock);
	WARN_ON(atomic64_read(&u->mem_used) || atomic_read(&u->nr_chans));
	kfree(u);
}

void mmedge_user_put(struct mmedge_user *u)
{
	if (u)
		kref_put_lock(&u->ref, mmedge_user_release, &mmedge_users_lock);
}

/**
 * mmedge_user_charge_mem() - charge @bytes to @u's memory limit
 * @u: the user
 * @bytes: bytes to charge
 *
 * Return: 0, or -ENOMEM past uid_mem_limit_mb for a caller without
 * CAP_SYS_RESOURCE.
 */
int mmedge_user_charge_mem(struct mmedge_user *u, u64 bytes)
{
	if (!mmedge_charge(&u->mem_used, bytes, mmedge_uid_mem_limit()))
		return 0;
	if (!capable(CAP_SYS_RESOURCE))
		return -ENOMEM;
	return mmedge_charge(&u->mem_used, bytes, U64_MAX);
}

void mmedge_user_uncharge_mem(struct mmedge_user *u, u64 bytes)
{
	mmedge_uncharge(&u->mem_used, bytes);
}

/**
 * mmedge_user_charge_chan() - charge a channel to @u
 * @u: the user
 *
 * Return: 0, or -ENOSPC if @u holds uid_chan_limit channels and the
 * caller has no CAP_SYS_RESOURCE.
 */
int mmedge_user_charge_chan(struct mmedge_user *u)
{
	unsigned int limit = mmedge_uid_chan_limit();
	int old = atomic_read(&u->nr_chans);

	do {
		if (old >= limit) {
			if (!capable(CAP_SYS_RESOURCE))
				return -ENOSPC;
			atomic_inc(&u->nr_chans);
			return 0;
		}
	} while (!atomic_try_cmpxchg(&u->nr_chans, &old, old + 1));
	return 0;
}

void mmedge_user_uncharge_chan(struct mmedge_user *u)
{
	atomic_dec(&u->nr_chans);
}
