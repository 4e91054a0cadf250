// SPDX-License-Identifier: GPL-2.0
/*
 * The "mmedge" generic netlink family, through libnl-genl-3; see nl.h.
 *
 * libnl 3.7 has no helper for extended acks, so NETLINK_EXT_ACK is set on
 * the socket and the error callback reads NLMSGERR_ATTR_MSG from the
 * error message with nla_parse(): the kernel's own words reach the user.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <linux/netlink.h>
#include <netlink/attr.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>

#include <mmhal.h>

#include "mmctl.h"
#include "nl.h"

/* Replies and events: types only; the kernel's policy did the ranges. */
static struct nla_policy mmctl_nl_policy[MMEDGE_A_MAX + 1] = {
	[MMEDGE_A_DEV_INDEX] = { .type = NLA_U32 },
	[MMEDGE_A_DEV_NAME] = { .type = NLA_STRING },
	[MMEDGE_A_DEV_VIRTUAL] = { .type = NLA_U8 },
	[MMEDGE_A_DEV_BUS_BW] = { .type = NLA_U64 },
	[MMEDGE_A_DEV_NR_CHANS] = { .type = NLA_U32 },
	[MMEDGE_A_CHAN_ID] = { .type = NLA_U32 },
	[MMEDGE_A_CHAN_NAME] = { .type = NLA_STRING },
	[MMEDGE_A_CHAN_SRC_TYPE] = { .type = NLA_U32 },
	[MMEDGE_A_CHAN_DIR] = { .type = NLA_U32 },
	[MMEDGE_A_CHAN_WEIGHT] = { .type = NLA_U32 },
	[MMEDGE_A_CHAN_CLASS] = { .type = NLA_U32 },
	[MMEDGE_A_CHAN_CAP] = { .type = NLA_U64 },
	[MMEDGE_A_CHAN_STATS] = { .type = NLA_NESTED },
	[MMEDGE_A_EVENT_OLD_WEIGHT] = { .type = NLA_U32 },
	[MMEDGE_A_EVENT_PID] = { .type = NLA_U32 },
	[MMEDGE_A_EVENT_UID] = { .type = NLA_U32 },
	[MMEDGE_A_EVENT_ADAPTIVE] = { .type = NLA_FLAG },
	[MMEDGE_A_EVENT_DROPPED] = { .type = NLA_U64 },
	[MMEDGE_A_EVENT_STALL_NS] = { .type = NLA_U64 },
};

static struct nla_policy mmctl_nl_stats_policy[MMEDGE_A_STATS_MAX + 1] = {
	[MMEDGE_A_STATS_BYTES] = { .type = NLA_U64 },
	[MMEDGE_A_STATS_SEGMENTS] = { .type = NLA_U64 },
	[MMEDGE_A_STATS_FRAMES] = { .type = NLA_U64 },
	[MMEDGE_A_STATS_DROPPED] = { .type = NLA_U64 },
	[MMEDGE_A_STATS_ERRORS] = { .type = NLA_U64 },
	[MMEDGE_A_STATS_BW] = { .type = NLA_U64 },
	[MMEDGE_A_STATS_WAIT_HIST] = { .type = NLA_UNSPEC },
};

/* libnl's NLE_* to an errno, for messages and exit codes. */
static int mmctl_nl_errno(int nlerr)
{
	switch (nlerr < 0 ? -nlerr : nlerr) {
	case NLE_NOMEM:
		return -ENOMEM;
	case NLE_PERM:
		return -EPERM;
	case NLE_NOACCESS:
		return -EACCES;
	case NLE_OBJ_NOTFOUND:
		return -ENOENT;
	case NLE_AGAIN:
		return -EAGAIN;
	case NLE_INTR:
		return -EINTR;
	case NLE_INVAL:
	case NLE_RANGE:
		return -EINVAL;
	case NLE_OPNOTSUPP:
		return -EOPNOTSUPP;
	case NLE_NODEV:
		return -ENODEV;
	case NLE_BUSY:
		return -EBUSY;
	case NLE_MSGSIZE:
		return -EMSGSIZE;
	case NLE_PROTO_MISMATCH:
	case NLE_MSG_TOOSHORT:
	case NLE_MSG_TRUNC:
	case NLE_PARSE_ERR:
		return -EBADMSG;
	default:
		return -EIO;
	}
}

