// SPDX-License-Identifier: MIT
/*
 * store_test.c - the A/B model store and the sensor parameters
 * (mmhal_store.h): the life cycle through the API, rollback on request,
 * on a failed request, on a model that does not load and on a failed
 * health check; replayed and tampered files; sensor types rolled back on
 * their own; and power cuts: each store operation is run in a child
 * process under fault_shim.so, killed (SIGKILL) before its 1st, 2nd, ...
 * file system call on the store, and after each kill the store must
 * open, load a verified model (the old or the new one) and finish the
 * operation when it is retried.
 *
 *   store_test FAULT_SHIM.so
 *
 * TAP; last line "RESULT store <passed> <failed>".
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gen.h"
#include "gguf.h"
#include "mmhal_store.h"
#include "quant.h"
#include "sign.h"
#include "tests/tap.h"
#include "tfile.h"

#define N_COMMIT 3

static char dir[256], self[4096];
static uint8_t pk[MM_KEY_PUB_BYTES], sk[MM_KEY_SEC_BYTES];

static const char *tpath(const char *name)
{
	static char buf[8][400];
	static int i;

	i = (i + 1) % 8;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", dir, name);
	return buf[i];
}

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

static int write_text(const char *path, const char *s)
{
	FILE *f = fopen(path, "w");
	int ret;

	if (!f)
		return -errno;
	ret = fputs(s, f) < 0 ? -EIO : 0;
	return fclose(f) ? -EIO : ret;
}

/* a micro model (seed) signed as version */
static int make_model(const char *name, uint64_t seed, uint64_t version)
{
	struct mm_gen_params gp = { .shape = "micro", .tokenizer = "gpt2",
				    .type = MM_TYPE_F32, .seed = seed };
	char err[256];
	int ret = mm_gen_model(&gp, tpath(name), err, sizeof(err));

	if (!ret)
		ret = mm_sign_file(tpath(name), sk, name, version, NULL, NULL,
				   err, sizeof(err));
	if (ret)
		tap_diag("make %s: %s", name, err);
	return ret;
}

static struct mmhal_store *open_store(const char *d, char *err,
				      size_t errlen)
{
	struct mmhal_store_params p = mmhal_store_default_params();
	struct mmhal_store *s = NULL;

	p.trusted_key = pk;
	p.n_commit = N_COMMIT;
	p.create = 1;
	if (mmhal_store_open(d, &p, &s, err, errlen))
		return NULL;
	return s;
}

static int status(struct mmhal_store *s, struct mmhal_store_status *st)
{
	memset(st, 0, sizeof(*st));
	st->size = sizeof(*st);
	return mmhal_store_status(s, st);
}

/* the active slot's version, or 0 */
static uint64_t active_version(struct mmhal_store *s)
{
	struct mmhal_store_status st;

	if (status(s, &st) || !st.active)
		return 0;
	return st.slot[st.active - 'a'].version;
}

/*
 * Loads the active model; returns its signed version (the loaded file's
 * general.name is the generated model's, so the version is cross-checked
 * against the slot's hash) or 0 on failure.
 */
static uint64_t load_version(struct mmhal_store *s, int *rolled_back,
			     char *err, size_t errlen)
{
	struct mmhal_model_params mp = mmhal_model_default_params();
	struct mmhal_model *m = NULL;
	struct mm_manifest man;
	char path[4096];
	uint64_t v;

	mp.n_ctx = 32;
	mp.n_threads = 1;
	if (mmhal_store_load(s, &mp, &m, rolled_back, err, errlen))
		return 0;
	mmhal_model_free(m);
	/* the file just loaded, verified independently of the store */
	v = active_version(s);
	if (mmhal_store_model_path(s, path, sizeof(path)))
		return 0;
	if (mm_verify_file(path, pk, 0, &man, err, errlen) || man.version != v)
		return 0;
	return v;
}

/* ---- the API ------------------------------------------------------------ */

