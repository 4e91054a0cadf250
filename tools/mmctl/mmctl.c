// SPDX-License-Identifier: GPL-2.0
/*
 * mmctl - inspect and tune mmedge devices
 *
 *	mmctl [OPTIONS] OBJECT [VERB] [ARGS]
 *
 * in the style of ip(8) and devlink(8). Exit codes: 0 success, 1 the
 * request failed, 2 the command line (or a profile file) is wrong, 3 the
 * kernel refused for lack of privilege.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <mmhal.h>

#include "mmctl.h"

/*
 * The command table. The first row of an object gives its default verb
 * ("mmctl dev" is "mmctl dev show"); an object whose row has an empty
 * verb takes no verb at all ("mmctl apply FILE"). Verbs are plain words:
 * no '/', and not starting with "mmedge", which introduce a device.
 */
static const struct mmctl_cmd mmctl_cmds[] = {
	{
		.object = "caps",
		.verb = "show",
		.handler = mmctl_cmd_caps_show,
		.args = "[DEV]",
		.help = "Show what a device can do",
		.details =
			"Prints the capabilities the driver reports for DEV (default:\n"
			"-d, else " MMHAL_DEFAULT_DEV "): interface version, capability\n"
			"bits and implemented ioctls by name, channel and memory\n"
			"limits.\n",
	},
	{
		.object = "dev",
		.verb = "show",
		.handler = mmctl_cmd_dev_show,
		.args = "[DEV]",
		.help = "List mmedge devices",
		.details =
			"Lists every /dev/mmedgeN with its driver, location and\n"
			"interface version, or only DEV (or -d) if given; with the\n"
			"module's netlink family, also the modelled bus bandwidth and\n"
			"the number of channels. Exits 1 if there is none or one\n"
			"cannot be read.\n",
	},
	{
		.object = "chan",
		.verb = "show",
		.handler = mmctl_cmd_chan_show,
		.args = "[NAME]",
		.help = "Show channels: settings and counters",
		.details =
			"Lists the channels of the device (-d, default mmedge0), or\n"
			"only NAME: id, source, weight, class, cap, and the counters:\n"
			"rate (the driver's moving average), bytes, frames, drops,\n"
			"errors, and the 99th percentile of the segment queue wait.\n",
	},
	{
		.object = "chan",
		.verb = "set",
		.handler = mmctl_cmd_chan_set,
		.args = "NAME [weight N] [class C] [cap RATE]",
		.help = "Change a channel's weight, class or rate cap",
		.details =
			"weight N   share of the DMA engine, 1..10000 (default 100);\n"
			"           raising it above 100 needs CAP_SYS_NICE\n"
			"class C    best-effort, or latency (served first up to its\n"
			"           cap; needs a cap and CAP_SYS_NICE)\n"
			"cap RATE   bytes/s: 200M, 1.5G, 64k, 4MiB; none or 0 = no cap\n"
			"\n"
			"Needs CAP_NET_ADMIN. Takes effect from the next segment and\n"
			"is announced to 'mmctl monitor'. With -j, prints the channel\n"
			"as it is after the change.\n",
	},
	{
		.object = "stats",
		.verb = "show",
		.handler = mmctl_cmd_stats,
		.args = "[-w INTERVAL] [-c COUNT]",
		.help = "Live view of how the channels share the bus",
		.details =
			"Per channel: MB/s, its share of the bytes against its share\n"
			"of the weights, the 99th percentile of the segment queue wait\n"
			"(from the driver's histogram), and drops.\n"
			"\n"
			"Without -w, one sample (MB/s from the driver's moving average).\n"
			"-w INTERVAL   refresh every INTERVAL seconds (0.1..3600, e.g.\n"
			"              1 or 0.5); rates and waits then cover the last\n"
			"              interval. Stops on Ctrl-C (exit 0).\n"
			"-c COUNT      stop after COUNT samples.\n"
			"With -j, one JSON object per sample, one per line.\n",
	},
	{
		.object = "monitor",
		.verb = "all",
		.handler = mmctl_cmd_monitor,
		.args = "[-c COUNT]",
		.help = "Print events as they happen",
		.details =
			"Channels created and destroyed, weight changes with who made\n"
			"them (pid and uid, or the adaptive mode), drops (at most 10\n"
			"events a second per channel) and engine stalls, one line\n"
			"each (with -j, one JSON object per line), until Ctrl-C or\n"
			"SIGTERM (exit 0).\n"
			"-c COUNT   stop after COUNT events.\n",
	},
	{
		.object = "bus",
		.verb = "show",
		.handler = mmctl_cmd_bus_show,
		.args = "",
		.help = "Show the soft DMA engine's modelled bus bandwidth",
		.details = NULL,
	},
	{
		.object = "bus",
		.verb = "set",
		.handler = mmctl_cmd_bus_set,
		.args = "BANDWIDTH",
		.help = "Change the modelled bus bandwidth",
		.details =
			"BANDWIDTH in bytes/s, 1M..100G: 200M, 1.5G, 800MB/s.\n"
			"Needs CAP_SYS_ADMIN.\n",
	},
	{
		.object = "apply",
		.verb = "",
		.handler = mmctl_cmd_apply,
		.args = "[-n] FILE",
		.help = "Apply a tuning profile to several channels at once",
		.details =
			"FILE (or - for stdin) has one channel per line, with the\n"
			"settings of 'chan set':\n"
			"\n"
			"    # camera first, audio must not starve\n"
			"    camera0  weight 400\n"
			"    mic0     weight 200 class latency cap 64k\n"
			"\n"
			"Everything after '#' is a comment. The whole file is checked,\n"
			"then sent as one request: either every line applies or none\n"
			"does. Errors name the line.\n"
			"-n   check the file against the device only; change nothing.\n",
	},
#define MODEL_OPTS "[--store DIR] [--key KEY.pub] [--lock-timeout MS]"
#define MODEL_OPTS_HELP \
	"--store DIR    the model store (default " MMCTL_MODEL_STORE ",\n" \
	"               or $MMCTL_MODEL_STORE); created if missing\n" \
	"--key KEY.pub  the trusted public key (default\n" \
	"               " MMCTL_MODEL_KEY ", or $MMCTL_MODEL_KEY)\n" \
	"--lock-timeout MS  how long to wait for the store while another\n" \
	"               process holds it (default 10000); then exit 1\n" \
	"See Documentation/model-store.rst.\n"
	{
		.object = "model",
		.verb = "status",
		.handler = mmctl_cmd_model_status,
		.args = MODEL_OPTS,
		.help = "Show the model store: slots, trial, sensor parameters",
		.details =
			"The active slot (a or b), the previous one during a trial and\n"
			"its successful requests, an installed one not yet switched\n"
			"to, each slot's signed name, version and hash, the minimum\n"
			"version, and the sensor parameters' versions. Then the\n"
			"active slot verified now as a load verifies it (signature,\n"
			"content, the state's record): 'verified: slot b: NAME\n"
			"version N ... by fs-verity|hash', or why a load refuses it.\n"
			MODEL_OPTS_HELP,
	},
	{
		.object = "model",
		.verb = "install",
		.handler = mmctl_cmd_model_install,
		.args = MODEL_OPTS " FILE",
		.help = "Copy a signed model into the inactive slot and verify it",
		.details =
			"FILE and FILE.sig (mmgguf sign) are copied into the inactive\n"
			"slot and verified there: signed by the key, unaltered, of a\n"
			"version not below the active one. Not used until 'switch'.\n"
			MODEL_OPTS_HELP,
	},
	{
		.object = "model",
		.verb = "switch",
		.handler = mmctl_cmd_model_switch,
		.args = MODEL_OPTS,
		.help = "Make the installed model active, keeping the old one",
		.details =
			"Starts a trial: the old slot is kept until the new model has\n"
			"served the store's count of successful requests ('success')\n"
			"or is committed; a failure, a failed health check, a model that\n"
			"does not load or 'rollback' goes back to it.\n"
			MODEL_OPTS_HELP,
	},
	{
		.object = "model",
		.verb = "rollback",
		.handler = mmctl_cmd_model_rollback,
		.args = MODEL_OPTS,
		.help = "Go back to the previous model (during a trial)",
		.details = MODEL_OPTS_HELP,
	},
	{
		.object = "model",
		.verb = "commit",
		.handler = mmctl_cmd_model_commit,
		.args = MODEL_OPTS,
		.help = "End the trial: keep the active model, drop the previous",
		.details =
			"The minimum version becomes the active model's: older\n"
			"signed files are refused from then on.\n"
			MODEL_OPTS_HELP,
	},
	{
		.object = "model",
		.verb = "health",
		.handler = mmctl_cmd_model_health,
		.args = MODEL_OPTS,
		.help = "Load the active model (verified) and decode one token",
		.details =
			"Exit 1 if it fails; during a trial the store then rolls back.\n"
			MODEL_OPTS_HELP,
	},
	{
		.object = "model",
		.verb = "success",
		.handler = mmctl_cmd_model_success,
		.args = MODEL_OPTS,
		.help = "Count a request the active model served",
		.details = MODEL_OPTS_HELP,
	},
	{
		.object = "model",
		.verb = "failure",
		.handler = mmctl_cmd_model_failure,
		.args = MODEL_OPTS,
		.help = "Report a failed request (rolls back during a trial)",
		.details = MODEL_OPTS_HELP,
	},
	{
		.object = "sensorcal",
		.verb = "show",
		.handler = mmctl_cmd_sensorcal_show,
		.args = MODEL_OPTS " TYPE",
		.help = "Print a sensor type's current calibration parameters",
		.details =
			"TYPE: camera, imu, mic, ... (a-z 0-9 _ -). The file is checked\n"
			"against the hash the store recorded.\n"
			MODEL_OPTS_HELP,
	},
	{
		.object = "sensorcal",
		.verb = "install",
		.handler = mmctl_cmd_sensorcal_install,
		.args = MODEL_OPTS " [--version N] TYPE FILE",
		.help = "Install new calibration parameters for one sensor type",
		.details =
			"FILE (at most 64 KiB) becomes TYPE's next version (or N, above\n"
			"the current); the current one is kept as the previous.\n"
			MODEL_OPTS_HELP,
	},
	{
		.object = "sensorcal",
		.verb = "rollback",
		.handler = mmctl_cmd_sensorcal_rollback,
		.args = MODEL_OPTS " TYPE",
		.help = "Go back to a sensor type's previous parameters",
		.details =
			"Only TYPE's: the other sensors' parameters stay as they are.\n"
			MODEL_OPTS_HELP,
	},
#undef MODEL_OPTS
#undef MODEL_OPTS_HELP
};