static int mmctl_nl_do_open(struct mmctl_nl *nl, bool quiet)
{
	int one = 1, ret;

	memset(nl, 0, sizeof(*nl));
	nl->sk = nl_socket_alloc();
	if (!nl->sk) {
		if (!quiet)
			mmctl_err("out of memory");
		return MMCTL_EXIT_RUNTIME;
	}
	ret = genl_connect(nl->sk);
	if (ret < 0) {
		if (!quiet)
			mmctl_err("cannot open a generic netlink socket: %s",
				  nl_geterror(ret));
		goto err;
	}
	/* Best effort: without it errors still come, only less precise. */
	setsockopt(nl_socket_get_fd(nl->sk), SOL_NETLINK, NETLINK_EXT_ACK,
		   &one, sizeof(one));
	nl->family = genl_ctrl_resolve(nl->sk, MMEDGE_GENL_NAME);
	if (nl->family < 0) {
		if (!quiet)
			mmctl_err("no generic netlink family \"%s\" (is mmedge.ko loaded? try: insmod mmedge.ko)",
				  MMEDGE_GENL_NAME);
		goto err;
	}
	return MMCTL_EXIT_OK;
err:
	nl_socket_free(nl->sk);
	nl->sk = NULL;
	return MMCTL_EXIT_RUNTIME;
}

int mmctl_nl_open(struct mmctl_nl *nl)
{
	return mmctl_nl_do_open(nl, false);
}

int mmctl_nl_open_quiet(struct mmctl_nl *nl)
{
	return mmctl_nl_do_open(nl, true);
}

int mmctl_nl_subscribe(struct mmctl_nl *nl)
{
	int grp, ret;

	grp = genl_ctrl_resolve_grp(nl->sk, MMEDGE_GENL_NAME,
				    MMEDGE_GENL_MCGRP_EVENTS);
	if (grp < 0) {
		mmctl_err("the mmedge family has no \"%s\" group (mmedge.ko too old? install a newer one)",
			  MMEDGE_GENL_MCGRP_EVENTS);
		return MMCTL_EXIT_RUNTIME;
	}
	ret = nl_socket_add_membership(nl->sk, grp);
	if (ret < 0) {
		mmctl_err("cannot join the \"%s\" group: %s",
			  MMEDGE_GENL_MCGRP_EVENTS, nl_geterror(ret));
		return MMCTL_EXIT_RUNTIME;
	}
	nl_socket_set_nonblocking(nl->sk);
	return MMCTL_EXIT_OK;
}

void mmctl_nl_close(struct mmctl_nl *nl)
{
	if (nl->sk)
		nl_socket_free(nl->sk);
	nl->sk = NULL;
}

int mmctl_nl_fd(const struct mmctl_nl *nl)
{
	return nl_socket_get_fd(nl->sk);
}

int mmctl_nl_err(const struct mmctl_nl *nl, int err, const char *what)
{
	const char *why = nl->extack[0] ? nl->extack : strerror(-err);
	const char *hint = NULL;

	switch (-err) {
	case EPERM:
	case EACCES:
		hint = "run as root, or with the capability named";
		break;
	case ENOENT:
		hint = "list channels with: mmctl chan show";
		break;
	case ENODEV:
		hint = "list devices with: mmctl dev show";
		break;
	}
	if (hint)
		mmctl_err("%s: %s (%s)", what, why, hint);
	else
		mmctl_err("%s: %s", what, why);
	return err == -EPERM || err == -EACCES ? MMCTL_EXIT_PERM :
						 MMCTL_EXIT_RUNTIME;
}

/* One request and its replies. */
struct mmctl_nl_req {
	struct mmctl_nl *nl;
	int (*parse)(struct nlattr **tb, uint8_t cmd, void *arg);
	void *arg;
	/* 1 while replies are due, then 0 or -errno. */
	int err;
	/* First failure of @parse, reported once the exchange is over. */
	int parse_err;
};

static int mmctl_nl_valid_cb(struct nl_msg *msg, void *arg)
{
	struct mmctl_nl_req *req = arg;
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	struct nlattr *tb[MMEDGE_A_MAX + 1];
	int ret;

	if (req->parse_err)
		return NL_SKIP;
	ret = genlmsg_parse(nlh, 0, tb, MMEDGE_A_MAX, mmctl_nl_policy);
	if (ret < 0) {
		req->parse_err = -EBADMSG;
		return NL_SKIP;
	}
	if (req->parse) {
		ret = req->parse(tb, genlmsg_hdr(nlh)->cmd, req->arg);
		if (ret < 0)
			req->parse_err = ret;
	}
	return NL_SKIP;
}