static void test_models(void)
{
	struct mmhal_store_status st;
	struct mmhal_store *s;
	char sd[400], err[512];
	int ret, rb = 0;

	snprintf(sd, sizeof(sd), "%s", tpath("s1"));

	s = open_store(sd, err, sizeof(err));
	if (!tap_ok(s != NULL, "store created: %s", err))
		return;
	ret = status(s, &st);
	tap_ok(!ret && !st.active && !st.pending && !st.trial,
	       "new store: no model");
	tap_ok(!load_version(s, NULL, err, sizeof(err)) && strstr(err, "no model"),
	       "load from an empty store: \"%s\"", err);
	ret = mmhal_store_switch(s, err, sizeof(err));
	tap_ok(ret == -ENOENT, "switch with nothing installed: \"%s\"", err);

	ret = mmhal_store_install(s, tpath("v1.gguf"), err, sizeof(err));
	tap_ok(!ret && !status(s, &st) && st.pending == 'a' && !st.active,
	       "install v1: pending in slot a (%s)", err);
	ret = mmhal_store_switch(s, err, sizeof(err));
	tap_ok(!ret && !status(s, &st) && st.active == 'a' && !st.trial &&
	       st.min_version == 1,
	       "switch to the first model: active a, committed, min version 1 (%s)",
	       err);
	tap_ok(load_version(s, NULL, err, sizeof(err)) == 1, "v1 loads: %s",
	       err);

	ret = mmhal_store_install(s, tpath("unsigned.gguf"), err, sizeof(err));
	tap_ok(ret == -ENOKEY, "unsigned file refused: \"%s\"", err);
	ret = mmhal_store_install(s, tpath("other-key.gguf"), err, sizeof(err));
	tap_ok(ret == -EKEYREJECTED, "file of another key refused: \"%s\"", err);
	ret = mmhal_store_install(s, tpath("v2-altered.gguf"), err, sizeof(err));
	tap_ok(ret == -EBADMSG && !status(s, &st) && !st.pending &&
	       st.active == 'a', "altered file refused after the copy, v1 still active: \"%s\"",
	       err);

	ret = mmhal_store_install(s, tpath("v2.gguf"), err, sizeof(err));
	tap_ok(!ret && !status(s, &st) && st.pending == 'b',
	       "install v2: pending in slot b (%s)", err);
	ret = mmhal_store_switch(s, err, sizeof(err));
	tap_ok(!ret && !status(s, &st) && st.active == 'b' &&
	       st.previous == 'a' && st.trial && st.min_version == 1,
	       "switch: v2 active on trial, v1 kept as previous (%s)", err);
	ret = mmhal_store_install(s, tpath("v3.gguf"), err, sizeof(err));
	tap_ok(ret == -EBUSY, "install during a trial: \"%s\"", err);
	for (int i = 0; i < N_COMMIT - 1; i++)
		ret = mmhal_store_report_success(s, err, sizeof(err));
	tap_ok(ret == 0 && !status(s, &st) && st.trial &&
	       st.successes == N_COMMIT - 1, "%d successes: still on trial",
	       N_COMMIT - 1);
	ret = mmhal_store_report_success(s, err, sizeof(err));
	tap_ok(ret == 1 && !status(s, &st) && !st.trial && !st.previous &&
	       st.min_version == 2 && !st.slot[0].valid &&
	       access(tpath("s1/a/model.gguf"), F_OK),
	       "success %d commits: min version 2, slot a dropped (%s)",
	       N_COMMIT, err);
	ret = mmhal_store_rollback(s, err, sizeof(err));
	tap_ok(ret == -ENOENT, "no rollback after the commit: \"%s\"", err);
	ret = mmhal_store_install(s, tpath("v1.gguf"), err, sizeof(err));
	tap_ok(ret == -ESTALE, "v1 replayed after v2: \"%s\"", err);

	/* rollback on request */
	ret = mmhal_store_install(s, tpath("v3.gguf"), err, sizeof(err));
	ret = ret ? ret : mmhal_store_switch(s, err, sizeof(err));
	tap_ok(!ret && active_version(s) == 3, "v3 switched to: %s", err);
	ret = mmhal_store_rollback(s, err, sizeof(err));
	tap_ok(!ret && !status(s, &st) && st.active == 'b' && !st.trial &&
	       load_version(s, NULL, err, sizeof(err)) == 2,
	       "rollback on request: v2 active and loads (%s)", err);
	/* on a failed request */
	ret = mmhal_store_install(s, tpath("v3.gguf"), err, sizeof(err));
	ret = ret ? ret : mmhal_store_switch(s, err, sizeof(err));
	ret = ret ? ret : mmhal_store_report_success(s, err, sizeof(err));
	ret = ret ? ret : mmhal_store_report_failure(s, err, sizeof(err));
	tap_ok(ret == 1 && active_version(s) == 2 && strstr(err, "request failed"),
	       "a failed request during the trial rolls back: \"%s\"", err);
	/* on a model that does not load */
	ret = mmhal_store_install(s, tpath("broken.gguf"), err, sizeof(err));
	ret = ret ? ret : mmhal_store_switch(s, err, sizeof(err));
	tap_ok(!ret && active_version(s) == 3, "signed unloadable v3 switched to: %s",
	       err);
	tap_ok(load_version(s, &rb, err, sizeof(err)) == 2 && rb == 1,
	       "it does not load: rolled back, v2 loaded");
	/* on a failed health check */
	ret = mmhal_store_install(s, tpath("nan.gguf"), err, sizeof(err));
	ret = ret ? ret : mmhal_store_switch(s, err, sizeof(err));
	tap_ok(!ret && load_version(s, &rb, err, sizeof(err)) == 3 && !rb,
	       "NaN-norm v3 switched to, loads: %s", err);
	ret = mmhal_store_health(s, err, sizeof(err));
	tap_ok(ret == 1 && active_version(s) == 2 && strstr(err, "not finite"),
	       "health check fails (logits not finite): rolled back \"%s\"",
	       err);
	ret = mmhal_store_health(s, err, sizeof(err));
	tap_ok(ret == 0, "health check of v2 passes: %s", err);

	/* the store's own files are verified at load */
	ret = flip_byte(tpath("s1/b/model.gguf"), 2000);
	tap_ok(!ret && !load_version(s, &rb, err, sizeof(err)) && !rb &&
	       strstr(err, "altered"),
	       "altered active file (committed): refused, nothing to roll back to \"%s\"",
	       err);
	flip_byte(tpath("s1/b/model.gguf"), 2000);
	mmhal_store_close(s);
	ret = flip_byte(tpath("s1/state"), 20);
	s = open_store(sd, err, sizeof(err));
	tap_ok(!ret && !s && strstr(err, "corrupted"), "altered state file: \"%s\"",
	       err);
	flip_byte(tpath("s1/state"), 20);
	mmhal_store_close(s);
	s = open_store(sd, err, sizeof(err));
	tap_ok(s && load_version(s, NULL, err, sizeof(err)) == 2 &&
	       !status(s, &st) && st.min_version == 2,
	       "reopened: v2 active, min version 2 (%s)", err);
	mmhal_store_close(s);
}

static int quiet;

static int sensor_is(struct mmhal_store *s, const char *type,
		     uint64_t want_v, const char *want)
{
	char buf[256], err[256];
	uint64_t v = 0;
	size_t n = 0;
	int ret;

	ret = mmhal_store_sensor_read(s, type, buf, sizeof(buf) - 1, &n, &v,
				      err, sizeof(err));
	if (ret) {
		if (!quiet)
			tap_diag("read %s: %s", type, err);
		return 0;
	}
	buf[n] = 0;
	if (!quiet && (v != want_v || strcmp(buf, want)))
		tap_diag("%s: version %llu '%s', expected %llu '%s'", type,
			 (unsigned long long)v, buf,
			 (unsigned long long)want_v, want);
	return v == want_v && !strcmp(buf, want);
}

static const char cam1[] = "fx 500.0 fy 500.0 cx 320.0 cy 240.0\n";
static const char cam2[] = "fx 502.5 fy 501.0 cx 321.0 cy 239.5\n";
static const char imu1[] = "gyro_bias 0.001 -0.002 0.0005\n";
static const char imu2[] = "gyro_bias 0.050 0.040 -0.030\n";
static const char mic1[] = "gain_db 12.0\n";

