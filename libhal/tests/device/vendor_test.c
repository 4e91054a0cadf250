// SPDX-License-Identifier: MIT
/*
 * mmhal_vendor_test - a vendor's V4L2 buffers through libmmhal
 *
 *	mmhal_vendor_test [--mmgguf MMGGUF] [DEVICE]
 *
 * vivid (the V4L2 test driver) stands for a vendor's camera: it captures
 * NV12 into buffers it allocates (MMAP), which are exported as dma-bufs
 * (VIDIOC_EXPBUF) and imported into mmedge with mmhal_buf_import(). Each
 * captured frame then goes through mmedge's DMA engine: a copy channel
 * moves it into an mmedge buffer (arbitrated, timestamped: the in-band
 * record and the dequeue agree, the stamps are ordered after vivid's
 * capture and between the calls, the bytes equal vivid's), and a feed
 * channel feeds it to the device's sink, whose CRC-32 must be the CRC of
 * the frame's bytes read through vivid's own mapping. With --mmgguf, a
 * tiny model and vision mmproj are generated (mmgguf gen) and the copied
 * frame is encoded straight from the mmedge buffer's mapping; the
 * embeddings must equal those of the same frame encoded from vivid's
 * mapping. DEVICE defaults to
 * /dev/mmedge0. Prints TAP; skips when vivid is not loaded. Meant to run
 * inside the test VM.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/videodev2.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <math.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mmhal.h"
#include "mmhal_model.h"
#include "tests/tap.h"

#define NBUF		4	/* V4L2 buffers */
#define NFRAMES		8	/* frames taken through mmedge */
#define WAIT_MS		5000

static const char *dev_path = MMHAL_DEFAULT_DEV;
static const char *mmgguf;
static char model_dir[64];
static struct mmhal_model *model;
static struct mmhal_mmproj *proj;
static struct mmhal_dev *dev;
static int video = -1;
static struct v4l2_format fmt;
static unsigned int nbuf;

struct vbuf {
	void *map;		/* vivid's own mapping (the reference) */
	size_t len;
	int dmabuf;		/* VIDIOC_EXPBUF */
	struct mmhal_buf *imp;	/* imported into mmedge */
};

static struct vbuf vb[NBUF];

/* The zlib / IEEE 802.3 CRC-32, bit by bit. */
static uint32_t crc32_ieee(const uint8_t *p, size_t len)
{
	uint32_t crc = ~0U;
	size_t i;
	int k;

	for (i = 0; i < len; i++) {
		crc ^= p[i];
		for (k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320U & -(crc & 1));
	}
	return ~crc;
}

static uint64_t now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int xioctl(int fd, unsigned long req, void *arg)
{
	int ret;

	do {
		ret = ioctl(fd, req, arg);
	} while (ret < 0 && errno == EINTR);
	return ret < 0 ? -errno : ret;
}

static int open_vivid_capture(void)
{
	struct v4l2_capability cap;
	char path[32];
	int i, fd;

	for (i = 0; i < 64; i++) {
		uint32_t c;

		snprintf(path, sizeof(path), "/dev/video%d", i);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		memset(&cap, 0, sizeof(cap));
		if (xioctl(fd, VIDIOC_QUERYCAP, &cap) == 0 &&
		    !strcmp((char *)cap.driver, "vivid")) {
			c = (cap.capabilities & V4L2_CAP_DEVICE_CAPS) ?
			    cap.device_caps : cap.capabilities;
			if ((c & V4L2_CAP_VIDEO_CAPTURE) &&
			    (c & V4L2_CAP_STREAMING))
				return fd;
		}
		close(fd);
	}
	return -1;
}