static int mmctl_nl_finish_cb(struct nl_msg *msg, void *arg)
{
	struct mmctl_nl_req *req = arg;
	struct nlmsghdr *nlh = nlmsg_hdr(msg);

	req->err = 0;
	/* A dump that failed half-way says so in NLMSG_DONE. */
	if (nlmsg_datalen(nlh) >= (int)sizeof(int)) {
		int e = *(int *)nlmsg_data(nlh);

		if (e < 0)
			req->err = e;
	}
	return NL_STOP;
}

static int mmctl_nl_ack_cb(struct nl_msg *msg, void *arg)
{
	struct mmctl_nl_req *req = arg;

	(void)msg;
	req->err = 0;
	return NL_STOP;
}

static int mmctl_nl_error_cb(struct sockaddr_nl *who, struct nlmsgerr *e,
			     void *arg)
{
	struct nlmsghdr *nlh = (struct nlmsghdr *)((char *)e - NLMSG_HDRLEN);
	struct nlattr *tb[NLMSGERR_ATTR_MAX + 1];
	struct mmctl_nl_req *req = arg;
	size_t ack_len = NLMSG_HDRLEN + sizeof(*e);

	(void)who;
	req->err = e->error < 0 ? e->error : -EIO;
	if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS))
		return NL_STOP;
	/* The request is echoed unless capped; the TLVs follow. */
	if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
		ack_len += e->msg.nlmsg_len - NLMSG_HDRLEN;
	ack_len = NLMSG_ALIGN(ack_len);
	if (nlh->nlmsg_len <= ack_len)
		return NL_STOP;
	if (nla_parse(tb, NLMSGERR_ATTR_MAX,
		      (struct nlattr *)((char *)nlh + ack_len),
		      (int)(nlh->nlmsg_len - ack_len), NULL) < 0)
		return NL_STOP;
	if (tb[NLMSGERR_ATTR_MSG])
		snprintf(req->nl->extack, sizeof(req->nl->extack), "%.*s",
			 nla_len(tb[NLMSGERR_ATTR_MSG]),
			 (const char *)nla_data(tb[NLMSGERR_ATTR_MSG]));
	return NL_STOP;
}

/* Sends @msg (and frees it), then takes the replies. Return 0 or -errno. */
static int mmctl_nl_talk(struct mmctl_nl *nl, struct nl_msg *msg,
			 int (*parse)(struct nlattr **tb, uint8_t cmd,
				      void *arg),
			 void *arg)
{
	struct mmctl_nl_req req = {
		.nl = nl, .parse = parse, .arg = arg, .err = 1,
	};
	struct nl_cb *cb;
	int ret;

	nl->extack[0] = '\0';
	cb = nl_cb_alloc(NL_CB_DEFAULT);
	if (!cb) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, mmctl_nl_valid_cb, &req);
	nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, mmctl_nl_finish_cb, &req);
	nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, mmctl_nl_ack_cb, &req);
	nl_cb_err(cb, NL_CB_CUSTOM, mmctl_nl_error_cb, &req);

	ret = nl_send_auto(nl->sk, msg);
	nlmsg_free(msg);
	if (ret < 0) {
		req.err = mmctl_nl_errno(ret);
		goto out;
	}
	while (req.err > 0) {
		ret = nl_recvmsgs(nl->sk, cb);
		if (ret < 0 && req.err > 0)
			req.err = mmctl_nl_errno(ret);
	}
out:
	nl_cb_put(cb);
	if (!req.err && req.parse_err)
		return req.parse_err;
	return req.err;
}

/* A request for @cmd; NULL when out of memory. */
static struct nl_msg *mmctl_nl_msg(struct mmctl_nl *nl, uint8_t cmd,
				   int flags)
{
	struct nl_msg *msg = nlmsg_alloc();

	if (!msg)
		return NULL;
	if (!genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, nl->family, 0, flags,
			 cmd, MMEDGE_GENL_VERSION)) {
		nlmsg_free(msg);
		return NULL;
	}
	return msg;
}

static void mmctl_nl_str(struct nlattr *a, char *buf, size_t len)
{
	if (a)
		snprintf(buf, len, "%.*s", nla_len(a),
			 (const char *)nla_data(a));
	else
		buf[0] = '\0';
}

