// SPDX-License-Identifier: MIT
/*
 * mmhal_store.c - the A/B model store and the versioned sensor parameters
 * (mmhal_store.h; design: Documentation/model-store.rst).
 *
 * Every change is a new state file put in place by rename(2): files are
 * written (and fsynced) before the state names them, and removed only
 * after a state that no longer names them is on disk. The slot the state
 * calls active (and, during a trial, previous) is never written.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/mm_err.h"
#include "common/mm_file.h"
#include "common/mm_params.h"
#include "mmhal_store.h"
#include "sign.h"

#define STATE_MAGIC	"mmhal-store 1"
#define STATE_MAX	8192
#define MODEL_FILE	"model.gguf"
#define N_COMMIT_DEFAULT 8
#define LOCK_TIMEOUT_MS_DEFAULT 10000

struct st_slot {
	int valid;
	char name[MM_SIG_NAME_MAX + 1];
	uint64_t version, size;
	uint8_t hash[MM_HASH_BYTES];
};

struct st_sensor {
	char type[MMHAL_STORE_NAME_MAX];
	uint64_t cur, prev;		/* 0: none */
	uint8_t hcur[MM_HASH_BYTES], hprev[MM_HASH_BYTES];
};

struct st_state {
	int active, previous, pending;	/* slot 0 (a), 1 (b), -1 none */
	int trial, successes;
	uint64_t min_version;
	struct st_slot slot[2];
	int n_sensors;
	struct st_sensor sensor[MMHAL_STORE_MAX_SENSORS];
};

struct mmhal_store {
	char dir[3072];
	uint8_t key[MM_KEY_PUB_BYTES];
	int n_commit;
	int lock_timeout_ms;
	int lock_fd;
	struct st_state st;
};

static char slot_ch(int s)
{
	return s == 0 ? 'a' : s == 1 ? 'b' : '-';
}

/* DIR/rel into buf */
static int spath(const struct mmhal_store *s, char *buf, size_t len,
		 const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int spath(const struct mmhal_store *s, char *buf, size_t len,
		 const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(buf, len, "%s/", s->dir), m;

	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	va_start(ap, fmt);
	m = vsnprintf(buf + n, len - (size_t)n, fmt, ap);
	va_end(ap);
	return m < 0 || (size_t)m >= len - (size_t)n ? -ENAMETOOLONG : 0;
}

/* ---- files ------------------------------------------------------------- */

/*
 * The store's own files and directories, as ssh's StrictModes checks a
 * user's keys: owned by this user, not writable by group or others, and
 * of the expected kind (a symbolic link is refused: lstat). Another user
 * who could write any of them could replace a slot or the state.
 */
static int strict_st(const char *path, const struct stat *st, int dir,
		     char *err, size_t errlen)
{
	if (dir ? !S_ISDIR(st->st_mode) : !S_ISREG(st->st_mode))
		return mm_errf(-EPERM, err, errlen,
			    "%s: not a %s (mode %06o): the store refuses it",
			    path, dir ? "directory" : "regular file",
			    (unsigned int)st->st_mode);
	if (st->st_uid != geteuid())
		return mm_errf(-EPERM, err, errlen,
			    "%s: owned by uid %u, not by this user (uid %u): the store refuses it (chown it, or use a store of this user)",
			    path, (unsigned int)st->st_uid,
			    (unsigned int)geteuid());
	if (st->st_mode & (S_IWGRP | S_IWOTH))
		return mm_errf(-EPERM, err, errlen,
			    "%s: writable by %s (mode %04o): the store refuses it (chmod go-w %s)",
			    path, st->st_mode & S_IWOTH ? "others" : "its group",
			    (unsigned int)(st->st_mode & 07777), path);
	return 0;
}

/* strict_st() of path; -ENOENT (no message) when it does not exist */
static int strict_path(const char *path, int dir, char *err, size_t errlen)
{
	struct stat st;
	int ret;

	if (lstat(path, &st)) {
		ret = -errno;
		if (ret == -ENOENT)
			return ret;
		return mm_errf(ret, err, errlen, "cannot stat %s: %s", path,
			    strerror(-ret));
	}
	return strict_st(path, &st, dir, err, errlen);
}

/*
 * Opens a file of the store to read it: no symbolic link followed, no
 * FIFO waited on, then strict_st(); the fd or -errno (-ENOENT without a
 * message when it does not exist).
 */
static int open_strict(const char *path, char *err, size_t errlen)
{
	struct stat st;
	int fd, ret;

	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		if (ret == -ENOENT)
			return ret;
		return mm_errf(ret, err, errlen, "cannot open %s: %s%s", path,
			    strerror(-ret), ret == -ELOOP ?
			    " (a symbolic link: the store refuses it)" : "");
	}
	if (fstat(fd, &st)) {
		ret = -errno;
		close(fd);
		return mm_errf(ret, err, errlen, "cannot stat %s: %s", path,
			    strerror(-ret));
	}
	ret = strict_st(path, &st, 0, err, errlen);
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}

/* path gets buf durably (mm_file_put()); dir names it in messages. */
static int put_file(const char *dir, const char *path, const void *buf,
		    size_t n, char *err, size_t errlen)
{
	int ret = mm_file_put(path, buf, n, 0644);

	if (ret)
		return mm_errf(ret, err, errlen, "cannot write %s in %s: %s",
			       path, dir, strerror(-ret));
	return 0;
}

/*
 * Copies from, a regular file of exactly size bytes, to to (written as
 * to.tmp, fsynced, renamed; dir not synced). from is opened O_NONBLOCK (a
 * FIFO cannot block), its kind and size checked before a byte is copied,
 * and no more than size bytes are read; to.tmp is removed on failure.
 */
