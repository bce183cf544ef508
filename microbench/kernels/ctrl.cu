// Fetch/decode/schedule without datapath or register traffic: warp-synchronisation barriers
// (__syncwarp() -> bar.warp.sync -1, an immediate mask and no register operands). AMD has no
// warp barrier that is an instruction (HIP's __syncwarp is wavefront-scope fences: no code), so
// the AMD branch issues s_nop 0: an issue slot with no operands.
#include "common.cuh"

#if defined(MB_AMDGCN)
#define MB_CTRL_OP() asm volatile("s_nop 0")
#else
#define MB_CTRL_OP() __syncwarp()
#endif

extern "C" __global__ void ctrl_branch(MB_PARAMS)
{
#pragma unroll 1
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
            for (int j = 0; j < ILP; ++j) MB_CTRL_OP();
        }
    }
    MB_SINK((float)iters);
}
