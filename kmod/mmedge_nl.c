// SPDX-License-Identifier: GPL-2.0
/*
 * mmedge: the generic netlink family "mmedge" for operators (mmctl).
 *
 * Devices and channels are dumped with their configuration and stats,
 * channels are tuned one at a time or atomically several at once, and a
 * multicast group "events" announces channel life, weight changes (and
 * who made them), drops (rate limited) and engine stalls. Config and
 * stats come from the engine's own accessors, the same the ioctls use.
 */

#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <net/genetlink.h>
#include <net/netlink.h>

#include "mmedge_drv.h"
#include "mmedge_nl.h"

#define MMEDGE_NL_MAX_ENTRIES	MMEDGE_MAX_CHANS

/* Protects mmedge_devs: the live instances by id, for netlink. */
static DEFINE_MUTEX(mmedge_devs_lock);
static struct mmedge_dev *mmedge_devs[MMEDGE_MAX_DEVS];

/**
 * mmedge_dev_get() - a live instance by index
 * @index: N of /dev/mmedgeN
 *
 * Return: the instance with a reference (mmedge_dev_put()), or NULL.
 */
struct mmedge_dev *mmedge_dev_get(u32 index)
{
	struct mmedge_dev *mdev = NULL;

	if (index >= MMEDGE_MAX_DEVS)
		return NULL;
	mutex_lock(&mmedge_devs_lock);
	if (mmedge_devs[index]) {
		mdev = mmedge_devs[index];
		get_device(&mdev->dev);
	}
	mutex_unlock(&mmedge_devs_lock);
	return mdev;
}

void mmedge_dev_put(struct mmedge_dev *mdev)
{
	put_device(&mdev->dev);
}

/* @mdev is live: netlink may find it by its index. */
void mmedge_nl_dev_add(struct mmedge_dev *mdev)
{
	mutex_lock(&mmedge_devs_lock);
	mmedge_devs[mdev->id] = mdev;
	mutex_unlock(&mmedge_devs_lock);
}

/* @mdev goes: netlink no longer finds it (references taken stay). */
void mmedge_nl_dev_del(struct mmedge_dev *mdev)
{
	mutex_lock(&mmedge_devs_lock);
	mmedge_devs[mdev->id] = NULL;
	mutex_unlock(&mmedge_devs_lock);
}

static struct netlink_range_validation mmedge_nl_bus_range = {
	.min = MMEDGE_BUS_MIN_BW,
	.max = MMEDGE_BUS_MAX_BW,
};

static const struct nla_policy mmedge_nl_entry_policy[MMEDGE_A_MAX + 1] = {
	[MMEDGE_A_CHAN_ID] = NLA_POLICY_MIN(NLA_U32, 1),
	[MMEDGE_A_CHAN_NAME] = { .type = NLA_NUL_STRING,
				 .len = MMEDGE_NAME_LEN - 1 },
	[MMEDGE_A_CHAN_WEIGHT] = NLA_POLICY_RANGE(NLA_U32, MMEDGE_WEIGHT_MIN,
						  MMEDGE_WEIGHT_MAX),
	[MMEDGE_A_CHAN_CLASS] = NLA_POLICY_MAX(NLA_U32, MMEDGE_CLASS_LATENCY),
	[MMEDGE_A_CHAN_CAP] = { .type = NLA_U64 },
};

static const struct nla_policy mmedge_nl_policy[MMEDGE_A_MAX + 1] = {
	[MMEDGE_A_DEV_INDEX] = NLA_POLICY_MAX(NLA_U32, MMEDGE_MAX_DEVS - 1),
	[MMEDGE_A_DEV_BUS_BW] = NLA_POLICY_FULL_RANGE(NLA_U64,
						      &mmedge_nl_bus_range),
	[MMEDGE_A_CHAN_ID] = NLA_POLICY_MIN(NLA_U32, 1),
	[MMEDGE_A_CHAN_NAME] = { .type = NLA_NUL_STRING,
				 .len = MMEDGE_NAME_LEN - 1 },
	[MMEDGE_A_CHAN_WEIGHT] = NLA_POLICY_RANGE(NLA_U32, MMEDGE_WEIGHT_MIN,
						  MMEDGE_WEIGHT_MAX),
	[MMEDGE_A_CHAN_CLASS] = NLA_POLICY_MAX(NLA_U32, MMEDGE_CLASS_LATENCY),
	[MMEDGE_A_CHAN_CAP] = { .type = NLA_U64 },
	[MMEDGE_A_CHAN_LIST] = NLA_POLICY_NESTED_ARRAY(mmedge_nl_entry_policy),
};

