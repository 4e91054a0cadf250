// SPDX-License-Identifier: MIT
/*
 * cuda.c - the CUDA back end: the driver loaded with dlopen, its entry
 * points looked up by their versioned names, the embedded PTX kernels
 * (cuda_kern.cu) loaded with cuModuleLoadData, device memory, the matrix
 * products and row operations, frames registered for zero copy. See
 * cuda_be.h and Documentation/cuda.rst.
 *
 * The toolkit's cuda.h is used for the types and enums only (built with
 * MM_HAVE_CUDA when the build finds it); nothing links against libcuda.
 * Without it (or without nvcc's PTX, MM_CUDA_PTX80/90) every entry says
 * "built without CUDA".
 */
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/sync_file.h>

#include "cuda_be.h"
#include "gguf.h"

/* ---- the embedded PTX ------------------------------------------------- */

/* .incbin of nvcc's PTX (NUL-terminated) into .rodata. */
#define MM_PTX_BLOB(sym, file)						\
	__asm__(".section .rodata\n"					\
		".balign 16\n"						\
		".globl " #sym "\n"					\
		".hidden " #sym "\n"					\
		".type " #sym ", @object\n"				\
		#sym ":\n"						\
		".incbin \"" file "\"\n"				\
		".byte 0\n"						\
		".size " #sym ", . - " #sym "\n"			\
		".previous\n");						\
	extern const char sym[] __attribute__((visibility("hidden")))

#if defined(MM_HAVE_CUDA) && defined(MM_CUDA_PTX80) && defined(MM_CUDA_PTX90)
#define MM_CUDA_ON 1
MM_PTX_BLOB(mm_cuda_ptx80_data, MM_CUDA_PTX80);
MM_PTX_BLOB(mm_cuda_ptx90_data, MM_CUDA_PTX90);

static const struct {
	const char *ptx;
	const char *target;
	int cc;
} mm_cuda_images[] = {
	{ mm_cuda_ptx80_data, "sm_80", 80 },
	{ mm_cuda_ptx90_data, "sm_90", 90 },
};
#define MM_CUDA_NIMAGES 2
#else
#define MM_CUDA_ON 0
#define MM_CUDA_NIMAGES 0
#endif

int mm_cuda_built(void)
{
	return MM_CUDA_ON;
}

int mm_cuda_ptx_count(void)
{
	return MM_CUDA_NIMAGES;
}

const char *mm_cuda_ptx(int i, const char **target)
{
#if MM_CUDA_ON
	if (i >= 0 && i < MM_CUDA_NIMAGES) {
		if (target)
			*target = mm_cuda_images[i].target;
		return mm_cuda_images[i].ptx;
	}
#else
	(void)i;
#endif
	if (target)
		*target = NULL;
	return NULL;
}

int mm_cuda_type_ok(enum mm_type t)
{
	return t == MM_TYPE_Q8_0 || t == MM_TYPE_Q4_0 || t == MM_TYPE_Q4_K;
}

int mm_cuda_ftype_ok(enum mm_type t)
{
	return t == MM_TYPE_F16 || t == MM_TYPE_F32;
}

/* Waits for a sync_file (or any pollable fd) to signal. */
int mm_cuda_fence_wait(int fd, int timeout_ms, char *err, size_t errlen)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	struct sync_file_info info;
	int r;

	if (fd < 0)
		return 0;
	do
		r = poll(&p, 1, timeout_ms < 0 ? -1 : timeout_ms);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return mm_errf(-errno, err, errlen, "cuda: waiting for the frame's fence: %s",
			       strerror(errno));
	if (!r)
		return mm_errf(-ETIME, err, errlen,
			       "cuda: the frame's fence did not signal in %d ms",
			       timeout_ms);
	if (p.revents & POLLNVAL)
		return mm_errf(-EBADF, err, errlen, "cuda: fence fd %d is not open", fd);
	/* a sync_file tells whether its fences signalled with an error */
	memset(&info, 0, sizeof(info));
	if (!ioctl(fd, SYNC_IOC_FILE_INFO, &info) && info.status < 0)
		return mm_errf(-EINVAL, err, errlen,
			       "cuda: the frame's fence signalled an error (%d)",
			       info.status);
	return 0;
}

#if !MM_CUDA_ON

static int mm_cuda_off(char *err, size_t errlen)
{
	return mm_errf(-ENOTSUP, err, errlen,
		       "cuda: built without CUDA (no toolkit or nvcc at build time)");
}

int mm_cuda_open(struct mm_cuda **out, char *err, size_t errlen)
{
	*out = NULL;
	return mm_cuda_off(err, errlen);
}

void mm_cuda_close(struct mm_cuda *cu)
{
	(void)cu;
}

const char *mm_cuda_describe(const struct mm_cuda *cu)
{
	(void)cu;
	return "";
}

int mm_cuda_cc(const struct mm_cuda *cu)
{
	(void)cu;
	return 0;
}

int mm_cuda_alloc(struct mm_cuda *cu, size_t bytes, uint64_t *dev,
		  char *err, size_t errlen)
{
	(void)cu, (void)bytes;
	*dev = 0;
	return mm_cuda_off(err, errlen);
}

void mm_cuda_free(struct mm_cuda *cu, uint64_t dev)
{
	(void)cu, (void)dev;
}

int mm_cuda_put(struct mm_cuda *cu, uint64_t dev, const void *host,
		size_t bytes, char *err, size_t errlen)
{
	(void)cu, (void)dev, (void)host, (void)bytes;
	return mm_cuda_off(err, errlen);
}

int mm_cuda_get(struct mm_cuda *cu, void *host, uint64_t dev, size_t bytes,
		char *err, size_t errlen)
{
	(void)cu, (void)dev, (void)host, (void)bytes;
	return mm_cuda_off(err, errlen);
}

int mm_cuda_matmul_n(struct mm_cuda *cu, const struct mm_cuda_mat *mats,
		     int nmat, const float *X, int64_t k, int64_t n,
		     char *err, size_t errlen)
{
	(void)cu, (void)mats, (void)nmat, (void)X, (void)k, (void)n;
	return mm_cuda_off(err, errlen);
}

