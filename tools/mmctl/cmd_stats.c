// SPDX-License-Identifier: GPL-2.0
/*
 * mmctl stats: how the channels share the bus, sampled over netlink.
 *
 * The first sample uses the driver's moving average for the rate and the
 * whole wait histogram; the following ones use the difference to the
 * previous sample (bytes, drops, histogram) over the time between them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mmctl.h"
#include "nl.h"
#include "units.h"

struct mmctl_stats_row {
	const struct mmctl_chan_info *c;
	uint64_t rate;			/* bytes/s */
	uint64_t new_drops;		/* since the last sample */
	uint64_t hist[MMEDGE_WAIT_BUCKETS];
	double share_bytes, share_weight;
};

static double mmctl_now(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const struct mmctl_chan_info *
mmctl_stats_prev(const struct mmctl_chan_info *prev, size_t n, uint32_t id)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (prev[i].id == id)
			return &prev[i];
	return NULL;
}

static void mmctl_stats_rows(struct mmctl_stats_row *rows,
			     const struct mmctl_chan_info *cur, size_t n,
			     const struct mmctl_chan_info *prev, size_t nprev,
			     double dt)
{
	uint64_t total_rate = 0, total_weight = 0;
	size_t i;
	unsigned int b;

	for (i = 0; i < n; i++) {
		const struct mmctl_chan_info *p = NULL;
		struct mmctl_stats_row *r = &rows[i];

		if (prev && dt > 0)
			p = mmctl_stats_prev(prev, nprev, cur[i].id);
		memset(r, 0, sizeof(*r));
		r->c = &cur[i];
		if (p && cur[i].bytes >= p->bytes) {
			r->rate = (uint64_t)((double)(cur[i].bytes - p->bytes) / dt);
			r->new_drops = cur[i].dropped - p->dropped;
			for (b = 0; b < MMEDGE_WAIT_BUCKETS; b++)
				r->hist[b] = cur[i].wait_hist[b] -
					     p->wait_hist[b];
		} else {
			r->rate = cur[i].bw;
			r->new_drops = prev ? cur[i].dropped : 0;
			memcpy(r->hist, cur[i].wait_hist, sizeof(r->hist));
		}
		total_rate += r->rate;
		total_weight += cur[i].weight;
	}
	for (i = 0; i < n; i++) {
		rows[i].share_bytes = total_rate ?
			(double)rows[i].rate / (double)total_rate : 0;
		rows[i].share_weight = total_weight ?
			(double)cur[i].weight / (double)total_weight : 0;
	}
}

static void mmctl_stats_text(const struct mmctl_dev_info *dev,
			     const struct mmctl_stats_row *rows, size_t n,
			     double dt, bool first)
{
	char bus[32], wait[32], cls[16];
	size_t i;

	if (!first)
		putchar('\n');
	if (dt > 0)
		printf("%s  bus %s  %zu channels  last %.2f s\n", dev->name,
		       mmctl_fmt_rate(dev->bus_bw, bus, sizeof(bus)), n, dt);
	else
		printf("%s  bus %s  %zu channels  (moving average)\n",
		       dev->name, mmctl_fmt_rate(dev->bus_bw, bus, sizeof(bus)),
		       n);
	printf("%-15s %9s %7s %7s %6s %-11s %10s %8s %6s\n", "CHAN", "MB/s",
	       "BYTES%", "WEIGHT%", "WEIGHT", "CLASS", "WAIT_P99", "DROPS",
	       "NEW");
	for (i = 0; i < n; i++) {
		const struct mmctl_stats_row *r = &rows[i];
		bool open, any;
		uint64_t p99;

		p99 = mmctl_wait_pct(r->hist, MMEDGE_WAIT_BUCKETS, 99, &open,
				     &any);
		printf("%-15s %9.3f %6.1f%% %6.1f%% %6u %-11s %10s %8" PRIu64
		       " %6" PRIu64 "\n", r->c->name, (double)r->rate / 1e6,
		       r->share_bytes * 100, r->share_weight * 100,
		       r->c->weight, mmctl_class_name(r->c->class, cls,
						      sizeof(cls)),
		       mmctl_fmt_wait(p99, open, any, wait, sizeof(wait)),
		       r->c->dropped, r->new_drops);
	}
}