static struct genl_family mmedge_nl_family;

static int mmedge_nl_put_dev(struct sk_buff *skb, struct mmedge_dev *mdev)
{
	if (nla_put_u32(skb, MMEDGE_A_DEV_INDEX, mdev->id) ||
	    nla_put_string(skb, MMEDGE_A_DEV_NAME, dev_name(&mdev->dev)) ||
	    nla_put_u8(skb, MMEDGE_A_DEV_VIRTUAL, mdev->virtual) ||
	    nla_put_u64_64bit(skb, MMEDGE_A_DEV_BUS_BW,
			      mmedge_engine_get_bus(&mdev->eng), MMEDGE_A_PAD) ||
	    nla_put_u32(skb, MMEDGE_A_DEV_NR_CHANS,
			mmedge_engine_nr_chans(&mdev->eng)))
		return -EMSGSIZE;
	return 0;
}

static int mmedge_nl_put_chan(struct sk_buff *skb, u32 dev_index,
			      const struct mmedge_chan_info *ci)
{
	struct nlattr *st;

	if (nla_put_u32(skb, MMEDGE_A_DEV_INDEX, dev_index) ||
	    nla_put_u32(skb, MMEDGE_A_CHAN_ID, ci->id) ||
	    nla_put_string(skb, MMEDGE_A_CHAN_NAME, ci->name) ||
	    nla_put_u32(skb, MMEDGE_A_CHAN_SRC_TYPE, ci->src_type) ||
	    nla_put_u32(skb, MMEDGE_A_CHAN_DIR, ci->dir) ||
	    nla_put_u32(skb, MMEDGE_A_CHAN_WEIGHT, ci->weight) ||
	    nla_put_u32(skb, MMEDGE_A_CHAN_CLASS, ci->class) ||
	    nla_put_u64_64bit(skb, MMEDGE_A_CHAN_CAP, ci->cap, MMEDGE_A_PAD))
		return -EMSGSIZE;
	st = nla_nest_start(skb, MMEDGE_A_CHAN_STATS);
	if (!st)
		return -EMSGSIZE;
	if (nla_put_u64_64bit(skb, MMEDGE_A_STATS_BYTES, ci->bytes,
			      MMEDGE_A_STATS_PAD) ||
	    nla_put_u64_64bit(skb, MMEDGE_A_STATS_SEGMENTS, ci->segments,
			      MMEDGE_A_STATS_PAD) ||
	    nla_put_u64_64bit(skb, MMEDGE_A_STATS_FRAMES, ci->frames,
			      MMEDGE_A_STATS_PAD) ||
	    nla_put_u64_64bit(skb, MMEDGE_A_STATS_DROPPED, ci->dropped,
			      MMEDGE_A_STATS_PAD) ||
	    nla_put_u64_64bit(skb, MMEDGE_A_STATS_ERRORS, ci->errors,
			      MMEDGE_A_STATS_PAD) ||
	    nla_put_u64_64bit(skb, MMEDGE_A_STATS_BW, ci->bw,
			      MMEDGE_A_STATS_PAD) ||
	    nla_put(skb, MMEDGE_A_STATS_WAIT_HIST, sizeof(ci->wait_hist),
		    ci->wait_hist)) {
		nla_nest_cancel(skb, st);
		return -EMSGSIZE;
	}
	nla_nest_end(skb, st);
	return 0;
}

/* The device named by MMEDGE_A_DEV_INDEX (default 0), referenced. */
static struct mmedge_dev *mmedge_nl_dev(struct genl_info *info)
{
	u32 index = 0;
	struct mmedge_dev *mdev;

	if (info->attrs[MMEDGE_A_DEV_INDEX])
		index = nla_get_u32(info->attrs[MMEDGE_A_DEV_INDEX]);
	mdev = mmedge_dev_get(index);
	if (!mdev)
		NL_SET_ERR_MSG_ATTR(info->extack,
				    info->attrs[MMEDGE_A_DEV_INDEX],
				    "no such mmedge device");
	return mdev;
}