int mm_cuda_rmsnorm(struct mm_cuda *cu, const float *x, const float *w,
		    float *y, int rows, int n, float eps, char *err,
		    size_t errlen)
{
	(void)cu, (void)x, (void)w, (void)y, (void)rows, (void)n, (void)eps;
	return mm_cuda_off(err, errlen);
}

int mm_cuda_rope(struct mm_cuda *cu, float *x, int n_heads, int hd,
		 int n_rot, int pos, const float *inv_freq, char *err,
		 size_t errlen)
{
	(void)cu, (void)x, (void)n_heads, (void)hd, (void)n_rot, (void)pos;
	(void)inv_freq;
	return mm_cuda_off(err, errlen);
}

int mm_cuda_softmax(struct mm_cuda *cu, float *x, int rows, int n,
		    char *err, size_t errlen)
{
	(void)cu, (void)x, (void)rows, (void)n;
	return mm_cuda_off(err, errlen);
}

int mm_cuda_attn(struct mm_cuda *cu, const float *q, const uint16_t *kh,
		 const uint16_t *vh, float *out, int n_head, int n_head_kv,
		 int hd, int npos, char *err, size_t errlen)
{
	(void)cu, (void)q, (void)kh, (void)vh, (void)out, (void)n_head;
	(void)n_head_kv, (void)hd, (void)npos;
	return mm_cuda_off(err, errlen);
}

int mm_cuda_bench_gemm(struct mm_cuda *cu, enum mm_type t, uint64_t W,
		       int64_t m, int64_t k, int64_t n, int iters,
		       double *ms, char *err, size_t errlen)
{
	(void)cu, (void)t, (void)W, (void)m, (void)k, (void)n, (void)iters;
	*ms = 0;
	return mm_cuda_off(err, errlen);
}

int mm_cuda_host_register(struct mm_cuda *cu, void *addr, size_t bytes,
			  uint64_t *dev, char *err, size_t errlen)
{
	(void)cu, (void)addr, (void)bytes;
	*dev = 0;
	return mm_cuda_off(err, errlen);
}

int mm_cuda_host_unregister(struct mm_cuda *cu, void *addr, char *err,
			    size_t errlen)
{
	(void)cu, (void)addr;
	return mm_cuda_off(err, errlen);
}

int mm_cuda_image(struct mm_cuda *cu, const struct mm_cuda_frame *f,
		  float *pixels, float *unfold, const struct mm_cuda_mat *patch,
		  char *err, size_t errlen)
{
	(void)cu; (void)f; (void)pixels; (void)unfold; (void)patch;
	return mm_cuda_off(err, errlen);
}

#else /* MM_CUDA_ON */

#include <cuda.h>	/* types and enums only */

/*
 * The driver entry points: field, exported (versioned) name, signature.
 * cuda.h #defines the plain names to these versions; the library exports
 * both, and only the versioned ones have today's ABI.
 */
#define MM_CU_FNS(X)							\
	X(GetErrorName, "cuGetErrorName", (CUresult, const char **))	\
	X(GetErrorString, "cuGetErrorString", (CUresult, const char **)) \
	X(Init, "cuInit", (unsigned int))				\
	X(DriverGetVersion, "cuDriverGetVersion", (int *))		\
	X(DeviceGetCount, "cuDeviceGetCount", (int *))			\
	X(DeviceGet, "cuDeviceGet", (CUdevice *, int))			\
	X(DeviceGetName, "cuDeviceGetName", (char *, int, CUdevice))	\
	X(DeviceGetAttribute, "cuDeviceGetAttribute",			\
	  (int *, CUdevice_attribute, CUdevice))			\
	X(DeviceTotalMem, "cuDeviceTotalMem_v2", (size_t *, CUdevice))	\
	X(PrimaryCtxRetain, "cuDevicePrimaryCtxRetain",			\
	  (CUcontext *, CUdevice))					\
	X(PrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", (CUdevice)) \
	X(CtxSetCurrent, "cuCtxSetCurrent", (CUcontext))		\
	X(ModuleLoadData, "cuModuleLoadData", (CUmodule *, const void *)) \
	X(ModuleUnload, "cuModuleUnload", (CUmodule))			\
	X(ModuleGetFunction, "cuModuleGetFunction",			\
	  (CUfunction *, CUmodule, const char *))			\
	X(MemAlloc, "cuMemAlloc_v2", (CUdeviceptr *, size_t))		\
	X(MemFree, "cuMemFree_v2", (CUdeviceptr))			\
	X(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2",			\
	  (CUdeviceptr, const void *, size_t, CUstream))		\
	X(MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2",			\
	  (void *, CUdeviceptr, size_t, CUstream))			\
	X(StreamCreate, "cuStreamCreate", (CUstream *, unsigned int))	\
	X(StreamDestroy, "cuStreamDestroy_v2", (CUstream))		\
	X(StreamSynchronize, "cuStreamSynchronize", (CUstream))		\
	X(LaunchKernel, "cuLaunchKernel",				\
	  (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, \
	   unsigned, unsigned, CUstream, void **, void **))		\
	X(MemHostRegister, "cuMemHostRegister_v2",			\
	  (void *, size_t, unsigned int))				\
	X(MemHostUnregister, "cuMemHostUnregister", (void *))		\
	X(MemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2",	\
	  (CUdeviceptr *, void *, unsigned int))

/* The kernels of cuda_kern.cu. */
#define MM_CU_KERNELS(X)						\
	X(quant_q8_0) X(quant_q8_k)					\
	X(gemv_q8_0) X(gemv_q4_0) X(gemv_q4_k)				\
	X(gemm_q8_0) X(gemm_q4_0) X(gemm_q4_k)				\
	X(gemm_f16) X(gemm_f32)						\
	X(rmsnorm) X(rope) X(softmax) X(attn_dec)			\
	X(pre_overview) X(im2col)

