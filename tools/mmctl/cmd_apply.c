// SPDX-License-Identifier: GPL-2.0
/*
 * mmctl apply FILE: a tuning profile, all lines or none.
 *
 *	# comment
 *	CHANNEL [weight N] [class C] [cap RATE]
 *
 * The file is parsed and checked against the device's channels first,
 * then sent as one MMEDGE_CMD_CHAN_SET_MULTI, which the kernel applies
 * atomically.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mmctl.h"
#include "nl.h"

#define MMCTL_APPLY_MAX_WORDS	16
/* The kernel takes at most this many entries (MMEDGE_MAX_CHANS). */
#define MMCTL_APPLY_MAX_CHANS	64

struct mmctl_profile {
	const char *file;
	struct mmctl_chan_setting st[MMCTL_APPLY_MAX_CHANS];
	size_t n;
};

/* Splits @line at blanks, up to '#'. Return: words, or -E2BIG. */
static int mmctl_split(char *line, char **words, int max)
{
	char *p = line, *hash = strchr(line, '#');
	int n = 0;

	if (hash)
		*hash = '\0';
	for (;;) {
		p += strspn(p, " \t\r\n");
		if (!*p)
			return n;
		if (n == max)
			return -E2BIG;
		words[n++] = p;
		p += strcspn(p, " \t\r\n");
		if (*p)
			*p++ = '\0';
	}
}

/* Return: MMCTL_EXIT_OK, or MMCTL_EXIT_USAGE / _RUNTIME after saying why. */
static int mmctl_profile_read(FILE *fp, struct mmctl_profile *p)
{
	char *line = NULL, *words[MMCTL_APPLY_MAX_WORDS], why[160];
	unsigned int lineno = 0;
	size_t cap = 0, i;
	int n, ret = MMCTL_EXIT_OK;

	while (getline(&line, &cap, fp) >= 0) {
		struct mmctl_chan_setting *st;

		lineno++;
		n = mmctl_split(line, words, MMCTL_APPLY_MAX_WORDS);
		if (n == 0)
			continue;
		if (n < 0) {
			mmctl_err("%s:%u: too many words (CHANNEL [weight N] [class C] [cap RATE])",
				  p->file, lineno);
			ret = MMCTL_EXIT_USAGE;
			goto out;
		}
		if (!mmctl_chan_name_valid(words[0])) {
			mmctl_err("%s:%u: '%s' is not a channel name ([a-z0-9_-], at most %d characters)",
				  p->file, lineno, words[0],
				  MMEDGE_NAME_LEN - 1);
			ret = MMCTL_EXIT_USAGE;
			goto out;
		}
		for (i = 0; i < p->n; i++) {
			if (!strcmp(p->st[i].name, words[0])) {
				mmctl_err("%s:%u: %s is already set on line %u",
					  p->file, lineno, words[0],
					  p->st[i].line);
				ret = MMCTL_EXIT_USAGE;
				goto out;
			}
		}
		if (p->n == MMCTL_APPLY_MAX_CHANS) {
			mmctl_err("%s:%u: too many channels (at most %d)",
				  p->file, lineno, MMCTL_APPLY_MAX_CHANS);
			ret = MMCTL_EXIT_USAGE;
			goto out;
		}
		st = &p->st[p->n];
		memset(st, 0, sizeof(*st));
		snprintf(st->name, sizeof(st->name), "%s", words[0]);
		st->line = lineno;
		if (mmctl_parse_setting(n - 1, words + 1, st, why,
					sizeof(why))) {
			mmctl_err("%s:%u: %s: %s", p->file, lineno, words[0],
				  why);
			ret = MMCTL_EXIT_USAGE;
			goto out;
		}
		p->n++;
	}
	if (ferror(fp)) {
		mmctl_err("%s: read error: %s", p->file, strerror(errno));
		ret = MMCTL_EXIT_RUNTIME;
	} else if (!p->n) {
		mmctl_err("%s: no channels to set (lines: CHANNEL [weight N] [class C] [cap RATE])",
			  p->file);
		ret = MMCTL_EXIT_USAGE;
	}
out:
	free(line);
	return ret;
}

static const struct mmctl_chan_info *
mmctl_find_chan(const struct mmctl_chan_info *c, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(c[i].name, name))
			return &c[i];
	return NULL;
}

/*
 * The kernel says why but not which entry (it checks them in order):
 * find the first line its rules refuse, to name it.
 */
