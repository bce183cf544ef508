// Application-like instruction mix (held-out workloads). MIX_<CLASS> is the number of instructions
// of each class per trip (the catalog's per-step counts times UNROLL); trip ops are spread over the
// UNROLL steps (step u gets ops floor(u*N/UNROLL) .. floor((u+1)*N/UNROLL) - 1). Classes:
//   fp      x <- x*x + c                      (fma.rn.f32)
//   dp      x <- x*x + c                      (fma.rn.f64)
//   int     x <- a*x + b                      (mad.lo.s32)
//   sfu     x <- cos(x) / sin(x), alternating (cos.approx / sin.approx)
//   alu     x <- rotl(x, s) / x ^ m, alternating (shf.l.wrap.b32 / xor.b32)
//   shared  volatile load / store, alternating (ld/st.volatile.shared)
//   const   warp-uniform ld.const from a moving base
//   tex     ld.global.nc over the small window (L1/texture hits; same lines as l1)
//   l1      ld.global.ca over a small window   (L1 hits)
//   l2      ld.global.cg over MIX_L2_BYTES     (L2 hits)
//   global  ld.global.cg over foot_bytes       (DRAM)
// Arithmetic ops go round-robin over ILP independent chains per class; alternating kinds alternate
// along each chain, so two of the same kind never follow each other (the compiler cannot merge
// them). Loaded values are consumed in pairs within a step by one FMA each (acc <- a*b + acc; an
// odd one out by an add), so loads add fp instructions; the catalog's count model includes them.
// MIX_LANE_STRIDE = 32 makes the l2/global loads uncoalesced (every lane its own 128-byte line).
// AMD: a warp is a wave (MB_WAVE lanes, a line 4 x MB_WAVE bytes); sfu is v_cos_f32 / v_sin_f32
// (arguments in revolutions: x stays in [-1, 1] all the same) and alu's rotate is v_alignbit_b32.
#include "common.cuh"

#if defined(MB_AMDGCN)
#define MIX_COS(x) __builtin_amdgcn_cosf(x)
#define MIX_SIN(x) __builtin_amdgcn_sinf(x)
#define MIX_ROTL(x, s) (((x) << ((s) & 31u)) | ((x) >> ((32u - (s)) & 31u)))
#else
#define MIX_COS(x) __cosf(x)
#define MIX_SIN(x) __sinf(x)
#define MIX_ROTL(x, s) __funnelshift_l((x), (x), (s))
#endif

