// Runner utilities (not benchmarks): spin for ia * 2^20 + ib SM cycles, to measure the SM clock
// against CUDA events. out[0] = cycles actually spun (64-bit).
#include "common.cuh"

extern "C" __global__ void clock_spin(MB_PARAMS)
{
    const long long target = ((long long)ia << 20) + (long long)ib;
    const long long t0 = MB_CLOCK64();
    long long t = t0;
    while (t - t0 < target) t = MB_CLOCK64();
    if (threadIdx.x == 0 && blockIdx.x == 0) ((unsigned long long*)out)[0] = (unsigned long long)(t - t0);
}
