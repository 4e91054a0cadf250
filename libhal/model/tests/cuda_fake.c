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
	*m = NULL;
	return !strcmp(mode, "oom") ? OUT_OF_MEMORY : NOT_SUPPORTED;
}

/* Not reached by the tests (the module never loads); there so that the
 * lookup finds every entry point. */
#define FAKE(name) API CUresult name(void) { return NOT_SUPPORTED; }
FAKE(cuModuleUnload)
FAKE(cuModuleGetFunction)
FAKE(cuMemAlloc_v2)
FAKE(cuMemFree_v2)
FAKE(cuMemcpyHtoDAsync_v2)
FAKE(cuMemcpyDtoHAsync_v2)
FAKE(cuStreamCreate)
FAKE(cuStreamDestroy_v2)
FAKE(cuStreamSynchronize)
FAKE(cuLaunchKernel)
FAKE(cuMemHostRegister_v2)
FAKE(cuMemHostUnregister)
FAKE(cuMemHostGetDevicePointer_v2)

#endif /* MM_FAKE_PARTIAL */
