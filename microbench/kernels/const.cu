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
#if defined(MB_AMDGCN)
    // AMD: the bank's address once, in SGPRs, where the compiler cannot see that it is a relocated
    // symbol (it would rematerialize s_getpc + two s_add per 64-byte group every trip): the loads
    // are s_load from an SGPR base + immediate offset (merged into s_load_dwordx16). Two chains
    // share a two-lane FMA on four consecutive words, (a0, a1) += (c0, c1) * (c2, c3): one
    // v_pk_fma_f32 on consecutive SGPRs on gfx9 (the CUDA pairing c0*c1, c2*c3 makes the compiler
    // pack FMAs of two chains and copy every scalar operand pair with s_mov/v_mov first).
    typedef const __attribute__((address_space(4))) float* mb_cptr;
    mb_cptr bank = (mb_cptr)cbank;
    asm volatile("" : "+s"(bank));
#pragma unroll 1
    for (int i = 0; i < iters; ++i) {
        const mb_cptr c = bank + base;
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
            for (int j = 0; j < ILP; j += 2) {
                const int k = 2 * (u * ILP + j);
                if (j + 1 < ILP) {
                    mb_float2 a = {acc[j], acc[j + 1]};
                    a = __builtin_elementwise_fma((mb_float2){c[k], c[k + 1]}, (mb_float2){c[k + 2], c[k + 3]}, a);
                    acc[j] = a.x;
                    acc[j + 1] = a.y;
                } else {
                    acc[j] = fmaf(c[k], c[k + 1], acc[j]);
                }
            }
        }
        base = (base + ia) & ib;
    }
#else
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
#endif
    float s = acc[0];
#pragma unroll
    for (int j = 1; j < ILP; ++j) s += acc[j];
    MB_SINK(s);
}
