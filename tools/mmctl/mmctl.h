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

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

#include "json.h"

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/* Exit codes */
#define MMCTL_EXIT_OK		0
#define MMCTL_EXIT_RUNTIME	1	/* the request failed */
#define MMCTL_EXIT_USAGE	2	/* the command line (or a profile) is wrong */
#define MMCTL_EXIT_PERM		3	/* the kernel said EPERM or EACCES */

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

/*
 * For an argument a command does not know: "-h", "--help" and "help"
 * print the command's help (*done set, MMCTL_EXIT_OK); a global option
 * gets a hint to move it; anything else is a usage error.
 */
int mmctl_other_arg(const struct mmctl_cmd *cmd, const char *a, bool *done);
/* "-h", "--help" or "help". */
bool mmctl_is_help(const char *a);
/* -d, -j, -p and their long forms: options that go before the object. */
bool mmctl_is_global_opt(const char *a);

/* Set by SIGINT and SIGTERM once mmctl_catch_signals() ran. */
extern volatile sig_atomic_t mmctl_stop;
/* SIGINT and SIGTERM set mmctl_stop and interrupt sleeps and poll(). */
void mmctl_catch_signals(void);

/* Start / end a JSON document on stdout (only when ctx->json). */
void mmctl_json_begin(struct mmctl_ctx *ctx);
int mmctl_json_end(struct mmctl_ctx *ctx);

/* Handlers (cmd_dev.c) */
int mmctl_cmd_caps_show(struct mmctl_ctx *ctx, const struct mmctl_cmd *cmd,
			int argc, char **argv);
int mmctl_cmd_dev_show(struct mmctl_ctx *ctx, const struct mmctl_cmd *cmd,
		       int argc, char **argv);

/* cmd_chan.c */
struct mmctl_chan_setting;
struct mmctl_chan_info;
struct mmctl_dev_info;

/*
 * Parses "[weight N] [class C] [cap RATE]" (at least one) into @st,
 * checking values as the kernel will. On error, @why (of @len bytes)
 * says what is wrong in the kernel's words where it has some.
 * Return: 0 or -EINVAL.
 */
int mmctl_parse_setting(int argc, char **argv, struct mmctl_chan_setting *st,
			char *why, size_t len);
/* [a-z0-9_-], 1..15 characters, as the driver accepts. */
bool mmctl_chan_name_valid(const char *name);
/* One channel as a JSON object. */
/* "wait_p99_ns" (null if nothing waited) and "wait_p99_open" of a
 * queue-wait histogram. */
void mmctl_json_wait_p99(struct json_writer *jw, uint64_t p99, bool open,
			 bool any);
void mmctl_chan_json(struct json_writer *jw, const struct mmctl_dev_info *dev,
		     const struct mmctl_chan_info *c);

int mmctl_cmd_chan_show(struct mmctl_ctx *ctx, const struct mmctl_cmd *cmd,
			int argc, char **argv);
int mmctl_cmd_chan_set(struct mmctl_ctx *ctx, const struct mmctl_cmd *cmd,
		       int argc, char **argv);
/* cmd_stats.c */
int mmctl_cmd_stats(struct mmctl_ctx *ctx, const struct mmctl_cmd *cmd,
		    int argc, char **argv);
/* cmd_monitor.c */
int mmctl_cmd_monitor(struct mmctl_ctx *ctx, const struct mmctl_cmd *cmd,
		      int argc, char **argv);
/* cmd_bus.c */
int mmctl_cmd_bus_show(struct mmctl_ctx *ctx, const struct mmctl_cmd *cmd,
		       int argc, char **argv);
int mmctl_cmd_bus_set(struct mmctl_ctx *ctx, const struct mmctl_cmd *cmd,
		      int argc, char **argv);
/* cmd_apply.c */
int mmctl_cmd_apply(struct mmctl_ctx *ctx, const struct mmctl_cmd *cmd,
		    int argc, char **argv);

/* cmd_model.c: the model store (mmhal_store.h); the defaults of --store
 * and --key (also $MMCTL_MODEL_STORE, $MMCTL_MODEL_KEY) */
#define MMCTL_MODEL_STORE	"/var/lib/mmedge/models"
#define MMCTL_MODEL_KEY		"/etc/mmedge/model-key.pub"
int mmctl_cmd_model_status(struct mmctl_ctx *ctx, const struct mmctl_cmd *cmd,
			   int argc, char **argv);
int mmctl_cmd_model_install(struct mmctl_ctx *ctx, const struct mmctl_cmd *cmd,
			    int argc, char **argv);
int mmctl_cmd_model_switch(struct mmctl_ctx *ctx, const struct mmctl_cmd *cmd,
			   int argc, char **argv);
int mmctl_cmd_model_rollback(struct mmctl_ctx *ctx,
			     const struct mmctl_cmd *cmd, int argc, char **argv);
int mmctl_cmd_model_commit(struct mmctl_ctx *ctx, const struct mmctl_cmd *cmd,
			   int argc, char **argv);
int mmctl_cmd_model_health(struct mmctl_ctx *ctx, const struct mmctl_cmd *cmd,
			   int argc, char **argv);
int mmctl_cmd_model_success(struct mmctl_ctx *ctx, const struct mmctl_cmd *cmd,
			    int argc, char **argv);
int mmctl_cmd_model_failure(struct mmctl_ctx *ctx, const struct mmctl_cmd *cmd,
			    int argc, char **argv);
int mmctl_cmd_sensorcal_show(struct mmctl_ctx *ctx,
			     const struct mmctl_cmd *cmd, int argc, char **argv);
int mmctl_cmd_sensorcal_install(struct mmctl_ctx *ctx,
				const struct mmctl_cmd *cmd, int argc,
				char **argv);
int mmctl_cmd_sensorcal_rollback(struct mmctl_ctx *ctx,
				 const struct mmctl_cmd *cmd, int argc,
				 char **argv);

#endif /* MMCTL_H */
