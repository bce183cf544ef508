// FP64 pipe: ILP independent chains of x <- x*x + c in double precision (fma.rn.f64).
#include "common.cuh"

extern "C" __global__ void fp64_fma(MB_PARAMS)
{
    double c = (double)fa;
    double x[ILP];
#pragma unroll
    for (int j = 0; j < ILP; ++j) x[j] = (double)(threadIdx.x + j) * (double)fb;
#pragma unroll 1
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
            for (int j = 0; j < ILP; ++j) x[j] = fma(x[j], x[j], c);
        }
    }
    double s = x[0];
#pragma unroll
    for (int j = 1; j < ILP; ++j) s += x[j];
    MB_SINK((float)s);
}
