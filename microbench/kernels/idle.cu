// Launch-only kernel: activates the SMs with (almost) no work. Measures kernel-activation power.
#include "common.cuh"

extern "C" __global__ void idle_kernel(MB_PARAMS)
{
}