static int mmedge_nl_dev_get_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct mmedge_dev *mdev = mmedge_nl_dev(info);
	struct sk_buff *msg;
	void *hdr;
	int ret;

	if (!mdev)
		return -ENODEV;
	msg = nlmsg_new(NLMSG_DEFAULT_SIZE, GFP_KERNEL);
	if (!msg) {
		ret = -ENOMEM;
		goto out;
	}
	hdr = genlmsg_put_reply(msg, info, &mmedge_nl_family, 0,
				MMEDGE_CMD_DEV_GET);
	if (!hdr || mmedge_nl_put_dev(msg, mdev)) {
		nlmsg_free(msg);
		ret = -EMSGSIZE;
		goto out;
	}
	genlmsg_end(msg, hdr);
	ret = genlmsg_reply(msg, info);
out:
	mmedge_dev_put(mdev);
	return ret;
}

static int mmedge_nl_dev_get_dumpit(struct sk_buff *skb,
				    struct netlink_callback *cb)
{
	unsigned int idx;

	for (idx = cb->args[0]; idx < MMEDGE_MAX_DEVS; idx++) {
		struct mmedge_dev *mdev = mmedge_dev_get(idx);
		void *hdr;
		int ret;

		if (!mdev)
			continue;
		hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid,
				  cb->nlh->nlmsg_seq, &mmedge_nl_family,
				  NLM_F_MULTI, MMEDGE_CMD_DEV_GET);
		ret = hdr ? mmedge_nl_put_dev(skb, mdev) : -EMSGSIZE;
		mmedge_dev_put(mdev);
		if (ret) {
			if (hdr)
				genlmsg_cancel(skb, hdr);
			break;
		}
		genlmsg_end(skb, hdr);
	}
	cb->args[0] = idx;
	return skb->len;
}

static int mmedge_nl_chan_get_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct mmedge_chan_info *ci;
	struct mmedge_dev *mdev;
	struct sk_buff *msg;
	const char *name = NULL;
	u32 id = 0;
	void *hdr;
	int ret;

	if (info->attrs[MMEDGE_A_CHAN_ID])
		id = nla_get_u32(info->attrs[MMEDGE_A_CHAN_ID]);
	else if (info->attrs[MMEDGE_A_CHAN_NAME])
		name = nla_data(info->attrs[MMEDGE_A_CHAN_NAME]);
	if (!id && !name) {
		GENL_SET_ERR_MSG(info, "give MMEDGE_A_CHAN_ID or MMEDGE_A_CHAN_NAME");
		return -EINVAL;
	}
	mdev = mmedge_nl_dev(info);
	if (!mdev)
		return -ENODEV;
	ci = kzalloc(sizeof(*ci), GFP_KERNEL);
	msg = nlmsg_new(NLMSG_DEFAULT_SIZE, GFP_KERNEL);
	if (!ci || !msg) {
		ret = -ENOMEM;
		goto err;
	}
	ret = mmedge_engine_chan_info(&mdev->eng, 0, id, name, ci);
	if (ret) {
		GENL_SET_ERR_MSG(info, "no such channel");
		goto err;
	}
	hdr = genlmsg_put_reply(msg, info, &mmedge_nl_family, 0,
				MMEDGE_CMD_CHAN_GET);
	if (!hdr || mmedge_nl_put_chan(msg, mdev->id, ci)) {
		ret = -EMSGSIZE;
		goto err;
	}
	genlmsg_end(msg, hdr);
	kfree(ci);
	mmedge_dev_put(mdev);
	return genlmsg_reply(msg, info);

err:
	nlmsg_free(msg);
	kfree(ci);
	mmedge_dev_put(mdev);
	return ret;
}

/* args[0]: device index, args[1]: channel position in it. */
static int mmedge_nl_chan_get_dumpit(struct sk_buff *skb,
				     struct netlink_callback *cb)
{
	struct mmedge_chan_info *ci;
	unsigned int idx;

