// Global-memory kernels: L1 hits (ld.global.ca), read-only/texture path (ld.global.nc), L2 hits
// (ld.global.cg), DRAM streaming (ld.global.cg over a working set far larger than L2), the
// mixbench-style arithmetic-intensity kernel and a vector-load streaming-bandwidth kernel.
//
// Addressing: every warp reads, per trip, a window of whole 128-byte lines (lane l reads word l
// of each line: fully coalesced). Windows of consecutive warps are adjacent; after each trip a
// warp moves on by (number of warps x window), wrapped into the working set of foot_bytes (a power
// of two >= window). So the whole working set is swept, and with foot_bytes == window every warp
// re-reads the same bytes (cache-resident). Loads use immediate offsets from one base register
// per trip: the per-trip address update is and + add + add (64-bit), nothing per load.
#include "common.cuh"

#define MB_STREAM_SETUP(window)                                                              \
    const unsigned long long mask = foot_bytes - 1ull;                                       \
    const unsigned long long gwarp = MB_GTID / MB_WAVE;                                          \
    const unsigned long long step = ((unsigned long long)(MB_NTHREADS / MB_WAVE) * (window)) & mask; \
    unsigned long long off = (gwarp * (window)) & mask;

// Two loads per FMA, acc <- a*b + acc: two of every three body instructions are loads.
template <int OP> struct PairBody {
    const float* p;
    float* acc;
    template <int K> __device__ __forceinline__ void at()
    {
        acc[K % ILP] = fmaf(MbLoad<OP>::template at<2 * K * MB_LINE>(p),
                            MbLoad<OP>::template at<(2 * K + 1) * MB_LINE>(p), acc[K % ILP]);
    }
};

template <int OP> __device__ __forceinline__ void load_pairs(MB_PARAMS)
{
    MB_STREAM_SETUP(2ull * UNROLL * ILP * MB_LINE)
    const float* base = data + (threadIdx.x % MB_WAVE);
    float acc[ILP];
#pragma unroll
    for (int j = 0; j < ILP; ++j) acc[j] = fb * j;
#pragma unroll 1
    for (int i = 0; i < iters; ++i) {
        PairBody<OP> body = {(const float*)((const char*)base + off), acc};
        StaticFor<UNROLL * ILP>::run(body);
        off = (off + step) & mask;
    }
    float s = acc[0];
#pragma unroll
    for (int j = 1; j < ILP; ++j) s += acc[j];
    MB_SINK(s);
}

extern "C" __global__ void l1_hit(MB_PARAMS) { load_pairs<MB_CA>(out, data, iters, foot_bytes, fa, fb, ia, ib, never); }
extern "C" __global__ void tex_ldg(MB_PARAMS) { load_pairs<MB_NC>(out, data, iters, foot_bytes, fa, fb, ia, ib, never); }
extern "C" __global__ void l2_hit(MB_PARAMS) { load_pairs<MB_CG>(out, data, iters, foot_bytes, fa, fb, ia, ib, never); }
extern "C" __global__ void dram_stream(MB_PARAMS) { load_pairs<MB_CG>(out, data, iters, foot_bytes, fa, fb, ia, ib, never); }

// mixbench-style arithmetic intensity: per loaded element (ld.global.cg, DRAM working set)
// K_FMA dependent FMAs t <- t*t + c (c = fa), then one add into the chain's accumulator.
#ifndef K_FMA
#define K_FMA 8
#endif

struct IntensityBody {
    const float* p;
    float* acc;
    float c;
    template <int K> __device__ __forceinline__ void at()
    {
        float t = MbLoad<MB_CG>::template at<K * MB_LINE>(p);
#pragma unroll
        for (int k = 0; k < K_FMA; ++k) t = fmaf(t, t, c);
        acc[K % ILP] += t;
    }
};

extern "C" __global__ void fma_intensity(MB_PARAMS)
{
    MB_STREAM_SETUP(1ull * UNROLL * ILP * MB_LINE)
    const float* base = data + (threadIdx.x % MB_WAVE);
    float acc[ILP];
#pragma unroll
    for (int j = 0; j < ILP; ++j) acc[j] = fb * j;
#pragma unroll 1
    for (int i = 0; i < iters; ++i) {
        IntensityBody body = {(const float*)((const char*)base + off), acc, fa};
        StaticFor<UNROLL * ILP>::run(body);
        off = (off + step) & mask;
    }
    float s = acc[0];
#pragma unroll
    for (int j = 1; j < ILP; ++j) s += acc[j];
    MB_SINK(s);
}

// Streaming bandwidth: 16-byte vector loads (ld.global.cg.v4.f32, 512 bytes per warp request),
// each consumed by two FMAs.
#if defined(MB_AMDGCN)
// AMD: the two FMAs as one two-lane FMA on (x, y) * (z, w) into a pair of accumulators, which is
// one v_pk_fma_f32 on the loaded registers on gfx90a/gfx942 (the pairing x*y, z*w of the CUDA body
// makes the compiler pack FMAs of different chains and shuffle registers with v_mov for it).
struct VecBody {
    const float* p;
    mb_float2* acc;
    template <int K> __device__ __forceinline__ void at()
    {
        const mb_float4 v = MbLoad<MB_CG>::template at4<K * 4 * MB_LINE>(p);
        acc[K % ILP] = __builtin_elementwise_fma(v.xy, v.zw, acc[K % ILP]);
    }
};
#else
struct VecBody {
    const float* p;
    float* acc;
    template <int K> __device__ __forceinline__ void at()
    {
        const mb_float4 v = MbLoad<MB_CG>::template at4<K * 4 * MB_LINE>(p);
        acc[K % ILP] = fmaf(v.x, v.y, acc[K % ILP]);
        acc[K % ILP] = fmaf(v.z, v.w, acc[K % ILP]);
    }
};
#endif

extern "C" __global__ void bw_stream(MB_PARAMS)
{
    MB_STREAM_SETUP(4ull * UNROLL * ILP * MB_LINE)
    const float* base = data + 4u * (threadIdx.x % MB_WAVE);
#if defined(MB_AMDGCN)
    mb_float2 acc[ILP];
#pragma unroll
    for (int j = 0; j < ILP; ++j) acc[j] = (mb_float2){fb * j, fb * j};
#else
    float acc[ILP];
#pragma unroll
    for (int j = 0; j < ILP; ++j) acc[j] = fb * j;
#endif
#pragma unroll 1
    for (int i = 0; i < iters; ++i) {
        VecBody body = {(const float*)((const char*)base + off), acc};
        StaticFor<UNROLL * ILP>::run(body);
        off = (off + step) & mask;
    }
#if defined(MB_AMDGCN)
    float s = acc[0].x + acc[0].y;
#pragma unroll
    for (int j = 1; j < ILP; ++j) s += acc[j].x + acc[j].y;
#else
    float s = acc[0];
#pragma unroll
    for (int j = 1; j < ILP; ++j) s += acc[j];
#endif
    MB_SINK(s);
}
