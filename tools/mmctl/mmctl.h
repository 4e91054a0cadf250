/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mmctl - inspect and tune mmedge devices
 *
 * Commands are rows of mmctl_cmds[] (mmctl.c): OBJECT VERB, a handler and
 * its help. A handler gets the arguments after the verb and returns an
 * MMCTL_EXIT_* code. Device access goes through libmmhal only.
 */
#ifndef MMCTL_H
#define MMCTL_H

#include <stdbool.h>
#include <stdio.h>

#include "json.h"

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/* Exit codes */
#define MMCTL_EXIT_OK		0
#define MMCTL_EXIT_RUNTIME	1	/* the request failed */
#define MMCTL_EXIT_USAGE	2	/* the command line is wrong */

struct mmctl_ctx {
	/* -d: device path, or NULL for the default */
	const char *dev;
	/* -j, -p */
	bool json;
	bool pretty;
	/* Set up by mmctl_json_begin() */
	struct json_writer jw;
};

struct mmctl_cmd;

typedef int (*mmctl_handler_t)(struct mmctl_ctx *ctx,
			       const struct mmctl_cmd *cmd,
			       int argc, char **argv);

struct mmctl_cmd {
	const char *object;
	const char *verb;
	mmctl_handler_t handler;
	/* Arguments after the verb, for the synopsis ("[DEV]"); may be "". */
	const char *args;
	/* One line: what the command does. */
	const char *help;
	/* More lines for "mmctl OBJECT VERB -h", or NULL. */
	const char *details;
};

/* Messages to stderr, prefixed with "mmctl: ". */
void mmctl_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Report a usage error with a hint about where to get help.
 * Return: MMCTL_EXIT_USAGE.
 */
int mmctl_usage_err(const struct mmctl_cmd *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Print the help of one command to @fp. */
void mmctl_cmd_help(const struct mmctl_cmd *cmd, FILE *fp);

/*
 * Parse the arguments of a command that takes at most one optional
 * positional DEV (a path, or a name under /dev) and -h. On return *dev is
 * the chosen device or NULL (none given), and *done is true if help was
 * printed.
 * Return: MMCTL_EXIT_OK or MMCTL_EXIT_USAGE.
 */
int mmctl_parse_dev_args(struct mmctl_ctx *ctx, const struct mmctl_cmd *cmd,
			 int argc, char **argv, const char **dev, bool *done);

/* "mmedge0" -> "/dev/mmedge0"; anything with a '/' is kept. */
const char *mmctl_dev_path(const char *dev, char *buf, size_t len);

/*
 * Report that a device could not be opened, with a hint about what to do.
 * Return: MMCTL_EXIT_RUNTIME.
 */
int mmctl_open_err(const char *path, int err);

/* Start / end a JSON document on stdout (only when ctx->json). */
void mmctl_json_begin(struct mmctl_ctx *ctx);
int mmctl_json_end(struct mmctl_ctx *ctx);

/* Handlers (cmd_dev.c) */
int mmctl_cmd_caps_show(struct mmctl_ctx *ctx, const struct mmctl_cmd *cmd,
			int argc, char **argv);
int mmctl_cmd_dev_show(struct mmctl_ctx *ctx, const struct mmctl_cmd *cmd,
		       int argc, char **argv);

#endif /* MMCTL_H */
