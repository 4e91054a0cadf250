// SPDX-License-Identifier: MIT
/*
 * cuda_fake.c - stand-ins for libcuda.so.1 in the CUDA back end's tests
 * (cuda_test.c loads them through MMHAL_CUDA_LIB). They run no kernel:
 * they reach the loader's failure paths.
 *
 * Built whole, every entry point cuda.c looks up is here, and
 * MMHAL_FAKE_CUDA (read at cuInit) chooses the failure:
 *   nodev  cuInit returns CUDA_ERROR_NO_DEVICE
 *   zero   no device (cuDeviceGetCount 0)
 *   old    one device of compute capability 7.5
 *   oom    an sm_90 device whose cuModuleLoadData runs out of memory
 *   run    an sm_90 device whose module loads, memory is host memory
 *          (malloc, memcpy), every kernel launch fails (no kernel runs:
 *          the callers' CPU fallback), host registration succeeds (the
 *          device address of a registered byte is its host address)
 *   regfail  as run, cuMemHostRegister fails
 * mmfake_host() counts the host registrations (calls, successes,
 * unregistrations) and mmfake_launches(name) the launches of a kernel.
 * Built with MM_FAKE_PARTIAL, only the first entry points are there.
 * mmfake_ctx_refs() counts primary contexts retained and not released.
 */
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUmodule;

#define API __attribute__((visibility("default")))

enum {
	OK = 0,
	OUT_OF_MEMORY = 2,
	NOT_INITIALIZED = 3,
	NO_DEVICE = 100,
	INVALID_DEVICE = 101,
	NOT_SUPPORTED = 801,
};

static const char *mode = "";
static int inited, refs;

API int mmfake_ctx_refs(void)
{
	return refs;
}

API CUresult cuGetErrorName(CUresult r, const char **s)
{
	switch (r) {
	case OK: *s = "CUDA_SUCCESS"; return OK;
	case OUT_OF_MEMORY: *s = "CUDA_ERROR_OUT_OF_MEMORY"; return OK;
	case NOT_INITIALIZED: *s = "CUDA_ERROR_NOT_INITIALIZED"; return OK;
	case NO_DEVICE: *s = "CUDA_ERROR_NO_DEVICE"; return OK;
	case INVALID_DEVICE: *s = "CUDA_ERROR_INVALID_DEVICE"; return OK;
	case NOT_SUPPORTED: *s = "CUDA_ERROR_NOT_SUPPORTED"; return OK;
	}
	*s = NULL;
	return 1;	/* CUDA_ERROR_INVALID_VALUE */
}

API CUresult cuGetErrorString(CUresult r, const char **s)
{
	switch (r) {
	case OK: *s = "no error"; return OK;
	case OUT_OF_MEMORY: *s = "out of memory"; return OK;
	case NOT_INITIALIZED: *s = "initialization error"; return OK;
	case NO_DEVICE: *s = "no CUDA-capable device is detected"; return OK;
	case INVALID_DEVICE: *s = "invalid device ordinal"; return OK;
	case NOT_SUPPORTED: *s = "operation not supported"; return OK;
	}
	*s = NULL;
	return 1;
}

API CUresult cuInit(unsigned flags)
{
	const char *m = getenv("MMHAL_FAKE_CUDA");

	mode = m ? m : "";
	if (flags)
		return 1;
	if (!strcmp(mode, "nodev"))
		return NO_DEVICE;
	inited = 1;
	return OK;
}

API CUresult cuDriverGetVersion(int *v)
{
	*v = 13000;
	return OK;
}

API CUresult cuDeviceGetCount(int *n)
{
	if (!inited)
		return NOT_INITIALIZED;
	*n = !strcmp(mode, "zero") ? 0 : 1;
	return OK;
}

API CUresult cuDeviceGet(CUdevice *d, int i)
{
	if (!inited)
		return NOT_INITIALIZED;
	if (i != 0 || !strcmp(mode, "zero"))
		return INVALID_DEVICE;
	*d = 0;
	return OK;
}

#ifndef MM_FAKE_PARTIAL

static int running(void)
{
	return !strcmp(mode, "run") || !strcmp(mode, "regfail");
}

API CUresult cuDeviceGetName(char *s, int len, CUdevice d)
{
	(void)d;
	strncpy(s, "Fake GPU", len);
	return OK;
}

API CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d)
{
	const int old = !strcmp(mode, "old");

	(void)d;
	switch (attr) {
	case 75: *v = old ? 7 : 9; return OK;	/* COMPUTE_CAPABILITY_MAJOR */
	case 76: *v = old ? 5 : 0; return OK;	/* _MINOR */
	case 113:	/* READ_ONLY_HOST_REGISTER_SUPPORTED */
		if (!running())
			break;
		*v = 1;
		return OK;
	}
	return NOT_SUPPORTED;
}

API CUresult cuDeviceTotalMem_v2(size_t *b, CUdevice d)
{
	(void)d;
	*b = (size_t)1 << 30;
	return OK;
}

API CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d)
{
	(void)d;
	*c = &refs;
	refs++;
	return OK;
}

API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d)
{
	(void)d;
	refs--;
	return OK;
}

API CUresult cuCtxSetCurrent(CUcontext c)
{
	return c == &refs ? OK : INVALID_DEVICE;
}

API CUresult cuModuleLoadData(CUmodule *m, const void *img)
{
	(void)img;
	*m = running() ? (CUmodule)&inited : NULL;
	if (running())
		return OK;
	return !strcmp(mode, "oom") ? OUT_OF_MEMORY : NOT_SUPPORTED;
}

/* ---- run / regfail ------------------------------------------------------ */

typedef unsigned long long CUdeviceptr;
typedef void *CUstream;

static char kname[64][48];
static int nk, klaunch[64], reg_calls, reg_ok, unreg;

API void mmfake_host(int *calls, int *ok, int *un)
{
	*calls = reg_calls;
	*ok = reg_ok;
	*un = unreg;
}

API int mmfake_launches(const char *name)
{
	for (int i = 0; i < nk; i++)
		if (!strcmp(kname[i], name))
			return klaunch[i];
	return 0;
}

API CUresult cuModuleUnload(CUmodule m)
{
	(void)m;
	return OK;
}

API CUresult cuModuleGetFunction(void **f, CUmodule m, const char *name)
{
	(void)m;
	for (int i = 0; i < nk; i++)
		if (!strcmp(kname[i], name)) {
			*f = kname[i];
			return OK;
		}
	if (nk == 64 || strlen(name) >= sizeof(kname[0]))
		return OUT_OF_MEMORY;
	strcpy(kname[nk], name);
	*f = kname[nk++];
	return OK;
}

API CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
	void *h = malloc(n);

	*p = (CUdeviceptr)(size_t)h;
	return h ? OK : OUT_OF_MEMORY;
}

API CUresult cuMemFree_v2(CUdeviceptr p)
{
	free((void *)(size_t)p);
	return OK;
}

API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *h, size_t n,
				  CUstream s)
{
	(void)s;
	memcpy((void *)(size_t)d, h, n);
	return OK;
}

API CUresult cuMemcpyDtoHAsync_v2(void *h, CUdeviceptr d, size_t n,
				  CUstream s)
{
	(void)s;
	memcpy(h, (const void *)(size_t)d, n);
	return OK;
}

API CUresult cuStreamCreate(CUstream *s, unsigned flags)
{
	(void)flags;
	*s = &nk;
	return OK;
}

API CUresult cuStreamDestroy_v2(CUstream s)
{
	(void)s;
	return OK;
}

API CUresult cuStreamSynchronize(CUstream s)
{
	(void)s;
	return OK;
}

API CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz,
			    unsigned bx, unsigned by, unsigned bz,
			    unsigned shmem, CUstream s, void **args,
			    void **extra)
{
	(void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz;
	(void)shmem; (void)s; (void)args; (void)extra;
	if (f >= (void *)kname && f < (void *)(kname + nk))
		klaunch[((char (*)[48])f) - kname]++;
	return NOT_SUPPORTED;
}

API CUresult cuMemHostRegister_v2(void *p, size_t n, unsigned flags)
{
	(void)p; (void)n;
	reg_calls++;
	if (flags != 0x2 + 0x8 || !strcmp(mode, "regfail"))
		return NOT_SUPPORTED;	/* DEVICEMAP | READ_ONLY */
	reg_ok++;
	return OK;
}

API CUresult cuMemHostUnregister(void *p)
{
	(void)p;
	unreg++;
	return OK;
}

API CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *d, void *p,
					  unsigned flags)
{
	(void)flags;
	*d = (CUdeviceptr)(size_t)p;
	return OK;
}

#endif /* MM_FAKE_PARTIAL */
