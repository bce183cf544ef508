// Special-function unit (MUFU): ILP independent chains of the seven-step map
//   x <- sin(lg2(ex2(ex2(ex2(rsqrt(cos(x)))))))
// using the intrinsics __cosf, rsqrtf, exp2f, __log2f, __sinf (cos.approx, rsqrt.approx, ex2.approx,
// lg2.approx, sin.approx in PTX: one SFU instruction each). Every intermediate stays in a safe range
// (cos > 0.5, rsqrt in [1, 1.36], ex2^3 <= 61, sin in [-1, 1]) and the orbit does not settle
// on a fixed point, so operand bits keep changing.
#include "common.cuh"

extern "C" __global__ void sfu_mix(MB_PARAMS)
{
    float x[ILP];
#pragma unroll
    for (int j = 0; j < ILP; ++j) x[j] = (float)(threadIdx.x + j) * fb;
#pragma unroll 1
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
            for (int j = 0; j < ILP; ++j) {
                float y = __cosf(x[j]);
                y = rsqrtf(y);
                y = exp2f(y);
                y = exp2f(y);
                y = exp2f(y);
                y = __log2f(y);
                x[j] = __sinf(y);
            }
        }
    }
    float s = x[0];
#pragma unroll
    for (int j = 1; j < ILP; ++j) s += x[j];
    MB_SINK(s);
}
