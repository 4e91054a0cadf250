// SPDX-License-Identifier: GPL-2.0
/*
 * cmd_model.c - mmctl model ... and mmctl sensorcal ...: the A/B model
 * store and the sensor calibration parameters of libmmhal's mmhal_store.h
 * (Documentation/model-store.rst).
 *
 * Every verb takes --store DIR (default MMCTL_MODEL_STORE), --key FILE,
 * the trusted public key (default MMCTL_MODEL_KEY), and --lock-timeout MS,
 * how long to wait for a store another process holds (default the
 * library's, 10 s); none touches the device.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <mmhal.h>
#include <mmhal_store.h>

#include "mmctl.h"

struct model_args {
	const char *store, *key;
	const char *pos[3];
	int n_pos;
	uint64_t version;
	int lock_ms;		/* 0: the library's default */
};

/*
 * --store, --key, [--version N when allow_version], and up to max_pos
 * positional arguments; returns -1 when it printed help (exit 0), an exit
 * code > 0 on error, 0 to go on.
 */
static int model_parse(const struct mmctl_cmd *cmd, int argc, char **argv,
		       int max_pos, int allow_version, struct model_args *a)
{
	bool done;
	int ret;

	memset(a, 0, sizeof(*a));
	a->store = getenv("MMCTL_MODEL_STORE");
	if (!a->store)
		a->store = MMCTL_MODEL_STORE;
	a->key = getenv("MMCTL_MODEL_KEY");
	if (!a->key)
		a->key = MMCTL_MODEL_KEY;
	for (int i = 0; i < argc; i++) {
		const char *s = argv[i];

		if ((!strcmp(s, "--store") || !strcmp(s, "--key") ||
		     !strcmp(s, "--lock-timeout") ||
		     (allow_version && !strcmp(s, "--version"))) &&
		    i + 1 >= argc)
			return mmctl_usage_err(cmd, "%s %s: %s needs a value",
					       cmd->object, cmd->verb, s);
		if (!strcmp(s, "--store")) {
			a->store = argv[++i];
		} else if (!strcmp(s, "--key")) {
			a->key = argv[++i];
		} else if (!strcmp(s, "--lock-timeout")) {
			char *end;
			long v;

			errno = 0;
			v = strtol(argv[++i], &end, 10);
			if (errno || *end || v < 1 || v > 3600000 ||
			    argv[i][0] < '0' || argv[i][0] > '9')
				return mmctl_usage_err(cmd, "%s %s: --lock-timeout '%s' is not a number of milliseconds from 1 to 3600000",
						       cmd->object, cmd->verb,
						       argv[i]);
			a->lock_ms = (int)v;
		} else if (allow_version && !strcmp(s, "--version")) {
			char *end;

			errno = 0;
			a->version = strtoull(argv[++i], &end, 10);
			if (errno || *end || !a->version ||
			    argv[i][0] < '0' || argv[i][0] > '9')
				return mmctl_usage_err(cmd, "%s %s: --version '%s' is not a positive integer",
						       cmd->object, cmd->verb,
						       argv[i]);
		} else if (!mmctl_is_help(s) && !mmctl_is_global_opt(s) &&
			   !(s[0] == '-' && s[1]) && a->n_pos < max_pos) {
			a->pos[a->n_pos++] = s;
		} else {
			ret = mmctl_other_arg(cmd, s, &done);
			if (done)
				return -1;
			return ret;
		}
	}
	return 0;
}

static int model_open(const struct model_args *a, struct mmhal_store **s)
{
	struct mmhal_store_params p = mmhal_store_default_params();
	unsigned char key[32];
	char err[512];
	int ret;

	ret = mmhal_store_read_key(a->key, key, err, sizeof(err));
	if (ret) {
		mmctl_err("%s", err);
		return MMCTL_EXIT_RUNTIME;
	}
	p.trusted_key = key;
	p.create = 1;
	if (a->lock_ms)
		p.lock_timeout_ms = a->lock_ms;
	ret = mmhal_store_open(a->store, &p, s, err, sizeof(err));
	if (ret == -ETIMEDOUT) {
		mmctl_err("%s; try again, or wait longer with --lock-timeout MS",
			  err);
		return MMCTL_EXIT_RUNTIME;
	}
	if (ret) {
		mmctl_err("%s", err);
		return ret == -EACCES || ret == -EPERM ? MMCTL_EXIT_PERM :
			MMCTL_EXIT_RUNTIME;
	}
	return 0;
}

