// SPDX-License-Identifier: GPL-2.0
/*
 * mmctl chan show, mmctl chan set; the setting parser apply shares.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "mmctl.h"
#include "nl.h"
#include "units.h"

bool mmctl_chan_name_valid(const char *name)
{
	size_t len = strlen(name), i;

	if (!len || len >= MMEDGE_NAME_LEN)
		return false;
	for (i = 0; i < len; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-'))
			return false;
	}
	return true;
}

int mmctl_parse_setting(int argc, char **argv, struct mmctl_chan_setting *st,
			char *why, size_t len)
{
	int i;

	st->set = 0;
	for (i = 0; i < argc; i++) {
		const char *key = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
		uint64_t v;
		int ret;

		if (strcmp(key, "weight") && strcmp(key, "class") &&
		    strcmp(key, "cap")) {
			snprintf(why, len, "unknown setting '%s' (weight, class, cap)",
				 key);
			return -EINVAL;
		}
		if (!val) {
			snprintf(why, len, "'%s' needs a value", key);
			return -EINVAL;
		}
		i++;
		if (!strcmp(key, "weight")) {
			if (st->set & MMEDGE_CHAN_SET_WEIGHT)
				goto twice;
			ret = mmctl_parse_uint(val, UINT32_MAX, &v);
			if (ret == -EINVAL) {
				snprintf(why, len, "weight '%s' is not a number (%u..%u)",
					 val, MMEDGE_WEIGHT_MIN, MMEDGE_WEIGHT_MAX);
				return -EINVAL;
			}
			if (ret || v < MMEDGE_WEIGHT_MIN || v > MMEDGE_WEIGHT_MAX) {
				snprintf(why, len, "weight %s out of range %u..%u",
					 val, MMEDGE_WEIGHT_MIN, MMEDGE_WEIGHT_MAX);
				return -EINVAL;
			}
			st->set |= MMEDGE_CHAN_SET_WEIGHT;
			st->weight = (uint32_t)v;
		} else if (!strcmp(key, "class")) {
			if (st->set & MMEDGE_CHAN_SET_CLASS)
				goto twice;
			if (!strcmp(val, "latency")) {
				st->class = MMEDGE_CLASS_LATENCY;
			} else if (!strcmp(val, "best-effort") ||
				   !strcmp(val, "best_effort")) {
				st->class = MMEDGE_CLASS_BEST_EFFORT;
			} else {
				snprintf(why, len, "unknown class '%s' (latency, best-effort)",
					 val);
				return -EINVAL;
			}
			st->set |= MMEDGE_CHAN_SET_CLASS;
		} else {
			if (st->set & MMEDGE_CHAN_SET_CAP)
				goto twice;
			if (!strcmp(val, "none")) {
				v = 0;
			} else if (mmctl_parse_rate(val, &v)) {
				snprintf(why, len, "cap '%s' is not a rate in bytes/s (e.g. 200M, 1.5G, 64k, none)",
					 val);
				return -EINVAL;
			}
			st->set |= MMEDGE_CHAN_SET_CAP;
			st->cap = v;
		}
	}
	if (!st->set) {
		snprintf(why, len, "nothing to set: give weight N, class C or cap RATE");
		return -EINVAL;
	}
	if ((st->set & MMEDGE_CHAN_SET_CLASS) &&
	    st->class == MMEDGE_CLASS_LATENCY &&
	    (st->set & MMEDGE_CHAN_SET_CAP) && !st->cap) {
		snprintf(why, len, "the latency class needs a rate cap");
		return -EINVAL;
	}
	return 0;
twice:
	snprintf(why, len, "%s given twice", argv[i - 1]);
	return -EINVAL;
}

void mmctl_json_wait_p99(struct json_writer *jw, uint64_t p99, bool open,
			 bool any)
{
	json_key(jw, "wait_p99_ns");
	if (any)
		json_u64(jw, p99);
	else
		json_null(jw);
	json_kv_bool(jw, "wait_p99_open", open);
}

void mmctl_chan_json(struct json_writer *jw, const struct mmctl_dev_info *dev,
		     const struct mmctl_chan_info *c)
{
	char buf[16];
	bool open, any;
	uint64_t p99;
	unsigned int i;

	p99 = mmctl_wait_pct(c->wait_hist, MMEDGE_WAIT_BUCKETS, 99, &open,
			     &any);
	json_begin_object(jw);
	json_kv_string(jw, "dev", dev->name);
	json_kv_u64(jw, "dev_index", c->dev_index);
	json_kv_u64(jw, "id", c->id);
	json_kv_string(jw, "name", c->name);
	json_kv_string(jw, "dir", mmctl_dir_name(c->dir, buf, sizeof(buf)));
	json_key(jw, "source");		/* a capture channel's source */
	if (c->dir == MMEDGE_CHAN_CAPTURE)
		json_string(jw, mmctl_src_name(c->src_type, buf, sizeof(buf)));
	else
		json_null(jw);
	json_kv_u64(jw, "weight", c->weight);
	json_kv_string(jw, "class", mmctl_class_name(c->class, buf,
						      sizeof(buf)));
	json_kv_u64(jw, "cap", c->cap);
	json_key(jw, "stats");
	json_begin_object(jw);
	json_kv_u64(jw, "bytes", c->bytes);
	json_kv_u64(jw, "segments", c->segments);
	json_kv_u64(jw, "frames", c->frames);
	json_kv_u64(jw, "dropped", c->dropped);
	json_kv_u64(jw, "errors", c->errors);
	json_kv_u64(jw, "bw", c->bw);
	mmctl_json_wait_p99(jw, p99, open, any);
	json_key(jw, "wait_hist");
	json_begin_array(jw);
	for (i = 0; i < MMEDGE_WAIT_BUCKETS; i++)
		json_u64(jw, c->wait_hist[i]);
	json_end_array(jw);
	json_end_object(jw);
	json_end_object(jw);
}

