// SPDX-License-Identifier: GPL-2.0
/*
 * mmctl monitor: the "events" multicast group, one line per event.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "mmctl.h"
#include "nl.h"
#include "units.h"

struct mmctl_monitor {
	struct mmctl_ctx *ctx;
	/* Device names by index, read when monitoring started. */
	struct mmctl_dev_info *devs;
	size_t nr_devs;
	uint64_t count, seen;
	int ret;
};

static const char *mmctl_event_name(uint8_t cmd)
{
	switch (cmd) {
	case MMEDGE_CMD_CHAN_NEW:
		return "chan_new";
	case MMEDGE_CMD_CHAN_DEL:
		return "chan_del";
	case MMEDGE_CMD_CHAN_CHANGED:
		return "chan_changed";
	case MMEDGE_CMD_CHAN_DROP:
		return "chan_drop";
	case MMEDGE_CMD_ENGINE_STALL:
		return "engine_stall";
	}
	return NULL;
}

static const char *mmctl_monitor_dev(const struct mmctl_monitor *m,
				     uint32_t index, char *buf, size_t len)
{
	size_t i;

	for (i = 0; i < m->nr_devs; i++)
		if (m->devs[i].index == index)
			return m->devs[i].name;
	snprintf(buf, len, "mmedge%u", index);
	return buf;
}

static void mmctl_event_text(const char *dev, const struct mmctl_event *ev)
{
	char src[16], cls[16], cap[32];

	switch (ev->cmd) {
	case MMEDGE_CMD_CHAN_NEW:
	case MMEDGE_CMD_CHAN_DEL:
		printf("[chan %s] %s %s id %u %s %s\n",
		       ev->cmd == MMEDGE_CMD_CHAN_NEW ? "new" : "del", dev,
		       ev->chan_name, ev->chan_id,
		       ev->dir == MMEDGE_CHAN_CAPTURE ? "source" : "dir",
		       ev->dir == MMEDGE_CHAN_CAPTURE ?
		       mmctl_src_name(ev->src_type, src, sizeof(src)) :
		       mmctl_dir_name(ev->dir, src, sizeof(src)));
		break;
	case MMEDGE_CMD_CHAN_CHANGED:
		if (ev->cap)
			mmctl_fmt_rate(ev->cap, cap, sizeof(cap));
		else
			snprintf(cap, sizeof(cap), "none");
		printf("[chan changed] %s %s id %u weight %u -> %u class %s cap %s",
		       dev, ev->chan_name, ev->chan_id, ev->old_weight,
		       ev->weight, mmctl_class_name(ev->class, cls, sizeof(cls)),
		       cap);
		if (ev->adaptive)
			printf(" by adaptive\n");
		else if (ev->has_pid)
			printf(" by pid %u uid %u\n", ev->pid, ev->uid);
		else
			putchar('\n');
		break;
	case MMEDGE_CMD_CHAN_DROP:
		printf("[chan drop] %s %s id %u dropped %" PRIu64 "\n", dev,
		       ev->chan_name, ev->chan_id, ev->dropped);
		break;
	case MMEDGE_CMD_ENGINE_STALL:
		printf("[engine stall] %s stalled %.3f ms\n", dev,
		       (double)ev->stall_ns / 1e6);
		break;
	}
}

