// What hiprtc's HIP headers give a kernel at run time, for compiling the kernels with a bare
// clang (clang++ -x hip -nogpuinc -nogpulib --cuda-device-only) in `python -m microbench verify`.
// Not used at run time: CuPy's RawModule compiles with hiprtc, whose own headers define all of this.
//
// Only what the kernels use, each defined as HIP (ROCm 6/7 with the clang resource headers) does:
// the language keywords; threadIdx/blockIdx/blockDim/gridDim from the work-item builtins and the
// code-object-v5 implicit kernel arguments (hidden_block_count_x at offset 0); fmaf/fma, __fmul_rn,
// __fadd_rn as in clang's __clang_hip_math.h (builtin fma; plain * and + without
// OCML_BASIC_ROUNDED_OPERATIONS); __syncthreads as a workgroup barrier between workgroup fences.
// Nothing here calls the ROCm device libraries (ocml/ockl), which a bare clang does not link:
// the kernels' AMD branch uses AMDGCN builtins where HIP would call ocml (e.g. __cosf).
#pragma once
#if !defined(__HIPCC_RTC__) && !defined(__HIP_INCLUDE_HIP_HIP_RUNTIME_H)

#define __host__ __attribute__((host))
#define __device__ __attribute__((device))
#define __global__ __attribute__((global))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __forceinline__ inline __attribute__((always_inline))

#define MB_PRELUDE_DIM(NAME, X, Y, Z)                                                       \
    struct NAME##_t {                                                                       \
        __declspec(property(get = __get_x)) unsigned x;                                     \
        __declspec(property(get = __get_y)) unsigned y;                                     \
        __declspec(property(get = __get_z)) unsigned z;                                     \
        __device__ __forceinline__ unsigned __get_x() const { return X; }                   \
        __device__ __forceinline__ unsigned __get_y() const { return Y; }                   \
        __device__ __forceinline__ unsigned __get_z() const { return Z; }                   \
    };                                                                                      \
    extern const __device__ NAME##_t NAME;

#define MB_PRELUDE_IMPLICIT(I) (((const __attribute__((address_space(4))) unsigned*)__builtin_amdgcn_implicitarg_ptr())[I])
MB_PRELUDE_DIM(threadIdx, __builtin_amdgcn_workitem_id_x(), __builtin_amdgcn_workitem_id_y(),
               __builtin_amdgcn_workitem_id_z())
MB_PRELUDE_DIM(blockIdx, __builtin_amdgcn_workgroup_id_x(), __builtin_amdgcn_workgroup_id_y(),
               __builtin_amdgcn_workgroup_id_z())
MB_PRELUDE_DIM(blockDim, __builtin_amdgcn_workgroup_size_x(), __builtin_amdgcn_workgroup_size_y(),
               __builtin_amdgcn_workgroup_size_z())
MB_PRELUDE_DIM(gridDim, MB_PRELUDE_IMPLICIT(0), MB_PRELUDE_IMPLICIT(1), MB_PRELUDE_IMPLICIT(2))

__device__ __forceinline__ float fmaf(float x, float y, float z) { return __builtin_fmaf(x, y, z); }
__device__ __forceinline__ double fma(double x, double y, double z) { return __builtin_fma(x, y, z); }
__device__ __forceinline__ float __fmul_rn(float x, float y) { return x * y; }
__device__ __forceinline__ float __fadd_rn(float x, float y) { return x + y; }
__device__ __forceinline__ void __syncthreads()
{
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
    __builtin_amdgcn_s_barrier();
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
#endif