#define MMCTL_NR_CMDS	ARRAY_SIZE(mmctl_cmds)

static const char mmctl_options_help[] =
	"Options:\n"
	"  -d, --dev DEV   device: a path, or a name under /dev (default "
	MMHAL_DEFAULT_DEV ")\n"
	"  -j, --json      print JSON\n"
	"  -p, --pretty    indent JSON (with -j)\n"
	"  -h, --help      show this help; after a command, its help\n"
	"  -V, --version   show the versions of mmctl and libmmhal\n";

static const char mmctl_exit_help[] =
	"Exit status: 0 success, 1 the request failed, 2 usage error (command\n"
	"line or profile), 3 permission denied.\n";

volatile sig_atomic_t mmctl_stop;

static void mmctl_on_signal(int sig)
{
	(void)sig;
	mmctl_stop = 1;
}

void mmctl_catch_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	/* No SA_RESTART: sleeps and poll() return early. */
	sa.sa_handler = mmctl_on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

void mmctl_err(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("mmctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int mmctl_usage_err(const struct mmctl_cmd *cmd, const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("mmctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (cmd)
		fprintf(stderr, "\nTry 'mmctl %s%s%s -h' for help.\n",
			cmd->object, cmd->verb[0] ? " " : "", cmd->verb);
	else
		fputs("\nTry 'mmctl -h' for help.\n", stderr);
	return MMCTL_EXIT_USAGE;
}

static void mmctl_usage(FILE *fp)
{
	size_t i;

	fputs("Usage: mmctl [OPTIONS] OBJECT [VERB] [ARGS]\n"
	      "       mmctl OBJECT help | mmctl OBJECT VERB -h\n"
	      "       (without a VERB, an OBJECT's first verb is meant)\n"
	      "       mmctl -h | -V\n"
	      "\n"
	      "Commands:\n", fp);
	for (i = 0; i < MMCTL_NR_CMDS; i++) {
		const struct mmctl_cmd *c = &mmctl_cmds[i];
		char syn[80];

		snprintf(syn, sizeof(syn), "%s%s%s %s", c->object,
			 c->verb[0] ? " " : "", c->verb, c->args);
		if (strlen(syn) > 30)
			fprintf(fp, "  %s\n  %-30s %s\n", syn, "", c->help);
		else
			fprintf(fp, "  %-30s %s\n", syn, c->help);
	}
	fprintf(fp, "\n%s\n%s", mmctl_options_help, mmctl_exit_help);
}

/* Prints multi-line @text with every line indented by @indent spaces. */
static void mmctl_print_indented(FILE *fp, const char *text, int indent)
{
	const char *nl;

	while (*text) {
		nl = strchr(text, '\n');
		if (!nl)
			nl = text + strlen(text);
		fprintf(fp, "%*s%.*s\n", indent, "", (int)(nl - text), text);
		text = *nl ? nl + 1 : nl;
	}
}

void mmctl_cmd_help(const struct mmctl_cmd *cmd, FILE *fp)
{
	fprintf(fp, "Usage: mmctl [OPTIONS] %s%s%s %s\n\n%s.\n", cmd->object,
		cmd->verb[0] ? " " : "", cmd->verb, cmd->args, cmd->help);
	if (cmd->details) {
		fputc('\n', fp);
		mmctl_print_indented(fp, cmd->details, 0);
	}
	fprintf(fp, "\n%s\n%s", mmctl_options_help, mmctl_exit_help);
}

static const struct mmctl_cmd *mmctl_find(const char *object, const char *verb)
{
	size_t i;

	for (i = 0; i < MMCTL_NR_CMDS; i++) {
		const struct mmctl_cmd *c = &mmctl_cmds[i];

		if (strcmp(c->object, object))
			continue;
		if (!verb || !strcmp(c->verb, verb))
			return c;
	}
	return NULL;
}

/* @def: the object's default command (its first row). */
static void mmctl_object_help(const struct mmctl_cmd *def, FILE *fp)
{
	size_t i;

	fprintf(fp, "Usage: mmctl [OPTIONS] %s [VERB] [ARGS]\n\n"
		"Verbs (without one, '%s' is meant):\n", def->object,
		def->verb);
	for (i = 0; i < MMCTL_NR_CMDS; i++) {
		const struct mmctl_cmd *c = &mmctl_cmds[i];

		if (strcmp(c->object, def->object))
			continue;
		fprintf(fp, "\n  %s %s\n    %s.\n", c->verb, c->args, c->help);
		if (c->details)
			mmctl_print_indented(fp, c->details, 4);
	}
	fprintf(fp, "\n%s", mmctl_options_help);
}

const char *mmctl_dev_path(const char *dev, char *buf, size_t len)
{
	if (!dev)
		return MMHAL_DEFAULT_DEV;
	if (strchr(dev, '/'))
		return dev;
	snprintf(buf, len, "/dev/%s", dev);
	return buf;
}

bool mmctl_is_help(const char *a)
{
	return !strcmp(a, "-h") || !strcmp(a, "--help") || !strcmp(a, "help");
}

bool mmctl_is_global_opt(const char *a)
{
	static const char *const opts[] = {
		"-d", "--dev", "-j", "--json", "-p", "--pretty", "-jp", "-pj",
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(opts); i++)
		if (!strcmp(a, opts[i]))
			return true;
	return false;
}

int mmctl_other_arg(const struct mmctl_cmd *cmd, const char *a, bool *done)
{
	*done = false;
	if (mmctl_is_help(a)) {
		mmctl_cmd_help(cmd, stdout);
		*done = true;
		return MMCTL_EXIT_OK;
	}
	if (mmctl_is_global_opt(a))
		return mmctl_usage_err(cmd,
			"%s%s%s: '%s' goes before the object: mmctl %s %s%s%s ...",
			cmd->object, cmd->verb[0] ? " " : "", cmd->verb, a, a,
			cmd->object, cmd->verb[0] ? " " : "", cmd->verb);
	if (a[0] == '-' && a[1])
		return mmctl_usage_err(cmd, "%s%s%s: unknown option '%s'",
				       cmd->object, cmd->verb[0] ? " " : "",
				       cmd->verb, a);
	return mmctl_usage_err(cmd, "%s%s%s: unexpected argument '%s'",
			       cmd->object, cmd->verb[0] ? " " : "",
			       cmd->verb, a);
}

int mmctl_parse_dev_args(struct mmctl_ctx *ctx, const struct mmctl_cmd *cmd,
			 int argc, char **argv, const char **dev, bool *done)
{
	int i;

	*dev = ctx->dev;
	*done = false;
	for (i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "-h") || !strcmp(a, "--help") ||
		    !strcmp(a, "help")) {
			mmctl_cmd_help(cmd, stdout);
			*done = true;
			return MMCTL_EXIT_OK;
		}
		if (a[0] == '-' && a[1] && mmctl_is_global_opt(a))
			return mmctl_usage_err(cmd,
				"%s %s: '%s' goes before the object: mmctl %s %s %s ...",
				cmd->object, cmd->verb, a, a, cmd->object,
				cmd->verb);
		if (a[0] == '-' && a[1])
			return mmctl_usage_err(cmd, "%s %s: unknown option '%s'",
					       cmd->object, cmd->verb, a);
		if (*dev)
			return mmctl_usage_err(cmd,
				"%s %s: more than one device given ('%s' and '%s')",
				cmd->object, cmd->verb, *dev, a);
		if (!a[0])
			return mmctl_usage_err(cmd, "%s %s: empty device name",
					       cmd->object, cmd->verb);
		*dev = a;
	}
	return MMCTL_EXIT_OK;
}