static void test_sensors(void)
{
	struct mmhal_store_status st;
	struct mmhal_store *s;
	char err[512];
	uint64_t v;
	int ret;

	s = open_store(tpath("s2"), err, sizeof(err));
	if (!tap_ok(s != NULL, "store for sensors: %s", err))
		return;
	ret = mmhal_store_sensor_install(s, "camera", tpath("cam1"), NULL, err,
					 sizeof(err));
	ret = ret ? ret : mmhal_store_sensor_install(s, "imu", tpath("imu1"),
						     NULL, err, sizeof(err));
	ret = ret ? ret : mmhal_store_sensor_install(s, "mic", tpath("mic1"),
						     NULL, err, sizeof(err));
	tap_ok(!ret && sensor_is(s, "camera", 1, cam1) &&
	       sensor_is(s, "imu", 1, imu1) && sensor_is(s, "mic", 1, mic1),
	       "camera, imu, mic version 1 (%s)", err);
	v = 5;
	ret = mmhal_store_sensor_install(s, "camera", tpath("cam2"), &v, err,
					 sizeof(err));
	ret = ret ? ret : mmhal_store_sensor_install(s, "imu", tpath("imu2"),
						     NULL, err, sizeof(err));
	tap_ok(!ret && v == 5 && sensor_is(s, "camera", 5, cam2) &&
	       sensor_is(s, "imu", 2, imu2),
	       "new camera (as version 5) and imu (2) parameters (%s)", err);
	ret = mmhal_store_sensor_rollback(s, "imu", err, sizeof(err));
	tap_ok(!ret && sensor_is(s, "imu", 1, imu1) &&
	       sensor_is(s, "camera", 5, cam2) && sensor_is(s, "mic", 1, mic1),
	       "imu rolled back alone: imu 1, camera still 5, mic 1 (%s)", err);
	tap_ok(access(tpath("s2/sensors/imu/2"), F_OK) &&
	       !access(tpath("s2/sensors/camera/1"), F_OK),
	       "the rolled back imu file is removed, camera's previous kept");
	ret = mmhal_store_sensor_rollback(s, "imu", err, sizeof(err));
	tap_ok(ret == -ENOENT, "imu has no older version: \"%s\"", err);
	v = 5;
	ret = mmhal_store_sensor_install(s, "camera", tpath("cam1"), &v, err,
					 sizeof(err));
	tap_ok(ret == -ESTALE, "camera version 5 again: \"%s\"", err);
	ret = mmhal_store_sensor_install(s, "Camera!", tpath("cam1"), NULL, err,
					 sizeof(err));
	tap_ok(ret == -EINVAL, "bad type name: \"%s\"", err);
	ret = mmhal_store_sensor_install(s, "camera", tpath("big"), NULL, err,
					 sizeof(err));
	tap_ok(ret == -EFBIG && sensor_is(s, "camera", 5, cam2),
	       "over %d bytes: \"%s\"", MMHAL_STORE_SENSOR_MAX, err);
	ret = status(s, &st);
	tap_ok(!ret && st.n_sensors == 3 && !strcmp(st.sensor[0].type, "camera") &&
	       st.sensor[0].version == 5 && st.sensor[0].previous == 1 &&
	       st.sensor[1].version == 1 && st.sensor[1].previous == 0,
	       "status: camera 5 (previous 1), imu 1 (none)");
	ret = flip_byte(tpath("s2/sensors/mic/1"), 3);
	{
		char buf[64];
		size_t n;

		ret = ret ? ret : mmhal_store_sensor_read(s, "mic", buf,
							  sizeof(buf), &n,
							  NULL, err,
							  sizeof(err));
	}
	tap_ok(ret == -EBADMSG, "altered mic file: \"%s\"", err);
	mmhal_store_close(s);
}

/* ---- power cuts ---------------------------------------------------------- */

enum { SC_UPDATE, SC_COMMIT, SC_ROLLBACK, SC_SENSOR, SC_N };
static const char *const sc_name[SC_N] = { "install+switch", "commit",
					   "rollback", "sensors" };

/* the operation of a scenario (child, and the retry in the parent) */
static int sc_goal(int sc, struct mmhal_store *s, char *err, size_t errlen)
{
	struct mmhal_store_status st;
	int ret = status(s, &st);

	if (ret)
		return ret;
	switch (sc) {
	case SC_UPDATE:
		if (st.active && st.slot[st.active - 'a'].version == 2)
			return 0;
		if (!st.pending || st.slot[st.pending - 'a'].version != 2)
			ret = mmhal_store_install(s, tpath("v2.gguf"), err,
						  errlen);
		return ret ? ret : mmhal_store_switch(s, err, errlen);
	case SC_COMMIT:
		if (!st.trial)
			return 0;
		ret = mmhal_store_report_success(s, err, errlen);
		return ret == 1 ? 0 : ret ? ret : -EAGAIN;
	case SC_ROLLBACK:
		return st.trial ? mmhal_store_rollback(s, err, errlen) : 0;
	default:
		if (st.sensor[0].version != 2)
			ret = mmhal_store_sensor_install(s, "camera",
							 tpath("cam2"), NULL,
							 err, errlen);
		if (!ret && st.sensor[1].version == 2)
			ret = mmhal_store_sensor_rollback(s, "imu", err,
							  errlen);
		return ret;
	}
}