static int copy_file(const char *from, const char *to, uint64_t size,
		     char *err, size_t errlen)
{
	char tmp[4096];
	struct stat st;
	uint64_t left = size;
	uint8_t *buf;
	int in, out, ret = 0;

	if (mm_file_tmp_name(tmp, sizeof(tmp), to))
		return mm_errf(-ENAMETOOLONG, err, errlen, "%s: name too long", to);
	in = open(from, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (in < 0) {
		ret = -errno;
		return mm_errf(ret, err, errlen, "cannot open %s: %s", from,
			    strerror(-ret));
	}
	if (fstat(in, &st)) {
		ret = -errno;
		close(in);
		return mm_errf(ret, err, errlen, "cannot stat %s: %s", from,
			    strerror(-ret));
	}
	if (!S_ISREG(st.st_mode)) {
		close(in);
		return mm_errf(-EINVAL, err, errlen,
			    "%s is not a regular file (mode %06o): nothing copied",
			    from, (unsigned int)st.st_mode);
	}
	if ((uint64_t)st.st_size != size) {
		close(in);
		return mm_errf(-EBADMSG, err, errlen,
			    "%s: %lld bytes, the signature is of %llu: nothing copied",
			    from, (long long)st.st_size,
			    (unsigned long long)size);
	}
	out = mm_file_tmp_open(tmp, 0444);
	if (out < 0) {
		ret = out;
		close(in);
		return mm_errf(ret, err, errlen, "cannot create %s: %s", tmp,
			    strerror(-ret));
	}
	buf = malloc(1 << 20);
	if (!buf)
		ret = -ENOMEM;
	while (!ret && left) {
		size_t want = left < (1u << 20) ? (size_t)left : 1u << 20, n;

		ret = mm_read_upto(in, buf, want, &n);
		if (!ret && n != want)
			ret = -EBADMSG;	/* shrank while copied */
		if (!ret)
			ret = mm_write_all(out, buf, n);
		left -= n;
	}
	if (!ret) {
		size_t n;
		uint8_t extra;

		ret = mm_read_upto(in, &extra, 1, &n);
		if (!ret && n)
			ret = -EBADMSG;	/* grew while copied */
	}
	free(buf);
	close(in);
	if (ret)
		close(out);
	else
		ret = mm_file_sync_close(out);
	if (!ret)
		ret = mm_file_commit(tmp, to);
	if (ret) {
		unlink(tmp);
		return mm_errf(ret, err, errlen, "cannot copy %s to %s: %s%s",
			    from, to, strerror(-ret), ret == -EBADMSG ?
			    " (its size changed while it was copied)" : "");
	}
	return 0;
}

static int mkdir_p1(const char *path, char *err, size_t errlen)
{
	int ret;

	if (!mkdir(path, 0755)) {
		char parent[4096], *sl;

		snprintf(parent, sizeof(parent), "%s", path);
		sl = strrchr(parent, '/');
		if (sl && sl != parent)
			*sl = 0;
		ret = mm_fsync_dir(parent);
		return ret ? mm_errf(ret, err, errlen, "cannot sync %s: %s",
				  parent, strerror(-ret)) : 0;
	}
	if (errno == EEXIST)
		return strict_path(path, 1, err, errlen);
	ret = -errno;
	return mm_errf(ret, err, errlen, "cannot create %s: %s", path,
		    strerror(-ret));
}

/* ---- state ------------------------------------------------------------- */

static void hexs(const uint8_t *h, char *out)
{
	mm_hash_hex(h, out);
}

static size_t state_format(const struct st_state *st, char *buf, size_t cap)
{
	size_t n = 0;
	uint8_t h[MM_HASH_BYTES];
	char hx[MM_HASH_HEX], hx2[MM_HASH_HEX];

#define OUT(...) \
	do { \
		int k_ = snprintf(buf + n, n < cap ? cap - n : 0, __VA_ARGS__); \
		n += k_ > 0 ? (size_t)k_ : 0; \
	} while (0)
	OUT("%s\n", STATE_MAGIC);
	OUT("active %c\nprevious %c\npending %c\n", slot_ch(st->active),
	    slot_ch(st->previous), slot_ch(st->pending));
	OUT("trial %d\nsuccesses %d\nmin_version %" PRIu64 "\n", st->trial,
	    st->successes, st->min_version);
	for (int i = 0; i < 2; i++) {
		const struct st_slot *sl = &st->slot[i];

		if (!sl->valid)
			continue;
		hexs(sl->hash, hx);
		OUT("slot %c %" PRIu64 " %" PRIu64 " %s %s\n", slot_ch(i),
		    sl->version, sl->size, hx, sl->name);
	}
	for (int i = 0; i < st->n_sensors; i++) {
		const struct st_sensor *se = &st->sensor[i];

		hexs(se->hcur, hx);
		hexs(se->hprev, hx2);
		OUT("sensor %s %" PRIu64 " %s %" PRIu64 " %s\n", se->type,
		    se->cur, hx, se->prev, se->prev ? hx2 : "-");
	}
	if (n < cap) {
		mm_hash_mem(buf, n, h);
		hexs(h, hx);
		OUT("end %s\n", hx);
	}
#undef OUT
	return n;
}

static int type_ok(const char *t)
{
	size_t n = t ? strlen(t) : 0;

	if (n == 0 || n >= MMHAL_STORE_NAME_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((t[i] >= 'a' && t[i] <= 'z') ||
		      (t[i] >= '0' && t[i] <= '9') || t[i] == '_' ||
		      t[i] == '-'))
			return 0;
	return 1;
}

static int parse_slot_ch(const char *v, int *out)
{
	if (!strcmp(v, "a"))
		*out = 0;
	else if (!strcmp(v, "b"))
		*out = 1;
	else if (!strcmp(v, "-"))
		*out = -1;
	else
		return -1;
	return 0;
}

static int parse_u64(const char *v, uint64_t *out)
{
	char *end;

	if (!v || *v < '0' || *v > '9')
		return -1;
	errno = 0;
	*out = strtoull(v, &end, 10);
	return errno || *end ? -1 : 0;
}

static int state_parse(const char *path, char *buf, size_t n,
		       struct st_state *st, char *err, size_t errlen)
{
	char *line, *next, *endline;
	uint8_t h[MM_HASH_BYTES], want[MM_HASH_BYTES];
	int lineno = 0;

	memset(st, 0, sizeof(*st));
	st->active = st->previous = st->pending = -1;
	/* the last line: "end HASH" of everything before it */
	if (n < 2 || buf[n - 1] != '\n')
		return mm_errf(-EINVAL, err, errlen,
			    "%s: truncated (no final newline)", path);
	buf[n - 1] = 0;
	endline = strrchr(buf, '\n');
	if (!endline || strncmp(endline + 1, "end ", 4) ||
	    mm_hash_parse_hex(endline + 5, want))
		return mm_errf(-EINVAL, err, errlen, "%s: no 'end HASH' line",
			    path);
	mm_hash_mem(buf, (size_t)(endline + 1 - buf), h);
	if (memcmp(h, want, sizeof(h)))
		return mm_errf(-EBADMSG, err, errlen,
			    "%s: its hash does not match its 'end' line (corrupted)",
			    path);
	*endline = 0;
	for (line = buf; line; line = next) {
		char *f[8];
		int nf = 0;

		lineno++;
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		if (lineno == 1) {
			if (strcmp(line, STATE_MAGIC))
				return mm_errf(-EINVAL, err, errlen,
					    "%s: line 1 is not '%s'", path,
					    STATE_MAGIC);
			continue;
		}
		/* up to 5 space-separated fields; a slot's name is the rest */
		for (char *p = line; p && nf < 8;) {
			f[nf++] = p;
			if (nf == 6 && !strcmp(f[0], "slot"))
				break;
			p = strchr(p, ' ');
			if (p)
				*p++ = 0;
		}
#define BAD(what) mm_errf(-EINVAL, err, errlen, "%s: line %d: bad %s", path, \
		       lineno, what)
		if (!strcmp(f[0], "active") && nf == 2) {
			if (parse_slot_ch(f[1], &st->active))
				return BAD("active slot");
		} else if (!strcmp(f[0], "previous") && nf == 2) {
			if (parse_slot_ch(f[1], &st->previous))
				return BAD("previous slot");
		} else if (!strcmp(f[0], "pending") && nf == 2) {
			if (parse_slot_ch(f[1], &st->pending))
				return BAD("pending slot");
		} else if (!strcmp(f[0], "trial") && nf == 2) {
			if (strcmp(f[1], "0") && strcmp(f[1], "1"))
				return BAD("trial");
			st->trial = f[1][0] == '1';
		} else if (!strcmp(f[0], "successes") && nf == 2) {
			uint64_t v;

			if (parse_u64(f[1], &v) || v > 1000000)
				return BAD("successes");
			st->successes = (int)v;
		} else if (!strcmp(f[0], "min_version") && nf == 2) {
			if (parse_u64(f[1], &st->min_version))
				return BAD("min_version");
		} else if (!strcmp(f[0], "slot") && nf == 6) {
			struct st_slot *sl;
			int i;

			if (parse_slot_ch(f[1], &i) || i < 0)
				return BAD("slot");
			sl = &st->slot[i];
			if (sl->valid)
				return BAD("slot (twice)");
			if (parse_u64(f[2], &sl->version) ||
			    parse_u64(f[3], &sl->size) ||
			    mm_hash_parse_hex(f[4], sl->hash) ||
			    strlen(f[5]) > MM_SIG_NAME_MAX)
				return BAD("slot fields");
			strcpy(sl->name, f[5]);
			sl->valid = 1;
		} else if (!strcmp(f[0], "sensor") && nf == 6) {
			struct st_sensor *se;

			if (st->n_sensors >= MMHAL_STORE_MAX_SENSORS)
				return BAD("sensor (too many)");
			se = &st->sensor[st->n_sensors];
			if (!type_ok(f[1]) || parse_u64(f[2], &se->cur) ||
			    mm_hash_parse_hex(f[3], se->hcur) ||
			    parse_u64(f[4], &se->prev) ||
			    (se->prev ? mm_hash_parse_hex(f[5], se->hprev) :
			     strcmp(f[5], "-")) ||
			    (se->prev && se->prev >= se->cur) || !se->cur)
				return BAD("sensor fields");
			for (int i = 0; i < st->n_sensors; i++)
				if (!strcmp(st->sensor[i].type, f[1]))
					return BAD("sensor (twice)");
			strcpy(se->type, f[1]);
			st->n_sensors++;
		} else {
			return mm_errf(-EINVAL, err, errlen,
				    "%s: line %d: unknown '%s'", path, lineno,
				    f[0]);
		}
#undef BAD
	}
	/* consistency */
	if ((st->active >= 0 && !st->slot[st->active].valid) ||
	    (st->previous >= 0 && !st->slot[st->previous].valid) ||
	    (st->pending >= 0 && !st->slot[st->pending].valid) ||
	    (st->previous >= 0 && (st->previous == st->active || !st->trial)) ||
	    (st->trial && st->previous < 0) ||
	    (st->pending >= 0 && st->pending == st->active) ||
	    (st->pending >= 0 && st->trial))
		return mm_errf(-EINVAL, err, errlen,
			    "%s: inconsistent slots (active %c previous %c pending %c trial %d)",
			    path, slot_ch(st->active), slot_ch(st->previous),
			    slot_ch(st->pending), st->trial);
	return 0;
}

