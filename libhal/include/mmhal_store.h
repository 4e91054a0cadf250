/* SPDX-License-Identifier: MIT */
/*
 * mmhal_store.h - an A/B store of signed model files and of versioned
 * sensor calibration parameters, updated so that a power cut at any point
 * leaves a loadable, verified model (Documentation/model-store.rst).
 *
 * Layout of the store directory DIR:
 *   DIR/state              the state (text, replaced atomically: written to
 *                          state.tmp, fsynced, renamed, the directory
 *                          fsynced)
 *   DIR/a/model.gguf(.sig) slot a: a model file and its signature
 *   DIR/b/model.gguf(.sig) slot b
 *   DIR/sensors/TYPE/N     version N of sensor type TYPE's parameters
 *   DIR/lock               flock()ed by an open store (one writer)
 *
 * Model life cycle: install copies a signed file into the inactive slot
 * and verifies it there (the slot is then "pending"); switch makes the
 * pending slot active and keeps the one it replaces as "previous" (a
 * trial); the trial ends with commit, explicit or after n_commit
 * successful requests (mmhal_store_report_success()), which drops the
 * previous slot and raises the store's minimum version to the active
 * one; or with a rollback: on request, on a failed request
 * (mmhal_store_report_failure()), on a failed health check, or when the
 * active model does not load (mmhal_store_load()).
 *
 * Sensor parameters: per sensor type (a name such as "camera", "imu",
 * "mic"), small files (at most MMHAL_STORE_SENSOR_MAX bytes) with a
 * version, each type with its own current and previous version, rolled
 * back on its own.
 *
 * Conventions: as mmhal.h. Functions return 0 or a negative errno and,
 * given (err, errlen), a one-line message naming what failed.
 * A store handle is used by one thread at a time.
 */
#ifndef MMHAL_STORE_H
#define MMHAL_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "mmhal.h"
#include "mmhal_model.h"

