// Shared skeleton of the microbenchmark kernels (NVRTC, nvcc, hiprtc and clang -x hip compatible:
// no host headers).
//
// Two instruction sets: NVIDIA (PTX; the CUDA branch below) and AMD GCN/CDNA/RDNA (the MB_AMDGCN
// branch: HIP through hiprtc at run time, clang -x hip with hip_prelude.h in verify). The AMD branch
// has no PTX asm: loads use the compiler's cache policies (agent-scope relaxed atomic loads bypass the
// non-coherent vector L1: glc on gfx90a, sc1 on gfx942, glc on gfx11), and the wave size comes from
// the target (64 on GFX9/CDNA, 32 on GFX11/RDNA), so a "line" of a wave-wide 4-byte load is
// 4 x MB_WAVE bytes and a warp index is a wave index.
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

#if defined(__HIP__) || defined(__HIPCC_RTC__) || defined(__HIP_PLATFORM_AMD__)
#define MB_AMDGCN 1
#endif

#if defined(MB_AMDGCN)
// lanes of a wave: the target's wavefront size (gfx9 wave64; gfx10+ wave32 unless -mwavefrontsize64)
#if defined(__AMDGCN_WAVEFRONT_SIZE__)
#define MB_WAVE (unsigned)__AMDGCN_WAVEFRONT_SIZE__
#elif defined(__GFX9__)
#define MB_WAVE 64u
#else
#define MB_WAVE 32u
#endif
// Bytes read by one wave-wide 4-byte-per-lane load.
#define MB_LINE (4 * (int)MB_WAVE)
typedef float mb_float4 __attribute__((ext_vector_type(4)));
typedef float mb_float2 __attribute__((ext_vector_type(2)));
// shader cycle counter as HIP's clock64(): s_memtime where the target has it (gfx9, gfx10),
// else the compiler's cycle counter (gfx11: s_getreg SHADER_CYCLES)
#if __has_builtin(__builtin_amdgcn_s_memtime)
#define MB_CLOCK64() ((long long)__builtin_amdgcn_s_memtime())
#else
#define MB_CLOCK64() ((long long)__builtin_readcyclecounter())
#endif
#else
#define MB_WAVE 32u
// Bytes read by one warp-wide 4-byte-per-lane load (one 128-byte line).
#define MB_LINE 128
typedef float4 mb_float4;
#define MB_CLOCK64() clock64()
#endif

// Shared-memory accesses the compiler must keep, one instruction each: volatile on NVIDIA
// (ld/st.volatile.shared); on AMD relaxed workgroup-scope atomics on an LDS pointer (ds_read_b32 /
// ds_write_b32, ds_load_b32 / ds_store_b32 on gfx11), since a volatile LDS access waits for itself.
#if defined(MB_AMDGCN)
#define MB_SH_PTR __attribute__((address_space(3))) float*
#define MB_SH_LD(p) __hip_atomic_load((p), __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_WORKGROUP)
#define MB_SH_ST(p, v) __hip_atomic_store((p), (v), __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_WORKGROUP)
#else
#define MB_SH_PTR volatile float*
#define MB_SH_LD(p) (*(p))
#define MB_SH_ST(p, v) (*(p) = (v))
#endif

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
#if defined(MB_AMDGCN)
// AMD: one global_load each, the offset an immediate where it fits the instruction (13 bits on
// gfx9/gfx11; the compiler adds a base register per 8 KiB otherwise). MB_CA and MB_NC are plain
// loads (the vector L1 is also the texture cache); MB_CG is a relaxed agent-scope atomic load,
// which the memory model must serve past the non-coherent L1 (glc / sc1 / glc); the 16-byte
// MB_CG load (no 16-byte atomics) is a nontemporal load (glc slc / nt / slc dlc).
template <> struct MbLoad<MB_CA> {
    template <int OFF> __device__ __forceinline__ static float at(const float* p) { return p[OFF / 4]; }
};
template <> struct MbLoad<MB_NC> {
    template <int OFF> __device__ __forceinline__ static float at(const float* p) { return p[OFF / 4]; }
};
template <> struct MbLoad<MB_CG> {
    template <int OFF> __device__ __forceinline__ static float at(const float* p)
    {
        return __hip_atomic_load(p + OFF / 4, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
    }
    template <int OFF> __device__ __forceinline__ static mb_float4 at4(const float* p)
    {
        return __builtin_nontemporal_load((const mb_float4*)(p + OFF / 4));
    }
};
#else
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
#endif
