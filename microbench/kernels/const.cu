// Constant cache: warp-uniform loads from __constant__ memory (ld.const), consumed in pairs by
// FMAs (acc <- a*b + acc), so two of every three loop instructions are constant loads. The base
// index (in words) moves by ia every trip and wraps with the mask ib (working set = ib + 1 words
// plus one trip's window), so no load is loop-invariant and the working set is set at run time.
#include "common.cuh"

#ifndef CONST_WORDS
#define CONST_WORDS 4096
#endif
#define CONST_NLOAD (2 * UNROLL * ILP)

__constant__ float cbank[CONST_WORDS + CONST_NLOAD]; // ib must be < CONST_WORDS

extern "C" __global__ void const_ld(MB_PARAMS)
{
    float acc[ILP];
#pragma unroll
    for (int j = 0; j < ILP; ++j) acc[j] = fb * j;
    unsigned base = 0;
#pragma unroll 1
    for (int i = 0; i < iters; ++i) {
        const float* c = cbank + base;
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
            for (int j = 0; j < ILP; ++j)
                acc[j] = fmaf(c[2 * (u * ILP + j)], c[2 * (u * ILP + j) + 1], acc[j]);
        }
        base = (base + ia) & ib;
    }
    float s = acc[0];
#pragma unroll
    for (int j = 1; j < ILP; ++j) s += acc[j];
    MB_SINK(s);
}