/* the scenario's start, in template directory t */
static int sc_template(int sc, const char *t, char *err, size_t errlen)
{
	struct mmhal_store *s;
	int ret = 0;

	sh("rm -rf '%s'", t);
	s = open_store(t, err, errlen);
	if (!s)
		return -EIO;
	ret = mmhal_store_install(s, tpath("v1.gguf"), err, errlen);
	ret = ret ? ret : mmhal_store_switch(s, err, errlen);
	if (sc == SC_COMMIT || sc == SC_ROLLBACK) {
		ret = ret ? ret : mmhal_store_install(s, tpath("v2.gguf"), err,
						      errlen);
		ret = ret ? ret : mmhal_store_switch(s, err, errlen);
		for (int i = 0; sc == SC_COMMIT && i < N_COMMIT - 1 && !ret; i++)
			ret = mmhal_store_report_success(s, err, errlen);
	}
	if (sc == SC_SENSOR) {
		ret = ret ? ret : mmhal_store_sensor_install(s, "camera",
							     tpath("cam1"),
							     NULL, err, errlen);
		ret = ret ? ret : mmhal_store_sensor_install(s, "imu",
							     tpath("imu1"),
							     NULL, err, errlen);
		ret = ret ? ret : mmhal_store_sensor_install(s, "imu",
							     tpath("imu2"),
							     NULL, err, errlen);
	}
	mmhal_store_close(s);
	return ret;
}

/* after a cut: a verified model of an allowed version; sensors readable */
static int sc_check(int sc, struct mmhal_store *s, char *err, size_t errlen)
{
	uint64_t v = load_version(s, NULL, err, errlen);
	struct mmhal_store_status st;

	if (sc == SC_COMMIT ? v != 2 : v != 1 && v != 2) {
		if (v)
			snprintf(err, errlen, "loaded version %llu",
				 (unsigned long long)v);
		return 0;
	}
	if (sc == SC_SENSOR) {
		int ok;

		if (status(s, &st) || st.n_sensors != 2)
			return 0;
		quiet = 1;
		ok = (sensor_is(s, "camera", 1, cam1) ||
		      sensor_is(s, "camera", 2, cam2)) &&
		     (sensor_is(s, "imu", 1, imu1) ||
		      sensor_is(s, "imu", 2, imu2));
		quiet = 0;
		if (!ok) {
			snprintf(err, errlen, "sensor parameters unreadable");
			return 0;
		}
	}
	return 1;
}

/* after the retry: the scenario's end state */
static int sc_final(int sc, struct mmhal_store *s)
{
	struct mmhal_store_status st;
	char err[256];
	uint64_t v = load_version(s, NULL, err, sizeof(err));

	if (status(s, &st))
		return 0;
	switch (sc) {
	case SC_UPDATE:
		return v == 2 && st.trial && st.previous == 'a';
	case SC_COMMIT:
		return v == 2 && !st.trial && st.min_version == 2;
	case SC_ROLLBACK:
		return v == 1 && !st.trial && !st.previous;
	default:
		return v == 1 && sensor_is(s, "camera", 2, cam2) &&
		       sensor_is(s, "imu", 1, imu1);
	}
}

/* runs the scenario's operation in a child under the shim; its status */
static int run_child(const char *shim, int sc, const char *sd, long at,
		     const char *log)
{
	char scs[16], ats[32];
	pid_t pid;
	int wst;

	snprintf(scs, sizeof(scs), "%d", sc);
	snprintf(ats, sizeof(ats), "%ld", at);
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		setenv("LD_PRELOAD", shim, 1);
		setenv("MM_FAULT_DIR", sd, 1);
		setenv("MM_FAULT_AT", ats, 1);
		if (log)
			setenv("MM_FAULT_LOG", log, 1);
		/* the shim comes before the sanitizer's runtime */
		setenv("ASAN_OPTIONS", "verify_asan_link_order=0:detect_leaks=0",
		       1);
		execl(self, self, "--op", scs, dir, sd, (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &wst, 0) != pid)
		return -1;
	return wst;
}

