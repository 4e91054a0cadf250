// SPDX-License-Identifier: GPL-2.0
/*
 * mmedge: ioctl lookup and argument validation.
 *
 * Everything here works on kernel copies of the arguments (and on the
 * ioctl table, which mmedge_ioctl.c holds) and has no side effects, so
 * the rules of uapi/linux/mmedge.h can be tested by KUnit.
 */

#include <linux/errno.h>
#include <linux/fcntl.h>
#include <linux/ioctl.h>
#include <linux/kernel.h>
#include <linux/minmax.h>
#include <linux/string.h>

#include "mmedge_arb.h"
#include "mmedge_src.h"
#include "mmedge_ts.h"
#include "mmedge_uapi.h"

static bool mmedge_all_zero(const u64 *v, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (v[i])
			return false;
	return true;
}

/**
 * mmedge_ioctl_lookup() - find the table entry for an ioctl command
 * @table: the ioctl table, indexed by _IOC_NR()
 * @n: its number of slots
 * @cmd: command as passed to unlocked_ioctl
 * @info: set to the entry on success
 *
 * The type and the direction bits must match the table; the size may
 * differ from the kernel's (see uapi/linux/mmedge.h).
 *
 * Return: 0 on success; -ENOTTY for a foreign type, an unknown number or
 * a wrong direction; -EINVAL for a size below the first published one.
 */
int mmedge_ioctl_lookup(const struct mmedge_ioctl_info *table, unsigned int n,
			unsigned int cmd, const struct mmedge_ioctl_info **info)
{
	const struct mmedge_ioctl_info *e;
	unsigned int nr = _IOC_NR(cmd);

	if (_IOC_TYPE(cmd) != MMEDGE_IOC_MAGIC || nr >= n)
		return -ENOTTY;
	e = &table[nr];
	if (!e->cmd || _IOC_DIR(cmd) != _IOC_DIR(e->cmd))
		return -ENOTTY;
	if (_IOC_SIZE(cmd) < e->min_size)
		return -EINVAL;
	*info = e;
	return 0;
}

/**
 * mmedge_ioctl_mask() - bit N set for every implemented ioctl number N
 * @table: the ioctl table, indexed by _IOC_NR()
 * @n: its number of slots
 *
 * Return: the mask reported in mmedge_caps.ioctls.
 */
u64 mmedge_ioctl_mask(const struct mmedge_ioctl_info *table, unsigned int n)
{
	u64 mask = 0;
	unsigned int i;

	for (i = 0; i < n && i < 64; i++)
		if (table[i].cmd)
			mask |= BIT_ULL(i);
	return mask;
}

/**
 * mmedge_ioctl_table_check() - is an ioctl table self-consistent?
 * @table: the table, indexed by _IOC_NR()
 * @n: its number of slots
 *
 * Every used slot holds a command of mmedge's type numbered where it
 * sits, whose kernel size is at least its first published size and a
 * multiple of 8 bytes, with a handler, a name and known flags.
 *
 * Return: 0, or -EINVAL at the first slot that is not.
 */
int mmedge_ioctl_table_check(const struct mmedge_ioctl_info *table,
			     unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		const struct mmedge_ioctl_info *e = &table[i];

		if (!e->cmd)
			continue;
		if (_IOC_NR(e->cmd) != i || _IOC_TYPE(e->cmd) != MMEDGE_IOC_MAGIC ||
		    _IOC_SIZE(e->cmd) < e->min_size || _IOC_SIZE(e->cmd) % 8 ||
		    !e->fn || !e->name || e->flags & ~MMEDGE_IOCTL_FLAGS_VALID)
			return -EINVAL;
	}
	return 0;
}

/**
 * mmedge_caps_check() - validate the input fields of a caps query
 * @caps: kernel copy of the user's structure
 *
 * Return: 0, or -EINVAL for unknown flags or non-zero reserved fields.
 */
int mmedge_caps_check(const struct mmedge_caps *caps)
{
	if (caps->flags & ~MMEDGE_CAPS_FLAGS_VALID)
		return -EINVAL;
	if (!mmedge_all_zero(caps->reserved, ARRAY_SIZE(caps->reserved)))
		return -EINVAL;
	return 0;
}

/**
 * mmedge_buf_alloc_check() - validate an allocation request
 * @a: kernel copy of the request
 * @max_size: largest buffer allowed (the per-file cap)
 * @page_shift: PAGE_SHIFT (a parameter so tests can vary it)
 * @alloc_size: set to the size rounded up to pages
 *
 * Return: 0; -EINVAL for size 0, a size that overflows when rounded,
 * unknown flags, an unknown cache mode, fd_flags other than O_CLOEXEC and
 * an access mode, non-zero reserved fields; -ENOMEM above @max_size.
 */
