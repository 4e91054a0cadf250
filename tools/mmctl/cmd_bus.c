// SPDX-License-Identifier: GPL-2.0
/*
 * mmctl bus show, mmctl bus set: the soft DMA engine's bus model.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include <mmhal.h>

#include "mmctl.h"
#include "nl.h"
#include "units.h"

static int mmctl_bus_print(struct mmctl_ctx *ctx,
			   const struct mmctl_dev_info *dev)
{
	char buf[32];

	if (!ctx->json) {
		printf("%s: bus %s (%" PRIu64 " bytes/s)\n", dev->name,
		       mmctl_fmt_rate(dev->bus_bw, buf, sizeof(buf)),
		       dev->bus_bw);
		return MMCTL_EXIT_OK;
	}
	mmctl_json_begin(ctx);
	json_begin_object(&ctx->jw);
	json_kv_string(&ctx->jw, "dev", dev->name);
	json_kv_u64(&ctx->jw, "dev_index", dev->index);
	json_kv_u64(&ctx->jw, "bus_bw", dev->bus_bw);
	json_end_object(&ctx->jw);
	return mmctl_json_end(ctx);
}

int mmctl_cmd_bus_show(struct mmctl_ctx *ctx, const struct mmctl_cmd *cmd,
		       int argc, char **argv)
{
	struct mmctl_dev_info dev;
	struct mmctl_nl nl;
	bool done;
	int ret;

	if (argc > 0) {
		ret = mmctl_other_arg(cmd, argv[0], &done);
		if (ret || done)
			return ret;
	}
	ret = mmctl_nl_open(&nl);
	if (ret)
		return ret;
	ret = mmctl_nl_dev_lookup(&nl, ctx, NULL, &dev);
	if (!ret)
		ret = mmctl_bus_print(ctx, &dev);
	mmctl_nl_close(&nl);
	return ret;
}

int mmctl_cmd_bus_set(struct mmctl_ctx *ctx, const struct mmctl_cmd *cmd,
		      int argc, char **argv)
{
	struct mmctl_dev_info dev;
	struct mmctl_nl nl;
	const char *arg = NULL;
	char lo[32], hi[32];
	uint64_t bw;
	bool done;
	int i, ret;

	for (i = 0; i < argc; i++) {
		if (mmctl_is_help(argv[i]) || mmctl_is_global_opt(argv[i]) ||
		    arg) {
			ret = mmctl_other_arg(cmd, argv[i], &done);
			if (ret || done)
				return ret;
		}
		arg = argv[i];
	}
	if (!arg)
		return mmctl_usage_err(cmd, "bus set: give the BANDWIDTH in bytes/s, e.g. 200M");
	ret = mmctl_parse_rate(arg, &bw);
	if (ret == -EINVAL)
		return mmctl_usage_err(cmd, "bus set: '%s' is not a rate in bytes/s (e.g. 200M, 1.5G)",
				       arg);
	if (ret || bw < MMHAL_BUS_MIN || bw > MMHAL_BUS_MAX)
		return mmctl_usage_err(cmd, "bus set: bandwidth %s out of range %s..%s",
				       arg,
				       mmctl_fmt_rate(MMHAL_BUS_MIN, lo, sizeof(lo)),
				       mmctl_fmt_rate(MMHAL_BUS_MAX, hi, sizeof(hi)));

	ret = mmctl_nl_open(&nl);
	if (ret)
		return ret;
	ret = mmctl_nl_dev_lookup(&nl, ctx, NULL, &dev);
	if (ret)
		goto out;
	ret = mmctl_nl_bus_set(&nl, dev.index, bw);
	if (ret < 0) {
		ret = mmctl_nl_err(&nl, ret, "bus set");
		goto out;
	}
	if (ctx->json) {
		ret = mmctl_nl_dev_lookup(&nl, ctx, NULL, &dev);
		if (!ret)
			ret = mmctl_bus_print(ctx, &dev);
	}
out:
	mmctl_nl_close(&nl);
	return ret;
}