static void slot_text(const struct mmhal_store_status *st, int i)
{
	const struct mmhal_store_slot *sl = &st->slot[i];
	char c = (char)('a' + i);

	printf("slot %c: ", c);
	if (!sl->valid) {
		printf("empty\n");
		return;
	}
	printf("%s version %" PRIu64 ", %" PRIu64 " bytes, blake2b-256 %.16s...",
	       sl->name, sl->version, sl->size, sl->hash);
	if (st->active == c)
		printf(" [active%s]", st->trial ? ", on trial" : "");
	if (st->active == c && st->active_sig)
		printf(" [its signature file is not the installed file's (%s): a load refuses it]",
		       strerror(-st->active_sig));
	if (st->previous == c)
		printf(" [previous]");
	if (st->pending == c)
		printf(" [installed, not switched to]");
	printf("\n");
}

static void slot_json(struct json_writer *jw, const struct mmhal_store_slot *sl,
		      char c)
{
	char k[2] = { c, 0 };

	json_key(jw, k);
	if (!sl->valid) {
		json_null(jw);
		return;
	}
	json_begin_object(jw);
	json_kv_string(jw, "name", sl->name);
	json_kv_u64(jw, "version", sl->version);
	json_kv_u64(jw, "size", sl->size);
	json_kv_string(jw, "blake2b_256", sl->hash);
	json_end_object(jw);
}

/*
 * What a load of the active slot loads, verified now (not the state's
 * record, which another party may have rewritten): slot, signed name,
 * version, size, hash, and how a load checks it.
 */
static void verified_text(const struct mmhal_store_status *st)
{
	const struct mmhal_store_slot *v = &st->verified;

	if (!st->verified_slot)
		return;
	if (st->active_verify) {
		printf("verified: slot %c does not verify (%s): %s; a load refuses it\n",
		       st->verified_slot, strerror(-st->active_verify),
		       st->verify_error);
		return;
	}
	printf("verified: slot %c: %s version %" PRIu64 ", %" PRIu64
	       " bytes, blake2b-256 %.16s..., by %s (%s)\n", st->verified_slot,
	       v->name, v->version, v->size, v->hash, st->verified_how,
	       !strcmp(st->verified_how, "fs-verity") ?
	       "a load maps the file; the kernel checks every page" :
	       "a load reads it into a private copy and hashes it");
}

static void verified_json(struct json_writer *jw,
			  const struct mmhal_store_status *st)
{
	char one[2] = { st->verified_slot, 0 };

	json_key(jw, "verified");
	if (!st->verified_slot) {
		json_null(jw);
		return;
	}
	json_begin_object(jw);
	json_kv_string(jw, "slot", one);
	json_kv_bool(jw, "ok", !st->active_verify);
	if (st->active_verify) {
		json_kv_string(jw, "error", st->verify_error);
	} else {
		json_kv_string(jw, "how", st->verified_how);
		json_kv_string(jw, "name", st->verified.name);
		json_kv_u64(jw, "version", st->verified.version);
		json_kv_u64(jw, "size", st->verified.size);
		json_kv_string(jw, "blake2b_256", st->verified.hash);
	}
	json_end_object(jw);
}