static int child_op(int sc, const char *d, const char *sd)
{
	struct mmhal_store *s;
	char err[512];
	int ret;

	snprintf(dir, sizeof(dir), "%s", d);
	if (mm_key_read_public(tpath("key.pub"), pk, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	s = open_store(sd, err, sizeof(err));
	if (!s) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	ret = sc_goal(sc, s, err, sizeof(err));
	if (ret)
		fprintf(stderr, "op %d: %s\n", sc, err);
	mmhal_store_close(s);
	return ret ? 1 : 0;
}

static void test_power_cuts(const char *shim)
{
	for (int sc = 0; sc < SC_N; sc++) {
		char t[400], w[400], log[400], err[512] = "";
		long steps = 0, bad = 0, killed = 0;
		FILE *f;
		int wst;

		snprintf(t, sizeof(t), "%s/tmpl%d", dir, sc);
		snprintf(w, sizeof(w), "%s/cut%d", dir, sc);
		snprintf(log, sizeof(log), "%s/steps%d", dir, sc);
		if (sc_template(sc, t, err, sizeof(err))) {
			tap_ok(0, "%s: template: %s", sc_name[sc], err);
			continue;
		}
		/* how many steps: an uncut run, counting */
		sh("rm -rf '%s' && cp -a '%s' '%s'", w, t, w);
		wst = run_child(shim, sc, w, 0, log);
		f = fopen(log, "r");
		if (!f || fscanf(f, "%ld", &steps) != 1)
			steps = 0;
		if (f)
			fclose(f);
		if (!tap_ok(WIFEXITED(wst) && !WEXITSTATUS(wst) && steps > 2,
			    "%s: uncut run, %ld file system calls", sc_name[sc],
			    steps))
			continue;
		for (long n = 1; n <= steps; n++) {
			struct mmhal_store *s;

			sh("rm -rf '%s' && cp -a '%s' '%s'", w, t, w);
			wst = run_child(shim, sc, w, n, NULL);
			if (WIFSIGNALED(wst) && WTERMSIG(wst) == SIGKILL)
				killed++;
			s = open_store(w, err, sizeof(err));
			if (!s || !sc_check(sc, s, err, sizeof(err))) {
				tap_diag("%s: cut before call %ld: %s",
					 sc_name[sc], n, err);
				bad++;
			} else if (sc_goal(sc, s, err, sizeof(err)) ||
				   !sc_final(sc, s)) {
				tap_diag("%s: cut before call %ld: retry: %s",
					 sc_name[sc], n, err);
				bad++;
			}
			mmhal_store_close(s);
		}
		tap_ok(!bad && killed == steps,
		       "%s: cut before each of its %ld calls (%ld killed): a verified model loads (old or new), the retry completes",
		       sc_name[sc], steps, killed);
	}
}

/* ---- other users, replays, bad callers ---------------------------------- */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static struct mmhal_store *open_store_t(const char *d, int timeout_ms,
					char *err, size_t errlen)
{
	struct mmhal_store_params p = mmhal_store_default_params();
	struct mmhal_store *s = NULL;

	p.trusted_key = pk;
	p.n_commit = N_COMMIT;
	p.create = 1;
	p.lock_timeout_ms = timeout_ms;
	if (mmhal_store_open(d, &p, &s, err, errlen))
		return NULL;
	return s;
}

/* loads the active model with mp; 0 or the error */
static int load_with(struct mmhal_store *s, struct mmhal_model_params *mp,
		     int *rb, char *err, size_t errlen)
{
	struct mmhal_model *m = NULL;
	int ret = mmhal_store_load(s, mp, &m, rb, err, errlen);

	mmhal_model_free(m);
	return ret;
}

static int mode_of(const char *path)
{
	struct stat st;

	return lstat(path, &st) ? -1 : (int)(st.st_mode & 07777);
}

static void test_hostile(void)
{
	struct mmhal_model_params mp = mmhal_model_default_params();
	struct mmhal_store_status st;
	struct mmhal_store *s;
	char sd[400], err[512];
	double t0, dt;
	int ret, rb = 0, p[2];
	pid_t pid;

	/* a store directory other users can write */
	snprintf(sd, sizeof(sd), "%s", tpath("h1"));
	mkdir(sd, 0755);
	chmod(sd, 0777);
	s = open_store(sd, err, sizeof(err));
	tap_ok(!s && strstr(err, "writable by others"),
	       "world-writable store directory refused: \"%s\"", err);
	mmhal_store_close(s);
	chmod(sd, 0775);
	s = open_store(sd, err, sizeof(err));
	tap_ok(!s && strstr(err, "writable by its group"),
	       "group-writable store directory refused: \"%s\"", err);
	mmhal_store_close(s);
	chmod(sd, 0755);

	s = open_store(sd, err, sizeof(err));
	if (!tap_ok(s != NULL, "the same directory at 0755 opens: %s", err))
		return;
	tap_ok(mode_of(tpath("h1/lock")) == 0600, "lock file is 0600 (%04o)",
	       mode_of(tpath("h1/lock")));
	ret = mmhal_store_install(s, tpath("v1.gguf"), err, sizeof(err));
	ret = ret ? ret : mmhal_store_switch(s, err, sizeof(err));
	ret = ret ? ret : mmhal_store_install(s, tpath("v2.gguf"), err,
					      sizeof(err));
	ret = ret ? ret : mmhal_store_switch(s, err, sizeof(err));
	tap_ok(!ret && !status(s, &st) && st.trial && st.active == 'b' &&
	       st.min_version == 1, "v2 on trial in slot b, v1 previous (%s)",
	       err);

	/* state and slots written by others: refused */
	chmod(tpath("h1/state"), 0666);
	ret = load_with(s, NULL, &rb, err, sizeof(err));
	tap_ok(ret == -EPERM && strstr(err, "state") && !rb,
	       "world-writable state file: load refused, nothing rolled back \"%s\"",
	       err);
	chmod(tpath("h1/state"), 0644);
	chmod(tpath("h1/b"), 0777);
	ret = load_with(s, NULL, &rb, err, sizeof(err));
	tap_ok(ret == -EPERM && strstr(err, "writable by others") && !rb,
	       "world-writable slot directory: refused, nothing rolled back \"%s\"",
	       err);
	chmod(tpath("h1/b"), 0755);
	if (geteuid() == 0) {
		ret = chown(tpath("h1/state"), 65534, 65534);
		ret = ret ? -errno : load_with(s, NULL, &rb, err, sizeof(err));
		tap_ok(ret == -EPERM && strstr(err, "owned by uid 65534"),
		       "state owned by another user: refused \"%s\"", err);
		ret = chown(tpath("h1/state"), 0, 0);
		ret = ret ? ret : chown(sd, 65534, 65534);
		ret = ret ? -errno : mmhal_store_status(s, &st);
		tap_ok(ret == -EPERM, "store directory owned by another user: status refused (%d)",
		       ret);
		{
			struct mmhal_store *s2 = open_store(sd, err, sizeof(err));

			tap_ok(!s2 && strstr(err, "owned by uid 65534"),
			       "  and open refused: \"%s\"", err);
			mmhal_store_close(s2);
		}
		ret = chown(sd, 0, 0);
		ret = ret ? ret : chown(tpath("h1/b/model.gguf"), 65534, 65534);
		ret = ret ? -errno : load_with(s, NULL, &rb, err, sizeof(err));
		tap_ok(ret == -EPERM && strstr(err, "owned by uid 65534") && !rb,
		       "slot file owned by another user: refused \"%s\"", err);
		if (chown(tpath("h1/b/model.gguf"), 0, 0))
			tap_diag("chown back failed");
	} else {
		tap_ok(1, "# SKIP files of another user need root");
	}
	ret = status(s, &st);
	tap_ok(!ret && st.trial && st.active == 'b' &&
	       load_with(s, NULL, &rb, err, sizeof(err)) == 0 && !rb,
	       "modes restored: v2 still on trial, loads (%s)", err);

	/* the store reached through a link to its directory */
	{
		struct mmhal_store *s2;

		unlink(tpath("h1-link"));
		ret = symlink(sd, tpath("h1-link")) ? -errno : 0;
		s2 = ret ? NULL : open_store(tpath("h1-link"), err, sizeof(err));
		tap_ok(s2 && !status(s2, &st) && st.active == 'b',
		       "a link to the store directory opens it: %s", err);
		mmhal_store_close(s2);
	}

	/* a caller's parameter error never rolls back */
	mp.n_ctx = 32;
	mp.n_threads = 1;
	mp.kv_type = 99;
	ret = load_with(s, &mp, &rb, err, sizeof(err));
	tap_ok(ret == -EINVAL && !rb && !status(s, &st) && st.trial &&
	       st.active == 'b' && !access(tpath("h1/b/model.gguf"), F_OK),
	       "kv_type 99: -EINVAL, v2 still on trial, its file kept \"%s\"",
	       err);
	mp.kv_type = mmhal_model_default_params().kv_type;
	mp.n_ctx = 1 << 30;
	ret = load_with(s, &mp, &rb, err, sizeof(err));
	tap_ok(ret != 0 && !rb && !status(s, &st) && st.trial &&
	       st.active == 'b' && !access(tpath("h1/b/model.gguf"), F_OK),
	       "n_ctx 2^30: refused (%d), v2 still on trial, its file kept \"%s\"",
	       ret, err);

	/* a validly signed file the store did not install, in a slot */
	ret = status(s, &st);
	tap_ok(!ret && st.active_sig == 0,
	       "status: the active slot's signature names the installed file (%d)",
	       st.active_sig);
	sh("cp '%s' '%s'", tpath("v3.gguf"), tpath("h1/b/model.gguf"));
	sh("cp '%s' '%s'", tpath("v3.gguf.sig"), tpath("h1/b/model.gguf.sig"));
	ret = status(s, &st);
	tap_ok(!ret && st.active == 'b' && st.active_sig == -EBADMSG,
	       "status with v3 copied into the active slot: active_sig -EBADMSG (%d)",
	       st.active_sig);
	ret = load_with(s, NULL, &rb, err, sizeof(err));
	tap_ok(!ret && rb && strstr(err, "state recorded version 2") &&
	       active_version(s) == 1,
	       "signed v3 put in slot b in place of v2: not loaded as b, rolled back to v1 \"%s\"",
	       err);
	/* a replay: v1 (>= the minimum 1) put in the place of a v2 */
	ret = mmhal_store_install(s, tpath("v2.gguf"), err, sizeof(err));
	ret = ret ? ret : mmhal_store_switch(s, err, sizeof(err));
	ret = ret ? ret : mmhal_store_commit(s, err, sizeof(err));
	tap_ok(!ret && active_version(s) == 2, "v2 installed again and committed: %s",
	       err);
	ret = mmhal_store_install(s, tpath("v3.gguf"), err, sizeof(err));
	ret = ret ? ret : mmhal_store_switch(s, err, sizeof(err));
	if (!ret && !status(s, &st)) {
		char slot = st.active;

		sh("cp '%s' '%s/%c/model.gguf'", tpath("v1.gguf"), sd, slot);
		sh("cp '%s' '%s/%c/model.gguf.sig'", tpath("v1.gguf.sig"), sd,
		   slot);
		/* the store's minimum is 2: raised to the slot's own 3 */
		ret = load_with(s, NULL, &rb, err, sizeof(err));
		tap_ok(!ret && rb && (strstr(err, "below the minimum 3") ||
				      strstr(err, "state recorded version 3")) &&
		       active_version(s) == 2,
		       "v1 replayed in v3's slot %c: refused, rolled back to v2 \"%s\"",
		       slot, err);
	} else {
		tap_ok(0, "v3 on trial: %s", err);
	}

	/* the lock held by another process: a bounded wait */
	mmhal_store_close(s);
	s = open_store_t(sd, 300, err, sizeof(err));
	if (pipe(p))
		p[0] = p[1] = -1;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		int fd = open(tpath("h1/lock"), O_RDWR);
		char c = 1;

		if (fd < 0 || flock(fd, LOCK_EX) || write(p[1], &c, 1) != 1)
			_exit(1);
		sleep(5);
		_exit(0);
	}
	{
		char c = 0;
		struct mmhal_store *s2;

		if (read(p[0], &c, 1) != 1)
			c = 0;
		t0 = now_s();
		s2 = open_store_t(sd, 300, err, sizeof(err));
		dt = now_s() - t0;
		tap_ok(c == 1 && !s2 && strstr(err, "held by another process") &&
		       dt < 2,
		       "lock held by another process: open gives up after %.2f s: \"%s\"",
		       dt, err);
		mmhal_store_close(s2);
		t0 = now_s();
		ret = s ? status(s, &st) : -EBADF;
		dt = now_s() - t0;
		tap_ok(ret == -ETIMEDOUT && dt < 2,
		       "  and the status of a store opened before: -ETIMEDOUT after %.2f s",
		       dt);
		mmhal_store_close(s);
	}
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	close(p[0]);
	close(p[1]);

	/* install: a link to /dev/zero with a valid signature beside it */
	s = open_store(sd, err, sizeof(err));
	if (!tap_ok(s != NULL, "store reopened: %s", err))
		return;
	mmhal_store_commit(s, err, sizeof(err));
	unlink(tpath("zero.gguf"));
	ret = symlink("/dev/zero", tpath("zero.gguf")) ? -errno : 0;
	ret = ret ? ret : sh("cp '%s' '%s'", tpath("v3.gguf.sig"),
			     tpath("zero.gguf.sig"));
	t0 = now_s();
	ret = ret ? ret : mmhal_store_install(s, tpath("zero.gguf"), err,
					      sizeof(err));
	dt = now_s() - t0;
	tap_ok(ret == -EINVAL && strstr(err, "not a regular file") && dt < 2 &&
	       sh("{ ls -A '%s'/a; ls -A '%s'/b; } | grep -q '[.]tmp'", sd, sd) != 0,
	       "install of a link to /dev/zero: refused in %.2f s, no .tmp left \"%s\"",
	       dt, err);
	/* a file longer than the signed size: nothing copied */
	sh("cp '%s' '%s'; cp '%s' '%s'; echo x >> '%s'", tpath("v3.gguf"),
	   tpath("long.gguf"), tpath("v3.gguf.sig"), tpath("long.gguf.sig"),
	   tpath("long.gguf"));
	ret = mmhal_store_install(s, tpath("long.gguf"), err, sizeof(err));
	tap_ok(ret == -EBADMSG && strstr(err, "nothing copied") &&
	       sh("{ ls -A '%s'/a; ls -A '%s'/b; } | grep -q '[.]tmp'", sd, sd) != 0,
	       "install of a file longer than signed: refused before the copy, no .tmp left \"%s\"",
	       err);
	mmhal_store_close(s);
}

/* ---- status against a rewritten state ----------------------------------- */

/*
 * Rewrites the state file at path as another party with write access
 * would: each (from, to) replaced in the lines, and the "end" hash
 * recomputed, so that the store's own checks accept it.
 */
static int rewrite_state(const char *path, const char *const *from,
			 const char *const *to, int n)
{
	char buf[8192], out[8192], *end, *p;
	uint8_t h[MM_HASH_BYTES];
	char hx[MM_HASH_HEX];
	size_t len = 0;
	FILE *f = fopen(path, "r");

	if (!f)
		return -errno;
	len = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[len] = 0;
	end = strstr(buf, "\nend ");
	if (!end)
		return -EINVAL;
	end[1] = 0;
	for (int i = 0; i < n; i++) {
		p = strstr(buf, from[i]);
		if (!p || strlen(buf) - strlen(from[i]) + strlen(to[i]) >=
		    sizeof(out))
			return -EINVAL;
		snprintf(out, sizeof(out), "%.*s%s%s", (int)(p - buf), buf,
			 to[i], p + strlen(from[i]));
		snprintf(buf, sizeof(buf), "%s", out);
	}
	mm_hash_mem(buf, strlen(buf), h);
	mm_hash_hex(h, hx);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	fprintf(f, "%send %s\n", buf, hx);
	return fclose(f) ? -EIO : 0;
}

/* the signed version mmhal_store_load() loads now, or -errno */
static int64_t loaded_version(struct mmhal_store *s, char *err,
			      size_t errlen)
{
	struct mmhal_model_params mp = mmhal_model_default_params();
	struct mmhal_model_verify v = { .size = sizeof(v) };
	struct mmhal_model *m = NULL;
	int rb = 0, ret;

	mp.n_ctx = 32;
	mp.n_threads = 1;
	ret = mmhal_store_load(s, &mp, &m, &rb, err, errlen);
	if (!ret)
		ret = mmhal_model_verification(m, &v);
	mmhal_model_free(m);
	return ret ? ret : (int64_t)v.version;
}

static void test_status_verify(void)
{
	struct mmhal_store_status st, st0;
	struct mmhal_store *s;
	struct mm_manifest m1, m3;
	char sd[400], err[512], e2[512];
	char f1[200], t1[200], f2[40], t2[40];
	const char *from[2], *to[2];
	char h1[MM_HASH_HEX], h3[MM_HASH_HEX];
	int64_t lv;
	int ret;

	snprintf(sd, sizeof(sd), "%s", tpath("sv"));
	s = open_store(sd, err, sizeof(err));
	ret = s ? 0 : -EIO;
	ret = ret ? ret : mmhal_store_install(s, tpath("v1.gguf"), err,
					      sizeof(err));
	ret = ret ? ret : mmhal_store_switch(s, err, sizeof(err));
	ret = ret ? ret : mmhal_store_install(s, tpath("v2.gguf"), err,
					      sizeof(err));
	ret = ret ? ret : mmhal_store_switch(s, err, sizeof(err));
	ret = ret ? ret : mmhal_store_commit(s, err, sizeof(err));
	ret = ret ? ret : status(s, &st0);
	ret = ret ? ret : mm_verify_file(tpath("v1.gguf"), pk, 0, &m1, err,
					 sizeof(err));
	ret = ret ? ret : mm_verify_file(tpath("v3.gguf"), pk, 0, &m3, err,
					 sizeof(err));
	if (!tap_ok(!ret && st0.active == 'b' && st0.min_version == 2,
		    "v2 committed in slot b: %s", err)) {
		mmhal_store_close(s);
		return;
	}
	tap_ok(st0.verified_slot == 'b' && !st0.active_verify &&
	       st0.verified.version == 2 &&
	       !strcmp(st0.verified_how, "hash") &&
	       !strcmp(st0.verified.hash, st0.slot[1].hash),
	       "status verifies slot b now: version %llu by %s",
	       (unsigned long long)st0.verified.version, st0.verified_how);
	mm_hash_hex(m1.hash, h1);
	mm_hash_hex(m3.hash, h3);

	/* the slot file replaced by another signed model, its .sig kept:
	 * the signature file matches the state, the content does not */
	ret = sh("cp '%s' '%s/b/model.gguf'", tpath("v3.gguf"), sd);
	ret = ret ? -EIO : status(s, &st);
	lv = loaded_version(s, e2, sizeof(e2));
	tap_ok(!ret && !st.active_sig && st.active_verify == -EBADMSG &&
	       !st.verified.valid && strstr(st.verify_error, "BLAKE2b") &&
	       lv == -EBADMSG,
	       "slot file swapped under its signature: status says it does not verify (\"%s\"), as the load refuses (\"%s\")",
	       st.verify_error, e2);
	sh("cp '%s' '%s/b/model.gguf'", tpath("v2.gguf"), sd);

	/* the state rewritten to name v3 for slot b (files: v2) */
	snprintf(f1, sizeof(f1), "slot b 2 %" PRIu64 " %s v2.gguf",
		 st0.slot[1].size, st0.slot[1].hash);
	snprintf(t1, sizeof(t1), "slot b 3 %" PRIu64 " %s v3.gguf", m3.size,
		 h3);
	from[0] = f1;
	to[0] = t1;
	ret = rewrite_state(tpath("sv/state"), from, to, 1);
	ret = ret ? ret : status(s, &st);
	lv = loaded_version(s, e2, sizeof(e2));
	tap_ok(!ret && st.slot[1].version == 3 && st.active_verify < 0 &&
	       !st.verified.valid && st.active_verify == lv &&
	       !strcmp(st.verify_error, e2) &&
	       strstr(st.verify_error, "below the minimum 3"),
	       "state rewritten to name v3: status reports the slot does not verify, with the load's error (\"%s\")",
	       st.verify_error);

	/* a consistent rollback by a state writer: v1's files in slot b and
	 * a state naming them, the minimum lowered. Not authenticated (the
	 * store's owner and modes keep other users out), but status still
	 * reports what a load loads: v1, not the v2 it committed. */
	sh("cp '%s' '%s/b/model.gguf' && cp '%s.sig' '%s/b/model.gguf.sig'",
	   tpath("v1.gguf"), sd, tpath("v1.gguf"), sd);
	snprintf(f1, sizeof(f1), "%s", t1);
	snprintf(t1, sizeof(t1), "slot b 1 %" PRIu64 " %s v1.gguf", m1.size,
		 h1);
	snprintf(f2, sizeof(f2), "min_version 2");
	snprintf(t2, sizeof(t2), "min_version 1");
	from[1] = f2;
	to[1] = t2;
	ret = rewrite_state(tpath("sv/state"), from, to, 2);
	ret = ret ? ret : status(s, &st);
	lv = loaded_version(s, e2, sizeof(e2));
	tap_ok(!ret && !st.active_verify && st.verified.version == 1 &&
	       !strcmp(st.verified.hash, h1) && lv == 1,
	       "state and slot rolled back to v1 together: status verifies v1 (%s), the load loads v%lld (%s)",
	       st.verify_error, (long long)lv, e2);
	/* the older size still works, without the verification */
	memset(&st, 0, sizeof(st));
	st.size = MMHAL_STORE_STATUS_SIZE_VER0;
	st.verified_slot = 'x';
	ret = mmhal_store_status(s, &st);
	tap_ok(!ret && st.size == MMHAL_STORE_STATUS_SIZE_VER0 &&
	       st.active == 'b' && st.verified_slot == 'x',
	       "status with the first published size: no verified fields written (%d)",
	       ret);
	mmhal_store_close(s);
}

int main(int argc, char **argv)
{
	const char *tmp = getenv("TMPDIR");
	char err[512], big[MMHAL_STORE_SENSOR_MAX + 2];
	struct mm_gguf *g = NULL;
	int ret;

	if (argc == 5 && !strcmp(argv[1], "--op"))
		return child_op(atoi(argv[2]), argv[3], argv[4]);
	if (argc != 2) {
		fprintf(stderr, "usage: store_test FAULT_SHIM.so\n");
		return 2;
	}
	if (!realpath("/proc/self/exe", self)) {
		perror("/proc/self/exe");
		return 1;
	}
	snprintf(dir, sizeof(dir), "%s/store_test.XXXXXX", tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	ret = mm_key_generate(pk, sk);
	ret = ret ? ret : mm_key_write(tpath("key"), tpath("key.pub"), pk, sk,
				       err, sizeof(err));
	ret = ret ? ret : make_model("v1.gguf", 3, 1);
	ret = ret ? ret : make_model("v2.gguf", 4, 2);
	ret = ret ? ret : make_model("v3.gguf", 5, 3);
	ret = ret ? ret : make_model("v2-altered.gguf", 4, 2);
	ret = ret ? ret : flip_byte(tpath("v2-altered.gguf"), 3000);
	ret = ret ? ret : make_model("unsigned.gguf", 6, 9);
	if (!ret)
		unlink(tpath("unsigned.gguf.sig"));
	/* signed by another key */
	if (!ret) {
		uint8_t pk2[MM_KEY_PUB_BYTES], sk2[MM_KEY_SEC_BYTES];
		struct mm_gen_params gp = { .shape = "micro",
					    .tokenizer = "gpt2",
					    .type = MM_TYPE_F32, .seed = 7 };

		ret = mm_key_generate(pk2, sk2);
		ret = ret ? ret : mm_gen_model(&gp, tpath("other-key.gguf"),
					       err, sizeof(err));
		ret = ret ? ret : mm_sign_file(tpath("other-key.gguf"), sk2,
					       NULL, 9, NULL, NULL, err,
					       sizeof(err));
	}
	/* a signed file that is not a model */
	ret = ret ? ret : write_text(tpath("broken.gguf"), "GGUF but no more\n");
	ret = ret ? ret : mm_sign_file(tpath("broken.gguf"), sk, NULL, 3, NULL,
				       NULL, err, sizeof(err));
	/* a signed model whose output norm is NaN: loads, decodes NaN */
	ret = ret ? ret : make_model("nan.gguf", 5, 3);
	ret = ret ? ret : mm_gguf_open(tpath("nan.gguf"), &g, err, sizeof(err));
	if (!ret) {
		const struct mm_gguf_tensor *t = mm_gguf_tensor(g, "output_norm.weight");
		uint64_t off = t ? mm_gguf_data_offset(g) + t->offset : 0;
		int f32 = t && t->type == MM_TYPE_F32;
		const uint8_t nan[4] = { 0x00, 0x00, 0xc0, 0x7f };
		int fd = open(tpath("nan.gguf"), O_RDWR);

		mm_gguf_close(g);
		if (!f32 || fd < 0 ||
		    pwrite(fd, nan, 4, (off_t)off) != 4)
			ret = -EIO;
		if (fd >= 0)
			close(fd);
		ret = ret ? ret : mm_sign_file(tpath("nan.gguf"), sk, NULL, 3,
					       NULL, NULL, err, sizeof(err));
	}
	ret = ret ? ret : write_text(tpath("cam1"), cam1);
	ret = ret ? ret : write_text(tpath("cam2"), cam2);
	ret = ret ? ret : write_text(tpath("imu1"), imu1);
	ret = ret ? ret : write_text(tpath("imu2"), imu2);
	ret = ret ? ret : write_text(tpath("mic1"), mic1);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	ret = ret ? ret : write_text(tpath("big"), big);
	if (!tap_ok(!ret, "test files (%s)", err))
		return tap_done("store");
	test_models();
	test_sensors();
	test_hostile();
	test_status_verify();
	test_power_cuts(argv[1]);
	if (!tap_fail)
		sh("rm -rf '%s'", dir);
	else
		tap_diag("files kept in %s", dir);
	return tap_done("store");
}
