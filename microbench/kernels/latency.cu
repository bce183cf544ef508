// Latency and queueing microbenchmarks (cycles from clock64(), the SM's own cycle counter).
//
// pchase_ca / pchase_cg: pointer chase through global memory. `data` holds a chain of 8-byte
//   device addresses built by the host (stride and footprint chosen there); each step is one
//   dependent load p <- *p (ld.global.ca: L1; ld.global.cg: L2 or DRAM depending on the
//   footprint). A first pass of `iters` trips warms caches and TLBs, the second is timed.
//   out[0] = cycles of the timed pass, out[1] = final pointer. Launch with one thread.
// pchase_shared: the same through shared memory; the chain (word indices, from `data`) is first
//   turned into shared-memory addresses. Launch with one thread.
// departure_delay: Wang & Chu's queueing measurement. Every warp issues REQS independent
//   ld.global.cg (fresh lines, so DRAM) back to back and records the cycles from the first issue
//   to the arrival of the last; with many warps issuing at once the latencies, sorted, grow
//   linearly with the rank: slope / (transactions per warp) = departure delay dm_del,
//   intercept = unloaded latency dm_lat. out[2*w], out[2*w+1] = (start, end) clock of warp w
//   in trip i (w counts warps of all trips), out[...] as 64-bit integers.
// On AMD a warp is a wave (MB_WAVE lanes); the loads are the MbLoad cache policies of common.cuh
// (ca: plain load, cg: agent-scope relaxed atomic load past the L1) and the cycle counter is
// MB_CLOCK64 (s_memtime).
#include "common.cuh"

#if defined(MB_AMDGCN)
#define MB_LANES ((int)MB_WAVE)
// the chain holds global addresses: a global (address space 1) pointer, so global_load, not flat_load
#define MB_GLOBAL_U64(p) ((const __attribute__((address_space(1))) unsigned long long*)(p))
#define MB_CHASE_LOAD_ca(p) p = *MB_GLOBAL_U64(p)
#define MB_CHASE_LOAD_cg(p) p = __hip_atomic_load(MB_GLOBAL_U64(p), __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT)
// the chain pointer in a VGPR: a wave-uniform pointer (one thread runs the chase) would otherwise be
// chased with scalar loads (s_load_dwordx2) through the scalar cache instead of the vector L1/L2
#define MB_VECTOR_CHASE(p) asm volatile("" : "+v"(p))
// shared-memory (LDS) addresses are 32-bit offsets in address space 3
#define MB_LDS(T) const __attribute__((address_space(3))) T*
#define MB_SHARED_ADDR(ptr) ((unsigned)(__SIZE_TYPE__)(MB_LDS(void))(ptr))
#define MB_SHARED_CHASE(a) a = *(MB_LDS(unsigned))(__SIZE_TYPE__)(a)
#define MB_LOAD_CG_AT(v, p) v = __hip_atomic_load((p), __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT)
#define MB_KEEP(x) asm volatile("" :: "v"(x) : "memory")
// clang's loop vectorizer would widen the copy loop into 64-bit LDS stores plus a remainder loop
#define MB_SCALAR_LOOP _Pragma("clang loop vectorize(disable) interleave(disable)")
#else
#define MB_SCALAR_LOOP
#define MB_LANES 32
#define MB_CHASE_LOAD_ca(p) asm volatile("ld.global.ca.u64 %0, [%0];" : "+l"(p) :: "memory")
#define MB_CHASE_LOAD_cg(p) asm volatile("ld.global.cg.u64 %0, [%0];" : "+l"(p) :: "memory")
#define MB_VECTOR_CHASE(p)
#define MB_SHARED_ADDR(ptr) ((unsigned)__cvta_generic_to_shared(ptr))
#define MB_SHARED_CHASE(a) asm volatile("ld.shared.u32 %0, [%0];" : "+r"(a) :: "memory")
#define MB_LOAD_CG_AT(v, p) asm volatile("ld.global.cg.f32 %0, [%1];" : "=f"(v) : "l"(p) : "memory")
#define MB_KEEP(x) asm volatile("" :: "f"(x) : "memory")
#endif

#define MB_STREAM_SETUP_DD(window)                                                           \
    const unsigned long long mask = foot_bytes - 1ull;                                       \
    const unsigned long long gwarp = MB_GTID / MB_WAVE;                                      \
    const unsigned long long step = ((unsigned long long)(MB_NTHREADS / MB_WAVE) * (window)) & mask; \
    unsigned long long off = (gwarp * (window)) & mask;