static int state_load(struct mmhal_store *s, char *err, size_t errlen)
{
	char path[4096], *buf;
	size_t n = 0;
	int fd, ret = 0;

	spath(s, path, sizeof(path), "state");
	fd = open_strict(path, err, errlen);
	if (fd < 0) {
		if (fd != -ENOENT)
			return fd;
		/* a new store */
		memset(&s->st, 0, sizeof(s->st));
		s->st.active = s->st.previous = s->st.pending = -1;
		return 0;
	}
	buf = malloc(STATE_MAX + 1);
	if (!buf) {
		close(fd);
		return mm_errf(-ENOMEM, err, errlen, "out of memory");
	}
	ret = mm_read_upto(fd, buf, STATE_MAX + 1, &n);
	close(fd);
	if (ret)
		mm_errf(ret, err, errlen, "cannot read %s: %s", path,
		     strerror(-ret));
	else if (n > STATE_MAX)
		ret = mm_errf(-EFBIG, err, errlen, "%s: over %d bytes", path,
			   STATE_MAX);
	else
		ret = state_parse(path, buf, n, &s->st, err, errlen);
	free(buf);
	return ret;
}

static int state_save(struct mmhal_store *s, const struct st_state *st,
		      char *err, size_t errlen)
{
	char path[4096], buf[STATE_MAX];
	size_t n = state_format(st, buf, sizeof(buf));
	int ret;

	if (n >= sizeof(buf))
		return mm_errf(-EFBIG, err, errlen, "store state over %d bytes",
			    STATE_MAX);
	spath(s, path, sizeof(path), "state");
	ret = put_file(s->dir, path, buf, n, err, errlen);
	if (!ret)
		s->st = *st;
	return ret;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/*
 * The state is re-read under the lock before every operation, after the
 * directory's owner and mode are checked again. The wait for the lock is
 * bounded by the store's lock_timeout_ms: -ETIMEDOUT names the lock file.
 */
static int lock(struct mmhal_store *s, int excl, char *err, size_t errlen)
{
	double t0 = now_ms();
	struct stat st;
	int ret;

	/* the directory itself may be reached through a link (stat) */
	if (stat(s->dir, &st)) {
		ret = -errno;
		return mm_errf(ret, err, errlen, "store %s: %s", s->dir,
			    strerror(-ret));
	}
	ret = strict_st(s->dir, &st, 1, err, errlen);
	if (ret)
		return ret;
	while (flock(s->lock_fd, (excl ? LOCK_EX : LOCK_SH) | LOCK_NB)) {
		if (errno != EWOULDBLOCK && errno != EINTR) {
			ret = -errno;
			return mm_errf(ret, err, errlen, "cannot lock %s/lock: %s",
				    s->dir, strerror(-ret));
		}
		if (now_ms() - t0 >= s->lock_timeout_ms)
			return mm_errf(-ETIMEDOUT, err, errlen,
				    "store %s: %s/lock is held by another process; gave up after %d ms (fuser %s/lock shows which)",
				    s->dir, s->dir, s->lock_timeout_ms, s->dir);
		usleep(5000);
	}
	ret = state_load(s, err, errlen);
	if (ret)
		flock(s->lock_fd, LOCK_UN);
	return ret;
}

static void unlock(struct mmhal_store *s)
{
	flock(s->lock_fd, LOCK_UN);
}

/* the start of an operation that changes the store: err cleared, locked */
static int store_enter(struct mmhal_store *s, char *err, size_t errlen)
{
	if (err && errlen)
		err[0] = 0;
	if (!s)
		return mm_errf(-EINVAL, err, errlen, "store is NULL");
	return lock(s, 1, err, errlen);
}

/* ---- open / close / status --------------------------------------------- */

MMHAL_API struct mmhal_store_params mmhal_store_default_params(void)
{
	struct mmhal_store_params p = {
		.size = sizeof(struct mmhal_store_params),
		.n_commit = N_COMMIT_DEFAULT,
		.lock_timeout_ms = LOCK_TIMEOUT_MS_DEFAULT,
	};

	return p;
}

MMHAL_API int mmhal_store_read_key(const char *path, unsigned char key[32],
				   char *err, size_t errlen)
{
	if (err && errlen)
		err[0] = 0;
	if (!path || !key)
		return mm_errf(-EINVAL, err, errlen, "path and key must not be NULL");
	return mm_key_read_public(path, key, err, errlen);
}

MMHAL_API int mmhal_store_open(const char *dir,
			       const struct mmhal_store_params *params,
			       struct mmhal_store **out, char *err,
			       size_t errlen)
{
	struct mmhal_store_params p = mmhal_store_default_params();
	struct mmhal_store *s;
	char path[4096];
	struct stat st;
	int ret;

	if (err && errlen)
		err[0] = 0;
	if (!out)
		return mm_errf(-EINVAL, err, errlen, "out is NULL");
	*out = NULL;
	if (!dir || !params)
		return mm_errf(-EINVAL, err, errlen, "%s is NULL",
			    dir ? "params" : "dir");
	ret = MM_PARAMS_IN(&p, params,
			   offsetof(struct mmhal_store_params, reserved),
			   "store params", err, errlen);
	if (ret)
		return ret;
	if (!p.trusted_key)
		return mm_errf(-EINVAL, err, errlen,
			    "store params.trusted_key is NULL (a store holds signed models only)");
	if (p.n_commit > 1000000)
		return mm_errf(-EINVAL, err, errlen,
			    "store params.n_commit %d is out of range", p.n_commit);
	if (p.lock_timeout_ms > 3600000)
		return mm_errf(-EINVAL, err, errlen,
			    "store params.lock_timeout_ms %d is over an hour",
			    p.lock_timeout_ms);
	if (strlen(dir) > 3000)
		return mm_errf(-ENAMETOOLONG, err, errlen, "store directory name too long");
	if (stat(dir, &st)) {
		if (errno != ENOENT || !p.create) {
			ret = -errno;
			return mm_errf(ret, err, errlen, "store %s: %s", dir,
				    strerror(-ret));
		}
		ret = mkdir_p1(dir, err, errlen);
		if (ret)
			return ret;
	} else if (!S_ISDIR(st.st_mode)) {
		return mm_errf(-ENOTDIR, err, errlen, "store %s is not a directory",
			    dir);
	}
	/* the directory itself (a link to one is followed: stat) */
	if (stat(dir, &st)) {
		ret = -errno;
		return mm_errf(ret, err, errlen, "store %s: %s", dir,
			    strerror(-ret));
	}
	ret = strict_st(dir, &st, 1, err, errlen);
	if (ret)
		return ret;
	s = calloc(1, sizeof(*s));
	if (!s)
		return mm_errf(-ENOMEM, err, errlen, "out of memory");
	snprintf(s->dir, sizeof(s->dir), "%s", dir);
	memcpy(s->key, p.trusted_key, sizeof(s->key));
	s->n_commit = p.n_commit > 0 ? p.n_commit : N_COMMIT_DEFAULT;
	s->lock_timeout_ms = p.lock_timeout_ms > 0 ? p.lock_timeout_ms :
		LOCK_TIMEOUT_MS_DEFAULT;
	spath(s, path, sizeof(path), "lock");
	/* 0600: no other user can open it to hold the lock */
	s->lock_fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK |
			  O_CLOEXEC, 0600);
	if (s->lock_fd < 0) {
		ret = -errno;
		free(s);
		return mm_errf(ret, err, errlen, "cannot open %s: %s", path,
			    strerror(-ret));
	}
	ret = fstat(s->lock_fd, &st) ? -errno : 0;
	if (ret)
		mm_errf(ret, err, errlen, "cannot stat %s: %s", path,
		     strerror(-ret));
	else
		ret = strict_st(path, &st, 0, err, errlen);
	/* a lock file of an older store (0644) is made private */
	if (!ret && (st.st_mode & 077) && fchmod(s->lock_fd, 0600)) {
		ret = -errno;
		mm_errf(ret, err, errlen, "cannot chmod 600 %s: %s", path,
		     strerror(-ret));
	}
	if (ret) {
		close(s->lock_fd);
		free(s);
		return ret;
	}
	ret = lock(s, 0, err, errlen);
	if (ret) {
		close(s->lock_fd);
		free(s);
		return ret;
	}
	unlock(s);
	*out = s;
	return 0;
}