static int model_print(struct mmctl_ctx *ctx, struct mmhal_store *s)
{
	struct mmhal_store_status st = { .size = sizeof(st) };
	char one[2] = { 0, 0 };
	int ret;

	ret = mmhal_store_status(s, &st);
	if (ret) {
		mmctl_err("cannot read the store's state: %s", strerror(-ret));
		return ret == -EACCES || ret == -EPERM ? MMCTL_EXIT_PERM :
			MMCTL_EXIT_RUNTIME;
	}
	if (!ctx->json) {
		printf("active: %c%s, minimum version %" PRIu64 "\n",
		       st.active ? st.active : '-',
		       st.trial ? " (on trial)" : "", st.min_version);
		if (st.trial)
			printf("trial: %d of %d successful requests commit it\n",
			       st.successes, st.n_commit);
		slot_text(&st, 0);
		slot_text(&st, 1);
		verified_text(&st);
		for (int i = 0; i < st.n_sensors; i++) {
			printf("sensor %s: version %" PRIu64, st.sensor[i].type,
			       st.sensor[i].version);
			if (st.sensor[i].previous)
				printf(" (previous %" PRIu64 ")",
				       st.sensor[i].previous);
			printf("\n");
		}
		return MMCTL_EXIT_OK;
	}
	mmctl_json_begin(ctx);
	json_begin_object(&ctx->jw);
	one[0] = st.active;
	if (st.active)
		json_kv_string(&ctx->jw, "active", one);
	else
		{ json_key(&ctx->jw, "active"); json_null(&ctx->jw); }
	one[0] = st.previous;
	if (st.previous)
		json_kv_string(&ctx->jw, "previous", one);
	else
		{ json_key(&ctx->jw, "previous"); json_null(&ctx->jw); }
	one[0] = st.pending;
	if (st.pending)
		json_kv_string(&ctx->jw, "pending", one);
	else
		{ json_key(&ctx->jw, "pending"); json_null(&ctx->jw); }
	json_kv_bool(&ctx->jw, "trial", st.trial);
	json_kv_u64(&ctx->jw, "successes", (uint64_t)st.successes);
	json_kv_u64(&ctx->jw, "n_commit", (uint64_t)st.n_commit);
	json_kv_u64(&ctx->jw, "min_version", st.min_version);
	json_kv_bool(&ctx->jw, "active_signature_matches", !st.active_sig);
	json_key(&ctx->jw, "slots");
	json_begin_object(&ctx->jw);
	slot_json(&ctx->jw, &st.slot[0], 'a');
	slot_json(&ctx->jw, &st.slot[1], 'b');
	json_end_object(&ctx->jw);
	verified_json(&ctx->jw, &st);
	json_key(&ctx->jw, "sensors");
	json_begin_object(&ctx->jw);
	for (int i = 0; i < st.n_sensors; i++) {
		json_key(&ctx->jw, st.sensor[i].type);
		json_begin_object(&ctx->jw);
		json_kv_u64(&ctx->jw, "version", st.sensor[i].version);
		json_kv_u64(&ctx->jw, "previous", st.sensor[i].previous);
		json_end_object(&ctx->jw);
	}
	json_end_object(&ctx->jw);
	json_end_object(&ctx->jw);
	return mmctl_json_end(ctx);
}

enum model_op { OP_STATUS, OP_INSTALL, OP_SWITCH, OP_ROLLBACK, OP_COMMIT,
		OP_HEALTH, OP_SUCCESS, OP_FAILURE };

static int model_run(struct mmctl_ctx *ctx, const struct mmctl_cmd *cmd,
		     int argc, char **argv, enum model_op op)
{
	struct mmhal_store *s = NULL;
	struct model_args a;
	char err[640] = "";
	int ret;

	ret = model_parse(cmd, argc, argv, op == OP_INSTALL, 0, &a);
	if (ret)
		return ret < 0 ? MMCTL_EXIT_OK : ret;
	if (op == OP_INSTALL && !a.n_pos)
		return mmctl_usage_err(cmd, "model install: give the signed model FILE (FILE.sig beside it)");
	ret = model_open(&a, &s);
	if (ret)
		return ret;
	switch (op) {
	case OP_STATUS:
		ret = 0;
		break;
	case OP_INSTALL:
		ret = mmhal_store_install(s, a.pos[0], err, sizeof(err));
		break;
	case OP_SWITCH:
		ret = mmhal_store_switch(s, err, sizeof(err));
		break;
	case OP_ROLLBACK:
		ret = mmhal_store_rollback(s, err, sizeof(err));
		break;
	case OP_COMMIT:
		ret = mmhal_store_commit(s, err, sizeof(err));
		break;
	case OP_HEALTH:
		ret = mmhal_store_health(s, err, sizeof(err));
		break;
	case OP_SUCCESS:
		ret = mmhal_store_report_success(s, err, sizeof(err));
		break;
	case OP_FAILURE:
		ret = mmhal_store_report_failure(s, err, sizeof(err));
		break;
	}
	if (ret < 0) {
		mmctl_err("model %s: %s", cmd->verb, err);
		mmhal_store_close(s);
		return MMCTL_EXIT_RUNTIME;
	}
	/* health: 1 = failed and rolled back; success: 1 = committed;
	 * failure: 1 = rolled back */
	if (ret == 1 && err[0])
		fprintf(stderr, "mmctl: model %s: %s\n", cmd->verb, err);
	ret = (op == OP_HEALTH && ret == 1) ? MMCTL_EXIT_RUNTIME :
		model_print(ctx, s);
	mmhal_store_close(s);
	return ret;
}

int mmctl_cmd_model_status(struct mmctl_ctx *ctx, const struct mmctl_cmd *cmd,
			   int argc, char **argv)
{
	return model_run(ctx, cmd, argc, argv, OP_STATUS);
}

int mmctl_cmd_model_install(struct mmctl_ctx *ctx, const struct mmctl_cmd *cmd,
			    int argc, char **argv)
{
	return model_run(ctx, cmd, argc, argv, OP_INSTALL);
}

