// Shared skeleton of the microbenchmark kernels (NVRTC and nvcc compatible: no host headers).
//
// Every kernel takes the same parameter list (MB_PARAMS) so one launcher serves them all:
//   out        scratch output, written only by the never-true store (or by measurement kernels)
//   data       read-only input (memory kernels) or pointer-chase chain
//   iters      trips of the hot loop (runtime, so the loop cannot be folded)
//   foot_bytes working-set size in bytes (power of two) of the memory kernels
//   fa, fb     fixed float inputs (e.g. the constant c of x <- x*x + c)
//   ia, ib     fixed integer inputs (e.g. LCG multiplier and increment)
//   never      a NaN: `v == never` is false for every v, but the compiler cannot know it,
//              so the result of the hot loop stays live and nothing is dead-code eliminated.
// Compile-time parameters arrive as macros (-DUNROLL=16 -DILP=4 ...).
#pragma once

#ifndef UNROLL
#define UNROLL 16
#endif
#ifndef ILP
#define ILP 4
#endif

#define MB_PARAMS float* __restrict__ out, const float* __restrict__ data, int iters, \
    unsigned long long foot_bytes, float fa, float fb, unsigned ia, unsigned ib, float never

#define MB_GTID (blockIdx.x * blockDim.x + threadIdx.x)
#define MB_NTHREADS (gridDim.x * blockDim.x)

// The never-true store: keeps `v` (and everything it depends on) alive.
#define MB_SINK(v) do { if ((v) == never) out[MB_GTID] = (v); } while (0)

// Bytes read by one warp-wide 4-byte-per-lane load (one 128-byte line).
#define MB_LINE 128

// StaticFor<N>::run(f) calls f.template at<K>() for K = 0 .. N-1, with K a constant expression
// (an unrolled loop whose index can feed template arguments, e.g. immediate load offsets).
template <int N> struct StaticFor {
    template <class F> __device__ __forceinline__ static void run(F& f)
    {
        StaticFor<N - 1>::run(f);
        f.template at<N - 1>();
    }
};
template <> struct StaticFor<0> {
    template <class F> __device__ __forceinline__ static void run(F&) {}
};

// Global loads with an explicit cache operator and an immediate byte offset, one PTX instruction
// each: [base + OFF] needs no address arithmetic. (__ldca/__ldcg/__ldg take a register address,
// which costs an extra 64-bit add per load.)
enum { MB_CA = 0, MB_CG = 1, MB_NC = 2 };
template <int OP> struct MbLoad;
template <> struct MbLoad<MB_CA> {
    template <int OFF> __device__ __forceinline__ static float at(const float* p)
    {
        float v;
        asm("ld.global.ca.f32 %0, [%1+%2];" : "=f"(v) : "l"(p), "n"(OFF));
        return v;
    }
};
template <> struct MbLoad<MB_CG> {
    template <int OFF> __device__ __forceinline__ static float at(const float* p)
    {
        float v;
        asm("ld.global.cg.f32 %0, [%1+%2];" : "=f"(v) : "l"(p), "n"(OFF));
        return v;
    }
    template <int OFF> __device__ __forceinline__ static float4 at4(const float* p)
    {
        float4 v;
        asm("ld.global.cg.v4.f32 {%0,%1,%2,%3}, [%4+%5];"
            : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p), "n"(OFF));
        return v;
    }
};
template <> struct MbLoad<MB_NC> {
    template <int OFF> __device__ __forceinline__ static float at(const float* p)
    {
        float v;
        asm("ld.global.nc.f32 %0, [%1+%2];" : "=f"(v) : "l"(p), "n"(OFF));
        return v;
    }
};
