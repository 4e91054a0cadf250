/* SPDX-License-Identifier: MIT */
/*
 * tfile.h - file helpers shared by the signing and model store tests.
 */
#ifndef MM_TFILE_H
#define MM_TFILE_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/types.h>
#include <unistd.h>

/* Flip the low bit of the byte at @off of @path (a tampered file). */
static inline int flip_byte(const char *path, off_t off)
{
	int fd = open(path, O_RDWR);
	uint8_t b;
	int ret = 0;

	if (fd < 0)
		return -errno;
	if (pread(fd, &b, 1, off) != 1)
		ret = -EIO;
	b ^= 0x01;
	if (!ret && pwrite(fd, &b, 1, off) != 1)
		ret = -EIO;
	close(fd);
	return ret;
}

#endif