// Every instruction the count model gives a trip is one the source asks for, whatever else the mix
// holds (tests/test_verify.py compiles all adaptive-design mixes against it):
// - the values the loop reads but never changes (the kernel's scalar inputs fa, ia, ib, foot_bytes;
//   what the prologue derives from them: ia & 31, ib | 1, (double)fa; the lane's global and shared
//   addresses, the streams' steps and mask) pass through MIX_OPAQUE, an empty asm (no instruction;
//   an unused value is still removed). The compiler cannot see what the value is, so it cannot
//   recompute it inside the loop from what the loop keeps live anyway, or reload a parameter: NVVM
//   does that to save a register, or not, by what else the mix holds (ia & 31 beside INT or
//   constant-cache work, which read ia; data + lane beside texture/L1 loads without INT work;
//   (double)fa beside DP; on sm_100 the parameters and the shared address too), 1-4 instructions
//   per trip that no count model could follow (51 of the 117 adaptive-design mixes before,
//   tests/benchmarks/design_counts.md);
// - the constant bank's address is one mov.u64 per trip (MIX_BANK_ADDR), as the count model says:
//   the compiler hoisted it out of the loop or not by the mix; the loads from it are explicit
//   ld.const with immediate offsets (mix_ld_const), as the global loads are (MbLoad), and the
//   shared accesses explicit volatile ld/st.shared on a 32-bit shared address (a generic pointer
//   would not stay opaque and in the shared window at once).
#if defined(MB_AMDGCN)
#define MIX_OPAQUE(c, x) ((void)0)
#define MIX_BANK_ADDR(p) ((p) = mix_cbank)
typedef MB_SH_PTR mix_sh_t;
#define MIX_SH_ADDR(p) ((mix_sh_t)(p))
#define MIX_SH_LD(a) MB_SH_LD(a)
#define MIX_SH_ST(a, v) MB_SH_ST((a) + MB_WAVE, v)
template <int OFF> __device__ __forceinline__ float mix_ld_const(const float* p) { return p[OFF / 4]; }
#else
#define MIX_OPAQUE(c, x) asm("" : "+" c(x))
#define MIX_BANK_ADDR(p) asm volatile("mov.u64 %0, mix_cbank;" : "=l"(p))
template <int OFF> __device__ __forceinline__ float mix_ld_const(const float* p)
{
    float v;
    asm("ld.const.f32 %0, [%1+%2];" : "=f"(v) : "l"(p), "n"(OFF));
    return v;
}
// shared memory through a 32-bit shared-window address (opaque too) and explicit volatile accesses,
// the store one warp's row (4 x MB_WAVE bytes) further
typedef unsigned mix_sh_t;
#define MIX_SH_ADDR(p) ((mix_sh_t)__cvta_generic_to_shared(p))
__device__ __forceinline__ float MIX_SH_LD(mix_sh_t a)
{
    float v;
    asm volatile("ld.volatile.shared.f32 %0, [%1];" : "=f"(v) : "r"(a) : "memory");
    return v;
}
__device__ __forceinline__ void MIX_SH_ST(mix_sh_t a, float v)
{
    asm volatile("st.volatile.shared.f32 [%0+%1], %2;" :: "r"(a), "n"(4 * MB_WAVE), "f"(v) : "memory");
}
#endif

#ifndef MIX_FP
#define MIX_FP 0
#endif
#ifndef MIX_DP
#define MIX_DP 0
#endif
#ifndef MIX_INT
#define MIX_INT 0
#endif
#ifndef MIX_SFU
#define MIX_SFU 0
#endif
#ifndef MIX_ALU
#define MIX_ALU 0
#endif
#ifndef MIX_SHARED
#define MIX_SHARED 0
#endif
#ifndef MIX_CONST
#define MIX_CONST 0
#endif
#ifndef MIX_TEX
#define MIX_TEX 0
#endif
#ifndef MIX_L1
#define MIX_L1 0
#endif
#ifndef MIX_L2
#define MIX_L2 0
#endif
#ifndef MIX_GLOBAL
#define MIX_GLOBAL 0
#endif
#ifndef MIX_LANE_STRIDE
#define MIX_LANE_STRIDE 1
#endif
#ifndef MIX_SMALL_BYTES
#define MIX_SMALL_BYTES 16384
#endif
#ifndef MIX_L2_BYTES
#define MIX_L2_BYTES 1048576
#endif
#define MIX_CONST_WORDS 4096
#define MIX_LO(n, u) (((u) * (n)) / UNROLL)
#define MIX_CNT(n, u) (MIX_LO(n, (u) + 1) - MIX_LO(n, u))

__constant__ float mix_cbank[MIX_CONST_WORDS + MIX_CONST + 1];

// N loads of one class in one step, lines START.. START+N-1 (line = STRIDE*128 bytes apart),
// consumed pairwise into *acc.
template <int OP, int N, int START, int STRIDE> struct LoadStep {
    const float* p;
    float* acc;
    float first;
    template <int K> __device__ __forceinline__ void at()
    {
        const float v = MbLoad<OP>::template at<(START + K) * STRIDE * MB_LINE>(p);
        if (K % 2 == 0) {
            if (K == N - 1) *acc += v; else first = v;
        } else {
            *acc = fmaf(first, v, *acc);
        }
    }
};

template <int N, int START> struct ConstStep {
    const float* c;
    float* acc;
    float first;
    template <int K> __device__ __forceinline__ void at()
    {
        const float v = mix_ld_const<4 * (START + K)>(c);
        if (K % 2 == 0) {
            if (K == N - 1) *acc += v; else first = v;
        } else {
            *acc = fmaf(first, v, *acc);
        }
    }
};