static int spawn(char *const argv[])
{
	pid_t pid = fork();
	int st;

	if (pid < 0)
		return -1;
	if (!pid) {
		execv(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* A tiny generated model and vision mmproj (with --mmgguf). */
static void test_model(void)
{
	struct mmhal_model_params mp = mmhal_model_default_params();
	struct mmhal_mmproj_params pp = mmhal_mmproj_default_params();
	char mpath[96], ppath[96], err[512];
	int ret;

	if (!mmgguf)
		SKIP("no --mmgguf: the frame is not encoded");
	snprintf(model_dir, sizeof(model_dir), "/tmp/mmhal-vendor-XXXXXX");
	if (!mkdtemp(model_dir))
		FAIL("mkdtemp: %s", strerror(errno));
	snprintf(mpath, sizeof(mpath), "%s/model.gguf", model_dir);
	snprintf(ppath, sizeof(ppath), "%s/mmproj.gguf", model_dir);
	{
		char *gm[] = { (char *)mmgguf, "gen", "--shape", "tiny",
			       "--tokenizer", "smolvlm", "--type", "f32", "-o",
			       mpath, NULL };
		char *gp[] = { (char *)mmgguf, "gen", "--vision", "tiny",
			       "--type", "q8_0", "-o", ppath, NULL };

		if (spawn(gm) || spawn(gp))
			FAIL("mmgguf gen failed");
	}
	ret = mmhal_model_load(mpath, &mp, &model, err, sizeof(err));
	if (ret)
		FAIL("%s: %s", mpath, err);
	ret = mmhal_mmproj_load(ppath, model, &pp, &proj, err, sizeof(err));
	if (ret)
		FAIL("%s: %s", ppath, err);
	unlink(mpath);
	unlink(ppath);
	rmdir(model_dir);
}

/* An NV12 frame of the vivid format at @p, read in place. */
static struct mmhal_image nv12_at(const void *p)
{
	struct mmhal_image img;

	memset(&img, 0, sizeof(img));
	img.format = MMHAL_IMAGE_NV12;
	img.width = fmt.fmt.pix.width;
	img.height = fmt.fmt.pix.height;
	img.plane[0] = p;
	img.plane[1] = (const uint8_t *)p +
		       (size_t)fmt.fmt.pix.bytesperline * fmt.fmt.pix.height;
	img.stride[0] = fmt.fmt.pix.bytesperline;
	img.stride[1] = fmt.fmt.pix.bytesperline;
	return img;
}

/* Encodes @img; the embeddings (malloc'ed) and their count, or NULL. */
static float *encode(const struct mmhal_image *img, size_t *n,
		     struct mmhal_chunk_info *info)
{
	struct mmhal_chunk *chunk = NULL;
	char err[256];
	float *e = NULL;
	int ret;

	*n = 0;
	ret = mmhal_encode_image(proj, img, &chunk, err, sizeof(err));
	if (ret) {
		tap_diag("mmhal_encode_image: %s", err);
		return NULL;
	}
	memset(info, 0, sizeof(*info));
	info->size = sizeof(*info);
	if (!mmhal_chunk_info(chunk, info) && info->n_embd_rows > 0 &&
	    info->n_embd > 0) {
		*n = (size_t)info->n_embd_rows * (size_t)info->n_embd;
		e = malloc(*n * sizeof(*e));
		if (e)
			memcpy(e, mmhal_chunk_embd(chunk), *n * sizeof(*e));
	}
	mmhal_chunk_free(chunk);
	return e;
}

static void test_open(void)
{
	int ret = mmhal_dev_open(dev_path, &dev);

	if (ret < 0) {
		tap_diag("mmhal_dev_open(%s): %s", dev_path,
			 mmhal_strerror(ret));
		BAIL_OUT("cannot open the device");
	}
	video = open_vivid_capture();
	if (video < 0)
		SKIP("no vivid capture node (modprobe vivid)");
}

/* NV12 (a format the model path reads), small, MMAP, exported, imported. */
static void test_setup_vivid(void)
{
	struct v4l2_requestbuffers rb;
	struct v4l2_exportbuffer eb;
	struct v4l2_buffer b;
	unsigned int i;
	int ret;

	if (video < 0)
		SKIP("no vivid");
	memset(&fmt, 0, sizeof(fmt));
	fmt.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
	CHECK_INT(xioctl(video, VIDIOC_G_FMT, &fmt), 0);
	fmt.fmt.pix.pixelformat = V4L2_PIX_FMT_NV12;
	fmt.fmt.pix.width = 320;
	fmt.fmt.pix.height = 180;
	fmt.fmt.pix.field = V4L2_FIELD_NONE;
	CHECK_INT(xioctl(video, VIDIOC_S_FMT, &fmt), 0);
	if (fmt.fmt.pix.pixelformat != V4L2_PIX_FMT_NV12)
		FAIL("vivid gave no NV12");
	tap_diag("vivid: %ux%u NV12, bytesperline %u, sizeimage %u",
		 fmt.fmt.pix.width, fmt.fmt.pix.height,
		 fmt.fmt.pix.bytesperline, fmt.fmt.pix.sizeimage);

	memset(&rb, 0, sizeof(rb));
	rb.count = NBUF;
	rb.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
	rb.memory = V4L2_MEMORY_MMAP;
	CHECK_INT(xioctl(video, VIDIOC_REQBUFS, &rb), 0);
	if (rb.count < 2)
		FAIL("vivid gave %u buffers", rb.count);
	nbuf = rb.count < NBUF ? rb.count : NBUF;
	for (i = 0; i < nbuf; i++) {
		memset(&b, 0, sizeof(b));
		b.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
		b.memory = V4L2_MEMORY_MMAP;
		b.index = i;
		CHECK_INT(xioctl(video, VIDIOC_QUERYBUF, &b), 0);
		vb[i].len = b.length;
		vb[i].map = mmap(NULL, b.length, PROT_READ, MAP_SHARED, video,
				 b.m.offset);
		if (vb[i].map == MAP_FAILED)
			FAIL("mmap of V4L2 buffer %u failed", i);
		memset(&eb, 0, sizeof(eb));
		eb.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
		eb.index = i;
		eb.flags = O_RDWR | O_CLOEXEC;
		CHECK_INT(xioctl(video, VIDIOC_EXPBUF, &eb), 0);
		vb[i].dmabuf = eb.fd;
		ret = mmhal_buf_import(dev, eb.fd, &vb[i].imp);
		if (ret < 0)
			FAIL("mmhal_buf_import of V4L2 buffer %u: %s", i,
			     mmhal_strerror(ret));
		CHECK(mmhal_buf_size(vb[i].imp) >= fmt.fmt.pix.sizeimage);
		CHECK(mmhal_buf_fd(vb[i].imp) != eb.fd);
		/* Twice through the same handle is refused. */
		{
			struct mmhal_buf *again = NULL;

			CHECK_INT(mmhal_buf_import(dev, eb.fd, &again),
				  -EEXIST);
			CHECK(again == NULL);
		}
		CHECK_INT(xioctl(video, VIDIOC_QBUF, &b), 0);
	}
	{
		int type = V4L2_BUF_TYPE_VIDEO_CAPTURE;

		CHECK_INT(xioctl(video, VIDIOC_STREAMON, &type), 0);
	}
}

static int v4l2_dqbuf(struct v4l2_buffer *b)
{
	struct pollfd p = { .fd = video, .events = POLLIN };

	if (poll(&p, 1, WAIT_MS) != 1)
		return -ETIMEDOUT;
	memset(b, 0, sizeof(*b));
	b->type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
	b->memory = V4L2_MEMORY_MMAP;
	return xioctl(video, VIDIOC_DQBUF, b);
}

/*
 * Each vivid frame: copied into an mmedge buffer and fed to the sink,
 * straight from vivid's memory.
 */
static void test_copy_and_feed(void)
{
	struct mmhal_chan *copy = NULL, *feed = NULL;
	struct mmhal_buf *dst[2] = { NULL, NULL };
	struct mmhal_chan_stats st;
	uint64_t copied = 0, fed = 0, prev_eof = 0, lat_sum = 0, lat_max = 0;
	unsigned int n, crc_ok = 0, rec_ok = 0, feed_ok = 0, ts_ok = 0;
	int ret;

	if (video < 0 || !nbuf)
		SKIP("no vivid");
	CHECK_INT(mmhal_chan_create_dir(dev, MMHAL_CHAN_COPY, NULL, &copy), 0);
	CHECK_INT(mmhal_chan_create_dir(dev, MMHAL_CHAN_FEED, NULL, &feed), 0);
	if (!copy || !feed)
		FAIL("no channels");
	CHECK_INT(mmhal_chan_dir(copy), MMHAL_CHAN_COPY);
	for (n = 0; n < 2; n++) {
		ret = mmhal_buf_alloc(dev,
				      mmhal_copy_buf_size(fmt.fmt.pix.sizeimage),
				      NULL, &dst[n]);
		if (ret < 0)
			FAIL("mmhal_buf_alloc: %s", mmhal_strerror(ret));
	}

	for (n = 0; n < NFRAMES; n++) {
		const struct mmhal_frame_meta *m = NULL;
		struct mmhal_buf *d = dst[n & 1];
		struct v4l2_buffer b;
		struct mmhal_frame fr;
		uint64_t t0, t1, tdq;
		struct vbuf *v;
		uint32_t crc;
		void *map;
		int fence = -1;

		ret = v4l2_dqbuf(&b);
		tdq = now_mono();
		if (ret < 0 || b.index >= nbuf)
			FAIL("VIDIOC_DQBUF: %d", ret);
		v = &vb[b.index];
		if (!b.bytesused || b.bytesused > v->len)
			FAIL("vivid frame of %u bytes", b.bytesused);
		crc = crc32_ieee(v->map, b.bytesused);

		/* Copy: vivid's buffer into an mmedge buffer. */
		t0 = now_mono();
		ret = mmhal_chan_copy(copy, d, v->imp, b.bytesused, 100 + n,
				      &fence);
		if (ret < 0)
			FAIL("mmhal_chan_copy: %s", mmhal_strerror(ret));
		CHECK(fence >= 0);
		/* Held until dequeued: not fed meanwhile. */
		CHECK_INT(mmhal_chan_feed(feed, v->imp, b.bytesused, 0, NULL),
			  -EBUSY);
		ret = mmhal_chan_dequeue(copy, WAIT_MS, &fr);
		t1 = now_mono();
		if (ret < 0)
			FAIL("mmhal_chan_dequeue (copy): %s",
			     mmhal_strerror(ret));
		if (fence >= 0)
			close(fence);
		CHECK(fr.buf == d);
		CHECK_INT(fr.cookie, 100 + n);
		CHECK_INT(fr.sequence, n);
		CHECK_INT(fr.bytesused, b.bytesused);
		CHECK_INT(fr.flags & MMHAL_FRAME_ERROR, 0);
		CHECK_INT(fr.checksum, 0);
		/*
		 * Stamped by mmedge between the calls, after the previous
		 * job. (vivid's own buffer timestamps are its nominal frame
		 * times, which run ahead of the clock in a slow VM: no
		 * order against them is checked.)
		 */
		if (fr.ts.sof_mono && fr.ts.sof_mono <= fr.ts.eof_mono &&
		    fr.ts.sof_mono >= t0 && fr.ts.eof_mono <= t1 &&
		    fr.ts.sof_mono > prev_eof &&
		    fr.ts.sof_raw <= fr.ts.eof_raw &&
		    fr.ts.sof_boot <= fr.ts.eof_boot)
			ts_ok++;
		else
			tap_diag("frame %u: call %" PRIu64 "..%" PRIu64
				 ", copy %" PRIu64 "..%" PRIu64
				 ", previous end %" PRIu64, n, t0, t1,
				 fr.ts.sof_mono, fr.ts.eof_mono, prev_eof);
		prev_eof = fr.ts.eof_mono;
		lat_sum += fr.ts.eof_mono - tdq;
		if (fr.ts.eof_mono - tdq > lat_max)
			lat_max = fr.ts.eof_mono - tdq;

		CHECK_INT(mmhal_buf_begin_cpu(d, MMHAL_SYNC_READ), 0);
		ret = mmhal_frame_record(copy, &fr, &m);
		if (!ret && m->sequence == fr.sequence &&
		    m->bytesused == fr.bytesused &&
		    !memcmp(&m->ts, &fr.ts, sizeof(m->ts)) &&
		    m->flags == fr.flags && m->chan == fr.chan)
			rec_ok++;
		else
			tap_diag("frame %u: record: %s", n,
				 ret ? mmhal_strerror(ret) : "differs");
		if (!mmhal_buf_map(d, &map) &&
		    crc32_ieee(map, b.bytesused) == crc &&
		    !memcmp(map, v->map, b.bytesused))
			crc_ok++;
		else
			tap_diag("frame %u: copy differs from vivid's", n);
		CHECK_INT(mmhal_buf_end_cpu(d, MMHAL_SYNC_READ), 0);
		copied += b.bytesused;

		/* Feed: vivid's buffer to the sink, CRC from the device. */
		ret = mmhal_chan_feed(feed, v->imp, b.bytesused, 200 + n,
				      NULL);
		if (ret < 0)
			FAIL("mmhal_chan_feed: %s", mmhal_strerror(ret));
		ret = mmhal_chan_dequeue(feed, WAIT_MS, &fr);
		if (ret < 0)
			FAIL("mmhal_chan_dequeue (feed): %s",
			     mmhal_strerror(ret));
		CHECK(fr.buf == v->imp);
		CHECK_INT(fr.cookie, 200 + n);
		if (fr.checksum == crc && !(fr.flags & MMHAL_FRAME_ERROR))
			feed_ok++;
		else
			tap_diag("frame %u: sink crc %08x, frame crc %08x", n,
				 fr.checksum, crc);
		fed += b.bytesused;

		CHECK_INT(xioctl(video, VIDIOC_QBUF, &b), 0);
	}
	CHECK_INT(ts_ok, NFRAMES);
	CHECK_INT(rec_ok, NFRAMES);
	CHECK_INT(crc_ok, NFRAMES);
	CHECK_INT(feed_ok, NFRAMES);
	CHECK_INT(mmhal_chan_stats(copy, &st), 0);
	CHECK_INT(st.frames, NFRAMES);
	CHECK_INT(st.bytes, copied);
	CHECK_INT(mmhal_chan_stats(feed, &st), 0);
	CHECK_INT(st.frames, NFRAMES);
	CHECK_INT(st.bytes, fed);
	tap_diag("%u vivid frames copied and fed: %" PRIu64 " bytes each way; "
		 "V4L2 dequeue to copy done: mean %" PRIu64 " us, max %" PRIu64
		 " us", NFRAMES, copied, lat_sum / NFRAMES / 1000,
		 lat_max / 1000);

	mmhal_chan_destroy(copy);
	mmhal_chan_destroy(feed);
	mmhal_buf_free(dst[0]);
	mmhal_buf_free(dst[1]);
}

/* The copy's output is an ordinary mmedge buffer: fed on, same CRC. */
static void test_copy_then_feed_mmedge(void)
{
	struct mmhal_chan *copy = NULL, *feed = NULL;
	struct mmhal_buf *dst = NULL;
	struct v4l2_buffer b;
	struct mmhal_frame fr;
	uint32_t crc;
	int ret;

	if (video < 0 || !nbuf)
		SKIP("no vivid");
	CHECK_INT(mmhal_chan_create_dir(dev, MMHAL_CHAN_COPY, NULL, &copy), 0);
	CHECK_INT(mmhal_chan_create_dir(dev, MMHAL_CHAN_FEED, NULL, &feed), 0);
	CHECK_INT(mmhal_buf_alloc(dev, mmhal_copy_buf_size(fmt.fmt.pix.sizeimage),
				  NULL, &dst), 0);
	if (!copy || !feed || !dst)
		FAIL("setup failed");
	ret = v4l2_dqbuf(&b);
	if (ret < 0 || b.index >= nbuf)
		FAIL("VIDIOC_DQBUF: %d", ret);
	crc = crc32_ieee(vb[b.index].map, b.bytesused);
	CHECK_INT(mmhal_chan_copy(copy, dst, vb[b.index].imp, b.bytesused, 1,
				  NULL), 0);
	CHECK_INT(mmhal_chan_dequeue(copy, WAIT_MS, &fr), 0);
	if (proj) {
		struct mmhal_chunk_info ia, ib;
		struct mmhal_image img;
		size_t na, nb, i, bad = 0;
		float *ea, *eb;
		void *map = NULL;

		/* The model reads the mmedge buffer in place. */
		CHECK_INT(mmhal_buf_begin_cpu(dst, MMHAL_SYNC_READ), 0);
		CHECK_INT(mmhal_buf_map(dst, &map), 0);
		img = nv12_at(map);
		ea = map ? encode(&img, &na, &ia) : NULL;
		CHECK_INT(mmhal_buf_end_cpu(dst, MMHAL_SYNC_READ), 0);
		img = nv12_at(vb[b.index].map);
		eb = encode(&img, &nb, &ib);
		CHECK(ea && eb && na == nb && na > 0);
		for (i = 0; ea && eb && i < na && na == nb; i++)
			if (!isfinite(ea[i]) || ea[i] != eb[i])
				bad++;
		CHECK_INT(bad, 0);
		if (ea && eb)
			tap_diag("encoded the copied %ux%u NV12 frame from the mmedge buffer: "
				 "%d x %d embeddings, preprocess %.1f ms, encode %.1f ms; "
				 "equal to vivid's frame encoded in place",
				 img.width, img.height, ia.n_embd_rows,
				 ia.n_embd, ia.preprocess_ms, ia.encode_ms);
		free(ea);
		free(eb);
	}
	CHECK_INT(xioctl(video, VIDIOC_QBUF, &b), 0);
	CHECK_INT(mmhal_chan_feed(feed, dst, fr.bytesused, 2, NULL), 0);
	CHECK_INT(mmhal_chan_dequeue(feed, WAIT_MS, &fr), 0);
	CHECK_INT(fr.checksum, crc);
	mmhal_chan_destroy(copy);
	mmhal_chan_destroy(feed);
	mmhal_buf_free(dst);
}

static void test_teardown(void)
{
	int type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
	struct v4l2_requestbuffers rb;
	unsigned int i;

	if (video >= 0) {
		CHECK_INT(xioctl(video, VIDIOC_STREAMOFF, &type), 0);
		for (i = 0; i < nbuf; i++) {
			mmhal_buf_free(vb[i].imp);
			close(vb[i].dmabuf);
			munmap(vb[i].map, vb[i].len);
		}
		memset(&rb, 0, sizeof(rb));
		rb.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
		rb.memory = V4L2_MEMORY_MMAP;
		CHECK_INT(xioctl(video, VIDIOC_REQBUFS, &rb), 0);
		close(video);
	}
	mmhal_mmproj_free(proj);
	mmhal_model_free(model);
	mmhal_dev_close(dev);
}

static const struct tap_test tests[] = {
	TAP_TEST(test_open),
	TAP_TEST(test_model),
	TAP_TEST(test_setup_vivid),
	TAP_TEST(test_copy_and_feed),
	TAP_TEST(test_copy_then_feed_mmedge),
	TAP_TEST(test_teardown),
};

int main(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--mmgguf") && i + 1 < argc) {
			mmgguf = argv[++i];
		} else if (argv[i][0] == '-') {
			fprintf(stderr, "usage: %s [--mmgguf MMGGUF] [DEVICE]\n",
				argv[0]);
			return 2;
		} else {
			dev_path = argv[i];
		}
	}
	return tap_run(tests, TAP_COUNT(tests));
}