static uint32_t mmctl_nl_u32(struct nlattr *a)
{
	return a ? nla_get_u32(a) : 0;
}

static uint64_t mmctl_nl_u64(struct nlattr *a)
{
	return a ? nla_get_u64(a) : 0;
}

/* A growing array of replies. */
struct mmctl_nl_list {
	void *items;
	size_t n, cap, size;
};

static void *mmctl_nl_list_add(struct mmctl_nl_list *l)
{
	char *p;

	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 8;
		void *items = realloc(l->items, cap * l->size);

		if (!items)
			return NULL;
		l->items = items;
		l->cap = cap;
	}
	p = (char *)l->items + l->n++ * l->size;
	memset(p, 0, l->size);
	return p;
}

static int mmctl_nl_parse_dev(struct nlattr **tb, uint8_t cmd, void *arg)
{
	struct mmctl_dev_info *d;

	if (cmd != MMEDGE_CMD_DEV_GET || !tb[MMEDGE_A_DEV_INDEX])
		return 0;
	d = mmctl_nl_list_add(arg);
	if (!d)
		return -ENOMEM;
	d->index = nla_get_u32(tb[MMEDGE_A_DEV_INDEX]);
	mmctl_nl_str(tb[MMEDGE_A_DEV_NAME], d->name, sizeof(d->name));
	d->virt = tb[MMEDGE_A_DEV_VIRTUAL] &&
		  nla_get_u8(tb[MMEDGE_A_DEV_VIRTUAL]);
	d->bus_bw = mmctl_nl_u64(tb[MMEDGE_A_DEV_BUS_BW]);
	d->nr_chans = mmctl_nl_u32(tb[MMEDGE_A_DEV_NR_CHANS]);
	return 0;
}

int mmctl_nl_devs(struct mmctl_nl *nl, struct mmctl_dev_info **out,
		  size_t *n)
{
	struct mmctl_nl_list l = { .size = sizeof(**out) };
	struct nl_msg *msg;
	int ret;

	*out = NULL;
	*n = 0;
	msg = mmctl_nl_msg(nl, MMEDGE_CMD_DEV_GET, NLM_F_DUMP);
	if (!msg)
		return -ENOMEM;
	ret = mmctl_nl_talk(nl, msg, mmctl_nl_parse_dev, &l);
	if (ret < 0) {
		free(l.items);
		return ret;
	}
	*out = l.items;
	*n = l.n;
	return 0;
}

static int mmctl_nl_fill_chan(struct nlattr **tb, struct mmctl_chan_info *c)
{
	struct nlattr *st[MMEDGE_A_STATS_MAX + 1];
	struct nlattr *h;

	c->dev_index = mmctl_nl_u32(tb[MMEDGE_A_DEV_INDEX]);
	c->id = mmctl_nl_u32(tb[MMEDGE_A_CHAN_ID]);
	mmctl_nl_str(tb[MMEDGE_A_CHAN_NAME], c->name, sizeof(c->name));
	c->src_type = mmctl_nl_u32(tb[MMEDGE_A_CHAN_SRC_TYPE]);
	/* absent (an older module): capture was the only direction */
	c->dir = mmctl_nl_u32(tb[MMEDGE_A_CHAN_DIR]);
	c->weight = mmctl_nl_u32(tb[MMEDGE_A_CHAN_WEIGHT]);
	c->class = mmctl_nl_u32(tb[MMEDGE_A_CHAN_CLASS]);
	c->cap = mmctl_nl_u64(tb[MMEDGE_A_CHAN_CAP]);
	if (!tb[MMEDGE_A_CHAN_STATS])
		return 0;
	if (nla_parse_nested(st, MMEDGE_A_STATS_MAX, tb[MMEDGE_A_CHAN_STATS],
			     mmctl_nl_stats_policy) < 0)
		return -EBADMSG;
	c->bytes = mmctl_nl_u64(st[MMEDGE_A_STATS_BYTES]);
	c->segments = mmctl_nl_u64(st[MMEDGE_A_STATS_SEGMENTS]);
	c->frames = mmctl_nl_u64(st[MMEDGE_A_STATS_FRAMES]);
	c->dropped = mmctl_nl_u64(st[MMEDGE_A_STATS_DROPPED]);
	c->errors = mmctl_nl_u64(st[MMEDGE_A_STATS_ERRORS]);
	c->bw = mmctl_nl_u64(st[MMEDGE_A_STATS_BW]);
	h = st[MMEDGE_A_STATS_WAIT_HIST];
	if (h) {
		size_t len = (size_t)nla_len(h);

		if (len > sizeof(c->wait_hist))
			len = sizeof(c->wait_hist);
		memcpy(c->wait_hist, nla_data(h), len);
	}
	return 0;
}