static int mmctl_stats_json(struct mmctl_ctx *ctx,
			    const struct mmctl_dev_info *dev,
			    const struct mmctl_stats_row *rows, size_t n,
			    double dt)
{
	struct json_writer *jw = &ctx->jw;
	char cls[16];
	size_t i;

	mmctl_json_begin(ctx);
	json_begin_object(jw);
	json_kv_double(jw, "time", mmctl_now(CLOCK_REALTIME));
	json_kv_string(jw, "dev", dev->name);
	json_kv_u64(jw, "dev_index", dev->index);
	json_kv_u64(jw, "bus_bw", dev->bus_bw);
	/* 0 for the first sample: rates are the driver's moving average. */
	json_kv_double(jw, "interval_s", dt);
	json_key(jw, "chans");
	json_begin_array(jw);
	for (i = 0; i < n; i++) {
		const struct mmctl_stats_row *r = &rows[i];
		bool open, any;
		uint64_t p99;

		p99 = mmctl_wait_pct(r->hist, MMEDGE_WAIT_BUCKETS, 99, &open,
				     &any);
		json_begin_object(jw);
		json_kv_string(jw, "name", r->c->name);
		json_kv_u64(jw, "id", r->c->id);
		json_kv_u64(jw, "weight", r->c->weight);
		json_kv_string(jw, "class", mmctl_class_name(r->c->class, cls,
							      sizeof(cls)));
		json_kv_u64(jw, "cap", r->c->cap);
		json_kv_u64(jw, "bytes", r->c->bytes);
		json_kv_u64(jw, "bytes_per_s", r->rate);
		json_kv_double(jw, "share_bytes", r->share_bytes);
		json_kv_double(jw, "share_weight", r->share_weight);
		mmctl_json_wait_p99(jw, p99, open, any);
		json_kv_u64(jw, "dropped", r->c->dropped);
		json_kv_u64(jw, "dropped_new", r->new_drops);
		json_end_object(jw);
	}
	json_end_array(jw);
	json_end_object(jw);
	return mmctl_json_end(ctx);
}

/* Sleeps @s seconds unless a signal comes. */
static void mmctl_sleep(double s)
{
	struct timespec ts = {
		.tv_sec = (time_t)s,
		.tv_nsec = (long)((s - (double)(time_t)s) * 1e9),
	};

	if (!mmctl_stop)
		nanosleep(&ts, NULL);
}

int mmctl_cmd_stats(struct mmctl_ctx *ctx, const struct mmctl_cmd *cmd,
		    int argc, char **argv)
{
	struct mmctl_chan_info *cur = NULL, *prev = NULL;
	struct mmctl_stats_row *rows = NULL;
	struct mmctl_dev_info dev;
	size_t n = 0, nprev = 0;
	uint64_t count = 0, taken = 0;
	double interval = 0, t, tprev = 0;
	struct mmctl_nl nl;
	bool done;
	int i, ret;

	for (i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "-w") || !strcmp(a, "-c")) {
			if (i + 1 >= argc)
				return mmctl_usage_err(cmd, "stats: '%s' needs a value",
						       a);
			if (a[1] == 'w' &&
			    mmctl_parse_seconds(argv[i + 1], 0.1, 3600, &interval))
				return mmctl_usage_err(cmd, "stats: -w '%s': want seconds in 0.1..3600, e.g. 1 or 0.5",
						       argv[i + 1]);
			if (a[1] == 'c' &&
			    (mmctl_parse_uint(argv[i + 1], UINT32_MAX, &count) ||
			     !count))
				return mmctl_usage_err(cmd, "stats: -c '%s': want a number of samples >= 1",
						       argv[i + 1]);
			i++;
			continue;
		}
		ret = mmctl_other_arg(cmd, a, &done);
		if (ret || done)
			return ret;
	}
	if (count > 1 && interval == 0)
		return mmctl_usage_err(cmd, "stats: -c %" PRIu64 " needs -w INTERVAL between the samples",
				       count);
	if (interval == 0)
		count = 1;

	ret = mmctl_nl_open(&nl);
	if (ret)
		return ret;
	mmctl_catch_signals();
	for (;;) {
		ret = mmctl_nl_dev_lookup(&nl, ctx, NULL, &dev);
		if (ret)
			break;
		ret = mmctl_nl_chans(&nl, dev.index, &cur, &n);
		t = mmctl_now(CLOCK_MONOTONIC);
		if (ret < 0) {
			ret = mmctl_nl_err(&nl, ret, "stats");
			break;
		}
		free(rows);
		rows = calloc(n ? n : 1, sizeof(*rows));
		if (!rows) {
			mmctl_err("out of memory");
			ret = MMCTL_EXIT_RUNTIME;
			break;
		}
		mmctl_stats_rows(rows, cur, n, prev, nprev,
				 prev ? t - tprev : 0);
		if (ctx->json) {
			ret = mmctl_stats_json(ctx, &dev, rows, n,
					       prev ? t - tprev : 0);
			if (ret)
				break;
		} else {
			mmctl_stats_text(&dev, rows, n, prev ? t - tprev : 0,
					 !taken);
		}
		fflush(stdout);
		free(prev);
		prev = cur;
		nprev = n;
		cur = NULL;
		tprev = t;
		ret = MMCTL_EXIT_OK;
		if (++taken == count || mmctl_stop)
			break;
		mmctl_sleep(interval);
		if (mmctl_stop)
			break;
	}
	free(rows);
	free(cur);
	free(prev);
	mmctl_nl_close(&nl);
	return ret;
}