	ci = kzalloc(sizeof(*ci), GFP_KERNEL);
	if (!ci)
		return -ENOMEM;
	for (idx = cb->args[0]; idx < MMEDGE_MAX_DEVS; idx++, cb->args[1] = 0) {
		struct mmedge_dev *mdev = mmedge_dev_get(idx);
		bool full = false;

		if (!mdev)
			continue;
		for (;;) {
			void *hdr;

			if (mmedge_engine_chan_info(&mdev->eng, cb->args[1], 0,
						    NULL, ci))
				break;
			hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid,
					  cb->nlh->nlmsg_seq, &mmedge_nl_family,
					  NLM_F_MULTI, MMEDGE_CMD_CHAN_GET);
			if (!hdr || mmedge_nl_put_chan(skb, mdev->id, ci)) {
				if (hdr)
					genlmsg_cancel(skb, hdr);
				full = true;
				break;
			}
			genlmsg_end(skb, hdr);
			cb->args[1]++;
		}
		mmedge_dev_put(mdev);
		if (full)
			break;
	}
	cb->args[0] = idx;
	kfree(ci);
	return skb->len;
}

static int mmedge_nl_parse_setting(struct nlattr **tb,
				   struct mmedge_chan_setting *st,
				   struct netlink_ext_ack *extack)
{
	memset(st, 0, sizeof(*st));
	if (tb[MMEDGE_A_CHAN_ID]) {
		st->id = nla_get_u32(tb[MMEDGE_A_CHAN_ID]);
	} else if (tb[MMEDGE_A_CHAN_NAME]) {
		st->name = nla_data(tb[MMEDGE_A_CHAN_NAME]);
	} else {
		NL_SET_ERR_MSG(extack, "a channel needs MMEDGE_A_CHAN_ID or MMEDGE_A_CHAN_NAME");
		return -EINVAL;
	}
	if (tb[MMEDGE_A_CHAN_WEIGHT]) {
		st->set |= MMEDGE_CHAN_SET_WEIGHT;
		st->weight = nla_get_u32(tb[MMEDGE_A_CHAN_WEIGHT]);
	}
	if (tb[MMEDGE_A_CHAN_CLASS]) {
		st->set |= MMEDGE_CHAN_SET_CLASS;
		st->class = nla_get_u32(tb[MMEDGE_A_CHAN_CLASS]);
	}
	if (tb[MMEDGE_A_CHAN_CAP]) {
		st->set |= MMEDGE_CHAN_SET_CAP;
		st->cap = nla_get_u64(tb[MMEDGE_A_CHAN_CAP]);
	}
	return 0;
}

static int mmedge_nl_apply(struct sk_buff *skb, struct genl_info *info,
			   struct mmedge_chan_setting *st, unsigned int n)
{
	struct mmedge_dev *mdev = mmedge_nl_dev(info);
	/*
	 * CHAN_SET and CHAN_SET_MULTI carry GENL_ADMIN_PERM (CAP_NET_ADMIN):
	 * any channel, like CHAN_CONFIG's.
	 */
	struct mmedge_chan_perm perm = {
		.can_other = true,
		.can_nice = netlink_capable(skb, CAP_SYS_NICE),
	};
	const char *why = NULL;
	unsigned int bad = 0;
	int ret;

	if (!mdev)
		return -ENODEV;
	ret = mmedge_engine_apply(&mdev->eng, st, n, &perm, &bad, &why);
	/* why is a static string, so the extack may keep the pointer. */
	if (ret && why && info->extack)
		info->extack->_msg = why;
	mmedge_dev_put(mdev);
	return ret;
}

static int mmedge_nl_chan_set_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct mmedge_chan_setting st;
	int ret;

	ret = mmedge_nl_parse_setting(info->attrs, &st, info->extack);
	if (ret)
		return ret;
	return mmedge_nl_apply(skb, info, &st, 1);
}

static int mmedge_nl_chan_set_multi_doit(struct sk_buff *skb,
					 struct genl_info *info)
{
	struct nlattr *tb[MMEDGE_A_MAX + 1];
	struct mmedge_chan_setting *st;
	struct nlattr *entry;
	unsigned int n = 0;
	int rem, ret;

