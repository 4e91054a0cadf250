/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mmctl's side of the "mmedge" generic netlink family, on libnl-genl-3:
 * the socket, requests with the kernel's extended ack message kept for
 * the user, and the replies parsed into plain structs.
 */
#ifndef MMCTL_NL_H
#define MMCTL_NL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/mmedge.h>

struct nl_sock;
struct nl_msg;
struct nlattr;
struct mmctl_ctx;

struct mmctl_nl {
	struct nl_sock *sk;
	int family;
	/* The last request's error message from the kernel (extack), or "". */
	char extack[256];
};

struct mmctl_dev_info {
	uint32_t index;
	char name[32];
	bool virt;
	uint64_t bus_bw;
	uint32_t nr_chans;
};

struct mmctl_chan_info {
	uint32_t dev_index;
	uint32_t id;
	char name[MMEDGE_NAME_LEN];
	uint32_t src_type;		/* capture channels */
	uint32_t dir;			/* MMEDGE_CHAN_* */
	uint32_t weight;
	uint32_t class;
	uint64_t cap;
	uint64_t bytes;
	uint64_t segments;
	uint64_t frames;
	uint64_t dropped;
	uint64_t errors;
	uint64_t bw;
	uint64_t wait_hist[MMEDGE_WAIT_BUCKETS];
};

/* What to change on one channel (MMEDGE_CHAN_SET_* in @set). */
struct mmctl_chan_setting {
	char name[MMEDGE_NAME_LEN];
	uint32_t set;
	uint32_t weight;
	uint32_t class;
	uint64_t cap;
	/* apply: the line of the profile file it came from. */
	unsigned int line;
};

/*
 * Connects and resolves the family. Prints what went wrong and what to do.
 * Return: MMCTL_EXIT_OK or MMCTL_EXIT_RUNTIME.
 */
int mmctl_nl_open(struct mmctl_nl *nl);
/* The same, silent: for extras a command can do without. */
int mmctl_nl_open_quiet(struct mmctl_nl *nl);
/*
 * Joins the "events" group; the socket is then only for
 * mmctl_nl_events() (non-blocking, no sequence checks).
 * Return: MMCTL_EXIT_OK or MMCTL_EXIT_RUNTIME.
 */
int mmctl_nl_subscribe(struct mmctl_nl *nl);
void mmctl_nl_close(struct mmctl_nl *nl);

/*
 * Reports a failed request: "mmctl: WHAT: <kernel's message or
 * strerror> (<what to do>)".
 * Return: MMCTL_EXIT_PERM for -EPERM/-EACCES, else MMCTL_EXIT_RUNTIME.
 */
int mmctl_nl_err(const struct mmctl_nl *nl, int err, const char *what);

/* Dumps. *out is malloc()ed (free() it), *n its entries. Return 0 or -errno. */
int mmctl_nl_devs(struct mmctl_nl *nl, struct mmctl_dev_info **out,
		  size_t *n);
int mmctl_nl_chans(struct mmctl_nl *nl, uint32_t dev_index,
		   struct mmctl_chan_info **out, size_t *n);

/* One channel by name. Return 0 or -errno (-ENOENT: no such channel). */
int mmctl_nl_chan_get(struct mmctl_nl *nl, uint32_t dev_index,
		      const char *name, struct mmctl_chan_info *out);

/*
 * MMEDGE_CMD_CHAN_SET (@multi false, @n 1) or MMEDGE_CMD_CHAN_SET_MULTI
 * (all or nothing). Return 0 or -errno.
 */
int mmctl_nl_chan_set(struct mmctl_nl *nl, uint32_t dev_index,
		      const struct mmctl_chan_setting *st, size_t n,
		      bool multi);

/* MMEDGE_CMD_BUS_SET. Return 0 or -errno. */
int mmctl_nl_bus_set(struct mmctl_nl *nl, uint32_t dev_index, uint64_t bw);

/*
 * The device of a command: @dev (a name or a path; basename is matched
 * against the netlink device names), else ctx->dev, else mmedge0. Prints
 * why on failure.
 * Return: MMCTL_EXIT_OK, or MMCTL_EXIT_RUNTIME.
 */
int mmctl_nl_dev_lookup(struct mmctl_nl *nl, const struct mmctl_ctx *ctx,
			const char *dev, struct mmctl_dev_info *out);

/* An event from the "events" group, parsed. */
struct mmctl_event {
	uint8_t cmd;			/* MMEDGE_CMD_CHAN_NEW, ... */
	uint32_t dev_index;
	uint32_t chan_id;
	char chan_name[MMEDGE_NAME_LEN];
	bool has_chan;
	uint32_t src_type;
	uint32_t dir;
	uint32_t weight, old_weight, class;
	uint64_t cap;
	bool adaptive;
	bool has_pid;
	uint32_t pid, uid;
	uint64_t dropped;
	uint64_t stall_ns;
};

/*
 * Receives what has arrived on an events socket (non-blocking), calling
 * @fn for each event; a non-zero return of @fn stops.
 * Return: 0 (all taken), 1 (@fn stopped), or -errno (-ENOMEM also when
 * events were lost to a full socket buffer).
 */
int mmctl_nl_events(struct mmctl_nl *nl,
		    int (*fn)(const struct mmctl_event *ev, void *arg),
		    void *arg);

/* The socket's fd, for poll(). */
int mmctl_nl_fd(const struct mmctl_nl *nl);

/* "camera", "mic", "imu", or "src<N>". */
const char *mmctl_src_name(uint32_t type, char *buf, size_t len);
/* "capture", "feed", "copy" (MMEDGE_CHAN_*), else "dirN" in buf. */
const char *mmctl_dir_name(uint32_t dir, char *buf, size_t len);
/* "best-effort", "latency", or "class<N>". */
const char *mmctl_class_name(uint32_t class, char *buf, size_t len);

#endif /* MMCTL_NL_H */
