// Logic and shift (ALU): ILP independent xorshift32 generators, x ^= x << 13; x ^= x >> 17;
// x ^= x << 5 (3 shifts + 3 xors per step). The state never becomes zero and its bits keep toggling.
#include "common.cuh"

extern "C" __global__ void alu_logic(MB_PARAMS)
{
    unsigned x[ILP];
#pragma unroll
    for (int j = 0; j < ILP; ++j) x[j] = (MB_GTID + 1u) * 2654435761u + j;
#pragma unroll 1
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
            for (int j = 0; j < ILP; ++j) {
                x[j] ^= x[j] << 13;
                x[j] ^= x[j] >> 17;
                x[j] ^= x[j] << 5;
            }
        }
    }
    unsigned s = x[0];
#pragma unroll
    for (int j = 1; j < ILP; ++j) s += x[j];
    MB_SINK((float)s);
}