int mmedge_buf_alloc_check(const struct mmedge_buf_alloc *a, u64 max_size,
			   unsigned int page_shift, u64 *alloc_size)
{
	u64 mask = (1ULL << page_shift) - 1;

	if (!a->size || a->size > U64_MAX - mask)
		return -EINVAL;
	if (a->flags & ~MMEDGE_BUF_FLAGS_VALID)
		return -EINVAL;
	if ((a->flags & MMEDGE_BUF_CACHE_MASK) > MMEDGE_BUF_CACHE_UNCACHED)
		return -EINVAL;
	if (a->fd_flags & ~MMEDGE_BUF_FD_FLAGS_VALID)
		return -EINVAL;
	if ((a->fd_flags & O_ACCMODE) == O_ACCMODE)
		return -EINVAL;
	if (!mmedge_all_zero(a->reserved, ARRAY_SIZE(a->reserved)))
		return -EINVAL;
	*alloc_size = (a->size + mask) & ~mask;
	if (*alloc_size > max_size)
		return -ENOMEM;
	return 0;
}

/**
 * mmedge_buf_info_check() - validate the input fields of a buffer query
 * @info: kernel copy of the request
 *
 * Return: 0, or -EINVAL for non-zero flags, pad or reserved fields.
 */
int mmedge_buf_info_check(const struct mmedge_buf_info *info)
{
	if (info->flags || info->pad)
		return -EINVAL;
	if (!mmedge_all_zero(info->reserved, ARRAY_SIZE(info->reserved)))
		return -EINVAL;
	return 0;
}

/**
 * mmedge_buf_sync_check() - validate a ranged sync request
 * @s: kernel copy of the request
 * @buf_size: size of the buffer it names
 *
 * Return: 0, or -EINVAL for unknown flags, len 0, a range that overflows
 * or ends past @buf_size, non-zero reserved fields.
 */
int mmedge_buf_sync_check(const struct mmedge_buf_sync *s, u64 buf_size)
{
	if (s->flags & ~MMEDGE_BUF_SYNC_FLAGS_VALID)
		return -EINVAL;
	if (!(s->flags & MMEDGE_BUF_SYNC_RW))
		return -EINVAL;
	if (!s->len || s->offset > U64_MAX - s->len)
		return -EINVAL;
	if (s->offset + s->len > buf_size)
		return -EINVAL;
	if (!mmedge_all_zero(s->reserved, ARRAY_SIZE(s->reserved)))
		return -EINVAL;
	return 0;
}

/**
 * mmedge_buf_import_check() - validate the input fields of an import
 * @imp: kernel copy of the request
 *
 * Return: 0, or -EINVAL for non-zero flags, pad or reserved fields.
 */
int mmedge_buf_import_check(const struct mmedge_buf_import *imp)
{
	if (imp->flags || imp->pad)
		return -EINVAL;
	if (!mmedge_all_zero(imp->reserved, ARRAY_SIZE(imp->reserved)))
		return -EINVAL;
	return 0;
}

/**
 * mmedge_buf_release_check() - validate a release request
 * @rel: kernel copy of the request
 *
 * Return: 0; -EINVAL for non-zero flags, pad or reserved fields; -ENOENT
 * for an id that no import can have (0, above MMEDGE_MAX_IMPORTS).
 */
int mmedge_buf_release_check(const struct mmedge_buf_release *rel)
{
	if (rel->flags || rel->pad)
		return -EINVAL;
	if (!mmedge_all_zero(rel->reserved, ARRAY_SIZE(rel->reserved)))
		return -EINVAL;
	if (!rel->id || rel->id > MMEDGE_MAX_IMPORTS)
		return -ENOENT;
	return 0;
}

/**
 * mmedge_chan_create_check() - validate a channel creation request
 * @c: kernel copy of the request
 *
 * Everything but the privilege (CAP_SYS_NICE for a weight above the
 * default or the latency class) and the instance's state.
 *
 * Return: 0, or -EINVAL for an unknown dir, flags, pad, reserved or
 * sensor_pad set, a sensor clock offset or drift out of range or set on
 * a feed or copy channel, a bad name, a bad source config (feed, copy:
 * not all zero), weight/class/cap out of range (0 weight and segment
 * mean the defaults), a segment out of range or not a multiple of 64, an
 * unknown overrun policy (feed, copy: not 0).
 */
