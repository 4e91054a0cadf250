/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mmedge: imports of foreign dma-bufs (mmedge_import.c); the ioctls are
 * declared in mmedge_drv.h.
 */
#ifndef _MMEDGE_IMPORT_H
#define _MMEDGE_IMPORT_H

#include <linux/types.h>

struct dma_buf;
struct mmedge_file;

bool mmedge_import_lookup(struct mmedge_file *mf, struct dma_buf *dmabuf,
			  u32 *id, u32 *nr_segments);
void mmedge_file_release_imports(struct mmedge_file *mf);

#endif /* _MMEDGE_IMPORT_H */