MMHAL_API void mmhal_store_close(struct mmhal_store *s)
{
	if (!s)
		return;
	close(s->lock_fd);
	free(s);
}

/*
 * The manifest of slot i's file as verified (by a load or by status)
 * against what the state recorded for the slot: its signed version, size
 * and hash. -EBADMSG for a validly signed file the store did not install
 * there (a replay, or a state naming another file).
 */
static int slot_record_check(const struct mmhal_store *s, int i,
			     const struct mm_manifest *man, char *err,
			     size_t errlen)
{
	const struct st_slot *sl = &s->st.slot[i];
	char a[MM_HASH_HEX], b[MM_HASH_HEX];

	if (man->version == sl->version && man->size == sl->size &&
	    !memcmp(man->hash, sl->hash, sizeof(man->hash)))
		return 0;
	mm_hash_hex(man->hash, a);
	mm_hash_hex(sl->hash, b);
	return mm_errf(-EBADMSG, err, errlen,
		    "slot %c holds version %" PRIu64 " (%.16s...), the state recorded version %" PRIu64 " (%.16s...): not the installed file",
		    slot_ch(i), man->version, a, sl->version, b);
}

/* the minimum version a load of slot i asks for */
static uint64_t slot_min_version(const struct mmhal_store *s, int i)
{
	const struct st_slot *sl = &s->st.slot[i];

	return sl->version > s->st.min_version ? sl->version :
		s->st.min_version;
}

