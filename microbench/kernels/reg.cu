// Register-file heavy: LIVE_REGS live 32-bit registers per thread in ILP independent rows; each
// step updates every register of a row from its two neighbours with the Keccak chi step
// x[j] ^= ~x[j-1] & x[j+1] (indices mod the row length, x[j-1] already updated, so a row is one
// dependent chain): not/and/xor in PTX, one LOP3 reading three distinct registers after ptxas, on
// the cheapest datapath. Each update is invertible, so the state never collapses and keeps
// toggling, and being non-linear it cannot be simplified by reassociation (a pure xor network
// can). Register-to-register moves would be renamed away by the compiler, hence logic ops.
#include "common.cuh"

#ifndef LIVE_REGS
#define LIVE_REGS 64
#endif
#define REG_ROW (LIVE_REGS / ILP)

extern "C" __global__ void reg_mov(MB_PARAMS)
{
    unsigned x[LIVE_REGS];
#pragma unroll
    for (int j = 0; j < LIVE_REGS; ++j) x[j] = (MB_GTID + 1u) * (2654435761u + 2u * j) + ia;
#pragma unroll 1
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
            for (int r = 0; r < ILP; ++r) {
#pragma unroll
                for (int j = 0; j < REG_ROW; ++j)
                    x[r * REG_ROW + j] ^= ~x[r * REG_ROW + (j + REG_ROW - 1) % REG_ROW] & x[r * REG_ROW + (j + 1) % REG_ROW];
            }
        }
    }
    unsigned s = 0;
#pragma unroll
    for (int j = 0; j < LIVE_REGS; ++j) s += x[j];
    MB_SINK((float)s);
}