int mmctl_open_err(const char *path, int err)
{
	const char *base = strrchr(path, '/');
	const char *hint = NULL;

	base = base ? base + 1 : path;
	switch (-err) {
	case ENOENT:
		if (!strncmp(base, "mmedge", 6))
			hint = "is mmedge.ko loaded? try: insmod mmedge.ko";
		else
			hint = "check the path; list devices with: mmctl dev show";
		break;
	case EACCES:
	case EPERM:
		hint = "run as root, or give your user access to /dev/mmedge*";
		break;
	case ENODEV:
	case EISDIR:
	case ENOTDIR:
		hint = "check the path; list devices with: mmctl dev show";
		break;
	case EPROTO:
		hint = "mmedge.ko and mmctl do not match; install them together";
		break;
	}
	if (hint)
		mmctl_err("cannot open %s: %s (%s)", path, mmhal_strerror(err),
			  hint);
	else
		mmctl_err("cannot open %s: %s", path, mmhal_strerror(err));
	return MMCTL_EXIT_RUNTIME;
}

void mmctl_json_begin(struct mmctl_ctx *ctx)
{
	json_init(&ctx->jw, stdout, ctx->pretty);
}

int mmctl_json_end(struct mmctl_ctx *ctx)
{
	if (json_finish(&ctx->jw) < 0) {
		mmctl_err("internal error: malformed JSON output");
		return MMCTL_EXIT_RUNTIME;
	}
	return MMCTL_EXIT_OK;
}