/* slot i's directory, model and signature: the store's owner and modes */
static int slot_paths(const struct mmhal_store *s, int i, char *path,
		      size_t len, char *err, size_t errlen)
{
	char sig[4200];
	int ret;

	spath(s, path, len, "%c", slot_ch(i));
	ret = strict_path(path, 1, err, errlen);
	if (!ret)
		spath(s, path, len, "%c/%s", slot_ch(i), MODEL_FILE);
	if (!ret)
		ret = strict_path(path, 0, err, errlen);
	if (!ret) {
		snprintf(sig, sizeof(sig), "%s.sig", path);
		ret = strict_path(sig, 0, err, errlen);
	}
	if (ret == -ENOENT)
		return mm_errf(ret, err, errlen, "slot %c: %s is missing",
			    slot_ch(i), path);
	return ret;
}

/* status: slot i verified as a load verifies it (without loading it) */
static void status_verify(const struct mmhal_store *s, int i,
			  struct mmhal_store_status *o)
{
	struct mm_manifest man;
	char path[4096];
	int ret;

	o->verified_slot = slot_ch(i);
	ret = slot_paths(s, i, path, sizeof(path), o->verify_error,
			 sizeof(o->verify_error));
	if (!ret)
		ret = mm_verify_file(path, s->key, slot_min_version(s, i),
				     &man, o->verify_error,
				     sizeof(o->verify_error));
	if (!ret)
		ret = slot_record_check(s, i, &man, o->verify_error,
					sizeof(o->verify_error));
	o->active_verify = ret;
	if (ret)
		return;
	o->verified.valid = 1;
	snprintf(o->verified.name, sizeof(o->verified.name), "%s", man.name);
	o->verified.version = man.version;
	o->verified.size = man.size;
	mm_hash_hex(man.hash, o->verified.hash);
	snprintf(o->verified_how, sizeof(o->verified_how), "%s",
		 man.how == MM_SIG_HOW_VERITY ? "fs-verity" : "hash");
}

MMHAL_API int mmhal_store_status(const struct mmhal_store *cs,
				 struct mmhal_store_status *out)
{
	struct mmhal_store *s = (struct mmhal_store *)cs;
	struct mmhal_store_status o;
	const struct st_state *st;
	int ret;

	if (!s || !out || out->size < MMHAL_STORE_STATUS_SIZE_VER0)
		return -EINVAL;
	ret = lock(s, 0, NULL, 0);
	if (ret)
		return ret;
	unlock(s);
	st = &s->st;
	memset(&o, 0, sizeof(o));
	o.size = sizeof(o);
	o.active = st->active >= 0 ? slot_ch(st->active) : 0;
	o.previous = st->previous >= 0 ? slot_ch(st->previous) : 0;
	o.pending = st->pending >= 0 ? slot_ch(st->pending) : 0;
	o.trial = st->trial;
	o.successes = st->successes;
	o.n_commit = s->n_commit;
	o.min_version = st->min_version;
	for (int i = 0; i < 2; i++) {
		const struct st_slot *sl = &st->slot[i];

		o.slot[i].valid = sl->valid;
		if (!sl->valid)
			continue;
		snprintf(o.slot[i].name, sizeof(o.slot[i].name), "%s", sl->name);
		o.slot[i].version = sl->version;
		o.slot[i].size = sl->size;
		mm_hash_hex(sl->hash, o.slot[i].hash);
	}
	if (st->active >= 0) {
		const struct st_slot *sl = &st->slot[st->active];
		struct mm_manifest man;
		char sp[4096];

		ret = spath(s, sp, sizeof(sp), "%c/%s.sig",
			    slot_ch(st->active), MODEL_FILE);
		if (!ret)
			ret = mm_sig_read(sp, s->key, 0, &man, NULL, 0);
		if (!ret && (man.version != sl->version ||
			     man.size != sl->size ||
			     memcmp(man.hash, sl->hash, sizeof(man.hash))))
			ret = -EBADMSG;
		o.active_sig = ret;
	}
	o.n_sensors = st->n_sensors;
	for (int i = 0; i < st->n_sensors; i++) {
		snprintf(o.sensor[i].type, sizeof(o.sensor[i].type), "%s",
			 st->sensor[i].type);
		o.sensor[i].version = st->sensor[i].cur;
		o.sensor[i].previous = st->sensor[i].prev;
	}
	/* the verification only for a caller that has room for it */
	if (out->size >= sizeof(o) && st->active >= 0)
		status_verify(s, st->active, &o);
	return mm_params_out(out, &o, sizeof(o));
}

MMHAL_API int mmhal_store_model_path(const struct mmhal_store *cs, char *buf,
				     size_t len)
{
	struct mmhal_store *s = (struct mmhal_store *)cs;
	int ret;

	if (!s || !buf)
		return -EINVAL;
	ret = lock(s, 0, NULL, 0);
	if (ret)
		return ret;
	unlock(s);
	if (s->st.active < 0)
		return -ENOENT;
	return spath(s, buf, len, "%c/%s", slot_ch(s->st.active), MODEL_FILE);
}

/* ---- models ------------------------------------------------------------ */

/* drops the files of slot i (not named by the state any more) */
static void slot_remove(struct mmhal_store *s, int i)
{
	char path[4096];

	if (!spath(s, path, sizeof(path), "%c/%s", slot_ch(i), MODEL_FILE))
		unlink(path);
	if (!spath(s, path, sizeof(path), "%c/%s.sig", slot_ch(i), MODEL_FILE))
		unlink(path);
}

