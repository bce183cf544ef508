// INT32 multiply-add (mad.lo.s32 -> IMAD): ILP independent linear congruential generators
// x <- a*x + b (a = ia, b = ib given at run time, so the compiler cannot fold successive steps).
#include "common.cuh"

extern "C" __global__ void int_mad(MB_PARAMS)
{
    unsigned x[ILP];
#pragma unroll
    for (int j = 0; j < ILP; ++j) x[j] = MB_GTID * (2u * j + 1u);
#pragma unroll 1
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
            for (int j = 0; j < ILP; ++j) x[j] = x[j] * ia + ib;
        }
    }
    unsigned s = x[0];
#pragma unroll
    for (int j = 1; j < ILP; ++j) s ^= x[j];
    MB_SINK((float)s);
}
