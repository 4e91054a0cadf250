/* SPDX-License-Identifier: MIT */
/*
 * mm_file.h - libmmhal's one way to replace a file durably: the new
 * content goes to PATH.tmp.PID (the writer's own name, never followed
 * through a link), is synced and closed, renamed over PATH, and PATH's
 * directory synced, so that a crash leaves the old file or the new one,
 * never a part. Used by the model store, calibration files, signatures
 * and saved sessions.
 */
#ifndef MM_FILE_H
#define MM_FILE_H

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* All @n bytes of @buf to @fd (EINTR retried); 0 or -errno (-EIO: 0 written). */
static inline int mm_write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;

	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		if (w == 0)
			return -EIO;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Syncs directory @dir, so that a rename in it lasts. 0 or -errno. */
static inline int mm_fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	if (fsync(fd))
		ret = -errno;
	close(fd);
	return ret;
}

/* PATH.tmp.PID into @tmp; -ENAMETOOLONG when it does not fit. */
static inline int mm_file_tmp_name(char *tmp, size_t len, const char *path)
{
	int n = snprintf(tmp, len, "%s.tmp.%d", path, (int)getpid());

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Creates the temporary file @tmp for writing (truncated, no link). */
static inline int mm_file_tmp_open(const char *tmp, mode_t mode)
{
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
			   O_CLOEXEC, mode);

	return fd < 0 ? -errno : fd;
}

/*
 * Makes @tmp, written and closed by the caller (who synced it: see
 * mm_file_sync_close()), the file @path: renamed over it, and the
 * directory synced. @tmp is removed when the rename fails. 0 or -errno.
 */
static inline int mm_file_commit(const char *tmp, const char *path)
{
	char dir[4096];

	if (rename(tmp, path)) {
		int ret = -errno;

		unlink(tmp);
		return ret;
	}
	if (snprintf(dir, sizeof(dir), "%s", path) >= (int)sizeof(dir))
		return -ENAMETOOLONG;
	return mm_fsync_dir(dirname(dir));
}

/* fsync and close @fd; 0 or the first -errno. */
static inline int mm_file_sync_close(int fd)
{
	int ret = fsync(fd) ? -errno : 0;

	if (close(fd) && !ret)
		ret = -errno;
	return ret;
}

/*
 * The whole replacement of @path by @n bytes of @buf (mode @mode for a
 * new file). 0 or -errno; on failure @path is as it was and no
 * temporary file is left.
 */
static inline int mm_file_put(const char *path, const void *buf, size_t n,
			      mode_t mode)
{
	char tmp[4096];
	int fd, ret;

	ret = mm_file_tmp_name(tmp, sizeof(tmp), path);
	if (ret)
		return ret;
	fd = mm_file_tmp_open(tmp, mode);
	if (fd < 0)
		return fd;
	ret = mm_write_all(fd, buf, n);
	if (ret) {
		close(fd);
		unlink(tmp);
		return ret;
	}
	ret = mm_file_sync_close(fd);
	if (ret) {
		unlink(tmp);
		return ret;
	}
	return mm_file_commit(tmp, path);
}

#endif /* MM_FILE_H */
