// SPDX-License-Identifier: MIT
/*
 * fault_shim.c - an LD_PRELOAD library that kills its process with SIGKILL
 * just before the Nth file system call on a given directory: the power
 * cut of store_test's crash tests.
 *
 *   MM_FAULT_DIR=DIR   only calls on paths under DIR, and on file
 *                      descriptors opened under DIR, are counted
 *   MM_FAULT_AT=N      SIGKILL before the Nth counted call (1-based);
 *                      0 or unset: count only
 *   MM_FAULT_LOG=FILE  at exit, the number of counted calls is written
 *                      to FILE (how many steps an operation has)
 *
 * Counted: open/openat/creat (any flags), write, pwrite, fsync,
 * fdatasync, ftruncate, rename/renameat, unlink/unlinkat, mkdir/mkdirat.
 * Reads are not counted (they change nothing a power cut could tear).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#define MAX_FD 4096

static char fault_dir[4096];
static size_t fault_dir_len;
static long fault_at, fault_n;
static unsigned char fd_in_dir[MAX_FD];

__attribute__((constructor)) static void fault_init(void)
{
	const char *d = getenv("MM_FAULT_DIR"), *n = getenv("MM_FAULT_AT");

	if (d && strlen(d) < sizeof(fault_dir)) {
		strcpy(fault_dir, d);
		fault_dir_len = strlen(d);
	}
	fault_at = n ? atol(n) : 0;
}

__attribute__((destructor)) static void fault_fini(void)
{
	const char *log = getenv("MM_FAULT_LOG");
	FILE *f;

	if (!log)
		return;
	f = fopen(log, "w");
	if (f) {
		fprintf(f, "%ld\n", fault_n);
		fclose(f);
	}
}

static int in_dir(const char *path)
{
	return fault_dir_len && path &&
	       !strncmp(path, fault_dir, fault_dir_len) &&
	       (path[fault_dir_len] == '/' || !path[fault_dir_len]);
}

static void step(void)
{
	if (++fault_n == fault_at)
		kill(getpid(), SIGKILL);
}

static void step_path(const char *path)
{
	if (in_dir(path))
		step();
}

static void step_fd(int fd)
{
	if (fd >= 0 && fd < MAX_FD && fd_in_dir[fd])
		step();
}

static void note_fd(int fd, const char *path)
{
	if (fd >= 0 && fd < MAX_FD)
		fd_in_dir[fd] = (unsigned char)in_dir(path);
}

#define REAL(name, ret, ...) \
	static ret (*real_##name)(__VA_ARGS__); \
	if (!real_##name) \
		real_##name = (ret (*)(__VA_ARGS__))dlsym(RTLD_NEXT, #name)

static mode_t va_mode(int flags, va_list ap)
{
	return (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
}

int open(const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;
	int fd;
	REAL(open, int, const char *, int, ...);

	va_start(ap, flags);
	mode = va_mode(flags, ap);
	va_end(ap);
	step_path(path);
	fd = real_open(path, flags, mode);
	note_fd(fd, path);
	return fd;
}

int open64(const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;
	int fd;
	REAL(open64, int, const char *, int, ...);

	va_start(ap, flags);
	mode = va_mode(flags, ap);
	va_end(ap);
	step_path(path);
	fd = real_open64(path, flags, mode);
	note_fd(fd, path);
	return fd;
}

int openat(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;
	int fd;
	REAL(openat, int, int, const char *, int, ...);

	va_start(ap, flags);
	mode = va_mode(flags, ap);
	va_end(ap);
	step_path(path);
	fd = real_openat(dirfd, path, flags, mode);
	note_fd(fd, path);
	return fd;
}

int creat(const char *path, mode_t mode)
{
	int fd;
	REAL(creat, int, const char *, mode_t);

	step_path(path);
	fd = real_creat(path, mode);
	note_fd(fd, path);
	return fd;
}

ssize_t write(int fd, const void *buf, size_t n)
{
	REAL(write, ssize_t, int, const void *, size_t);

	step_fd(fd);
	return real_write(fd, buf, n);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
	REAL(pwrite, ssize_t, int, const void *, size_t, off_t);

	step_fd(fd);
	return real_pwrite(fd, buf, n, off);
}

int fsync(int fd)
{
	REAL(fsync, int, int);

	step_fd(fd);
	return real_fsync(fd);
}

int fdatasync(int fd)
{
	REAL(fdatasync, int, int);

	step_fd(fd);
	return real_fdatasync(fd);
}

int ftruncate(int fd, off_t len)
{
	REAL(ftruncate, int, int, off_t);

	step_fd(fd);
	return real_ftruncate(fd, len);
}

int rename(const char *from, const char *to)
{
	REAL(rename, int, const char *, const char *);

	if (in_dir(from) || in_dir(to))
		step();
	return real_rename(from, to);
}

int renameat(int fd1, const char *from, int fd2, const char *to)
{
	REAL(renameat, int, int, const char *, int, const char *);

	if (in_dir(from) || in_dir(to))
		step();
	return real_renameat(fd1, from, fd2, to);
}

int unlink(const char *path)
{
	REAL(unlink, int, const char *);

	step_path(path);
	return real_unlink(path);
}

int unlinkat(int dirfd, const char *path, int flags)
{
	REAL(unlinkat, int, int, const char *, int);

	step_path(path);
	return real_unlinkat(dirfd, path, flags);
}

int mkdir(const char *path, mode_t mode)
{
	REAL(mkdir, int, const char *, mode_t);

	step_path(path);
	return real_mkdir(path, mode);
}

int close(int fd)
{
	REAL(close, int, int);

	if (fd >= 0 && fd < MAX_FD)
		fd_in_dir[fd] = 0;
	return real_close(fd);
}
