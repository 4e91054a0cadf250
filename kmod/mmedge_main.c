// SPDX-License-Identifier: GPL-2.0
/*
 * mmedge: a hub for DMA buffers shared by sensors, NPU and GPU.
 *
 * This file holds the platform driver, the character device and the
 * per-file context. On a board an instance probes from a device-tree node
 * (compatible "mmedge,hub"); elsewhere the nr_virtual module parameter
 * creates virtual instances.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/dma-mapping.h>
#include <linux/err.h>
#include <linux/fs.h>
#include <linux/idr.h>
#include <linux/module.h>
#include <linux/of.h>
#include <linux/platform_device.h>
#include <linux/property.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/mmedge.h>

#include "mmedge_buf.h"
#include "mmedge_chan.h"
#include "mmedge_compat.h"
#include "mmedge_drv.h"
#include "mmedge_import.h"
#include "mmedge_limits.h"
#include "mmedge_nl.h"

#define MMEDGE_MAX_VIRTUAL	4

static int nr_virtual = -1;
module_param(nr_virtual, int, 0444);
MODULE_PARM_DESC(nr_virtual,
		 "Virtual instances to create: -1 = one if the device tree has no mmedge node (default), 0..4 = that many");

static dev_t mmedge_devt;

static struct class *mmedge_class;
static DEFINE_IDA(mmedge_ida);
static struct platform_device *mmedge_vdevs[MMEDGE_MAX_VIRTUAL];

static int mmedge_open(struct inode *inode, struct file *file)
{
	struct mmedge_dev *mdev = container_of(inode->i_cdev,
					       struct mmedge_dev, cdev);
	struct mmedge_file *mf;

	mf = kzalloc(sizeof(*mf), GFP_KERNEL_ACCOUNT);
	if (!mf)
		return -ENOMEM;

	down_read(&mdev->lock);
	if (!mdev->alive) {
		up_read(&mdev->lock);
		kfree(mf);
		return -ENODEV;
	}
	get_device(&mdev->dev);
	up_read(&mdev->lock);

	kref_init(&mf->ref);
	mf->mdev = mdev;
	mutex_init(&mf->imports_lock);
	xa_init_flags(&mf->imports, XA_FLAGS_ALLOC1);
	file->private_data = mf;
	return nonseekable_open(inode, file);
}

static int mmedge_release(struct inode *inode, struct file *file)
{
	struct mmedge_file *mf = file->private_data;

	/* Channels and imports end with the file; buffers may keep the
	 * context alive.
	 */
	mmedge_file_destroy_chans(mf);
	mmedge_file_release_imports(mf);
	mmedge_file_put(mf);
	return 0;
}

static __poll_t mmedge_poll(struct file *file, poll_table *wait)
{
	return mmedge_chan_poll(file->private_data, file, wait);
}

static const struct file_operations mmedge_fops = {
	.owner = THIS_MODULE,
	.open = mmedge_open,
	.release = mmedge_release,
	.poll = mmedge_poll,
	.unlocked_ioctl = mmedge_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
};

static ssize_t virtual_show(struct device *dev, struct device_attribute *attr,
			    char *buf)
{
	return sysfs_emit(buf, "%d\n", to_mmedge_dev(dev)->virtual);
}
static DEVICE_ATTR_RO(virtual);

static ssize_t api_version_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n", MMEDGE_API_VERSION);
}
static DEVICE_ATTR_RO(api_version);

/* The DMA limits importers' tables must respect (mmedge_dma_limits()). */
static ssize_t dma_max_segment_show(struct device *dev,
				    struct device_attribute *attr, char *buf)
{
	struct mmedge_dev *mdev = to_mmedge_dev(dev);

	return sysfs_emit(buf, "%u\n", mdev->dma_max_seg);
}
static DEVICE_ATTR_RO(dma_max_segment);

static ssize_t dma_segment_boundary_show(struct device *dev,
					 struct device_attribute *attr,
					 char *buf)
{
	struct mmedge_dev *mdev = to_mmedge_dev(dev);

	return sysfs_emit(buf, "%#lx\n", mdev->dma_boundary);
}
static DEVICE_ATTR_RO(dma_segment_boundary);

static struct attribute *mmedge_dev_attrs[] = {
	&dev_attr_virtual.attr,
	&dev_attr_api_version.attr,
	&dev_attr_dma_max_segment.attr,
	&dev_attr_dma_segment_boundary.attr,
	NULL,
};