static const struct mmctl_chan_setting *
mmctl_guess_bad(const struct mmctl_profile *p,
		const struct mmctl_chan_info *chans, size_t n, int err)
{
	size_t i;

	for (i = 0; i < p->n; i++) {
		const struct mmctl_chan_setting *st = &p->st[i];
		const struct mmctl_chan_info *c;
		uint32_t weight, class;
		uint64_t cap;

		c = mmctl_find_chan(chans, n, st->name);
		if (!c)
			return st;
		weight = st->set & MMEDGE_CHAN_SET_WEIGHT ? st->weight : c->weight;
		class = st->set & MMEDGE_CHAN_SET_CLASS ? st->class : c->class;
		cap = st->set & MMEDGE_CHAN_SET_CAP ? st->cap : c->cap;
		if (err == -EINVAL && class == MMEDGE_CLASS_LATENCY && !cap)
			return st;
		if (err == -EPERM &&
		    ((weight > MMEDGE_WEIGHT_DEFAULT && weight > c->weight) ||
		     (class == MMEDGE_CLASS_LATENCY &&
		      (c->class != MMEDGE_CLASS_LATENCY || cap > c->cap))))
			return st;
	}
	return NULL;
}

int mmctl_cmd_apply(struct mmctl_ctx *ctx, const struct mmctl_cmd *cmd,
		    int argc, char **argv)
{
	struct mmctl_chan_info *chans = NULL;
	const struct mmctl_chan_setting *bad;
	struct mmctl_profile *p;
	struct mmctl_dev_info dev;
	const char *file = NULL;
	bool check_only = false, done;
	struct mmctl_nl nl;
	char what[300];
	size_t n, i;
	FILE *fp;
	int a, ret;

	for (a = 0; a < argc; a++) {
		if (!strcmp(argv[a], "-n")) {
			check_only = true;
			continue;
		}
		if (!strcmp(argv[a], "-") && !file) {
			file = argv[a];
			continue;
		}
		if (argv[a][0] == '-' || mmctl_is_help(argv[a]) || file) {
			ret = mmctl_other_arg(cmd, argv[a], &done);
			if (ret || done)
				return ret;
		}
		file = argv[a];
	}
	if (!file)
		return mmctl_usage_err(cmd, "apply: which profile? give a FILE (or - for stdin)");

	p = calloc(1, sizeof(*p));
	if (!p) {
		mmctl_err("out of memory");
		return MMCTL_EXIT_RUNTIME;
	}
	if (!strcmp(file, "-")) {
		p->file = "<stdin>";
		fp = stdin;
	} else {
		p->file = file;
		fp = fopen(file, "r");
		if (!fp) {
			mmctl_err("cannot open %s: %s", file, strerror(errno));
			free(p);
			return MMCTL_EXIT_RUNTIME;
		}
	}
	ret = mmctl_profile_read(fp, p);
	if (fp != stdin)
		fclose(fp);
	if (ret)
		goto out_free;

	ret = mmctl_nl_open(&nl);
	if (ret)
		goto out_free;
	ret = mmctl_nl_dev_lookup(&nl, ctx, NULL, &dev);
	if (ret)
		goto out;
	ret = mmctl_nl_chans(&nl, dev.index, &chans, &n);
	if (ret < 0) {
		ret = mmctl_nl_err(&nl, ret, "apply");
		goto out;
	}
	for (i = 0; i < p->n; i++) {
		if (!mmctl_find_chan(chans, n, p->st[i].name)) {
			mmctl_err("%s:%u: no channel '%s' on %s (list them with: mmctl chan show); nothing was changed",
				  p->file, p->st[i].line, p->st[i].name,
				  dev.name);
			ret = MMCTL_EXIT_RUNTIME;
			goto out;
		}
	}
	if (check_only) {
		if (!ctx->json)
			printf("%s: %zu channels, all on %s\n", p->file, p->n,
			       dev.name);
		goto print;
	}

	ret = mmctl_nl_chan_set(&nl, dev.index, p->st, p->n, true);
	if (ret < 0) {
		bad = mmctl_guess_bad(p, chans, n, ret);
		if (bad)
			snprintf(what, sizeof(what), "%s:%u: %s", p->file,
				 bad->line, bad->name);
		else
			snprintf(what, sizeof(what), "%s", p->file);
		ret = mmctl_nl_err(&nl, ret, what);
		mmctl_err("nothing was changed");
		goto out;
	}
	free(chans);
	chans = NULL;
	ret = mmctl_nl_chans(&nl, dev.index, &chans, &n);
	if (ret < 0) {
		ret = mmctl_nl_err(&nl, ret, "apply");
		goto out;
	}
print:
	ret = MMCTL_EXIT_OK;
	if (!ctx->json)
		goto out;
	/* -j: the profile's channels as they are now. */
	mmctl_json_begin(ctx);
	json_begin_array(&ctx->jw);
	for (i = 0; i < p->n; i++) {
		const struct mmctl_chan_info *c;

		c = mmctl_find_chan(chans, n, p->st[i].name);
		if (c)
			mmctl_chan_json(&ctx->jw, &dev, c);
	}
	json_end_array(&ctx->jw);
	ret = mmctl_json_end(ctx);
out:
	free(chans);
	mmctl_nl_close(&nl);
out_free:
	free(p);
	return ret;
}