	if (!info->attrs[MMEDGE_A_CHAN_LIST]) {
		GENL_SET_ERR_MSG(info, "MMEDGE_A_CHAN_LIST is required");
		return -EINVAL;
	}
	st = kcalloc(MMEDGE_NL_MAX_ENTRIES, sizeof(*st), GFP_KERNEL);
	if (!st)
		return -ENOMEM;
	nla_for_each_nested(entry, info->attrs[MMEDGE_A_CHAN_LIST], rem) {
		if (n == MMEDGE_NL_MAX_ENTRIES) {
			NL_SET_ERR_MSG_ATTR(info->extack, entry,
					    "too many entries");
			ret = -E2BIG;
			goto out;
		}
		ret = nla_parse_nested(tb, MMEDGE_A_MAX, entry,
				       mmedge_nl_entry_policy, info->extack);
		if (ret)
			goto out;
		ret = mmedge_nl_parse_setting(tb, &st[n], info->extack);
		if (ret)
			goto out;
		n++;
	}
	ret = mmedge_nl_apply(skb, info, st, n);
out:
	kfree(st);
	return ret;
}

static int mmedge_nl_bus_set_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct mmedge_dev *mdev;

	/* Past GENL_ADMIN_PERM's CAP_NET_ADMIN, the bus model is the system's. */
	if (!netlink_capable(skb, CAP_SYS_ADMIN)) {
		GENL_SET_ERR_MSG(info, "need CAP_SYS_ADMIN to change the bus model");
		return -EPERM;
	}
	if (!info->attrs[MMEDGE_A_DEV_BUS_BW]) {
		GENL_SET_ERR_MSG(info, "MMEDGE_A_DEV_BUS_BW is required");
		return -EINVAL;
	}
	mdev = mmedge_nl_dev(info);
	if (!mdev)
		return -ENODEV;
	mmedge_engine_set_bus(&mdev->eng,
			      nla_get_u64(info->attrs[MMEDGE_A_DEV_BUS_BW]));
	mmedge_dev_put(mdev);
	return 0;
}

static const struct genl_small_ops mmedge_nl_ops[] = {
	{
		.cmd = MMEDGE_CMD_DEV_GET,
		.doit = mmedge_nl_dev_get_doit,
		.dumpit = mmedge_nl_dev_get_dumpit,
	},
	{
		.cmd = MMEDGE_CMD_CHAN_GET,
		.doit = mmedge_nl_chan_get_doit,
		.dumpit = mmedge_nl_chan_get_dumpit,
	},
	{
		.cmd = MMEDGE_CMD_CHAN_SET,
		.flags = GENL_ADMIN_PERM,
		.doit = mmedge_nl_chan_set_doit,
	},
	{
		.cmd = MMEDGE_CMD_CHAN_SET_MULTI,
		.flags = GENL_ADMIN_PERM,
		.doit = mmedge_nl_chan_set_multi_doit,
	},
	{
		.cmd = MMEDGE_CMD_BUS_SET,
		.flags = GENL_ADMIN_PERM,
		.doit = mmedge_nl_bus_set_doit,
	},
};

static const struct genl_multicast_group mmedge_nl_mcgrps[] = {
	{ .name = MMEDGE_GENL_MCGRP_EVENTS },
};

static struct genl_family mmedge_nl_family __ro_after_init = {
	.name = MMEDGE_GENL_NAME,
	.version = MMEDGE_GENL_VERSION,
	.maxattr = MMEDGE_A_MAX,
	.policy = mmedge_nl_policy,
	.module = THIS_MODULE,
	.small_ops = mmedge_nl_ops,
	.n_small_ops = ARRAY_SIZE(mmedge_nl_ops),
	.mcgrps = mmedge_nl_mcgrps,
	.n_mcgrps = ARRAY_SIZE(mmedge_nl_mcgrps),
};

int mmedge_nl_init(void)
{
	return genl_register_family(&mmedge_nl_family);
}

void mmedge_nl_exit(void)
{
	genl_unregister_family(&mmedge_nl_family);
}

static struct sk_buff *mmedge_nl_event_new(u8 cmd, void **hdr)
{
	struct sk_buff *skb;

	if (!genl_has_listeners(&mmedge_nl_family, &init_net, 0))
		return NULL;
	skb = genlmsg_new(NLMSG_DEFAULT_SIZE, GFP_KERNEL);
	if (!skb)
		return NULL;
	*hdr = genlmsg_put(skb, 0, 0, &mmedge_nl_family, 0, cmd);
	if (!*hdr) {
		nlmsg_free(skb);
		return NULL;
	}
	return skb;
}

