// SPDX-License-Identifier: GPL-2.0
/*
 * mmctl caps show, mmctl dev show
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <mmhal.h>

#include "mmctl.h"
#include "nl.h"
#include "units.h"

/* A bit set nobody named yet still gets printed. */
static const char *mmctl_bit_name(const char *(*namer)(unsigned int),
				  const char *prefix, unsigned int bit,
				  char *buf, size_t len)
{
	const char *name = namer(bit);

	if (name)
		return name;
	snprintf(buf, len, "%s%u", prefix, bit);
	return buf;
}

static void mmctl_print_bits(const char *(*namer)(unsigned int),
			     const char *prefix, uint64_t bits)
{
	char buf[32];
	unsigned int bit;

	printf("%#" PRIx64, bits);
	if (!bits) {
		printf(" (none)");
		return;
	}
	for (bit = 0; bit < 64; bit++)
		if (bits & (1ULL << bit))
			printf(" %s", mmctl_bit_name(namer, prefix, bit, buf,
						     sizeof(buf)));
}

static void mmctl_json_bits(struct json_writer *jw, const char *key,
			    const char *(*namer)(unsigned int),
			    const char *prefix, uint64_t bits)
{
	char buf[32];
	unsigned int bit;

	json_key(jw, key);
	json_begin_array(jw);
	for (bit = 0; bit < 64; bit++)
		if (bits & (1ULL << bit))
			json_string(jw, mmctl_bit_name(namer, prefix, bit, buf,
						       sizeof(buf)));
	json_end_array(jw);
}

/* 4194304 -> "4 MiB", 1610612736 -> "1.5 GiB" */
static const char *mmctl_size(uint64_t v, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB",
					     "PiB", "EiB" };
	unsigned int u = 0;
	double d = (double)v;

	while (d >= 1024 && u < ARRAY_SIZE(units) - 1) {
		d /= 1024;
		u++;
	}
	if (u == 0 || (v & ((1ULL << (10 * u)) - 1)) == 0)
		snprintf(buf, len, "%.0f %s", d, units[u]);
	else
		snprintf(buf, len, "%.1f %s", d, units[u]);
	return buf;
}

static const char *mmctl_basename(const char *path)
{
	const char *p = strrchr(path, '/');

	return p ? p + 1 : path;
}

/*
 * Opens @path and reads its caps.
 * Return: MMCTL_EXIT_OK, or MMCTL_EXIT_RUNTIME after printing why.
 */
static int mmctl_read_caps(const char *path, struct mmhal_caps *caps)
{
	struct mmhal_dev *dev;
	int err;

	err = mmhal_dev_open(path, &dev);
	if (err < 0)
		return mmctl_open_err(path, err);
	err = mmhal_dev_caps(dev, caps);
	mmhal_dev_close(dev);
	if (err < 0) {
		mmctl_err("%s: cannot read capabilities: %s", path,
			  mmhal_strerror(err));
		return MMCTL_EXIT_RUNTIME;
	}
	return MMCTL_EXIT_OK;
}

/* A buffer limit; 0 means the instance cannot allocate buffers. */
static void mmctl_print_bytes(const char *name, uint64_t v)
{
	char buf[32];

	if (v)
		printf("  %-16s %" PRIu64 " (%s)\n", name, v,
		       mmctl_size(v, buf, sizeof(buf)));
	else
		printf("  %-16s 0 (no buffers)\n", name);
}

static void mmctl_caps_text(const char *path, const struct mmhal_caps *c)
{
	printf("%s:\n", path);
	printf("  %-16s %s\n", "driver", c->driver);
	printf("  %-16s %s\n", "bus_info", c->bus_info);
	printf("  %-16s %u\n", "instance", c->instance);
	printf("  %-16s %u\n", "api_version", c->api_version);
	printf("  %-16s ", "caps");
	mmctl_print_bits(mmhal_cap_name, "bit", c->caps);
	printf("\n  %-16s ", "ioctls");
	mmctl_print_bits(mmhal_ioctl_name, "ioctl", c->ioctls);
	printf("\n  %-16s %u\n", "max_channels", c->max_channels);
	mmctl_print_bytes("max_buffer_size", c->max_buffer_size);
	mmctl_print_bytes("mem_limit", c->mem_limit);
}