static const struct attribute_group mmedge_dev_group = {
	.attrs = mmedge_dev_attrs,
};

static ssize_t buffers_show(struct device *dev, struct device_attribute *attr,
			    char *buf)
{
	return sysfs_emit(buf, "%d\n", atomic_read(&to_mmedge_dev(dev)->nr_bufs));
}
static DEVICE_ATTR_RO(buffers);

static ssize_t buffer_bytes_show(struct device *dev,
				 struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%lld\n",
			  atomic64_read(&to_mmedge_dev(dev)->buf_bytes));
}
static DEVICE_ATTR_RO(buffer_bytes);

static ssize_t imports_show(struct device *dev, struct device_attribute *attr,
			    char *buf)
{
	return sysfs_emit(buf, "%d\n",
			  atomic_read(&to_mmedge_dev(dev)->nr_imports));
}
static DEVICE_ATTR_RO(imports);

static ssize_t mem_used_show(struct device *dev, struct device_attribute *attr,
			     char *buf)
{
	return sysfs_emit(buf, "%lld\n", atomic64_read(&mmedge_mem_used));
}
static DEVICE_ATTR_RO(mem_used);

static ssize_t arb_ns_per_segment_show(struct device *dev,
				       struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n",
			  mmedge_engine_arb_ns(&to_mmedge_dev(dev)->eng));
}
static DEVICE_ATTR_RO(arb_ns_per_segment);

/*
 * The dmaengine back end: segments its DMA channel moved, those of them
 * moved straight from a copy job's source buffer (no bounce), and the
 * most that were in flight together (all 0 on the soft engine).
 */
static ssize_t dma_segments_show(struct device *dev,
				 struct device_attribute *attr, char *buf)
{
	unsigned int inflight_max;
	u64 segments, direct;

	mmedge_dmaeng_stats(&to_mmedge_dev(dev)->eng.dmaeng, &segments,
			    &direct, &inflight_max);
	return sysfs_emit(buf, "%llu\n", segments);
}
static DEVICE_ATTR_RO(dma_segments);

static ssize_t dma_direct_segments_show(struct device *dev,
					struct device_attribute *attr,
					char *buf)
{
	unsigned int inflight_max;
	u64 segments, direct;

	mmedge_dmaeng_stats(&to_mmedge_dev(dev)->eng.dmaeng, &segments,
			    &direct, &inflight_max);
	return sysfs_emit(buf, "%llu\n", direct);
}
static DEVICE_ATTR_RO(dma_direct_segments);

static ssize_t dma_inflight_max_show(struct device *dev,
				     struct device_attribute *attr, char *buf)
{
	unsigned int inflight_max;
	u64 segments, direct;

	mmedge_dmaeng_stats(&to_mmedge_dev(dev)->eng.dmaeng, &segments,
			    &direct, &inflight_max);
	return sysfs_emit(buf, "%u\n", inflight_max);
}
static DEVICE_ATTR_RO(dma_inflight_max);

/* engine_rt: segments moved under SCHED_FIFO, runs that fell back. */
static ssize_t engine_rt_segments_show(struct device *dev,
				       struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%lld\n",
			  atomic64_read(&to_mmedge_dev(dev)->eng.rt_segments));
}
static DEVICE_ATTR_RO(engine_rt_segments);

static ssize_t engine_rt_fallbacks_show(struct device *dev,
					struct device_attribute *attr,
					char *buf)
{
	return sysfs_emit(buf, "%lld\n",
			  atomic64_read(&to_mmedge_dev(dev)->eng.rt_fallbacks));
}
static DEVICE_ATTR_RO(engine_rt_fallbacks);

/* /sys/class/mmedge/mmedgeN/stats/: live counters of this instance. */
static struct attribute *mmedge_stats_attrs[] = {
	&dev_attr_arb_ns_per_segment.attr,
	&dev_attr_dma_direct_segments.attr,
	&dev_attr_dma_inflight_max.attr,
	&dev_attr_dma_segments.attr,
	&dev_attr_engine_rt_fallbacks.attr,
	&dev_attr_engine_rt_segments.attr,
	&dev_attr_buffers.attr,
	&dev_attr_buffer_bytes.attr,
	&dev_attr_imports.attr,
	&dev_attr_mem_used.attr,
	NULL,
};