static void mmedge_nl_event_send(struct sk_buff *skb, void *hdr, int err)
{
	if (err) {
		nlmsg_free(skb);
		return;
	}
	genlmsg_end(skb, hdr);
	genlmsg_multicast(&mmedge_nl_family, skb, 0, 0, GFP_KERNEL);
}

void mmedge_nl_chan_event(struct mmedge_dev *mdev, u8 cmd, u32 id,
			  const char *name, u32 src_type, u32 dir)
{
	struct sk_buff *skb;
	void *hdr;

	skb = mmedge_nl_event_new(cmd, &hdr);
	if (!skb)
		return;
	mmedge_nl_event_send(skb, hdr,
			     nla_put_u32(skb, MMEDGE_A_DEV_INDEX, mdev->id) ||
			     nla_put_u32(skb, MMEDGE_A_CHAN_ID, id) ||
			     nla_put_string(skb, MMEDGE_A_CHAN_NAME, name) ||
			     nla_put_u32(skb, MMEDGE_A_CHAN_SRC_TYPE, src_type) ||
			     nla_put_u32(skb, MMEDGE_A_CHAN_DIR, dir));
}

void mmedge_nl_chan_changed(struct mmedge_dev *mdev,
			    const struct mmedge_chan_info *ci, u32 old_weight,
			    bool adaptive)
{
	struct sk_buff *skb;
	void *hdr;
	int err;

	skb = mmedge_nl_event_new(MMEDGE_CMD_CHAN_CHANGED, &hdr);
	if (!skb)
		return;
	err = nla_put_u32(skb, MMEDGE_A_DEV_INDEX, mdev->id) ||
	      nla_put_u32(skb, MMEDGE_A_CHAN_ID, ci->id) ||
	      nla_put_string(skb, MMEDGE_A_CHAN_NAME, ci->name) ||
	      nla_put_u32(skb, MMEDGE_A_CHAN_WEIGHT, ci->weight) ||
	      nla_put_u32(skb, MMEDGE_A_CHAN_CLASS, ci->class) ||
	      nla_put_u64_64bit(skb, MMEDGE_A_CHAN_CAP, ci->cap, MMEDGE_A_PAD) ||
	      nla_put_u32(skb, MMEDGE_A_EVENT_OLD_WEIGHT, old_weight);
	if (!err && adaptive)
		err = nla_put_flag(skb, MMEDGE_A_EVENT_ADAPTIVE);
	if (!err && !adaptive)
		err = nla_put_u32(skb, MMEDGE_A_EVENT_PID,
				  task_tgid_vnr(current)) ||
		      nla_put_u32(skb, MMEDGE_A_EVENT_UID,
				  from_kuid_munged(&init_user_ns,
						   current_uid()));
	mmedge_nl_event_send(skb, hdr, err);
}

void mmedge_nl_chan_drop(struct mmedge_dev *mdev, u32 id, const char *name,
			 u64 dropped)
{
	struct sk_buff *skb;
	void *hdr;

	skb = mmedge_nl_event_new(MMEDGE_CMD_CHAN_DROP, &hdr);
	if (!skb)
		return;
	mmedge_nl_event_send(skb, hdr,
			     nla_put_u32(skb, MMEDGE_A_DEV_INDEX, mdev->id) ||
			     nla_put_u32(skb, MMEDGE_A_CHAN_ID, id) ||
			     nla_put_string(skb, MMEDGE_A_CHAN_NAME, name) ||
			     nla_put_u64_64bit(skb, MMEDGE_A_EVENT_DROPPED,
					       dropped, MMEDGE_A_PAD));
}

void mmedge_nl_engine_stall(struct mmedge_dev *mdev, u64 stall_ns)
{
	struct sk_buff *skb;
	void *hdr;

	skb = mmedge_nl_event_new(MMEDGE_CMD_ENGINE_STALL, &hdr);
	if (!skb)
		return;
	mmedge_nl_event_send(skb, hdr,
			     nla_put_u32(skb, MMEDGE_A_DEV_INDEX, mdev->id) ||
			     nla_put_u64_64bit(skb, MMEDGE_A_EVENT_STALL_NS,
					       stall_ns, MMEDGE_A_PAD));
}