int mmedge_chan_create_check(const struct mmedge_chan_create *c)
{
	u32 weight = c->weight ? c->weight : MMEDGE_WEIGHT_DEFAULT;
	u32 segment = c->segment ? c->segment : MMEDGE_SEGMENT_DEFAULT;
	int ret;

	if (c->dir > MMEDGE_CHAN_COPY || c->flags || c->pad ||
	    c->reserved[0] || c->reserved[1] || c->sensor_pad)
		return -EINVAL;
	ret = mmedge_sclk_check(c->sensor_offset_ns, c->sensor_drift_ppb);
	if (ret)
		return ret;
	if (c->dir != MMEDGE_CHAN_CAPTURE &&
	    (c->sensor_offset_ns || c->sensor_drift_ppb))
		return -EINVAL;
	ret = mmedge_name_check(c->name, sizeof(c->name));
	if (ret)
		return ret;
	if (c->dir == MMEDGE_CHAN_CAPTURE)
		ret = mmedge_src_check(&c->src);
	else if (memchr_inv(&c->src, 0, sizeof(c->src)) || c->overrun)
		ret = -EINVAL;
	if (ret)
		return ret;
	ret = mmedge_arb_check_config(weight, c->class, c->cap);
	if (ret)
		return ret;
	if (segment < MMEDGE_SEGMENT_MIN || segment > MMEDGE_SEGMENT_MAX ||
	    segment % 64)
		return -EINVAL;
	if (c->overrun > MMEDGE_OVERRUN_DROP_OLDEST)
		return -EINVAL;
	return 0;
}

/**
 * mmedge_chan_config_check() - validate the fixed fields of a CHAN_CONFIG
 * @c: kernel copy of the request
 *
 * The settings themselves are checked against the channel
 * (mmedge_engine_apply()).
 *
 * Return: 0; -ENOENT for id 0; -EINVAL for reserved fields set.
 */
int mmedge_chan_config_check(const struct mmedge_chan_config *c)
{
	if (!c->id)
		return -ENOENT;
	if (!mmedge_all_zero(c->reserved, ARRAY_SIZE(c->reserved)))
		return -EINVAL;
	return 0;
}

/**
 * mmedge_chan_destroy_check() - validate a CHAN_DESTROY request
 * @d: kernel copy of the request
 *
 * Return: 0, or -EINVAL for flags or reserved set.
 */
int mmedge_chan_destroy_check(const struct mmedge_chan_destroy *d)
{
	if (d->flags || d->reserved)
		return -EINVAL;
	return 0;
}

/**
 * mmedge_qbuf_check() - validate a QBUF request on its own
 * @q: kernel copy of the request
 *
 * Return: 0, or -EINVAL for unknown flags, reserved set, src_fd set
 * without MMEDGE_QBUF_SRC.
 */
int mmedge_qbuf_check(const struct mmedge_qbuf *q)
{
	if (q->flags & ~MMEDGE_QBUF_FLAGS_VALID || q->reserved)
		return -EINVAL;
	if (!(q->flags & MMEDGE_QBUF_SRC) && q->src_fd)
		return -EINVAL;
	return 0;
}

/**
 * mmedge_qbuf_check_dir() - validate a QBUF request against its channel
 * @q: kernel copy of the request
 * @dir: the channel's direction, MMEDGE_CHAN_*
 *
 * A copy job needs MMEDGE_QBUF_SRC, the others must not have it; a
 * capture buffer takes no bytesused, a feed or copy job needs one.
 *
 * Return: 0 or -EINVAL.
 */
int mmedge_qbuf_check_dir(const struct mmedge_qbuf *q, u32 dir)
{
	bool has_src = q->flags & MMEDGE_QBUF_SRC;
	bool copy = dir == MMEDGE_CHAN_COPY;
	bool capture = dir == MMEDGE_CHAN_CAPTURE;

	if (has_src != copy || !q->bytesused != capture)
		return -EINVAL;
	return 0;
}

/**
 * mmedge_dqbuf_check() - validate a DQBUF request
 * @d: kernel copy of the request
 *
 * Return: 0, or -EINVAL for unknown flags, pad or reserved set.
 */
int mmedge_dqbuf_check(const struct mmedge_dqbuf *d)
{
	if (d->flags & ~MMEDGE_DQBUF_FLAGS_VALID || d->pad || d->reserved)
		return -EINVAL;
	return 0;
}

/**
 * mmedge_chan_stats_check() - validate a CHAN_STATS request
 * @st: kernel copy of the request
 *
 * Return: 0; -EINVAL for flags or reserved set; -ENOENT for id 0.
 */