MMHAL_API int mmhal_store_install(struct mmhal_store *s, const char *path,
				  char *err, size_t errlen)
{
	struct mm_manifest src, got;
	struct st_state st;
	char sp[4096], dst[4096], dsig[4096], sdir[4096];
	uint64_t minv;
	int ret, t;

	if (err && errlen)
		err[0] = 0;
	if (!s || !path)
		return mm_errf(-EINVAL, err, errlen, "store and path must not be NULL");
	ret = lock(s, 1, err, errlen);
	if (ret)
		return ret;
	st = s->st;
	if (st.trial) {
		ret = mm_errf(-EBUSY, err, errlen,
			   "a trial of slot %c is under way: commit or roll back first",
			   slot_ch(st.active));
		goto out;
	}
	/* no older model than the active one, nor than the store's minimum */
	minv = st.min_version;
	if (st.active >= 0 && st.slot[st.active].version > minv)
		minv = st.slot[st.active].version;
	if (mm_sig_path(path, sp, sizeof(sp))) {
		ret = mm_errf(-ENAMETOOLONG, err, errlen, "%s: name too long", path);
		goto out;
	}
	ret = mm_sig_read(sp, s->key, minv, &src, err, errlen);
	if (ret)
		goto out;
	t = st.active == 0 ? 1 : 0;
	/* the slot is going to be written: the state forgets it first */
	if (st.slot[t].valid || st.pending == t) {
		st.slot[t].valid = 0;
		st.pending = -1;
		ret = state_save(s, &st, err, errlen);
		if (ret)
			goto out;
	}
	spath(s, sdir, sizeof(sdir), "%c", slot_ch(t));
	ret = mkdir_p1(sdir, err, errlen);
	if (ret)
		goto out;
	spath(s, dst, sizeof(dst), "%c/%s", slot_ch(t), MODEL_FILE);
	spath(s, dsig, sizeof(dsig), "%c/%s.sig", slot_ch(t), MODEL_FILE);
	/* no more than the signed size, from regular files only */
	/* each copy commits itself: renamed and the slot directory synced */
	ret = copy_file(path, dst, src.size, err, errlen);
	if (!ret)
		ret = copy_file(sp, dsig, mm_sig_bytes(src.format), err, errlen);
	if (ret)
		goto out;
	/* what the slot holds now, read back */
	ret = mm_verify_file(dst, s->key, minv, &got, err, errlen);
	if (ret)
		goto out;
	if (memcmp(got.hash, src.hash, sizeof(got.hash))) {
		ret = mm_errf(-EBADMSG, err, errlen,
			   "%s changed while it was copied", path);
		goto out;
	}
	st.slot[t].valid = 1;
	snprintf(st.slot[t].name, sizeof(st.slot[t].name), "%s", got.name);
	st.slot[t].version = got.version;
	st.slot[t].size = got.size;
	memcpy(st.slot[t].hash, got.hash, sizeof(got.hash));
	st.pending = t;
	ret = state_save(s, &st, err, errlen);
out:
	unlock(s);
	return ret;
}

MMHAL_API int mmhal_store_switch(struct mmhal_store *s, char *err,
				 size_t errlen)
{
	struct st_state st;
	int ret;

	ret = store_enter(s, err, errlen);
	if (ret)
		return ret;
	st = s->st;
	if (st.pending < 0) {
		ret = mm_errf(-ENOENT, err, errlen,
			   "no installed model to switch to (install one first)");
		goto out;
	}
	st.previous = st.active;
	st.active = st.pending;
	st.pending = -1;
	st.successes = 0;
	/* the first model has nothing to fall back to: committed at once */
	st.trial = st.previous >= 0;
	if (!st.trial)
		st.min_version = st.slot[st.active].version;
	ret = state_save(s, &st, err, errlen);
out:
	unlock(s);
	return ret;
}

static int do_rollback(struct mmhal_store *s, const char *why, char *err,
		       size_t errlen)
{
	struct st_state st = s->st;
	int bad = st.active, ret;

	if (!st.trial || st.previous < 0)
		return mm_errf(-ENOENT, err, errlen,
			    "no previous model to roll back to%s",
			    st.active >= 0 ? " (the active one is committed)" : "");
	st.active = st.previous;
	st.previous = -1;
	st.trial = 0;
	st.successes = 0;
	st.slot[bad].valid = 0;
	ret = state_save(s, &st, err, errlen);
	if (ret)
		return ret;
	slot_remove(s, bad);
	if (why)
		mm_errf(0, err, errlen, "rolled back from slot %c to slot %c: %s",
		     slot_ch(bad), slot_ch(st.active), why);
	return 0;
}

MMHAL_API int mmhal_store_rollback(struct mmhal_store *s, char *err,
				   size_t errlen)
{
	int ret;

	ret = store_enter(s, err, errlen);
	if (ret)
		return ret;
	ret = do_rollback(s, NULL, err, errlen);
	unlock(s);
	return ret;
}

static int do_commit(struct mmhal_store *s, char *err, size_t errlen)
{
	struct st_state st = s->st;
	int prev = st.previous, ret;

	if (!st.trial)
		return mm_errf(-ENOENT, err, errlen, "no trial to commit%s",
			    st.active >= 0 ? " (the active model is committed)" :
			    "");
	st.previous = -1;
	st.trial = 0;
	st.successes = 0;
	st.slot[prev].valid = 0;
	if (st.slot[st.active].version > st.min_version)
		st.min_version = st.slot[st.active].version;
	ret = state_save(s, &st, err, errlen);
	if (!ret)
		slot_remove(s, prev);
	return ret;
}

MMHAL_API int mmhal_store_commit(struct mmhal_store *s, char *err,
				 size_t errlen)
{
	int ret;

	ret = store_enter(s, err, errlen);
	if (ret)
		return ret;
	ret = do_commit(s, err, errlen);
	unlock(s);
	return ret;
}

MMHAL_API int mmhal_store_report_success(struct mmhal_store *s, char *err,
					 size_t errlen)
{
	struct st_state st;
	int ret;

	ret = store_enter(s, err, errlen);
	if (ret)
		return ret;
	if (s->st.trial) {
		if (s->st.successes + 1 >= s->n_commit) {
			ret = do_commit(s, err, errlen);
			ret = ret ? ret : 1;
		} else {
			st = s->st;
			st.successes++;
			ret = state_save(s, &st, err, errlen);
		}
	}
	unlock(s);
	return ret;
}