static void mmctl_chan_text(const struct mmctl_dev_info *dev,
			    const struct mmctl_chan_info *c)
{
	char src[16], cls[16], cap[32], bw[32], wait[32];
	bool open, any;
	uint64_t p99;

	p99 = mmctl_wait_pct(c->wait_hist, MMEDGE_WAIT_BUCKETS, 99, &open,
			     &any);
	if (c->cap)
		mmctl_fmt_rate(c->cap, cap, sizeof(cap));
	else
		snprintf(cap, sizeof(cap), "none");
	/* capture: "source camera"; feed, copy: "dir feed" */
	printf("%s: id %u dev %s %s %s weight %u class %s cap %s\n",
	       c->name, c->id, dev->name,
	       c->dir == MMEDGE_CHAN_CAPTURE ? "source" : "dir",
	       c->dir == MMEDGE_CHAN_CAPTURE ?
	       mmctl_src_name(c->src_type, src, sizeof(src)) :
	       mmctl_dir_name(c->dir, src, sizeof(src)), c->weight,
	       mmctl_class_name(c->class, cls, sizeof(cls)), cap);
	printf("    rate %s bytes %" PRIu64 " frames %" PRIu64 " dropped %"
	       PRIu64 " errors %" PRIu64 " wait_p99 %s\n",
	       mmctl_fmt_rate(c->bw, bw, sizeof(bw)), c->bytes, c->frames,
	       c->dropped, c->errors,
	       mmctl_fmt_wait(p99, open, any, wait, sizeof(wait)));
}

static int mmctl_chan_print(struct mmctl_ctx *ctx,
			    const struct mmctl_dev_info *dev,
			    const struct mmctl_chan_info *c, size_t n)
{
	size_t i;

	if (!ctx->json) {
		for (i = 0; i < n; i++)
			mmctl_chan_text(dev, &c[i]);
		return MMCTL_EXIT_OK;
	}
	mmctl_json_begin(ctx);
	json_begin_array(&ctx->jw);
	for (i = 0; i < n; i++)
		mmctl_chan_json(&ctx->jw, dev, &c[i]);
	json_end_array(&ctx->jw);
	return mmctl_json_end(ctx);
}