/* Runs OBJECT [VERB] [ARGS]. */
static int mmctl_dispatch(struct mmctl_ctx *ctx, int argc, char **argv)
{
	const struct mmctl_cmd *cmd, *def;
	const char *object = argv[0];
	const char *verb = argc > 1 ? argv[1] : NULL;

	if (!strcmp(object, "help")) {
		mmctl_usage(stdout);
		return MMCTL_EXIT_OK;
	}
	def = mmctl_find(object, NULL);
	if (!def)
		return mmctl_usage_err(NULL, "unknown object '%s'", object);
	/* An object without verbs: everything after it is its arguments. */
	if (!def->verb[0])
		return def->handler(ctx, def, argc - 1, argv + 1);

	if (verb && (!strcmp(verb, "help") || !strcmp(verb, "-h") ||
		     !strcmp(verb, "--help"))) {
		mmctl_object_help(def, stdout);
		return MMCTL_EXIT_OK;
	}

	/*
	 * "mmctl caps", "mmctl caps -h" and "mmctl caps DEV" run the default
	 * verb. A DEV is told from a verb by a '/' or the mmedge prefix.
	 */
	if (!verb || verb[0] == '-' || strchr(verb, '/') ||
	    !strncmp(verb, "mmedge", 6))
		return def->handler(ctx, def, argc - 1, argv + 1);

	cmd = mmctl_find(object, verb);
	if (!cmd) {
		fflush(stdout);
		fprintf(stderr, "mmctl: unknown command '%s %s'\n"
			"Try 'mmctl %s help' for its verbs.\n",
			object, verb, object);
		return MMCTL_EXIT_USAGE;
	}
	return cmd->handler(ctx, cmd, argc - 2, argv + 2);
}