int mmedge_chan_stats_check(const struct mmedge_chan_stats *st)
{
	if (st->flags || !mmedge_all_zero(st->reserved,
					  ARRAY_SIZE(st->reserved)))
		return -EINVAL;
	if (!st->id)
		return -ENOENT;
	return 0;
}

/**
 * mmedge_bus_config_check() - validate a BUS_CONFIG request
 * @b: kernel copy of the request
 *
 * The privilege to set (CAP_SYS_ADMIN) is the handler's.
 *
 * Return: 0, or -EINVAL for set not 0 or 1, flags or reserved set, and
 * when setting a bandwidth outside MMEDGE_BUS_MIN_BW..MMEDGE_BUS_MAX_BW.
 */
int mmedge_bus_config_check(const struct mmedge_bus_config *b)
{
	if (b->set > 1 || b->flags ||
	    !mmedge_all_zero(b->reserved, ARRAY_SIZE(b->reserved)))
		return -EINVAL;
	if (b->set && (b->bandwidth < MMEDGE_BUS_MIN_BW ||
		       b->bandwidth > MMEDGE_BUS_MAX_BW))
		return -EINVAL;
	return 0;
}

/**
 * mmedge_xts_check() - validate a cross-timestamp request
 * @x: kernel copy of the request
 * @usize: the size of the caller's structure
 *
 * Return: 0, or -EINVAL for n_samples 0 or above MMEDGE_XTS_MAX_SAMPLES,
 * unknown flags, pad or reserved set, chan set without MMEDGE_XTS_SENSOR
 * or 0 with it, MMEDGE_XTS_SENSOR with @usize below MMEDGE_XTS_SIZE_VER1.
 */
int mmedge_xts_check(const struct mmedge_xts *x, unsigned int usize)
{
	bool sensor = x->flags & MMEDGE_XTS_SENSOR;

	if (!x->n_samples || x->n_samples > MMEDGE_XTS_MAX_SAMPLES ||
	    x->flags & ~MMEDGE_XTS_FLAGS_VALID || x->pad ||
	    !mmedge_all_zero(x->reserved, ARRAY_SIZE(x->reserved)))
		return -EINVAL;
	if (sensor ? !x->chan : !!x->chan)
		return -EINVAL;
	if (sensor && usize < MMEDGE_XTS_SIZE_VER1)
		return -EINVAL;
	return 0;
}

/**
 * mmedge_range_clip() - the part of [@off, @off + @len) inside a segment
 * @seg_start: offset of the segment in the buffer
 * @seg_len: length of the segment
 * @off: start of the range in the buffer
 * @len: length of the range (no overflow: checked by the caller)
 *
 * Return: offset inside the segment and length of the overlap; len 0 if
 * they do not overlap.
 */
struct mmedge_range mmedge_range_clip(u64 seg_start, u64 seg_len, u64 off,
				      u64 len)
{
	struct mmedge_range r = { 0, 0 };
	u64 start = max(seg_start, off);
	u64 end = min(seg_start + seg_len, off + len);

	if (start < end) {
		r.off = start - seg_start;
		r.len = end - start;
	}
	return r;
}

/**
 * mmedge_charge() - account @bytes against a cap, all or nothing
 * @used: the counter
 * @bytes: bytes to add
 * @limit: the cap
 *
 * Safe against concurrent callers: the counter never exceeds @limit.
 *
 * Return: 0, or -ENOMEM if @used + @bytes would exceed @limit.
 */
int mmedge_charge(atomic64_t *used, u64 bytes, u64 limit)
{
	s64 old = atomic64_read(used);

	do {
		if (bytes > limit || (u64)old > limit - bytes)
			return -ENOMEM;
	} while (!atomic64_try_cmpxchg(used, &old, old + bytes));
	return 0;
}

/**
 * mmedge_uncharge() - give back what mmedge_charge() took
 * @used: the counter
 * @bytes: bytes to subtract
 */
void mmedge_uncharge(atomic64_t *used, u64 bytes)
{
	atomic64_sub(bytes, used);
}

/**
 * mmedge_name_check() - validate a channel name
 * @name: the bytes from userspace
 * @len: the field's size
 *
 * Return: 0 for an empty name or one of [a-z0-9_-] characters,
 * NUL-terminated within @len; -EINVAL otherwise.
 */
int mmedge_name_check(const u8 *name, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		u8 c = name[i];

		if (!c)
			break;
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-'))
			return -EINVAL;
	}
	if (i == len)
		return -EINVAL;
	for (; i < len; i++)
		if (name[i])
			return -EINVAL;
	return 0;
}