#define MB_CHASE_KERNEL(NAME, OP)                                                              \
extern "C" __global__ void NAME(MB_PARAMS)                                                     \
{                                                                                              \
    unsigned long long* o = (unsigned long long*)out;                                          \
    unsigned long long p = (unsigned long long)data;                                           \
    MB_VECTOR_CHASE(p);                                                                        \
    _Pragma("unroll 1")                                                                        \
    for (int i = 0; i < iters; ++i) {                                                          \
        _Pragma("unroll")                                                                      \
        for (int u = 0; u < UNROLL; ++u)                                                       \
            MB_CHASE_LOAD_##OP(p);                                                             \
    }                                                                                          \
    o[1] = p; /* waits for the last warm-up load before the clock is read */                  \
    const long long t0 = MB_CLOCK64();                                                         \
    _Pragma("unroll 1")                                                                        \
    for (int i = 0; i < iters; ++i) {                                                          \
        _Pragma("unroll")                                                                      \
        for (int u = 0; u < UNROLL; ++u)                                                       \
            MB_CHASE_LOAD_##OP(p);                                                             \
    }                                                                                          \
    o[1] = p; /* the store issues only when the last load has returned */                     \
    const long long t1 = MB_CLOCK64();                                                         \
    o[0] = (unsigned long long)(t1 - t0);                                                      \
}

MB_CHASE_KERNEL(pchase_ca, ca)
MB_CHASE_KERNEL(pchase_cg, cg)

#ifndef SHARED_CHAIN_WORDS
#define SHARED_CHAIN_WORDS 8192
#endif

// data: chain as 32-bit word indices (next element of word k is data[k]), foot_bytes/4 words.
extern "C" __global__ void pchase_shared(MB_PARAMS)
{
    __shared__ unsigned chain[SHARED_CHAIN_WORDS];
    const unsigned* next = (const unsigned*)data;
    const unsigned n = (unsigned)(foot_bytes / 4u);
    const unsigned sbase = MB_SHARED_ADDR(chain);
#pragma unroll 1
    MB_SCALAR_LOOP
    for (unsigned k = 0; k < n; ++k) chain[k] = sbase + 4u * next[k];
    __syncthreads();
    unsigned a = sbase;
    unsigned long long* o = (unsigned long long*)out;
    const long long t0 = MB_CLOCK64();
#pragma unroll 1
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) MB_SHARED_CHASE(a);
    }
    o[1] = a;
    const long long t1 = MB_CLOCK64();
    o[0] = (unsigned long long)(t1 - t0);
}

#ifndef REQS
#define REQS 8
#endif
#ifndef LANE_STRIDE
#define LANE_STRIDE 1
#endif

// one request = one warp-wide load; LANE_STRIDE = 1: lanes read adjacent words (1 line per
// request), LANE_STRIDE = 32: every lane its own line (32 transactions per request).
extern "C" __global__ void departure_delay(MB_PARAMS)
{
    const unsigned long long wbytes = (unsigned long long)REQS * MB_WAVE * LANE_STRIDE * 4u;
    MB_STREAM_SETUP_DD(wbytes)
    const unsigned lane = threadIdx.x % MB_WAVE;
    const unsigned long long nwarps = MB_NTHREADS / MB_WAVE;
    const char* base = (const char*)data + lane * LANE_STRIDE * 4u;
    unsigned long long* o = (unsigned long long*)out;
    float acc = fb;
#pragma unroll 1
    for (int i = 0; i < iters; ++i) {
        const float* p = (const float*)(base + off);
        const long long t0 = MB_CLOCK64();
        float v[REQS];
#pragma unroll
        for (int r = 0; r < REQS; ++r)
            MB_LOAD_CG_AT(v[r], p + r * MB_LANES * LANE_STRIDE);
        float s = v[0];
#pragma unroll
        for (int r = 1; r < REQS; ++r) s += v[r];
        acc += s;
        MB_KEEP(acc); // the sum (all loads back) comes before t1
        const long long t1 = MB_CLOCK64();
        if (lane == 0) {
            const unsigned long long w = (unsigned long long)i * nwarps + gwarp;
            o[2 * w] = (unsigned long long)t0;
            o[2 * w + 1] = (unsigned long long)t1;
        }
        off = (off + step) & mask;
    }
    MB_SINK(acc);
}