MMHAL_API int mmhal_store_report_failure(struct mmhal_store *s, char *err,
					 size_t errlen)
{
	int ret;

	ret = store_enter(s, err, errlen);
	if (ret)
		return ret;
	if (s->st.trial) {
		ret = do_rollback(s, "a request failed", err, errlen);
		ret = ret ? ret : 1;
	}
	unlock(s);
	return ret;
}

/*
 * Loads slot i (verified with the store's key) and checks that the file
 * loaded is the one the state recorded for the slot: its signed version,
 * size and hash. A validly signed older model put in the slot's place
 * (a replay) or a state naming another file is refused.
 */
static int load_slot(struct mmhal_store *s, int i,
		     const struct mmhal_model_params *params,
		     struct mmhal_model **out, char *err, size_t errlen)
{
	struct mmhal_model_params p = mmhal_model_default_params();
	struct mm_manifest man;
	char path[4096];
	int ret;

	if (params) {
		ret = MM_PARAMS_IN(&p, params,
				   offsetof(struct mmhal_model_params, reserved),
				   "model params", err, errlen);
		if (ret)
			return ret;
	}
	ret = slot_paths(s, i, path, sizeof(path), err, errlen);
	if (ret)
		return ret;
	p.trusted_key = s->key;
	/* below the slot's own version is refused before the file is read */
	p.min_version = slot_min_version(s, i);
	ret = mmhal_model_load(path, &p, out, err, errlen);
	if (ret)
		return ret;
	ret = mm_model_manifest(*out, &man);
	if (!ret)
		ret = slot_record_check(s, i, &man, err, errlen);
	if (ret) {
		mmhal_model_free(*out);
		*out = NULL;
	}
	return ret;
}

static int load_active(struct mmhal_store *s,
		       const struct mmhal_model_params *params,
		       struct mmhal_model **out, char *err, size_t errlen)
{
	if (s->st.active < 0)
		return mm_errf(-ENOENT, err, errlen, "store %s holds no model",
			    s->dir);
	return load_slot(s, s->st.active, params, out, err, errlen);
}

MMHAL_API int mmhal_store_load(struct mmhal_store *s,
			       const struct mmhal_model_params *params,
			       struct mmhal_model **out, int *rolled_back,
			       char *err, size_t errlen)
{
	char why[512], why2[512];
	int ret, r2;

	if (err && errlen)
		err[0] = 0;
	if (rolled_back)
		*rolled_back = 0;
	if (!s || !out)
		return mm_errf(-EINVAL, err, errlen, "store and out must not be NULL");
	*out = NULL;
	ret = lock(s, 1, err, errlen);
	if (ret)
		return ret;
	ret = load_active(s, params, out, why, sizeof(why));
	/* -EPERM: the store's files have another owner or mode (strict_st):
	 * for whoever runs the store to fix, not a reason to roll back */
	if (ret && ret != -EPERM && s->st.trial) {
		/*
		 * The model on trial is rolled back only when the previous
		 * one loads with the same parameters: a load that fails for
		 * the caller's own parameters (a kv_type or n_ctx it cannot
		 * have) fails for both, and keeps the trial and its files.
		 */
		r2 = load_slot(s, s->st.previous, params, out, why2,
			       sizeof(why2));
		if (r2) {
			mm_errf(ret, err, errlen,
			     "%s (not rolled back: the previous model does not load with these parameters either: %s)",
			     why, why2);
		} else {
			r2 = do_rollback(s, why, err, errlen);
			if (r2) {
				mmhal_model_free(*out);
				*out = NULL;
				ret = r2;
			} else {
				if (rolled_back)
					*rolled_back = 1;
				ret = 0;
			}
		}
	} else if (ret) {
		mm_errf(ret, err, errlen, "%s", why);
	}
	unlock(s);
	return ret;
}

MMHAL_API int mmhal_store_health(struct mmhal_store *s, char *err,
				 size_t errlen)
{
	struct mmhal_model_params p = mmhal_model_default_params();
	struct mmhal_model *m = NULL;
	struct mmhal_model_info mi;
	char why[512] = "";
	int ret;

	ret = store_enter(s, err, errlen);
	if (ret)
		return ret;
	p.n_ctx = 16;
	ret = load_active(s, &p, &m, why, sizeof(why));
	if (!ret) {
		int32_t tok = mmhal_model_token_bos(m);
		const float *lg;

		ret = mmhal_model_info(m, &mi);
		if (!ret && (tok < 0 || tok >= mi.n_vocab))
			tok = 0;
		if (!ret)
			ret = mmhal_model_eval(m, &tok, 1, NULL);
		if (ret) {
			snprintf(why, sizeof(why), "decoding a token failed: %s",
				 mmhal_model_error(m));
		} else {
			lg = mmhal_model_logits(m);
			for (int i = 0; lg && i < mi.n_vocab; i++)
				if (!isfinite(lg[i])) {
					ret = -EDOM;
					snprintf(why, sizeof(why),
						 "logit %d of the first token is not finite",
						 i);
					break;
				}
			if (!lg && !ret) {
				ret = -EIO;
				snprintf(why, sizeof(why), "no logits");
			}
		}
	}
	mmhal_model_free(m);
	if (ret && ret != -EPERM && s->st.trial) {
		int r2 = do_rollback(s, why, err, errlen);

		ret = r2 ? r2 : 1;
	} else if (ret) {
		mm_errf(ret, err, errlen, "health check: %s", why);
	}
	unlock(s);
	return ret;
}

/* ---- sensor parameters ------------------------------------------------- */

static struct st_sensor *sensor_find(struct st_state *st, const char *type)
{
	for (int i = 0; i < st->n_sensors; i++)
		if (!strcmp(st->sensor[i].type, type))
			return &st->sensor[i];
	return NULL;
}

/*
 * Reads path (at most cap bytes; more is -EFBIG): the store's own file
 * (strict: open_strict()), or a caller's, which must be a regular file
 * (opened O_NONBLOCK: a FIFO cannot block).
 */
static int read_small(const char *path, int strict, void *buf, size_t cap,
		      size_t *len, char *err, size_t errlen)
{
	size_t n = 0, more;
	struct stat st;
	uint8_t extra;
	int fd, ret = 0;

	if (strict) {
		fd = open_strict(path, err, errlen);
		if (fd == -ENOENT)
			return mm_errf(fd, err, errlen, "%s is missing", path);
		if (fd < 0)
			return fd;
	} else {
		fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0) {
			ret = -errno;
			return mm_errf(ret, err, errlen, "cannot open %s: %s",
				    path, strerror(-ret));
		}
		if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
			close(fd);
			return mm_errf(-EINVAL, err, errlen,
				    "%s is not a regular file", path);
		}
	}
	ret = mm_read_upto(fd, buf, cap, &n);
	if (ret)
		mm_errf(ret, err, errlen, "cannot read %s: %s", path,
		     strerror(-ret));
	else if (n == cap && !mm_read_upto(fd, &extra, 1, &more) && more)
		ret = mm_errf(-EFBIG, err, errlen, "%s is over %zu bytes", path,
			   cap);
	close(fd);
	*len = n;
	return ret;
}