int mmctl_cmd_chan_show(struct mmctl_ctx *ctx, const struct mmctl_cmd *cmd,
			int argc, char **argv)
{
	struct mmctl_chan_info *chans = NULL, one;
	struct mmctl_dev_info dev;
	const char *name = NULL;
	struct mmctl_nl nl;
	char what[64];
	bool done;
	size_t n;
	int i, ret;

	for (i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (a[0] == '-' || !strcmp(a, "help")) {
			ret = mmctl_other_arg(cmd, a, &done);
			if (ret || done)
				return ret;
		}
		if (name)
			return mmctl_usage_err(cmd, "chan show: more than one channel given ('%s' and '%s')",
					       name, a);
		if (!mmctl_chan_name_valid(a))
			return mmctl_usage_err(cmd, "chan show: '%s' is not a channel name ([a-z0-9_-], at most %d characters)",
					       a, MMEDGE_NAME_LEN - 1);
		name = a;
	}

	ret = mmctl_nl_open(&nl);
	if (ret)
		return ret;
	ret = mmctl_nl_dev_lookup(&nl, ctx, NULL, &dev);
	if (ret)
		goto out;
	if (name) {
		ret = mmctl_nl_chan_get(&nl, dev.index, name, &one);
		if (ret < 0) {
			snprintf(what, sizeof(what), "chan show %s", name);
			ret = mmctl_nl_err(&nl, ret, what);
			goto out;
		}
		ret = mmctl_chan_print(ctx, &dev, &one, 1);
		goto out;
	}
	ret = mmctl_nl_chans(&nl, dev.index, &chans, &n);
	if (ret < 0) {
		ret = mmctl_nl_err(&nl, ret, "chan show");
		goto out;
	}
	ret = mmctl_chan_print(ctx, &dev, chans, n);
	free(chans);
out:
	mmctl_nl_close(&nl);
	return ret;
}

int mmctl_cmd_chan_set(struct mmctl_ctx *ctx, const struct mmctl_cmd *cmd,
		       int argc, char **argv)
{
	struct mmctl_chan_setting st;
	struct mmctl_chan_info after;
	struct mmctl_dev_info dev;
	struct mmctl_nl nl;
	char why[160], what[64];
	bool done;
	int i, ret;

	/* Values may start with '-' ("weight -1"): they get a value's error. */
	for (i = 0; i < argc; i++) {
		if (mmctl_is_help(argv[i]) || mmctl_is_global_opt(argv[i])) {
			ret = mmctl_other_arg(cmd, argv[i], &done);
			if (ret || done)
				return ret;
		}
	}
	if (argc < 1)
		return mmctl_usage_err(cmd, "chan set: which channel? (list them with: mmctl chan show)");
	if (!mmctl_chan_name_valid(argv[0]))
		return mmctl_usage_err(cmd, "chan set: '%s' is not a channel name ([a-z0-9_-], at most %d characters)",
				       argv[0], MMEDGE_NAME_LEN - 1);
	memset(&st, 0, sizeof(st));
	snprintf(st.name, sizeof(st.name), "%s", argv[0]);
	if (mmctl_parse_setting(argc - 1, argv + 1, &st, why, sizeof(why)))
		return mmctl_usage_err(cmd, "chan set %s: %s", st.name, why);

	ret = mmctl_nl_open(&nl);
	if (ret)
		return ret;
	ret = mmctl_nl_dev_lookup(&nl, ctx, NULL, &dev);
	if (ret)
		goto out;
	snprintf(what, sizeof(what), "chan set %s", st.name);
	ret = mmctl_nl_chan_set(&nl, dev.index, &st, 1, false);
	if (ret < 0) {
		ret = mmctl_nl_err(&nl, ret, what);
		goto out;
	}
	if (!ctx->json)
		goto out;
	/* -j: the channel as it is now. */
	ret = mmctl_nl_chan_get(&nl, dev.index, st.name, &after);
	if (ret < 0) {
		ret = mmctl_nl_err(&nl, ret, what);
		goto out;
	}
	ret = mmctl_chan_print(ctx, &dev, &after, 1);
out:
	mmctl_nl_close(&nl);
	return ret;
}