struct MixBody {
    float xf[ILP]; double xd[ILP]; unsigned xi[ILP]; float xs[ILP]; unsigned xa[ILP];
    float c; double cd; unsigned a, b, s, m;
    mix_sh_t sh;
    const float* ps; const float* pl2; const float* pg; const float* pc;
    float acc_tex, acc_l1, acc_l2, acc_g, acc_c;
    float sh_v;

    template <int U> __device__ __forceinline__ void at()
    {
#pragma unroll
        for (int g = MIX_LO(MIX_FP, U); g < MIX_LO(MIX_FP, U + 1); ++g) xf[g % ILP] = fmaf(xf[g % ILP], xf[g % ILP], c);
#pragma unroll
        for (int g = MIX_LO(MIX_DP, U); g < MIX_LO(MIX_DP, U + 1); ++g) xd[g % ILP] = fma(xd[g % ILP], xd[g % ILP], cd);
#pragma unroll
        for (int g = MIX_LO(MIX_INT, U); g < MIX_LO(MIX_INT, U + 1); ++g) xi[g % ILP] = xi[g % ILP] * a + b;
#pragma unroll
        for (int g = MIX_LO(MIX_SFU, U); g < MIX_LO(MIX_SFU, U + 1); ++g)
            xs[g % ILP] = ((g / ILP) % 2 == 0) ? MIX_COS(xs[g % ILP]) : MIX_SIN(xs[g % ILP]);
#pragma unroll
        for (int g = MIX_LO(MIX_ALU, U); g < MIX_LO(MIX_ALU, U + 1); ++g)
            xa[g % ILP] = ((g / ILP) % 2 == 0) ? MIX_ROTL(xa[g % ILP], s) : (xa[g % ILP] ^ m);
#pragma unroll
        for (int g = MIX_LO(MIX_SHARED, U); g < MIX_LO(MIX_SHARED, U + 1); ++g) {
            if (g % 2 == 0) sh_v = MIX_SH_LD(sh); else MIX_SH_ST(sh, sh_v);
        }
        if (MIX_CNT(MIX_CONST, U) > 0) {
            ConstStep<MIX_CNT(MIX_CONST, U), MIX_LO(MIX_CONST, U)> st = {pc, &acc_c, 0.f};
            StaticFor<MIX_CNT(MIX_CONST, U)>::run(st);
        }
        if (MIX_CNT(MIX_TEX, U) > 0) {
            LoadStep<MB_NC, MIX_CNT(MIX_TEX, U), MIX_LO(MIX_TEX, U), 1> st = {ps, &acc_tex, 0.f};
            StaticFor<MIX_CNT(MIX_TEX, U)>::run(st);
        }
        if (MIX_CNT(MIX_L1, U) > 0) {
            LoadStep<MB_CA, MIX_CNT(MIX_L1, U), MIX_LO(MIX_L1, U), 1> st = {ps, &acc_l1, 0.f};
            StaticFor<MIX_CNT(MIX_L1, U)>::run(st);
        }
        if (MIX_CNT(MIX_L2, U) > 0) {
            LoadStep<MB_CG, MIX_CNT(MIX_L2, U), MIX_LO(MIX_L2, U), MIX_LANE_STRIDE> st = {pl2, &acc_l2, 0.f};
            StaticFor<MIX_CNT(MIX_L2, U)>::run(st);
        }
        if (MIX_CNT(MIX_GLOBAL, U) > 0) {
            LoadStep<MB_CG, MIX_CNT(MIX_GLOBAL, U), MIX_LO(MIX_GLOBAL, U), MIX_LANE_STRIDE> st = {pg, &acc_g, 0.f};
            StaticFor<MIX_CNT(MIX_GLOBAL, U)>::run(st);
        }
    }
};