static void mmctl_caps_json(struct json_writer *jw, const char *path,
			    const struct mmhal_caps *c)
{
	json_begin_object(jw);
	json_kv_string(jw, "dev", mmctl_basename(path));
	json_kv_string(jw, "path", path);
	json_kv_string(jw, "driver", c->driver);
	json_kv_string(jw, "bus_info", c->bus_info);
	json_kv_u64(jw, "instance", c->instance);
	json_kv_u64(jw, "api_version", c->api_version);
	json_kv_bool(jw, "virtual", c->virtual_dev);
	mmctl_json_bits(jw, "caps", mmhal_cap_name, "bit", c->caps);
	json_kv_u64(jw, "caps_raw", c->caps);
	mmctl_json_bits(jw, "ioctls", mmhal_ioctl_name, "ioctl", c->ioctls);
	json_kv_u64(jw, "ioctls_raw", c->ioctls);
	json_kv_u64(jw, "max_channels", c->max_channels);
	json_kv_u64(jw, "max_buffer_size", c->max_buffer_size);
	json_kv_u64(jw, "mem_limit", c->mem_limit);
	json_end_object(jw);
}

int mmctl_cmd_caps_show(struct mmctl_ctx *ctx, const struct mmctl_cmd *cmd,
			int argc, char **argv)
{
	struct mmhal_caps caps;
	char buf[PATH_MAX];
	const char *dev, *path;
	bool done;
	int ret;

	ret = mmctl_parse_dev_args(ctx, cmd, argc, argv, &dev, &done);
	if (ret || done)
		return ret;
	path = mmctl_dev_path(dev, buf, sizeof(buf));

	ret = mmctl_read_caps(path, &caps);
	if (ret)
		return ret;

	if (!ctx->json) {
		mmctl_caps_text(path, &caps);
		return MMCTL_EXIT_OK;
	}
	mmctl_json_begin(ctx);
	mmctl_caps_json(&ctx->jw, path, &caps);
	return mmctl_json_end(ctx);
}

/* /dev/mmedgeN names, N decimal without leading zeros. */
static int mmctl_dev_filter(const struct dirent *de)
{
	const char *p = de->d_name;

	if (strncmp(p, "mmedge", 6))
		return 0;
	p += 6;
	if (!*p || (*p == '0' && p[1]))
		return 0;
	for (; *p; p++)
		if (*p < '0' || *p > '9')
			return 0;
	return 1;
}

static int mmctl_dev_cmp(const struct dirent **a, const struct dirent **b)
{
	size_t la = strlen((*a)->d_name), lb = strlen((*b)->d_name);

	/* Same prefix, no leading zeros: shorter is smaller. */
	if (la != lb)
		return la < lb ? -1 : 1;
	return strcmp((*a)->d_name, (*b)->d_name);
}

struct mmctl_dev_entry {
	char path[PATH_MAX];
	struct mmhal_caps caps;
	/* From netlink, when the family answered. */
	bool has_nl;
	struct mmctl_dev_info nl;
};

static void mmctl_dev_text(const struct mmctl_dev_entry *e)
{
	char buf[32];

	printf("%s: driver %s bus_info %s api_version %u%s",
	       mmctl_basename(e->path), e->caps.driver, e->caps.bus_info,
	       e->caps.api_version, e->caps.virtual_dev ? " virtual" : "");
	if (e->has_nl)
		printf(" bus %s channels %u",
		       mmctl_fmt_rate(e->nl.bus_bw, buf, sizeof(buf)),
		       e->nl.nr_chans);
	putchar('\n');
}