MMHAL_API int mmhal_store_sensor_install(struct mmhal_store *s,
					 const char *type, const char *path,
					 uint64_t *version, char *err,
					 size_t errlen)
{
	struct st_state st;
	struct st_sensor *se;
	char dir[4096], file[4096];
	uint64_t v, old_prev = 0;
	size_t n = 0;
	uint8_t *buf;
	int ret;

	if (err && errlen)
		err[0] = 0;
	if (!s || !path || !type)
		return mm_errf(-EINVAL, err, errlen, "store, type and path must not be NULL");
	if (!type_ok(type))
		return mm_errf(-EINVAL, err, errlen,
			    "sensor type '%s': 1 to %d of a-z 0-9 _ -", type,
			    MMHAL_STORE_NAME_MAX - 1);
	buf = malloc(MMHAL_STORE_SENSOR_MAX);
	if (!buf)
		return mm_errf(-ENOMEM, err, errlen, "out of memory");
	ret = read_small(path, 0, buf, MMHAL_STORE_SENSOR_MAX, &n, err,
			 errlen);
	if (ret) {
		free(buf);
		return ret;
	}
	ret = lock(s, 1, err, errlen);
	if (ret) {
		free(buf);
		return ret;
	}
	st = s->st;
	se = sensor_find(&st, type);
	if (!se) {
		if (st.n_sensors >= MMHAL_STORE_MAX_SENSORS) {
			ret = mm_errf(-ENOSPC, err, errlen,
				   "the store has %d sensor types already",
				   st.n_sensors);
			goto out;
		}
		se = &st.sensor[st.n_sensors++];
		memset(se, 0, sizeof(*se));
		snprintf(se->type, sizeof(se->type), "%s", type);
	}
	v = version && *version ? *version : se->cur + 1;
	if (v <= se->cur) {
		ret = mm_errf(-ESTALE, err, errlen,
			   "sensor %s: version %" PRIu64 " is not above the current %" PRIu64,
			   type, v, se->cur);
		goto out;
	}
	ret = spath(s, dir, sizeof(dir), "sensors");
	ret = ret ? ret : mkdir_p1(dir, err, errlen);
	if (!ret)
		spath(s, dir, sizeof(dir), "sensors/%s", type);
	ret = ret ? ret : mkdir_p1(dir, err, errlen);
	if (ret)
		goto out;
	spath(s, file, sizeof(file), "sensors/%s/%" PRIu64, type, v);
	ret = put_file(dir, file, buf, n, err, errlen);
	if (ret)
		goto out;
	old_prev = se->prev;
	se->prev = se->cur;
	memcpy(se->hprev, se->hcur, sizeof(se->hcur));
	se->cur = v;
	mm_hash_mem(buf, n, se->hcur);
	ret = state_save(s, &st, err, errlen);
	if (!ret && old_prev) {
		spath(s, file, sizeof(file), "sensors/%s/%" PRIu64, type,
		      old_prev);
		unlink(file);
	}
	if (!ret && version)
		*version = v;
out:
	unlock(s);
	free(buf);
	return ret;
}

MMHAL_API int mmhal_store_sensor_rollback(struct mmhal_store *s,
					  const char *type, char *err,
					  size_t errlen)
{
	struct st_state st;
	struct st_sensor *se;
	char file[4096];
	uint64_t bad;
	int ret;

	if (err && errlen)
		err[0] = 0;
	if (!s || !type)
		return mm_errf(-EINVAL, err, errlen, "store and type must not be NULL");
	ret = lock(s, 1, err, errlen);
	if (ret)
		return ret;
	st = s->st;
	se = sensor_find(&st, type);
	if (!se || !se->prev) {
		ret = mm_errf(-ENOENT, err, errlen,
			   "sensor %s: no previous version to roll back to",
			   type);
		goto out;
	}
	bad = se->cur;
	se->cur = se->prev;
	memcpy(se->hcur, se->hprev, sizeof(se->hcur));
	se->prev = 0;
	memset(se->hprev, 0, sizeof(se->hprev));
	ret = state_save(s, &st, err, errlen);
	if (!ret) {
		spath(s, file, sizeof(file), "sensors/%s/%" PRIu64, type, bad);
		unlink(file);
	}
out:
	unlock(s);
	return ret;
}

MMHAL_API int mmhal_store_sensor_read(const struct mmhal_store *cs,
				      const char *type, void *buf, size_t cap,
				      size_t *len, uint64_t *version,
				      char *err, size_t errlen)
{
	struct mmhal_store *s = (struct mmhal_store *)cs;
	struct st_sensor *se;
	uint8_t h[MM_HASH_BYTES];
	char file[4096];
	size_t n = 0;
	int ret;

	if (err && errlen)
		err[0] = 0;
	if (!s || !type || !buf || !len)
		return mm_errf(-EINVAL, err, errlen,
			    "store, type, buf and len must not be NULL");
	ret = lock(s, 0, err, errlen);
	if (ret)
		return ret;
	se = sensor_find(&s->st, type);
	if (!se) {
		ret = mm_errf(-ENOENT, err, errlen, "sensor %s: no parameters",
			   type);
		goto out;
	}
	spath(s, file, sizeof(file), "sensors");
	ret = strict_path(file, 1, err, errlen);
	if (!ret) {
		spath(s, file, sizeof(file), "sensors/%s", type);
		ret = strict_path(file, 1, err, errlen);
	}
	if (ret == -ENOENT)
		mm_errf(ret, err, errlen, "%s is missing", file);
	if (ret)
		goto out;
	spath(s, file, sizeof(file), "sensors/%s/%" PRIu64, type, se->cur);
	ret = read_small(file, 1, buf, cap, &n, err, errlen);
	if (ret)
		goto out;
	mm_hash_mem(buf, n, h);
	if (memcmp(h, se->hcur, sizeof(h))) {
		ret = mm_errf(-EBADMSG, err, errlen,
			   "%s: its hash is not the one the store recorded (altered)",
			   file);
		goto out;
	}
	*len = n;
	if (version)
		*version = se->cur;
out:
	unlock(s);
	return ret;
}