struct mm_cu_api {
#define MM_CU_FIELD(f, sym, args) CUresult (*f) args;
	MM_CU_FNS(MM_CU_FIELD)
#undef MM_CU_FIELD
};

/* Device scratch of the matrix products, grown on demand. */
struct mm_cu_buf {
	CUdeviceptr p;
	size_t bytes;
};

struct mm_cuda {
	void *lib;
	struct mm_cu_api f;
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUstream st;
	int cc, has_ctx, host_ro;
	struct {
#define MM_CU_KFIELD(k) CUfunction k;
		MM_CU_KERNELS(MM_CU_KFIELD)
#undef MM_CU_KFIELD
	} k;
	pthread_mutex_t lock;
	struct mm_cu_buf x, q, d, s, y, px;
	char desc[160];
};

static int mm_cu_errno(CUresult r)
{
	switch (r) {
	case CUDA_ERROR_OUT_OF_MEMORY:
		return -ENOMEM;
	case CUDA_ERROR_NO_DEVICE: case CUDA_ERROR_INVALID_DEVICE:
	case CUDA_ERROR_NOT_INITIALIZED: case CUDA_ERROR_DEINITIALIZED:
	case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
	case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
	case CUDA_ERROR_DEVICE_UNAVAILABLE:
	case CUDA_ERROR_SYSTEM_NOT_READY:
		return -ENODEV;
	default:
		return -EIO;
	}
}

/* "cuda: <call>: CUDA_ERROR_X (description)", -errno of r. */
static int mm_cu_fail(const struct mm_cuda *cu, const char *call,
		      CUresult r, char *err, size_t errlen)
{
	const char *name = NULL, *desc = NULL;

	if (cu->f.GetErrorName(r, &name) != CUDA_SUCCESS || !name)
		name = NULL;
	if (cu->f.GetErrorString(r, &desc) != CUDA_SUCCESS || !desc)
		desc = NULL;
	if (name)
		return mm_errf(mm_cu_errno(r), err, errlen, "cuda: %s: %s (%s)",
			       call, name, desc ? desc : "no description");
	return mm_errf(mm_cu_errno(r), err, errlen, "cuda: %s: CUresult %d",
		       call, (int)r);
}