struct mmctl_nl_chans_arg {
	struct mmctl_nl_list l;
	uint32_t dev_index;
};

static int mmctl_nl_parse_chans(struct nlattr **tb, uint8_t cmd, void *arg)
{
	struct mmctl_nl_chans_arg *a = arg;
	struct mmctl_chan_info *c;

	if (cmd != MMEDGE_CMD_CHAN_GET ||
	    mmctl_nl_u32(tb[MMEDGE_A_DEV_INDEX]) != a->dev_index)
		return 0;
	c = mmctl_nl_list_add(&a->l);
	if (!c)
		return -ENOMEM;
	return mmctl_nl_fill_chan(tb, c);
}

int mmctl_nl_chans(struct mmctl_nl *nl, uint32_t dev_index,
		   struct mmctl_chan_info **out, size_t *n)
{
	struct mmctl_nl_chans_arg a = {
		.l = { .size = sizeof(**out) }, .dev_index = dev_index,
	};
	struct nl_msg *msg;
	int ret;

	*out = NULL;
	*n = 0;
	msg = mmctl_nl_msg(nl, MMEDGE_CMD_CHAN_GET, NLM_F_DUMP);
	if (!msg)
		return -ENOMEM;
	if (nla_put_u32(msg, MMEDGE_A_DEV_INDEX, dev_index) < 0) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	ret = mmctl_nl_talk(nl, msg, mmctl_nl_parse_chans, &a);
	if (ret < 0) {
		free(a.l.items);
		return ret;
	}
	*out = a.l.items;
	*n = a.l.n;
	return 0;
}

static int mmctl_nl_parse_one_chan(struct nlattr **tb, uint8_t cmd,
				   void *arg)
{
	if (cmd != MMEDGE_CMD_CHAN_GET)
		return 0;
	return mmctl_nl_fill_chan(tb, arg);
}

int mmctl_nl_chan_get(struct mmctl_nl *nl, uint32_t dev_index,
		      const char *name, struct mmctl_chan_info *out)
{
	struct nl_msg *msg;

	memset(out, 0, sizeof(*out));
	msg = mmctl_nl_msg(nl, MMEDGE_CMD_CHAN_GET, 0);
	if (!msg)
		return -ENOMEM;
	if (nla_put_u32(msg, MMEDGE_A_DEV_INDEX, dev_index) < 0 ||
	    nla_put_string(msg, MMEDGE_A_CHAN_NAME, name) < 0) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	return mmctl_nl_talk(nl, msg, mmctl_nl_parse_one_chan, out);
}

static int mmctl_nl_put_setting(struct nl_msg *msg,
				const struct mmctl_chan_setting *st)
{
	if (nla_put_string(msg, MMEDGE_A_CHAN_NAME, st->name) < 0)
		return -ENOMEM;
	if ((st->set & MMEDGE_CHAN_SET_WEIGHT) &&
	    nla_put_u32(msg, MMEDGE_A_CHAN_WEIGHT, st->weight) < 0)
		return -ENOMEM;
	if ((st->set & MMEDGE_CHAN_SET_CLASS) &&
	    nla_put_u32(msg, MMEDGE_A_CHAN_CLASS, st->class) < 0)
		return -ENOMEM;
	if ((st->set & MMEDGE_CHAN_SET_CAP) &&
	    nla_put_u64(msg, MMEDGE_A_CHAN_CAP, st->cap) < 0)
		return -ENOMEM;
	return 0;
}

/*
 * The tuning commands carry GENL_ADMIN_PERM: the genetlink core refuses
 * a caller without CAP_NET_ADMIN with EPERM before the command runs, and
 * without a message. Name the capability here, as the kernel names the
 * ones it checks itself.
 */
static int mmctl_nl_admin(struct mmctl_nl *nl, int ret, const char *why)
{
	if (ret == -EPERM && !nl->extack[0])
		snprintf(nl->extack, sizeof(nl->extack), "%s", why);
	return ret;
}

