// Fetch/decode/schedule without datapath or register traffic: warp-synchronisation barriers
// (__syncwarp() -> bar.warp.sync -1, an immediate mask and no register operands).
#include "common.cuh"

extern "C" __global__ void ctrl_branch(MB_PARAMS)
{
#pragma unroll 1
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
            for (int j = 0; j < ILP; ++j) __syncwarp();
        }
    }
    MB_SINK((float)iters);
}