#ifdef __cplusplus
extern "C" {
#endif

struct mmhal_store;

#define MMHAL_STORE_SENSOR_MAX	65536
#define MMHAL_STORE_NAME_MAX	32	/* sensor type names, NUL included */

struct mmhal_store_params {
	uint32_t size;		/* sizeof(struct mmhal_store_params) */
	/* the 32-byte Ed25519 public key every model must be signed by */
	const unsigned char *trusted_key;
	/* successful requests that commit a switched model; <= 0: 8 */
	int n_commit;
	/* 1: create DIR (and its layout) when it does not exist */
	int create;
	/* how long an operation waits for DIR/lock held by another process
	 * before it fails with -ETIMEDOUT; <= 0: 10000 (at most 3600000) */
	int lock_timeout_ms;
	uint32_t reserved[7];	/* zero */
};

MMHAL_API struct mmhal_store_params mmhal_store_default_params(void);

/* Reads a public key file written by `mmgguf keygen` (KEY.pub). */
MMHAL_API int mmhal_store_read_key(const char *path, unsigned char key[32],
				   char *err, size_t errlen);

MMHAL_API int mmhal_store_open(const char *dir,
			       const struct mmhal_store_params *params,
			       struct mmhal_store **out, char *err,
			       size_t errlen);
MMHAL_API void mmhal_store_close(struct mmhal_store *store);

struct mmhal_store_slot {
	int valid;		/* 1: the slot holds a model */
	char name[64];		/* the signed name */
	uint64_t version;	/* the signed version */
	uint64_t size;
	char hash[65];		/* BLAKE2b-256, hex */
};

struct mmhal_store_sensor {
	char type[MMHAL_STORE_NAME_MAX];
	uint64_t version;	/* current; 0: none */
	uint64_t previous;	/* 0: none */
};

#define MMHAL_STORE_MAX_SENSORS	16

struct mmhal_store_status {
	uint32_t size;		/* set by the caller: sizeof() */
	char active;		/* 'a', 'b', or 0: no model installed */
	char previous;		/* during a trial: the slot switched from */
	char pending;		/* installed and verified, not switched to */
	int trial;		/* 1: switched, not committed */
	int successes;		/* requests served in the trial */
	int n_commit;
	uint64_t min_version;	/* no model below it is installed or loaded */
	struct mmhal_store_slot slot[2];	/* a, b */
	int n_sensors;
	struct mmhal_store_sensor sensor[MMHAL_STORE_MAX_SENSORS];
	/*
	 * The active slot's signature file read now (key checked): 0 when
	 * it names the version, size and hash the state recorded, so that
	 * mmhal_store_load() loads that file (its content is checked by the
	 * load); else -errno: -EBADMSG another file (replayed or copied
	 * in), -ENOKEY missing, -EKEYREJECTED another key or altered.
	 * 0 when no model is active.
	 */
	int32_t active_sig;
	uint32_t reserved[7];
	/* ---- end of MMHAL_STORE_STATUS_SIZE_VER0 ---- */
	/*
	 * The active slot verified now as mmhal_store_load() verifies it
	 * before loading: the signature with the store's key and the load's
	 * minimum version, the file's content (its fs-verity digest when it
	 * has fs-verity on, else read and hashed), and the result against
	 * what the state recorded for the slot. So what status reports is
	 * what a load loads, whoever rewrote the state file.
	 * active_verify: 0, or the -errno a load fails with (verify_error
	 * says why); 0 with verified.valid 0 when no model is active.
	 * verified: the slot's files as their verified signature describes
	 * them. verified_how: "fs-verity" (a load maps the file, each page
	 * checked by the kernel) or "hash" (a load reads a private copy).
	 */
	int32_t active_verify;
	char verified_slot;		/* 'a', 'b', or 0 */
	char verified_how[15];
	struct mmhal_store_slot verified;
	char verify_error[256];
	uint32_t reserved2[8];
};

/* sizeof(struct mmhal_store_status) before the verified fields */
#define MMHAL_STORE_STATUS_SIZE_VER0 \
	offsetof(struct mmhal_store_status, active_verify)

/*
 * The state and the active slot checked now. out->size: sizeof(*out), or
 * MMHAL_STORE_STATUS_SIZE_VER0 (no verification: the fields after it are
 * not written); -EINVAL otherwise. Verifying reads the active model file
 * (one pass, hashed) unless it has fs-verity on.
 */
MMHAL_API int mmhal_store_status(const struct mmhal_store *store,
				 struct mmhal_store_status *out);

/*
 * Copies path and path.sig into the inactive slot, verifies the copy
 * (signature, hash, version >= the active model's and >= min_version) and
 * records it as pending. -EBUSY during a trial (commit or roll back first).
 */
MMHAL_API int mmhal_store_install(struct mmhal_store *store, const char *path,
				  char *err, size_t errlen);
/* The pending slot becomes active; the active one is kept as previous. */
MMHAL_API int mmhal_store_switch(struct mmhal_store *store, char *err,
				 size_t errlen);
/* Back to the previous slot (-ENOENT when there is none). */
MMHAL_API int mmhal_store_rollback(struct mmhal_store *store, char *err,
				   size_t errlen);
/* Ends a trial: keeps the active model, drops the previous one. */
MMHAL_API int mmhal_store_commit(struct mmhal_store *store, char *err,
				 size_t errlen);

/*
 * A request served by the active model: during a trial, the n_commit-th
 * success commits it. Return: 0, 1 when this call committed.
 */
MMHAL_API int mmhal_store_report_success(struct mmhal_store *store,
					 char *err, size_t errlen);
/* A failed request: during a trial, rolls back (returns 1); else 0. */
MMHAL_API int mmhal_store_report_failure(struct mmhal_store *store,
					 char *err, size_t errlen);

/*
 * Loads the active model with the store's key and minimum version (params
 * as mmhal_model_load(); its trusted_key and min_version are the store's).
 * When it does not load during a trial, the store rolls back and loads
 * the previous model (*rolled_back, if not NULL, is set to 1).
 */
MMHAL_API int mmhal_store_load(struct mmhal_store *store,
			       const struct mmhal_model_params *params,
			       struct mmhal_model **out, int *rolled_back,
			       char *err, size_t errlen);
/* The active model's file (verified by mmhal_store_load(), not here). */
MMHAL_API int mmhal_store_model_path(const struct mmhal_store *store,
				     char *buf, size_t len);

/*
 * Health check of the active model: loads it (verified) and decodes one
 * token, whose logits must be finite. On failure during a trial the store
 * rolls back (return 1 after a rollback; the message says why);
 * otherwise the error.
 */
MMHAL_API int mmhal_store_health(struct mmhal_store *store, char *err,
				 size_t errlen);

/*
 * Sensor parameters. install copies path (<= MMHAL_STORE_SENSOR_MAX bytes)
 * as the type's next version (current + 1, or *version when not NULL and
 * *version > 0, which must be above the current); the current one becomes
 * the previous. rollback makes the previous current again (the rolled
 * back version is removed). read gives the current parameters, checked
 * against the hash the state recorded.
 */
MMHAL_API int mmhal_store_sensor_install(struct mmhal_store *store,
					 const char *type, const char *path,
					 uint64_t *version, char *err,
					 size_t errlen);
MMHAL_API int mmhal_store_sensor_rollback(struct mmhal_store *store,
					  const char *type, char *err,
					  size_t errlen);
MMHAL_API int mmhal_store_sensor_read(const struct mmhal_store *store,
				      const char *type, void *buf, size_t cap,
				      size_t *len, uint64_t *version,
				      char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* MMHAL_STORE_H */