int mmctl_nl_chan_set(struct mmctl_nl *nl, uint32_t dev_index,
		      const struct mmctl_chan_setting *st, size_t n,
		      bool multi)
{
	struct nlattr *list, *entry;
	struct nl_msg *msg;
	size_t i;

	if (!multi && n != 1)
		return -EINVAL;
	msg = mmctl_nl_msg(nl, multi ? MMEDGE_CMD_CHAN_SET_MULTI :
				       MMEDGE_CMD_CHAN_SET, 0);
	if (!msg)
		return -ENOMEM;
	if (nla_put_u32(msg, MMEDGE_A_DEV_INDEX, dev_index) < 0)
		goto nomem;
	if (!multi) {
		if (mmctl_nl_put_setting(msg, st) < 0)
			goto nomem;
		return mmctl_nl_admin(nl, mmctl_nl_talk(nl, msg, NULL, NULL),
				      "need CAP_NET_ADMIN to tune channels");
	}
	list = nla_nest_start(msg, MMEDGE_A_CHAN_LIST);
	if (!list)
		goto nomem;
	for (i = 0; i < n; i++) {
		entry = nla_nest_start(msg, MMEDGE_A_CHAN_ENTRY);
		if (!entry || mmctl_nl_put_setting(msg, &st[i]) < 0)
			goto nomem;
		nla_nest_end(msg, entry);
	}
	nla_nest_end(msg, list);
	return mmctl_nl_admin(nl, mmctl_nl_talk(nl, msg, NULL, NULL),
			      "need CAP_NET_ADMIN to tune channels");
nomem:
	nlmsg_free(msg);
	return -ENOMEM;
}

int mmctl_nl_bus_set(struct mmctl_nl *nl, uint32_t dev_index, uint64_t bw)
{
	struct nl_msg *msg = mmctl_nl_msg(nl, MMEDGE_CMD_BUS_SET, 0);

	if (!msg)
		return -ENOMEM;
	if (nla_put_u32(msg, MMEDGE_A_DEV_INDEX, dev_index) < 0 ||
	    nla_put_u64(msg, MMEDGE_A_DEV_BUS_BW, bw) < 0) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	return mmctl_nl_admin(nl, mmctl_nl_talk(nl, msg, NULL, NULL),
			      "need CAP_NET_ADMIN and CAP_SYS_ADMIN to change the bus model");
}

int mmctl_nl_dev_lookup(struct mmctl_nl *nl, const struct mmctl_ctx *ctx,
			const char *dev, struct mmctl_dev_info *out)
{
	struct mmctl_dev_info *devs;
	const char *name, *slash;
	size_t n, i;
	int ret;

	memset(out, 0, sizeof(*out));
	if (!dev)
		dev = ctx->dev;
	if (!dev)
		dev = MMHAL_DEFAULT_DEV;
	slash = strrchr(dev, '/');
	name = slash ? slash + 1 : dev;

	ret = mmctl_nl_devs(nl, &devs, &n);
	if (ret < 0)
		return mmctl_nl_err(nl, ret, "cannot list mmedge devices");
	for (i = 0; i < n; i++) {
		if (!strcmp(devs[i].name, name)) {
			*out = devs[i];
			free(devs);
			return MMCTL_EXIT_OK;
		}
	}
	free(devs);
	if (!n)
		mmctl_err("no mmedge devices (is mmedge.ko loaded? try: insmod mmedge.ko)");
	else
		mmctl_err("no mmedge device '%s' (list them with: mmctl dev show)",
			  name);
	return MMCTL_EXIT_RUNTIME;
}

struct mmctl_nl_events_arg {
	int (*fn)(const struct mmctl_event *ev, void *arg);
	void *arg;
	int stop;
};