static void mmctl_event_json(struct mmctl_ctx *ctx, const char *dev,
			     const struct mmctl_event *ev)
{
	struct json_writer *jw = &ctx->jw;
	char buf[16];

	mmctl_json_begin(ctx);
	json_begin_object(jw);
	json_kv_string(jw, "event", mmctl_event_name(ev->cmd));
	json_kv_string(jw, "dev", dev);
	json_kv_u64(jw, "dev_index", ev->dev_index);
	if (ev->has_chan) {
		json_kv_string(jw, "chan", ev->chan_name);
		json_kv_u64(jw, "chan_id", ev->chan_id);
	}
	switch (ev->cmd) {
	case MMEDGE_CMD_CHAN_NEW:
	case MMEDGE_CMD_CHAN_DEL:
		json_kv_string(jw, "dir", mmctl_dir_name(ev->dir, buf,
							  sizeof(buf)));
		json_key(jw, "source");
		if (ev->dir == MMEDGE_CHAN_CAPTURE)
			json_string(jw, mmctl_src_name(ev->src_type, buf,
						       sizeof(buf)));
		else
			json_null(jw);
		break;
	case MMEDGE_CMD_CHAN_CHANGED:
		json_kv_u64(jw, "weight", ev->weight);
		json_kv_u64(jw, "old_weight", ev->old_weight);
		json_kv_string(jw, "class", mmctl_class_name(ev->class, buf,
							      sizeof(buf)));
		json_kv_u64(jw, "cap", ev->cap);
		json_kv_bool(jw, "adaptive", ev->adaptive);
		if (ev->has_pid) {
			json_kv_u64(jw, "pid", ev->pid);
			json_kv_u64(jw, "uid", ev->uid);
		}
		break;
	case MMEDGE_CMD_CHAN_DROP:
		json_kv_u64(jw, "dropped", ev->dropped);
		break;
	case MMEDGE_CMD_ENGINE_STALL:
		json_kv_u64(jw, "stall_ns", ev->stall_ns);
		break;
	}
	json_end_object(jw);
}

static int mmctl_monitor_event(const struct mmctl_event *ev, void *arg)
{
	struct mmctl_monitor *m = arg;
	char buf[32];
	const char *dev;

	if (!mmctl_event_name(ev->cmd))
		return 0;	/* a newer module's event */
	dev = mmctl_monitor_dev(m, ev->dev_index, buf, sizeof(buf));
	if (m->ctx->json) {
		mmctl_event_json(m->ctx, dev, ev);
		m->ret = mmctl_json_end(m->ctx);
		if (m->ret)
			return 1;
	} else {
		mmctl_event_text(dev, ev);
	}
	/* Whoever reads a pipe sees each event as it happens. */
	fflush(stdout);
	return m->count && ++m->seen == m->count;
}

int mmctl_cmd_monitor(struct mmctl_ctx *ctx, const struct mmctl_cmd *cmd,
		      int argc, char **argv)
{
	struct mmctl_monitor m = { .ctx = ctx };
	struct mmctl_nl nl;
	struct pollfd pfd;
	bool done;
	int i, ret;

	for (i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "-c")) {
			if (i + 1 >= argc ||
			    mmctl_parse_uint(argv[i + 1], UINT32_MAX, &m.count) ||
			    !m.count)
				return mmctl_usage_err(cmd, "monitor: -c wants a number of events >= 1");
			i++;
			continue;
		}
		ret = mmctl_other_arg(cmd, argv[i], &done);
		if (ret || done)
			return ret;
	}

	ret = mmctl_nl_open(&nl);
	if (ret)
		return ret;
	ret = mmctl_nl_devs(&nl, &m.devs, &m.nr_devs);
	if (ret < 0) {
		ret = mmctl_nl_err(&nl, ret, "monitor");
		goto out;
	}
	ret = mmctl_nl_subscribe(&nl);
	if (ret)
		goto out;
	mmctl_catch_signals();
	pfd.fd = mmctl_nl_fd(&nl);
	pfd.events = POLLIN;
	while (!mmctl_stop) {
		ret = poll(&pfd, 1, -1);
		if (ret < 0 && errno == EINTR)
			continue;
		if (ret < 0) {
			mmctl_err("monitor: poll: %s", strerror(errno));
			ret = MMCTL_EXIT_RUNTIME;
			goto out;
		}
		ret = mmctl_nl_events(&nl, mmctl_monitor_event, &m);
		if (ret == -ENOMEM) {
			/* Overrun: say so and carry on, like ip monitor. */
			mmctl_err("monitor: events were lost (the socket buffer overflowed)");
			continue;
		}
		if (ret < 0) {
			ret = mmctl_nl_err(&nl, ret, "monitor");
			goto out;
		}
		if (ret == 1)
			break;
	}
	ret = m.ret;
out:
	free(m.devs);
	mmctl_nl_close(&nl);
	return ret;
}