/* Like coreutils' close_stdout(): a failed write is an error. */
static int mmctl_close_stdout(int ret)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		mmctl_err("write error: %s", strerror(errno));
		return MMCTL_EXIT_RUNTIME;
	}
	return ret;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "dev", required_argument, NULL, 'd' },
		{ "json", no_argument, NULL, 'j' },
		{ "pretty", no_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct mmctl_ctx ctx = { 0 };
	int opt;

	opterr = 0;
	/* '+': options end at the object, so each command parses its own. */
	while ((opt = getopt_long(argc, argv, "+:d:jphV", longopts,
				  NULL)) != -1) {
		switch (opt) {
		case 'd':
			if (!optarg[0])
				return mmctl_usage_err(NULL,
						       "-d: empty device name");
			ctx.dev = optarg;
			break;
		case 'j':
			ctx.json = true;
			break;
		case 'p':
			ctx.pretty = true;
			break;
		case 'h':
			mmctl_usage(stdout);
			return mmctl_close_stdout(MMCTL_EXIT_OK);
		case 'V':
			printf("mmctl %s (libmmhal %s)\n", MMHAL_VERSION_STRING,
			       mmhal_version());
			return mmctl_close_stdout(MMCTL_EXIT_OK);
		case ':':
			return mmctl_usage_err(NULL,
					       "option '%s' needs an argument",
					       argv[optind - 1]);
		default:
			if (optopt)
				return mmctl_usage_err(NULL,
						       "unknown option '-%c'",
						       optopt);
			return mmctl_usage_err(NULL, "unknown option '%s'",
					       argv[optind - 1]);
		}
	}

	if (ctx.pretty && !ctx.json)
		return mmctl_usage_err(NULL, "-p only makes sense with -j");
	if (optind >= argc)
		return mmctl_usage_err(NULL, "missing command");

	return mmctl_close_stdout(mmctl_dispatch(&ctx, argc - optind,
						 argv + optind));
}