static int mmctl_nl_event_cb(struct nl_msg *msg, void *arg)
{
	struct mmctl_nl_events_arg *a = arg;
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	struct nlattr *tb[MMEDGE_A_MAX + 1];
	struct mmctl_event ev;

	if (a->stop)
		return NL_STOP;
	if (genlmsg_parse(nlh, 0, tb, MMEDGE_A_MAX, mmctl_nl_policy) < 0)
		return NL_SKIP;
	memset(&ev, 0, sizeof(ev));
	ev.cmd = genlmsg_hdr(nlh)->cmd;
	ev.dev_index = mmctl_nl_u32(tb[MMEDGE_A_DEV_INDEX]);
	ev.has_chan = tb[MMEDGE_A_CHAN_ID] != NULL;
	ev.chan_id = mmctl_nl_u32(tb[MMEDGE_A_CHAN_ID]);
	mmctl_nl_str(tb[MMEDGE_A_CHAN_NAME], ev.chan_name,
		     sizeof(ev.chan_name));
	ev.src_type = mmctl_nl_u32(tb[MMEDGE_A_CHAN_SRC_TYPE]);
	ev.dir = mmctl_nl_u32(tb[MMEDGE_A_CHAN_DIR]);
	ev.weight = mmctl_nl_u32(tb[MMEDGE_A_CHAN_WEIGHT]);
	ev.old_weight = mmctl_nl_u32(tb[MMEDGE_A_EVENT_OLD_WEIGHT]);
	ev.class = mmctl_nl_u32(tb[MMEDGE_A_CHAN_CLASS]);
	ev.cap = mmctl_nl_u64(tb[MMEDGE_A_CHAN_CAP]);
	ev.adaptive = tb[MMEDGE_A_EVENT_ADAPTIVE] != NULL;
	ev.has_pid = tb[MMEDGE_A_EVENT_PID] != NULL;
	ev.pid = mmctl_nl_u32(tb[MMEDGE_A_EVENT_PID]);
	ev.uid = mmctl_nl_u32(tb[MMEDGE_A_EVENT_UID]);
	ev.dropped = mmctl_nl_u64(tb[MMEDGE_A_EVENT_DROPPED]);
	ev.stall_ns = mmctl_nl_u64(tb[MMEDGE_A_EVENT_STALL_NS]);
	if (a->fn(&ev, a->arg)) {
		a->stop = 1;
		return NL_STOP;
	}
	return NL_OK;
}

static int mmctl_nl_seq_any(struct nl_msg *msg, void *arg)
{
	(void)msg;
	(void)arg;
	return NL_OK;
}

int mmctl_nl_events(struct mmctl_nl *nl,
		    int (*fn)(const struct mmctl_event *ev, void *arg),
		    void *arg)
{
	struct mmctl_nl_events_arg a = { .fn = fn, .arg = arg };
	struct nl_cb *cb;
	int ret;

	cb = nl_cb_alloc(NL_CB_DEFAULT);
	if (!cb)
		return -ENOMEM;
	/* Multicast messages have sequence number 0: no check. */
	nl_cb_set(cb, NL_CB_SEQ_CHECK, NL_CB_CUSTOM, mmctl_nl_seq_any, NULL);
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, mmctl_nl_event_cb, &a);
	ret = nl_recvmsgs(nl->sk, cb);
	nl_cb_put(cb);
	if (a.stop)
		return 1;
	if (ret == -NLE_AGAIN)
		return 0;
	return ret < 0 ? mmctl_nl_errno(ret) : 0;
}

/* names[v] if set, else PREFIXv in buf */
static const char *mmctl_enum_name(const char *const *names, size_t n,
				   uint32_t v, const char *prefix, char *buf,
				   size_t len)
{
	if (v < n && names[v])
		return names[v];
	snprintf(buf, len, "%s%u", prefix, v);
	return buf;
}

#define MMCTL_ENUM_NAME(names, v, prefix, buf, len) \
	mmctl_enum_name(names, sizeof(names) / sizeof(names[0]), v, prefix, \
			buf, len)

const char *mmctl_src_name(uint32_t type, char *buf, size_t len)
{
	static const char *const names[] = {
		[MMEDGE_SRC_CAMERA] = "camera",
		[MMEDGE_SRC_MIC] = "mic",
		[MMEDGE_SRC_IMU] = "imu",
	};

	return MMCTL_ENUM_NAME(names, type, "src", buf, len);
}

const char *mmctl_dir_name(uint32_t dir, char *buf, size_t len)
{
	static const char *const names[] = {
		[MMEDGE_CHAN_CAPTURE] = "capture",
		[MMEDGE_CHAN_FEED] = "feed",
		[MMEDGE_CHAN_COPY] = "copy",
	};

	return MMCTL_ENUM_NAME(names, dir, "dir", buf, len);
}

const char *mmctl_class_name(uint32_t class, char *buf, size_t len)
{
	static const char *const names[] = {
		[MMEDGE_CLASS_BEST_EFFORT] = "best-effort",
		[MMEDGE_CLASS_LATENCY] = "latency",
	};

	return MMCTL_ENUM_NAME(names, class, "class", buf, len);
}