#define MM_CU(cu, call, args, err, errlen)				\
	do {								\
		CUresult r_ = (cu)->f.call args;			\
		if (r_ != CUDA_SUCCESS)					\
			return mm_cu_fail(cu, "cu" #call, r_, err, errlen); \
	} while (0)

static int mm_cu_resolve(struct mm_cuda *cu, const char *path, char *err,
			 size_t errlen)
{
	void *s;

#define MM_CU_SYM(fld, sym, args)					\
	s = dlsym(cu->lib, sym);					\
	if (!s)								\
		return mm_errf(-ENOSYS, err, errlen,			\
			       "cuda: %s has no %s (driver too old or not libcuda)", \
			       path, sym);				\
	memcpy(&cu->f.fld, &s, sizeof(s));
	MM_CU_FNS(MM_CU_SYM)
#undef MM_CU_SYM
	return 0;
}

/* The device: cuInit, its index, capability, primary context. */
static int mm_cu_device(struct mm_cuda *cu, char *err, size_t errlen)
{
	const char *env = getenv("MMHAL_CUDA_DEVICE");
	int n = 0, ver = 0, idx = env ? atoi(env) : 0, maj = 0, mnr = 0;
	char name[96] = "";
	size_t mem = 0;

	MM_CU(cu, Init, (0), err, errlen);
	MM_CU(cu, DriverGetVersion, (&ver), err, errlen);
	MM_CU(cu, DeviceGetCount, (&n), err, errlen);
	if (idx < 0 || idx >= n)
		return mm_errf(-ENODEV, err, errlen,
			       "cuda: no device %d (%d device(s), driver %d.%d)",
			       idx, n, ver / 1000, ver % 1000 / 10);
	MM_CU(cu, DeviceGet, (&cu->dev, idx), err, errlen);
	MM_CU(cu, DeviceGetName, (name, (int)sizeof(name) - 1, cu->dev), err,
	      errlen);
	MM_CU(cu, DeviceGetAttribute,
	      (&maj, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, cu->dev),
	      err, errlen);
	MM_CU(cu, DeviceGetAttribute,
	      (&mnr, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, cu->dev),
	      err, errlen);
	MM_CU(cu, DeviceTotalMem, (&mem, cu->dev), err, errlen);
	/* READ_ONLY host registrations (frames): not on every platform */
	if (cu->f.DeviceGetAttribute(&cu->host_ro,
		CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED,
		cu->dev) != CUDA_SUCCESS)
		cu->host_ro = 0;
	cu->cc = maj * 10 + mnr;
	snprintf(cu->desc, sizeof(cu->desc), "%s (sm_%d, %.1f GiB, driver %d.%d)",
		 name, cu->cc, mem / 1073741824.0, ver / 1000, ver % 1000 / 10);
	if (cu->cc < mm_cuda_images[0].cc)
		return mm_errf(-ENODEV, err, errlen,
			       "cuda: %s: the kernels need sm_%d or later",
			       cu->desc, mm_cuda_images[0].cc);
	MM_CU(cu, PrimaryCtxRetain, (&cu->ctx, cu->dev), err, errlen);
	cu->has_ctx = 1;
	MM_CU(cu, CtxSetCurrent, (cu->ctx), err, errlen);
	return 0;
}

/* The newest PTX image the device runs, its kernels and a stream. */
static int mm_cu_module(struct mm_cuda *cu, char *err, size_t errlen)
{
	int img = 0;

	for (int i = 0; i < MM_CUDA_NIMAGES; i++)
		if (mm_cuda_images[i].cc <= cu->cc)
			img = i;
	MM_CU(cu, ModuleLoadData, (&cu->mod, mm_cuda_images[img].ptx), err,
	      errlen);
#define MM_CU_GETK(kn)							\
	MM_CU(cu, ModuleGetFunction, (&cu->k.kn, cu->mod, "mm_" #kn), err, \
	      errlen);
	MM_CU_KERNELS(MM_CU_GETK)
#undef MM_CU_GETK
	MM_CU(cu, StreamCreate, (&cu->st, CU_STREAM_NON_BLOCKING), err, errlen);
	return 0;
}

int mm_cuda_open(struct mm_cuda **out, char *err, size_t errlen)
{
	const char *path = getenv("MMHAL_CUDA_LIB");
	struct mm_cuda *cu;
	int ret;

	*out = NULL;
	if (!path || !*path)
		path = "libcuda.so.1";
	cu = calloc(1, sizeof(*cu));
	if (!cu)
		return mm_errf(-ENOMEM, err, errlen, "cuda: out of memory");
	pthread_mutex_init(&cu->lock, NULL);
	cu->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!cu->lib) {
		const char *e = dlerror();

		ret = mm_errf(-ENOENT, err, errlen,
			      "cuda: cannot load the driver: %s",
			      e ? e : path);
		goto fail;
	}
	ret = mm_cu_resolve(cu, path, err, errlen);
	if (!ret)
		ret = mm_cu_device(cu, err, errlen);
	if (!ret)
		ret = mm_cu_module(cu, err, errlen);
	if (ret)
		goto fail;
	*out = cu;
	return 0;
fail:
	mm_cuda_close(cu);
	return ret;
}

static void mm_cu_buf_free(struct mm_cuda *cu, struct mm_cu_buf *b)
{
	if (b->p)
		cu->f.MemFree(b->p);
	b->p = 0;
	b->bytes = 0;
}

void mm_cuda_close(struct mm_cuda *cu)
{
	if (!cu)
		return;
	if (cu->has_ctx) {
		cu->f.CtxSetCurrent(cu->ctx);
		mm_cu_buf_free(cu, &cu->x);
		mm_cu_buf_free(cu, &cu->q);
		mm_cu_buf_free(cu, &cu->d);
		mm_cu_buf_free(cu, &cu->s);
		mm_cu_buf_free(cu, &cu->y);
		mm_cu_buf_free(cu, &cu->px);
		if (cu->st)
			cu->f.StreamDestroy(cu->st);
		if (cu->mod)
			cu->f.ModuleUnload(cu->mod);
		cu->f.PrimaryCtxRelease(cu->dev);
	}
	if (cu->lib)
		dlclose(cu->lib);
	pthread_mutex_destroy(&cu->lock);
	free(cu);
}

const char *mm_cuda_describe(const struct mm_cuda *cu)
{
	return cu ? cu->desc : "";
}

int mm_cuda_cc(const struct mm_cuda *cu)
{
	return cu ? cu->cc : 0;
}

int mm_cuda_alloc(struct mm_cuda *cu, size_t bytes, uint64_t *dev,
		  char *err, size_t errlen)
{
	CUdeviceptr p = 0;

	*dev = 0;
	pthread_mutex_lock(&cu->lock);
	CUresult r = cu->f.CtxSetCurrent(cu->ctx);

	if (r == CUDA_SUCCESS)
		r = cu->f.MemAlloc(&p, bytes ? bytes : 1);
	pthread_mutex_unlock(&cu->lock);
	if (r != CUDA_SUCCESS)
		return mm_cu_fail(cu, "cuMemAlloc", r, err, errlen);
	*dev = p;
	return 0;
}

void mm_cuda_free(struct mm_cuda *cu, uint64_t dev)
{
	if (!cu || !dev)
		return;
	pthread_mutex_lock(&cu->lock);
	cu->f.CtxSetCurrent(cu->ctx);
	cu->f.MemFree(dev);
	pthread_mutex_unlock(&cu->lock);
}

/* Under cu->lock: the context current on this thread. */
static int mm_cu_enter(struct mm_cuda *cu, char *err, size_t errlen)
{
	MM_CU(cu, CtxSetCurrent, (cu->ctx), err, errlen);
	return 0;
}

static int mm_cu_put_locked(struct mm_cuda *cu, CUdeviceptr dev,
			    const void *host, size_t bytes, char *err,
			    size_t errlen)
{
	MM_CU(cu, MemcpyHtoDAsync, (dev, host, bytes, cu->st), err, errlen);
	return 0;
}

static int mm_cu_get_locked(struct mm_cuda *cu, void *host, CUdeviceptr dev,
			    size_t bytes, char *err, size_t errlen)
{
	MM_CU(cu, MemcpyDtoHAsync, (host, dev, bytes, cu->st), err, errlen);
	return 0;
}

static int mm_cu_sync(struct mm_cuda *cu, char *err, size_t errlen)
{
	MM_CU(cu, StreamSynchronize, (cu->st), err, errlen);
	return 0;
}

int mm_cuda_put(struct mm_cuda *cu, uint64_t dev, const void *host,
		size_t bytes, char *err, size_t errlen)
{
	int ret;

	pthread_mutex_lock(&cu->lock);
	ret = mm_cu_enter(cu, err, errlen);
	if (!ret)
		ret = mm_cu_put_locked(cu, dev, host, bytes, err, errlen);
	if (!ret)
		ret = mm_cu_sync(cu, err, errlen);
	pthread_mutex_unlock(&cu->lock);
	return ret;
}

int mm_cuda_get(struct mm_cuda *cu, void *host, uint64_t dev, size_t bytes,
		char *err, size_t errlen)
{
	int ret;

	pthread_mutex_lock(&cu->lock);
	ret = mm_cu_enter(cu, err, errlen);
	if (!ret)
		ret = mm_cu_get_locked(cu, host, dev, bytes, err, errlen);
	if (!ret)
		ret = mm_cu_sync(cu, err, errlen);
	pthread_mutex_unlock(&cu->lock);
	return ret;
}

/* Grows a scratch buffer to at least bytes (contents not kept). */
static int mm_cu_reserve(struct mm_cuda *cu, struct mm_cu_buf *b,
			 size_t bytes, char *err, size_t errlen)
{
	if (b->bytes >= bytes)
		return 0;
	/* the stream may still read the old buffer */
	if (mm_cu_sync(cu, err, errlen))
		return -EIO;
	mm_cu_buf_free(cu, b);
	bytes = (bytes + 0xffff) & ~(size_t)0xffff;
	MM_CU(cu, MemAlloc, (&b->p, bytes), err, errlen);
	b->bytes = bytes;
	return 0;
}

static int mm_cu_launch(struct mm_cuda *cu, CUfunction f, const char *name,
			unsigned gx, unsigned gy, unsigned bx, unsigned shmem,
			void **args, char *err, size_t errlen)
{
	CUresult r = cu->f.LaunchKernel(f, gx, gy, 1, bx, 1, 1, shmem, cu->st,
					args, NULL);
	char call[64];

	if (r == CUDA_SUCCESS)
		return 0;
	snprintf(call, sizeof(call), "cuLaunchKernel(%s)", name);
	return mm_cu_fail(cu, call, r, err, errlen);
}

/* The activation form of a weight type: 0 Q8_0 mode, 1 Q8_K mode, 2
 * f32 (F16/F32 weights: not quantized). */
static int mm_cu_actmode(enum mm_type t)
{
	return mm_cuda_ftype_ok(t) ? 2 : t == MM_TYPE_Q4_K;
}

/* Quantizes n rows of k floats in cu->x into cu->q/d/s (mode as above). */
static int mm_cu_quant(struct mm_cuda *cu, int mode, int64_t k, int64_t n,
		       char *err, size_t errlen)
{
	CUdeviceptr x = cu->x.p, q = cu->q.p, d = cu->d.p, s = cu->s.p;
	int nb = (int)(n * k / (mode ? 256 : 32));
	void *args[] = { &x, &q, &d, &s, &nb };

	if (mode)
		return mm_cu_launch(cu, cu->k.quant_q8_k, "mm_quant_q8_k", nb,
				    1, 256, 0, args, err, errlen);
	return mm_cu_launch(cu, cu->k.quant_q8_0, "mm_quant_q8_0",
			    (nb + 7) / 8, 1, 256, 0, args, err, errlen);
}

/* One product from the quantized activations into y (device). */
static int mm_cu_product(struct mm_cuda *cu, enum mm_type t, CUdeviceptr W,
			 int64_t m, int64_t k, int64_t n, CUdeviceptr y,
			 char *err, size_t errlen)
{
	CUdeviceptr q = cu->q.p, d = cu->d.p, s = cu->s.p;
	size_t rs = mm_row_bytes(t, k);
	int im = (int)m, in = (int)n, nsb = (int)(k / 32);
	CUfunction f;
	const char *name;

	if (mm_cuda_ftype_ok(t)) {
		/* f32 products read the activations as copied up */
		CUdeviceptr x = cu->x.p;
		int ik = (int)k;
		void *args[] = { &W, &x, &y, &im, &in, &ik };

		return mm_cu_launch(cu, t == MM_TYPE_F16 ? cu->k.gemm_f16 :
				    cu->k.gemm_f32, t == MM_TYPE_F16 ?
				    "mm_gemm_f16" : "mm_gemm_f32",
				    (unsigned)((m + 63) / 64),
				    (unsigned)((n + 63) / 64), 256, 0, args,
				    err, errlen);
	}
	if (n == 1) {
		void *args[] = { &W, &rs, &q, &d, &s, &y, &im, &nsb };

		f = t == MM_TYPE_Q8_0 ? cu->k.gemv_q8_0 :
		    t == MM_TYPE_Q4_0 ? cu->k.gemv_q4_0 : cu->k.gemv_q4_k;
		name = t == MM_TYPE_Q8_0 ? "mm_gemv_q8_0" :
		       t == MM_TYPE_Q4_0 ? "mm_gemv_q4_0" : "mm_gemv_q4_k";
		return mm_cu_launch(cu, f, name, (unsigned)((m + 7) / 8), 1,
				    256, 0, args, err, errlen);
	}
	void *args[] = { &W, &rs, &q, &d, &s, &y, &im, &in, &nsb };

	f = t == MM_TYPE_Q8_0 ? cu->k.gemm_q8_0 :
	    t == MM_TYPE_Q4_0 ? cu->k.gemm_q4_0 : cu->k.gemm_q4_k;
	name = t == MM_TYPE_Q8_0 ? "mm_gemm_q8_0" :
	       t == MM_TYPE_Q4_0 ? "mm_gemm_q4_0" : "mm_gemm_q4_k";
	return mm_cu_launch(cu, f, name, (unsigned)((m + 63) / 64),
			    (unsigned)((n + 63) / 64), 256, 0, args, err,
			    errlen);
}

static int mm_cu_matmul_locked(struct mm_cuda *cu,
			       const struct mm_cuda_mat *mats, int nmat,
			       const float *X, int64_t k, int64_t n,
			       char *err, size_t errlen)
{
	size_t ytot = 0, yoff[4];
	int ret;

	for (int i = 0; i < nmat; i++) {
		yoff[i] = ytot;
		ytot += (size_t)mats[i].m * n * sizeof(float);
	}
	ret = mm_cu_enter(cu, err, errlen);
	if (!ret)
		ret = mm_cu_reserve(cu, &cu->x, n * k * sizeof(float), err, errlen);
	if (!ret)
		ret = mm_cu_reserve(cu, &cu->q, n * k, err, errlen);
	if (!ret)
		ret = mm_cu_reserve(cu, &cu->d, n * k / 32 * sizeof(float), err,
				    errlen);
	if (!ret)
		ret = mm_cu_reserve(cu, &cu->s, n * k / 32 * sizeof(int), err,
				    errlen);
	if (!ret)
		ret = mm_cu_reserve(cu, &cu->y, ytot, err, errlen);
	/* X NULL: cu->x already holds the input (mm_cuda_image()) */
	if (!ret && X)
		ret = mm_cu_put_locked(cu, cu->x.p, X, n * k * sizeof(float),
				       err, errlen);
	/* each activation form once, then its matrices */
	for (int mode = 0; mode < 3 && !ret; mode++) {
		int any = 0;

		for (int i = 0; i < nmat; i++)
			any |= mm_cu_actmode(mats[i].t) == mode;
		if (!any)
			continue;
		if (mode < 2)
			ret = mm_cu_quant(cu, mode, k, n, err, errlen);
		for (int i = 0; i < nmat && !ret; i++)
			if (mm_cu_actmode(mats[i].t) == mode)
				ret = mm_cu_product(cu, mats[i].t, mats[i].dev,
						    mats[i].m, k, n,
						    cu->y.p + yoff[i], err,
						    errlen);
	}
	for (int i = 0; i < nmat && !ret; i++)
		ret = mm_cu_get_locked(cu, mats[i].y, cu->y.p + yoff[i],
				       (size_t)mats[i].m * n * sizeof(float),
				       err, errlen);
	if (!ret)
		ret = mm_cu_sync(cu, err, errlen);
	return ret;
}

int mm_cuda_matmul_n(struct mm_cuda *cu, const struct mm_cuda_mat *mats,
		     int nmat, const float *X, int64_t k, int64_t n,
		     char *err, size_t errlen)
{
	int ret;

	int quant = 0;

	for (int i = 0; i < nmat && i < 4; i++)
		quant |= !mm_cuda_ftype_ok(mats[i].t);
	if (nmat < 1 || nmat > 4 || n < 1 || n > INT32_MAX || k < 1 ||
	    k > INT32_MAX || (quant && (k < 32 || k % 32)))
		return mm_errf(-EINVAL, err, errlen,
			       "cuda: bad product (%d matrices, k %lld, n %lld)",
			       nmat, (long long)k, (long long)n);
	for (int i = 0; i < nmat; i++)
		if ((!mm_cuda_type_ok(mats[i].t) &&
		     !mm_cuda_ftype_ok(mats[i].t)) || !mats[i].dev ||
		    mats[i].m < 1 || mats[i].m > INT32_MAX ||
		    (mm_cu_actmode(mats[i].t) == 1 && k % 256))
			return mm_errf(-EINVAL, err, errlen,
				       "cuda: no kernel for a %s matrix of %lld x %lld",
				       mm_type_name(mats[i].t),
				       (long long)mats[i].m, (long long)k);
	pthread_mutex_lock(&cu->lock);
	ret = mm_cu_matmul_locked(cu, mats, nmat, X, k, n, err, errlen);
	pthread_mutex_unlock(&cu->lock);
	return ret;
}

/* ---- row operations (host in, host out) ------------------------------- */

/* Device copies of up to 4 host arrays (NULL: no buffer), in order. */
struct mm_cu_tmp {
	CUdeviceptr p[4];
};

static int mm_cu_tmp_get(struct mm_cuda *cu, struct mm_cu_tmp *t,
			 const void *const *host, const size_t *bytes, int n,
			 char *err, size_t errlen)
{
	memset(t, 0, sizeof(*t));
	for (int i = 0; i < n; i++) {
		MM_CU(cu, MemAlloc, (&t->p[i], bytes[i] ? bytes[i] : 4), err,
		      errlen);
		if (host[i] && mm_cu_put_locked(cu, t->p[i], host[i], bytes[i],
						err, errlen))
			return -EIO;
	}
	return 0;
}

static void mm_cu_tmp_put(struct mm_cuda *cu, struct mm_cu_tmp *t)
{
	cu->f.StreamSynchronize(cu->st);
	for (int i = 0; i < 4; i++)
		if (t->p[i])
			cu->f.MemFree(t->p[i]);
}

/* Runs a row operation: buffers in, kernel, result (buffer `res`) out. */
#define MM_CU_ROWOP(cu, nb, host, bytes, res, out, outbytes, launch)	\
	do {								\
		struct mm_cu_tmp t_ = { { 0 } };					\
		int ret_;						\
		pthread_mutex_lock(&(cu)->lock);			\
		ret_ = mm_cu_enter(cu, err, errlen);			\
		if (!ret_)						\
			ret_ = mm_cu_tmp_get(cu, &t_, host, bytes, nb, err, \
					     errlen);			\
		if (!ret_)						\
			ret_ = (launch);				\
		if (!ret_)						\
			ret_ = mm_cu_get_locked(cu, out, t_.p[res],	\
						outbytes, err, errlen); \
		if (!ret_)						\
			ret_ = mm_cu_sync(cu, err, errlen);		\
		mm_cu_tmp_put(cu, &t_);					\
		pthread_mutex_unlock(&(cu)->lock);			\
		return ret_;						\
	} while (0)

int mm_cuda_rmsnorm(struct mm_cuda *cu, const float *x, const float *w,
		    float *y, int rows, int n, float eps, char *err,
		    size_t errlen)
{
	const void *host[3] = { x, w, NULL };
	const size_t bytes[3] = { (size_t)rows * n * 4, (size_t)n * 4,
				  (size_t)rows * n * 4 };
	CUdeviceptr a, b, c;
	void *args[] = { &a, &b, &c, &n, &eps };

	MM_CU_ROWOP(cu, 3, host, bytes, 2, y, bytes[2],
		    (a = t_.p[0], b = t_.p[1], c = t_.p[2],
		     mm_cu_launch(cu, cu->k.rmsnorm, "mm_rmsnorm", rows, 1,
				  256, 0, args, err, errlen)));
}

int mm_cuda_rope(struct mm_cuda *cu, float *x, int n_heads, int hd,
		 int n_rot, int pos, const float *inv_freq, char *err,
		 size_t errlen)
{
	const void *host[2] = { x, inv_freq };
	const size_t bytes[2] = { (size_t)n_heads * hd * 4,
				  (size_t)n_rot / 2 * 4 };
	const int np = n_heads * (n_rot / 2);
	CUdeviceptr a, b;
	void *args[] = { &a, &n_heads, &hd, &n_rot, &pos, &b };

	MM_CU_ROWOP(cu, 2, host, bytes, 0, x, bytes[0],
		    (a = t_.p[0], b = t_.p[1],
		     mm_cu_launch(cu, cu->k.rope, "mm_rope", (np + 255) / 256,
				  1, 256, 0, args, err, errlen)));
}

int mm_cuda_softmax(struct mm_cuda *cu, float *x, int rows, int n,
		    char *err, size_t errlen)
{
	const void *host[1] = { x };
	const size_t bytes[1] = { (size_t)rows * n * 4 };
	CUdeviceptr a;
	void *args[] = { &a, &n };

	MM_CU_ROWOP(cu, 1, host, bytes, 0, x, bytes[0],
		    (a = t_.p[0],
		     mm_cu_launch(cu, cu->k.softmax, "mm_softmax", rows, 1,
				  256, 0, args, err, errlen)));
}

int mm_cuda_attn(struct mm_cuda *cu, const float *q, const uint16_t *kh,
		 const uint16_t *vh, float *out, int n_head, int n_head_kv,
		 int hd, int npos, char *err, size_t errlen)
{
	/* scratch: n_head x npos scores, then the n_head x hd output */
	const void *host[4] = { q, kh, vh, NULL };
	const size_t kv = (size_t)n_head_kv * npos * hd * 2;
	const size_t bytes[4] = { (size_t)n_head * hd * 4, kv, kv,
				  (size_t)n_head * (npos + hd) * 4 };
	struct mm_cu_tmp t = { { 0 } };
	CUdeviceptr a, b, c, s, o = 0;
	void *args[] = { &a, &b, &c, &s, &o, &n_head, &n_head_kv, &hd, &npos };
	int ret;

	if (n_head_kv < 1 || n_head % n_head_kv || hd < 1 || npos < 1)
		return mm_errf(-EINVAL, err, errlen,
			       "cuda: attention of %d heads over %d KV heads, %d positions",
			       n_head, n_head_kv, npos);
	pthread_mutex_lock(&cu->lock);
	ret = mm_cu_enter(cu, err, errlen);
	if (!ret)
		ret = mm_cu_tmp_get(cu, &t, host, bytes, 4, err, errlen);
	if (!ret) {
		a = t.p[0], b = t.p[1], c = t.p[2], s = t.p[3];
		o = s + (size_t)n_head * npos * 4;
		ret = mm_cu_launch(cu, cu->k.attn_dec, "mm_attn_dec", n_head,
				   1, 256, hd * 4, args, err, errlen);
	}
	if (!ret)
		ret = mm_cu_get_locked(cu, out, o, (size_t)n_head * hd * 4,
				       err, errlen);
	if (!ret)
		ret = mm_cu_sync(cu, err, errlen);
	mm_cu_tmp_put(cu, &t);
	pthread_mutex_unlock(&cu->lock);
	return ret;
}

int mm_cuda_bench_gemm(struct mm_cuda *cu, enum mm_type t, uint64_t W,
		       int64_t m, int64_t k, int64_t n, int iters,
		       double *ms, char *err, size_t errlen)
{
	struct timespec a, b;
	int ret;

	*ms = 0;
	if ((!mm_cuda_type_ok(t) && !mm_cuda_ftype_ok(t)) ||
	    (mm_cuda_type_ok(t) && k % 256) || n < 1 || iters < 1)
		return mm_errf(-EINVAL, err, errlen, "cuda: bad benchmark shape");
	pthread_mutex_lock(&cu->lock);
	ret = mm_cu_enter(cu, err, errlen);
	if (!ret)
		ret = mm_cu_reserve(cu, &cu->q, n * k, err, errlen);
	if (!ret)
		ret = mm_cu_reserve(cu, &cu->x, n * k * sizeof(float), err, errlen);
	if (!ret)
		ret = mm_cu_reserve(cu, &cu->d, n * k / 32 * 4, err, errlen);
	if (!ret)
		ret = mm_cu_reserve(cu, &cu->s, n * k / 32 * 4, err, errlen);
	if (!ret)
		ret = mm_cu_reserve(cu, &cu->y, m * n * 4, err, errlen);
	/* activations: whatever the scratch holds, quantized as usual */
	if (!ret && mm_cu_actmode(t) < 2)
		ret = mm_cu_quant(cu, mm_cu_actmode(t), k, n, err, errlen);
	if (!ret)
		ret = mm_cu_product(cu, t, W, m, k, n, cu->y.p, err, errlen);
	if (!ret)
		ret = mm_cu_sync(cu, err, errlen);
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < iters && !ret; i++)
		ret = mm_cu_product(cu, t, W, m, k, n, cu->y.p, err, errlen);
	if (!ret)
		ret = mm_cu_sync(cu, err, errlen);
	clock_gettime(CLOCK_MONOTONIC, &b);
	pthread_mutex_unlock(&cu->lock);
	*ms = ((b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6) /
	      iters;
	return ret;
}

/* ---- frames ------------------------------------------------------------ */

int mm_cuda_host_register(struct mm_cuda *cu, void *addr, size_t bytes,
			  uint64_t *dev, char *err, size_t errlen)
{
	const uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	const uintptr_t lo = (uintptr_t)addr & ~(pg - 1);
	const uintptr_t hi = ((uintptr_t)addr + bytes + pg - 1) & ~(pg - 1);
	CUdeviceptr p = 0;
	int ret;

	*dev = 0;
	if (!addr || !bytes)
		return mm_errf(-EINVAL, err, errlen, "cuda: no frame mapping to register");
	pthread_mutex_lock(&cu->lock);
	ret = mm_cu_enter(cu, err, errlen);
	if (!ret) {
		CUresult r = cu->f.MemHostRegister((void *)lo, hi - lo,
			CU_MEMHOSTREGISTER_DEVICEMAP |
			(cu->host_ro ? CU_MEMHOSTREGISTER_READ_ONLY : 0));

		if (r != CUDA_SUCCESS)
			ret = mm_cu_fail(cu, "cuMemHostRegister", r, err, errlen);
	}
	if (!ret) {
		CUresult r = cu->f.MemHostGetDevicePointer(&p, (void *)lo, 0);

		if (r != CUDA_SUCCESS) {
			ret = mm_cu_fail(cu, "cuMemHostGetDevicePointer", r,
					 err, errlen);
			cu->f.MemHostUnregister((void *)lo);
		}
	}
	pthread_mutex_unlock(&cu->lock);
	if (!ret)
		*dev = p + ((uintptr_t)addr - lo);
	return ret;
}

int mm_cuda_host_unregister(struct mm_cuda *cu, void *addr, char *err,
			    size_t errlen)
{
	const uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	int ret;

	pthread_mutex_lock(&cu->lock);
	ret = mm_cu_enter(cu, err, errlen);
	if (!ret) {
		CUresult r = cu->f.MemHostUnregister(
			(void *)((uintptr_t)addr & ~(pg - 1)));

		if (r != CUDA_SUCCESS)
			ret = mm_cu_fail(cu, "cuMemHostUnregister", r, err,
					 errlen);
	}
	pthread_mutex_unlock(&cu->lock);
	return ret;
}


/* Checks a frame description against the geometry the kernels assume. */
static int mm_cu_frame_ok(const struct mm_cuda_frame *f, char *err,
			  size_t errlen)
{
	const uint32_t s = f->s;

	if (f->fmt < 0 || f->fmt > 2 || !f->plane[0] ||
	    (f->fmt == 2 && !f->plane[1]) || !f->w || !f->h ||
	    f->w > 65536 || f->h > 65536 || !s || s > 8192 ||
	    f->stride[0] < (uint64_t)f->w * (f->fmt == 1 ? 3 : 1) ||
	    f->stride[0] > INT32_MAX ||
	    (f->fmt == 2 && (f->stride[1] < f->w || f->stride[1] > INT32_MAX ||
			     ((f->w | f->h) & 1))) ||
	    (f->same && (f->w != s || f->h != s)) ||
	    (!f->same && (!f->cw || !f->ch || f->cx + f->cw > s ||
			  f->cy + f->ch > s)) ||
	    !f->P || s % f->P || !(f->std[0] > 0) || !(f->std[1] > 0) ||
	    !(f->std[2] > 0))
		return mm_errf(-EINVAL, err, errlen,
			       "cuda: bad frame (format %d, %ux%u, image %u, patch %u)",
			       f->fmt, f->w, f->h, s, f->P);
	return 0;
}

int mm_cuda_image(struct mm_cuda *cu, const struct mm_cuda_frame *f,
		  float *pixels, float *unfold, const struct mm_cuda_mat *patch,
		  char *err, size_t errlen)
{
	const int64_t s = f->s, P = f->P ? f->P : 1, side = s / P;
	const int64_t np = side * side, kp = 3 * P * P;
	const size_t npx = 3 * (size_t)s * s;
	int ret = mm_cu_frame_ok(f, err, errlen);

	if (ret)
		return ret;
	if (patch && (!mm_cuda_ftype_ok(patch->t) || !patch->dev ||
		      patch->m < 1 || patch->m > INT32_MAX))
		return mm_errf(-EINVAL, err, errlen,
			       "cuda: no f32 kernel for a %s patch embedding",
			       mm_type_name(patch->t));
	pthread_mutex_lock(&cu->lock);
	ret = mm_cu_enter(cu, err, errlen);
	if (!ret)
		ret = mm_cu_reserve(cu, &cu->px, npx * sizeof(float), err,
				    errlen);
	if (!ret) {
		CUdeviceptr p0 = f->plane[0], p1 = f->plane[1], o = cu->px.p;
		long long st0 = (long long)f->stride[0];
		long long st1 = (long long)f->stride[1];
		int fmt = f->fmt, w = (int)f->w, h = (int)f->h, is = (int)s;
		int same = f->same, cx = (int)f->cx, cy = (int)f->cy;
		int cw = (int)f->cw, ch = (int)f->ch;
		int pad = f->pad[0] | f->pad[1] << 8 | f->pad[2] << 16;
		float xr = f->xr, yr = f->yr;
		float m0 = f->mean[0], m1 = f->mean[1], m2 = f->mean[2];
		float d0 = f->std[0], d1 = f->std[1], d2 = f->std[2];
		void *args[] = { &p0, &p1, &st0, &st1, &fmt, &w, &h, &is,
				 &same, &cx, &cy, &cw, &ch, &xr, &yr, &m0,
				 &m1, &m2, &d0, &d1, &d2, &pad, &o };

		ret = mm_cu_launch(cu, cu->k.pre_overview, "mm_pre_overview",
				   (unsigned)((s * s + 255) / 256), 1, 256, 0,
				   args, err, errlen);
	}
	if (!ret && pixels)
		ret = mm_cu_get_locked(cu, pixels, cu->px.p,
				       npx * sizeof(float), err, errlen);
	if (!ret && (unfold || patch)) {
		ret = mm_cu_reserve(cu, &cu->x, np * kp * sizeof(float), err,
				    errlen);
		if (!ret) {
			CUdeviceptr px = cu->px.p, u = cu->x.p;
			int is = (int)s, ip = (int)P;
			void *args[] = { &px, &u, &is, &ip };

			ret = mm_cu_launch(cu, cu->k.im2col, "mm_im2col",
					   (unsigned)((np * kp + 255) / 256),
					   1, 256, 0, args, err, errlen);
		}
	}
	if (!ret && unfold)
		ret = mm_cu_get_locked(cu, unfold, cu->x.p,
				       np * kp * sizeof(float), err, errlen);
	if (!ret && patch)	/* the GEMM reads cu->x in place */
		ret = mm_cu_matmul_locked(cu, patch, 1, NULL, kp, np, err,
					  errlen);
	else if (!ret)
		ret = mm_cu_sync(cu, err, errlen);
	pthread_mutex_unlock(&cu->lock);
	return ret;
}

#endif /* MM_CUDA_ON */