extern "C" __global__ void app_mix(MB_PARAMS)
{
    __shared__ float sbuf[2 * MB_WAVE];
    const unsigned lane = threadIdx.x % MB_WAVE;
    const unsigned long long gwarp = MB_GTID / MB_WAVE;
    const unsigned long long nwarps = MB_NTHREADS / MB_WAVE;
    // per-trip windows (bytes) of the l2 and global regions, and where each warp starts
    const unsigned long long win_l2 = (unsigned long long)MIX_L2 * MIX_LANE_STRIDE * MB_LINE;
    const unsigned long long win_g = (unsigned long long)MIX_GLOBAL * MIX_LANE_STRIDE * MB_LINE;
    unsigned long long mask_g = foot_bytes - 1ull;
    MIX_OPAQUE("l", mask_g);
    unsigned long long step_g = (nwarps * win_g) & mask_g;
    unsigned long long step_l2 = nwarps * win_l2;  // the loop masks the sum
    unsigned long long off_g = (gwarp * win_g) & mask_g;
    unsigned long long off_l2 = (gwarp * win_l2) & (MIX_L2_BYTES - 1ull);
    unsigned long long off_s = 0;
    unsigned cbase = 0;
    unsigned lane_o = lane;  // opaque too: the prologue stays PROLOGUES["mix"] of the catalog (nvcc 13)
    MIX_OPAQUE("r", lane_o);
    const float* base_s = data + lane_o;
    MIX_OPAQUE("l", base_s);
    const float* base = base_s;
    if (MIX_LANE_STRIDE != 1) { base = data + lane * MIX_LANE_STRIDE; MIX_OPAQUE("l", base); }
    if (MIX_SHARED > 0) { sbuf[lane] = fb; sbuf[MB_WAVE + lane] = fb; }

    MixBody body;
#pragma unroll
    for (int j = 0; j < ILP; ++j) {
        body.xf[j] = (float)(threadIdx.x + j) * fb; body.xd[j] = (double)body.xf[j];
        body.xi[j] = 2u * (unsigned)MB_GTID + 2u * j + 1u; body.xs[j] = body.xf[j];
        body.xa[j] = ((unsigned)MB_GTID + j) * 2654435761u + 1u;
    }
    body.c = fa; body.cd = (double)fa; body.a = ia; body.b = ib; body.s = ia & 31u; body.m = ib | 1u;
    unsigned long long foot = foot_bytes;
    MIX_OPAQUE("f", body.c); MIX_OPAQUE("r", body.a); MIX_OPAQUE("r", body.b); MIX_OPAQUE("l", foot);
    body.sh = MIX_SH_ADDR(sbuf + lane);
    MIX_OPAQUE("r", body.sh);
    MIX_OPAQUE("d", body.cd); MIX_OPAQUE("r", body.s); MIX_OPAQUE("r", body.m);
    MIX_OPAQUE("l", step_g); MIX_OPAQUE("l", step_l2);
    body.acc_tex = body.acc_l1 = body.acc_l2 = body.acc_g = body.acc_c = fb;
    body.sh_v = fb;
#pragma unroll 1
    for (int i = 0; i < iters; ++i) {
        body.ps = (const float*)((const char*)base_s + off_s);
        body.pl2 = (const float*)((const char*)base + off_l2);
        body.pg = (const float*)((const char*)base + off_g);
        if (MIX_CONST > 0) {
            const float* bank;
            MIX_BANK_ADDR(bank);
            body.pc = bank + cbase;
        }
        StaticFor<UNROLL>::run(body);
        // the small window stays put (foot_bytes is a multiple of it), but the compiler cannot know
        off_s = (off_s + foot) & (MIX_SMALL_BYTES - 1ull);
        off_l2 = (off_l2 + step_l2) & (MIX_L2_BYTES - 1ull);
        off_g = (off_g + step_g) & mask_g;
        cbase = (cbase + body.a) & (MIX_CONST_WORDS - 1u);
    }
    float s = body.sh_v + body.acc_tex + body.acc_l1 + body.acc_l2 + body.acc_g + body.acc_c;
#pragma unroll
    for (int j = 0; j < ILP; ++j)
        s += body.xf[j] + (float)body.xd[j] + (float)body.xi[j] + body.xs[j] + (float)body.xa[j];
    MB_SINK(s);
}