int mmctl_cmd_model_switch(struct mmctl_ctx *ctx, const struct mmctl_cmd *cmd,
			   int argc, char **argv)
{
	return model_run(ctx, cmd, argc, argv, OP_SWITCH);
}

int mmctl_cmd_model_rollback(struct mmctl_ctx *ctx,
			     const struct mmctl_cmd *cmd, int argc, char **argv)
{
	return model_run(ctx, cmd, argc, argv, OP_ROLLBACK);
}

int mmctl_cmd_model_commit(struct mmctl_ctx *ctx, const struct mmctl_cmd *cmd,
			   int argc, char **argv)
{
	return model_run(ctx, cmd, argc, argv, OP_COMMIT);
}

int mmctl_cmd_model_health(struct mmctl_ctx *ctx, const struct mmctl_cmd *cmd,
			   int argc, char **argv)
{
	return model_run(ctx, cmd, argc, argv, OP_HEALTH);
}

int mmctl_cmd_model_success(struct mmctl_ctx *ctx, const struct mmctl_cmd *cmd,
			    int argc, char **argv)
{
	return model_run(ctx, cmd, argc, argv, OP_SUCCESS);
}

int mmctl_cmd_model_failure(struct mmctl_ctx *ctx, const struct mmctl_cmd *cmd,
			    int argc, char **argv)
{
	return model_run(ctx, cmd, argc, argv, OP_FAILURE);
}

/* ---- sensorcal ---------------------------------------------------------- */

static int sensorcal_run(struct mmctl_ctx *ctx, const struct mmctl_cmd *cmd,
			 int argc, char **argv, int op)
{
	static char buf[MMHAL_STORE_SENSOR_MAX];
	struct mmhal_store *s = NULL;
	struct model_args a;
	char err[640] = "";
	uint64_t v = 0;
	size_t n = 0;
	int ret;

	/* 0 show TYPE, 1 install TYPE FILE, 2 rollback TYPE */
	ret = model_parse(cmd, argc, argv, op == 1 ? 2 : 1, op == 1, &a);
	if (ret)
		return ret < 0 ? MMCTL_EXIT_OK : ret;
	if (a.n_pos < (op == 1 ? 2 : 1))
		return mmctl_usage_err(cmd, "sensorcal %s: give %s", cmd->verb,
				       op == 1 ? "the sensor TYPE and the FILE" :
				       "the sensor TYPE");
	ret = model_open(&a, &s);
	if (ret)
		return ret;
	if (op == 1) {
		v = a.version;
		ret = mmhal_store_sensor_install(s, a.pos[0], a.pos[1], &v, err,
						 sizeof(err));
	} else if (op == 2) {
		ret = mmhal_store_sensor_rollback(s, a.pos[0], err, sizeof(err));
	}
	if (!ret)
		ret = mmhal_store_sensor_read(s, a.pos[0], buf, sizeof(buf), &n,
					      &v, err, sizeof(err));
	mmhal_store_close(s);
	if (ret) {
		mmctl_err("sensorcal %s: %s", cmd->verb, err);
		return MMCTL_EXIT_RUNTIME;
	}
	if (ctx->json) {
		mmctl_json_begin(ctx);
		json_begin_object(&ctx->jw);
		json_kv_string(&ctx->jw, "type", a.pos[0]);
		json_kv_u64(&ctx->jw, "version", v);
		json_kv_u64(&ctx->jw, "bytes", n);
		json_end_object(&ctx->jw);
		return mmctl_json_end(ctx);
	}
	if (op == 0) {
		/* the parameters themselves (text files are the usual case) */
		fwrite(buf, 1, n, stdout);
		return MMCTL_EXIT_OK;
	}
	printf("sensor %s: version %" PRIu64 " (%zu bytes)\n", a.pos[0], v, n);
	return MMCTL_EXIT_OK;
}

int mmctl_cmd_sensorcal_show(struct mmctl_ctx *ctx,
			     const struct mmctl_cmd *cmd, int argc, char **argv)
{
	return sensorcal_run(ctx, cmd, argc, argv, 0);
}

int mmctl_cmd_sensorcal_install(struct mmctl_ctx *ctx,
				const struct mmctl_cmd *cmd, int argc,
				char **argv)
{
	return sensorcal_run(ctx, cmd, argc, argv, 1);
}

int mmctl_cmd_sensorcal_rollback(struct mmctl_ctx *ctx,
				 const struct mmctl_cmd *cmd, int argc,
				 char **argv)
{
	return sensorcal_run(ctx, cmd, argc, argv, 2);
}
