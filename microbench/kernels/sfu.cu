// Special-function unit (MUFU): ILP independent chains of the seven-step map
//   x <- sin(lg2(ex2(ex2(ex2(rsqrt(cos(x)))))))
// using the intrinsics __cosf, rsqrtf, exp2f, __log2f, __sinf (cos.approx, rsqrt.approx, ex2.approx,
// lg2.approx, sin.approx in PTX: one SFU instruction each). Every intermediate stays in a safe range
// (cos > 0.5, rsqrt in [1, 1.36], ex2^3 <= 61, sin in [-1, 1]) and the orbit does not settle
// on a fixed point, so operand bits keep changing.
//
// AMD (MB_AMDGCN): the transcendental instructions themselves, through AMDGCN builtins (HIP's __cosf
// etc. call ocml, which adds range scaling): v_exp_f32 x3, v_log_f32, v_rsq_f32, v_sin_f32,
// v_cos_f32, one each. v_sin/v_cos take revolutions (sin(2 pi x)), so the seven operations are
// reordered to stay in range: x <- cos(sin(ex2(rsqrt(lg2(ex2(ex2(x))))))): x in [-1, 1] ->
// ex2 in [0.5, 2] -> ex2 in [1.41, 4] -> lg2 in [0.5, 2] -> rsqrt in [0.71, 1.42] ->
// ex2 in [1.63, 2.67] -> sin over a whole period, in [-1, 1] -> cos in [-1, 1]. The map is chaotic
// (Lyapunov exponent above 0.8 per step for every start (tid + j) / 1024 in float64); in numpy's
// float32 its orbits end in cycles of about 90 values, like the CUDA chain's (about 130).
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
#if defined(MB_AMDGCN)
                float y = __builtin_amdgcn_exp2f(x[j]);
                y = __builtin_amdgcn_exp2f(y);
                y = __builtin_amdgcn_logf(y);
                y = __builtin_amdgcn_rsqf(y);
                y = __builtin_amdgcn_exp2f(y);
                y = __builtin_amdgcn_sinf(y);
                x[j] = __builtin_amdgcn_cosf(y);
#else
                float y = __cosf(x[j]);
                y = rsqrtf(y);
                y = exp2f(y);
                y = exp2f(y);
                y = exp2f(y);
                y = __log2f(y);
                x[j] = __sinf(y);
#endif
            }
        }
    }
    float s = x[0];
#pragma unroll
    for (int j = 1; j < ILP; ++j) s += x[j];
    MB_SINK(s);
}
