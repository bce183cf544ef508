// Shared memory: volatile loads and stores (ld/st.volatile.shared) that the compiler must keep
// (on AMD: LDS ds_read/ds_write, see MB_SH_LD in common.cuh; 32 banks of 4 bytes there too).
// Lane l of a warp uses word l*CONFLICT_WAYS of each row of 32*CONFLICT_WAYS words, so
// CONFLICT_WAYS = 1 is conflict-free and CONFLICT_WAYS = n gives an n-way bank conflict
// (32 banks of 4 bytes). Each step: ILP loads, then ILP stores of the loaded values one row up.
// The array holds one fixed value (written before the loop), so the data never depends on timing.
// No loop outside the hot loop, so the PTX has exactly one loop.
#include "common.cuh"

#ifndef CONFLICT_WAYS
#define CONFLICT_WAYS 1
#endif
#define SH_ROW (32 * CONFLICT_WAYS)

extern "C" __global__ void shared_rw(MB_PARAMS)
{
    __shared__ float sbuf[(ILP + 1) * SH_ROW];
    MB_SH_PTR s = (MB_SH_PTR)(sbuf + (threadIdx.x % 32) * CONFLICT_WAYS);
    // every thread writes the words it will use (all warps write the same value: no race matters)
#pragma unroll
    for (int j = 0; j <= ILP; ++j) MB_SH_ST(s + j * SH_ROW, fb);
#pragma unroll 1
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            float v[ILP];
#pragma unroll
            for (int j = 0; j < ILP; ++j) v[j] = MB_SH_LD(s + j * SH_ROW);
#pragma unroll
            for (int j = 0; j < ILP; ++j) MB_SH_ST(s + (j + 1) * SH_ROW, v[j]);
        }
    }
    MB_SINK(MB_SH_LD(s));
}