/* Adds what the netlink family knows; silently nothing without it. */
static void mmctl_dev_add_nl(struct mmctl_dev_entry *entries, int n)
{
	struct mmctl_dev_info *devs;
	struct mmctl_nl nl;
	size_t nr, j;
	int i;

	if (mmctl_nl_open_quiet(&nl))
		return;
	if (mmctl_nl_devs(&nl, &devs, &nr) == 0) {
		for (i = 0; i < n; i++) {
			for (j = 0; j < nr; j++) {
				if (strcmp(devs[j].name,
					   mmctl_basename(entries[i].path)))
					continue;
				entries[i].has_nl = true;
				entries[i].nl = devs[j];
			}
		}
		free(devs);
	}
	mmctl_nl_close(&nl);
}

static void mmctl_dev_json(struct json_writer *jw,
			   const struct mmctl_dev_entry *e)
{
	json_begin_object(jw);
	json_kv_string(jw, "dev", mmctl_basename(e->path));
	json_kv_string(jw, "path", e->path);
	json_kv_string(jw, "driver", e->caps.driver);
	json_kv_string(jw, "bus_info", e->caps.bus_info);
	json_kv_u64(jw, "instance", e->caps.instance);
	json_kv_u64(jw, "api_version", e->caps.api_version);
	json_kv_bool(jw, "virtual", e->caps.virtual_dev);
	if (e->has_nl) {
		json_kv_u64(jw, "dev_index", e->nl.index);
		json_kv_u64(jw, "bus_bw", e->nl.bus_bw);
		json_kv_u64(jw, "nr_chans", e->nl.nr_chans);
	}
	json_end_object(jw);
}

int mmctl_cmd_dev_show(struct mmctl_ctx *ctx, const struct mmctl_cmd *cmd,
		       int argc, char **argv)
{
	struct mmctl_dev_entry *entries = NULL;
	struct dirent **names = NULL;
	char buf[PATH_MAX];
	const char *dev;
	bool done;
	int i, n, found = 0, ret, status = MMCTL_EXIT_OK;

	ret = mmctl_parse_dev_args(ctx, cmd, argc, argv, &dev, &done);
	if (ret || done)
		return ret;

	if (dev) {
		n = 1;
	} else {
		n = scandir("/dev", &names, mmctl_dev_filter, mmctl_dev_cmp);
		if (n < 0) {
			mmctl_err("cannot list /dev: %s", strerror(errno));
			return MMCTL_EXIT_RUNTIME;
		}
		if (n == 0) {
			free(names);
			mmctl_err("no mmedge devices in /dev (is mmedge.ko loaded? try: insmod mmedge.ko)");
			return MMCTL_EXIT_RUNTIME;
		}
	}

	entries = calloc(n, sizeof(*entries));
	if (!entries) {
		mmctl_err("out of memory");
		status = MMCTL_EXIT_RUNTIME;
		goto out;
	}

	/* Read everything first: output is not interleaved with errors. */
	for (i = 0; i < n; i++) {
		struct mmctl_dev_entry *e = &entries[found];

		if (dev)
			snprintf(e->path, sizeof(e->path), "%s",
				 mmctl_dev_path(dev, buf, sizeof(buf)));
		else
			snprintf(e->path, sizeof(e->path), "/dev/%s",
				 names[i]->d_name);
		if (mmctl_read_caps(e->path, &e->caps) == MMCTL_EXIT_OK)
			found++;
		else
			status = MMCTL_EXIT_RUNTIME;
	}

	if (!found)
		goto out;
	mmctl_dev_add_nl(entries, found);
	if (ctx->json) {
		mmctl_json_begin(ctx);
		json_begin_array(&ctx->jw);
		for (i = 0; i < found; i++)
			mmctl_dev_json(&ctx->jw, &entries[i]);
		json_end_array(&ctx->jw);
		ret = mmctl_json_end(ctx);
		if (ret)
			status = ret;
	} else {
		for (i = 0; i < found; i++)
			mmctl_dev_text(&entries[i]);
	}

out:
	if (names) {
		for (i = 0; i < n; i++)
			free(names[i]);
		free(names);
	}
	free(entries);
	return status;
}