static const struct attribute_group mmedge_stats_group = {
	.name = "stats",
	.attrs = mmedge_stats_attrs,
};

static const struct attribute_group *mmedge_dev_groups[] = {
	&mmedge_dev_group,
	&mmedge_stats_group,
	NULL,
};

/*
 * /sys/kernel/debug/mmedge/mmedgeN/channels: every channel's config and
 * stats, from the same accessor the ioctls and netlink use.
 */
static int mmedge_debugfs_channels_show(struct seq_file *m, void *unused)
{
	struct mmedge_dev *mdev = m->private;
	struct mmedge_chan_info *ci;
	unsigned int pos, b;

	ci = kzalloc(sizeof(*ci), GFP_KERNEL);
	if (!ci)
		return -ENOMEM;
	seq_puts(m, "id name dir src weight class cap bytes segments frames dropped errors bw_ewma wait_hist\n");
	for (pos = 0; !mmedge_engine_chan_info(&mdev->eng, pos, 0, NULL, ci);
	     pos++) {
		seq_printf(m, "%u %s %u %u %u %u %llu %llu %llu %llu %llu %llu %llu",
			   ci->id, ci->name, ci->dir, ci->src_type, ci->weight,
			   ci->class, ci->cap, ci->bytes, ci->segments,
			   ci->frames, ci->dropped, ci->errors, ci->bw);
		for (b = 0; b < MMEDGE_WAIT_BUCKETS; b++)
			seq_printf(m, "%c%llu", b ? ',' : ' ', ci->wait_hist[b]);
		seq_putc(m, '\n');
	}
	kfree(ci);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(mmedge_debugfs_channels);

static struct dentry *mmedge_debugfs_root;

static void mmedge_dev_release(struct device *dev)
{
	struct mmedge_dev *mdev = to_mmedge_dev(dev);

	ida_free(&mmedge_ida, mdev->id);
	kfree(mdev);
}

/*
 * The hub's DMA limits: the longest DMA segment and the boundary no
 * segment may cross, which every table mapped for the device (imports,
 * mmedge buffers attached to it) must respect. From the device tree
 * (mmedge,dma-max-segment-size, mmedge,dma-segment-boundary) where it
 * says so, else from the memcpy DMA controller's device when the engine
 * has one, else MMEDGE_DMA_MAX_SEG and no boundary: the soft engine
 * copies with the CPU and has no segment limit of its own.
 */
static int mmedge_dma_limits(struct mmedge_dev *mdev)
{
	struct device *dev = &mdev->pdev->dev;
	struct device *ctl = mmedge_dmaeng_dev(&mdev->eng.dmaeng);
	u32 max_seg = MMEDGE_DMA_MAX_SEG;
	u64 boundary = ULONG_MAX;

	if (ctl) {
		max_seg = dma_get_max_seg_size(ctl);
		boundary = dma_get_seg_boundary(ctl);
	}
	device_property_read_u32(dev, "mmedge,dma-max-segment-size", &max_seg);
	device_property_read_u64(dev, "mmedge,dma-segment-boundary", &boundary);
	/* A boundary is a mask (2^n - 1) of at least a page. */
	if (max_seg < PAGE_SIZE || boundary > ULONG_MAX ||
	    boundary < PAGE_SIZE - 1 || (boundary & (boundary + 1))) {
		dev_err(dev, "bad DMA limits: max segment %u, boundary %#llx\n",
			max_seg, boundary);
		return -EINVAL;
	}
	/* Both return void from 6.11 on and warn without dma_parms. */
	if (!dev->dma_parms)
		return -EIO;
	dma_set_max_seg_size(dev, max_seg);
	dma_set_seg_boundary(dev, boundary);
	mdev->dma_max_seg = max_seg;
	mdev->dma_boundary = boundary;
	dev_dbg(dev, "DMA limits: max segment %u, boundary %#llx (%s)\n",
		max_seg, boundary, ctl ? dev_name(ctl) : "no controller");
	return 0;
}

static int mmedge_probe(struct platform_device *pdev)
{
	struct mmedge_dev *mdev;
	int ret;

	mdev = kzalloc(sizeof(*mdev), GFP_KERNEL);
	if (!mdev)
		return -ENOMEM;

	ret = ida_alloc_max(&mmedge_ida, MMEDGE_MAX_DEVS - 1, GFP_KERNEL);
	if (ret < 0) {
		dev_err(&pdev->dev, "no free instance number: %d\n", ret);
		goto err_free_mdev;
	}
	mdev->id = ret;
	mdev->pdev = pdev;
	mdev->dma_dev = &pdev->dev;
	mdev->virtual = !pdev->dev.of_node;
	init_rwsem(&mdev->lock);
	mdev->alive = true;

	ret = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (ret) {
		dev_err(&pdev->dev, "no usable DMA mask: %d\n", ret);
		goto err_free_id;
	}

	/*
	 * The device's DMA owner holds its memory-region (CMA), if any,
	 * for contiguous buffers, and outlives this binding for as long as
	 * buffers do (mmedge_buf.c).
	 */
	ret = mmedge_dma_owner_bind(&pdev->dev);
	if (ret) {
		dev_err(&pdev->dev, "cannot use memory-region: %d\n", ret);
		goto err_free_id;
	}

	/* From here on put_device() frees mdev and its id. */
	device_initialize(&mdev->dev);
	mdev->dev.class = mmedge_class;
	mdev->dev.parent = &pdev->dev;
	mdev->dev.devt = MKDEV(MAJOR(mmedge_devt), mdev->id);
	mdev->dev.groups = mmedge_dev_groups;
	mdev->dev.release = mmedge_dev_release;
	ret = dev_set_name(&mdev->dev, "mmedge%d", mdev->id);
	if (ret) {
		dev_err(&pdev->dev, "cannot name device: %d\n", ret);
		goto err_put_device;
	}

	ret = mmedge_engine_init(&mdev->eng, mdev);
	if (ret) {
		dev_err(&pdev->dev, "cannot start the DMA engine: %d\n", ret);
		goto err_put_device;
	}

	ret = mmedge_dma_limits(mdev);
	if (ret) {
		dev_err(&pdev->dev, "cannot set the DMA limits: %d\n", ret);
		goto err_stop_engine;
	}

	cdev_init(&mdev->cdev, &mmedge_fops);
	mdev->cdev.owner = THIS_MODULE;
	ret = cdev_device_add(&mdev->cdev, &mdev->dev);
	if (ret) {
		dev_err(&pdev->dev, "cannot add char device: %d\n", ret);
		goto err_stop_engine;
	}

	platform_set_drvdata(pdev, mdev);
	mdev->debugfs = debugfs_create_dir(dev_name(&mdev->dev),
					   mmedge_debugfs_root);
	debugfs_create_file("channels", 0444, mdev->debugfs, mdev,
			    &mmedge_debugfs_channels_fops);
	mmedge_nl_dev_add(mdev);
	dev_info(&pdev->dev, "%s instance /dev/%s, api %d\n",
		 mdev->virtual ? "virtual" : "hardware", dev_name(&mdev->dev),
		 MMEDGE_API_VERSION);
	return 0;

err_stop_engine:
	mmedge_engine_fini(&mdev->eng);
err_put_device:
	mmedge_dma_owner_unbind(&pdev->dev);
	put_device(&mdev->dev);
	return ret;

err_free_id:
	ida_free(&mmedge_ida, mdev->id);
err_free_mdev:
	kfree(mdev);
	return ret;
}

static void mmedge_remove(struct platform_device *pdev)
{
	struct mmedge_dev *mdev = platform_get_drvdata(pdev);

	mmedge_nl_dev_del(mdev);

	debugfs_remove_recursive(mdev->debugfs);

	/* Blocked dequeues hold the lock for read: wake them first. */
	mmedge_engine_wake_waiters(&mdev->eng);

	/* Open files keep mdev; make their ioctls fail from now on. */
	down_write(&mdev->lock);
	mdev->alive = false;
	mdev->pdev = NULL;
	up_write(&mdev->lock);

	cdev_device_del(&mdev->cdev, &mdev->dev);
	mmedge_engine_fini(&mdev->eng);
	/*
	 * Buffers and imports keep the device and its memory-region until
	 * they are freed; the binding's share goes now.
	 */
	mmedge_dma_owner_unbind(&pdev->dev);
	put_device(&mdev->dev);
}

static const struct of_device_id mmedge_of_match[] = {
	{ .compatible = "mmedge,hub" },
	{ }
};
MODULE_DEVICE_TABLE(of, mmedge_of_match);

static struct platform_driver mmedge_driver = {
	.probe = mmedge_probe,
#if MMEDGE_VOID_REMOVE
	.remove = mmedge_remove,
#else
	.remove_new = mmedge_remove,
#endif
	.driver = {
		.name = MMEDGE_DRV_NAME,
		.of_match_table = mmedge_of_match,
	},
};

static void mmedge_destroy_virtual(void)
{
	int i;

	for (i = MMEDGE_MAX_VIRTUAL - 1; i >= 0; i--) {
		platform_device_unregister(mmedge_vdevs[i]);
		mmedge_vdevs[i] = NULL;
	}
}

static int mmedge_create_virtual(void)
{
	struct device_node *np;
	int i, n = nr_virtual;

	if (n < 0) {
		np = of_find_compatible_node(NULL, NULL, "mmedge,hub");
		n = np ? 0 : 1;
		of_node_put(np);
	}

	for (i = 0; i < n; i++) {
		struct platform_device_info info = {
			.name = MMEDGE_DRV_NAME,
			.id = i,
			.dma_mask = DMA_BIT_MASK(64),
		};
		struct platform_device *pdev;

		pdev = platform_device_register_full(&info);
		if (IS_ERR(pdev)) {
			pr_err("cannot create virtual instance %d: %ld\n",
			       i, PTR_ERR(pdev));
			mmedge_destroy_virtual();
			return PTR_ERR(pdev);
		}
		mmedge_vdevs[i] = pdev;
	}
	return 0;
}

static int __init mmedge_init(void)
{
	int ret;

	if (!mmedge_limits_valid()) {
		pr_err("mem_limit_mb, file_mem_limit_mb, uid_mem_limit_mb and uid_chan_limit must be > 0\n");
		return -EINVAL;
	}
	if (nr_virtual < -1 || nr_virtual > MMEDGE_MAX_VIRTUAL) {
		pr_err("nr_virtual=%d out of range -1..%d\n",
		       nr_virtual, MMEDGE_MAX_VIRTUAL);
		return -EINVAL;
	}

	ret = mmedge_ioctl_init();
	if (ret) {
		pr_err("the ioctl table is inconsistent\n");
		return ret;
	}

	ret = alloc_chrdev_region(&mmedge_devt, 0, MMEDGE_MAX_DEVS,
				  MMEDGE_DRV_NAME);
	if (ret) {
		pr_err("cannot allocate char device numbers: %d\n", ret);
		return ret;
	}

	mmedge_class = mmedge_class_create(MMEDGE_DRV_NAME);
	if (IS_ERR(mmedge_class)) {
		ret = PTR_ERR(mmedge_class);
		pr_err("cannot create class: %d\n", ret);
		goto err_unregister_chrdev;
	}

	mmedge_debugfs_root = debugfs_create_dir(MMEDGE_DRV_NAME, NULL);

	ret = mmedge_nl_init();
	if (ret) {
		pr_err("cannot register the genetlink family: %d\n", ret);
		goto err_destroy_class;
	}

	ret = platform_driver_register(&mmedge_driver);
	if (ret) {
		pr_err("cannot register platform driver: %d\n", ret);
		goto err_nl_exit;
	}

	ret = mmedge_create_virtual();
	if (ret)
		goto err_unregister_driver;
	return 0;

err_unregister_driver:
	platform_driver_unregister(&mmedge_driver);
err_nl_exit:
	mmedge_nl_exit();
err_destroy_class:
	debugfs_remove_recursive(mmedge_debugfs_root);
	class_destroy(mmedge_class);
err_unregister_chrdev:
	unregister_chrdev_region(mmedge_devt, MMEDGE_MAX_DEVS);
	return ret;
}

static void __exit mmedge_exit(void)
{
	mmedge_destroy_virtual();
	platform_driver_unregister(&mmedge_driver);
	mmedge_nl_exit();
	debugfs_remove_recursive(mmedge_debugfs_root);
	class_destroy(mmedge_class);
	unregister_chrdev_region(mmedge_devt, MMEDGE_MAX_DEVS);
	ida_destroy(&mmedge_ida);
}

module_init(mmedge_init);
module_exit(mmedge_exit);

MODULE_DESCRIPTION("mmedge: zero-copy DMA hub for sensors, NPU and GPU");
MODULE_AUTHOR("The mmedge developers");
MODULE_LICENSE("GPL");
