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
extern "C" __global__ void fp32_addmul(MB_PARAMS)
{
    float x[ILP];
#pragma unroll
    for (int j = 0; j < ILP; ++j) x[j] = (float)(threadIdx.x + j) * fb;
#pragma unroll 1
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
            for (int j = 0; j < ILP; ++j) x[j] = __fadd_rn(__fmul_rn(x[j], x[j]), fa);
        }
    }
    float s = x[0];
#pragma unroll
    for (int j = 1; j < ILP; ++j) s += x[j];
    MB_SINK(s);
}
