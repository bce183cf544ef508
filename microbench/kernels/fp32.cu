// FP32 pipe: fused multiply-add chains and separate add/mul chains.
// Each of ILP independent chains iterates the bounded chaotic map x <- x*x + c (c = fa = -1.9):
// [-1.9, 1.9] maps into itself, so values never overflow, yet keep changing (operand bits toggle
// as in real workloads) and are fully determined by the fixed inputs.
#include "common.cuh"

extern "C" __global__ void fp32_fma(MB_PARAMS)
{
    float x[ILP];
#pragma unroll
    for (int j = 0; j < ILP; ++j) x[j] = (float)(threadIdx.x + j) * fb;
#pragma unroll 1
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
            for (int j = 0; j < ILP; ++j) x[j] = fmaf(x[j], x[j], fa);
        }
    }
    float s = x[0];
#pragma unroll
    for (int j = 1; j < ILP; ++j) s += x[j];
    MB_SINK(s);
}

// __fmul_rn / __fadd_rn are never contracted into an FMA, so the loop keeps mul.rn.f32 + add.rn.f32.
// In HIP they are plain * and + in a header function, which clang contracts into an FMA
// (-ffp-contract=fast-honor-pragmas); the AMD branch writes * and + here, under a pragma that
// forbids the contraction: v_mul_f32 + v_add_f32 (v_pk_mul_f32 + v_pk_add_f32 on gfx90a/gfx942).
#if defined(MB_AMDGCN)
#define MB_MUL_ADD_RN(x, c) ((x) * (x) + (c))
#else
#define MB_MUL_ADD_RN(x, c) __fadd_rn(__fmul_rn((x), (x)), (c))
#endif
extern "C" __global__ void fp32_addmul(MB_PARAMS)
{
#if defined(MB_AMDGCN)
#pragma clang fp contract(off)
#endif
    float x[ILP];
#pragma unroll
    for (int j = 0; j < ILP; ++j) x[j] = (float)(threadIdx.x + j) * fb;
#pragma unroll 1
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
            for (int j = 0; j < ILP; ++j) x[j] = MB_MUL_ADD_RN(x[j], fa);
        }
    }
    float s = x[0];
#pragma unroll
    for (int j = 1; j < ILP; ++j) s += x[j];
    MB_SINK(s);
}
