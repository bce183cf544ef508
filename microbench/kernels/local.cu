// Local memory: a per-thread array indexed with a run-time index cannot live in registers, so
// every access is an ld.local / st.local (the traffic of register spills; cached in L1/L2,
// interleaved across threads so a warp's access is coalesced). Each step copies ILP words of
// the array to another part of it; the window moves every trip by a run-time step (ia).
#include "common.cuh"

#ifndef LOCAL_WORDS
#define LOCAL_WORDS 256
#endif
#define LOCAL_NL (UNROLL * ILP)

extern "C" __global__ void local_spill(MB_PARAMS)
{
    float buf[LOCAL_WORDS + 2 * LOCAL_NL];
#pragma unroll
    for (int k = 0; k < LOCAL_WORDS + 2 * LOCAL_NL; ++k) buf[k] = fb;
    unsigned idx = 0;
#pragma unroll 1
    for (int i = 0; i < iters; ++i) {
        float* b = buf + idx;
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            float v[ILP];
#pragma unroll
            for (int j = 0; j < ILP; ++j) v[j] = b[u * ILP + j];
#pragma unroll
            for (int j = 0; j < ILP; ++j) b[LOCAL_NL + u * ILP + j] = v[j];
        }
        idx = (idx + ia) & (LOCAL_WORDS - 1);
    }
    MB_SINK(buf[ib & (LOCAL_WORDS - 1)]);
}
