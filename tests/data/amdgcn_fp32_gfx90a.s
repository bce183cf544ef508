; Transcript: the real output of clang 19.1.7 (Debian clang version 19.1.7 (3~deb12u1), package
; clang-19 1:19.1.7-3~deb12u1) for microbench/kernels/fp32.cu with its headers inlined:
;   clang++-19 -x hip -nogpuinc -nogpulib --cuda-device-only -O3 -S -fcuda-flush-denormals-to-zero --offload-arch=gfx90a -include hip_prelude.h -std=c++11 -DILP=4 -DUNROLL=16 kernel.hip -o kernel.s
	.text
	.amdgcn_target "amdgcn-amd-amdhsa--gfx90a"
	.amdhsa_code_object_version 5
	.protected	fp32_fma                ; -- Begin function fp32_fma
	.globl	fp32_fma
	.p2align	8
	.type	fp32_fma,@function
fp32_fma:                               ; @fp32_fma
; %bb.0:
	s_load_dwordx2 s[0:1], s[4:5], 0x0
	s_load_dword s7, s[4:5], 0x10
	s_load_dwordx2 s[2:3], s[4:5], 0x20
	v_add_u32_e32 v1, 1, v0
	v_add_u32_e32 v2, 2, v0
	v_add_u32_e32 v3, 3, v0
	v_cvt_f32_u32_e32 v3, v3
	v_cvt_f32_u32_e32 v2, v2
	v_cvt_f32_u32_e32 v5, v1
	v_cvt_f32_u32_e32 v4, v0
	s_waitcnt lgkmcnt(0)
	s_cmp_lt_i32 s7, 1
	v_pk_mul_f32 v[2:3], v[2:3], s[2:3] op_sel:[0,1]
	v_pk_mul_f32 v[4:5], v[4:5], s[2:3] op_sel:[0,1]
	s_cbranch_scc1 .LBB0_3
; %bb.1:
	s_mov_b32 s3, s2
	s_mov_b32 s8, s2
	s_mov_b32 s9, s2
	s_mov_b32 s10, s2
	s_mov_b32 s11, s2
.LBB0_2:                                ; =>This Inner Loop Header: Depth=1
	v_pk_fma_f32 v[4:5], v[4:5], v[4:5], s[2:3]
	v_pk_fma_f32 v[2:3], v[2:3], v[2:3], s[2:3]
	v_pk_fma_f32 v[4:5], v[4:5], v[4:5], s[2:3]
	v_pk_fma_f32 v[2:3], v[2:3], v[2:3], s[2:3]
	v_pk_fma_f32 v[4:5], v[4:5], v[4:5], s[2:3]
	v_pk_fma_f32 v[2:3], v[2:3], v[2:3], s[2:3]
	v_pk_fma_f32 v[4:5], v[4:5], v[4:5], s[2:3]
	v_pk_fma_f32 v[2:3], v[2:3], v[2:3], s[2:3]
	v_pk_fma_f32 v[4:5], v[4:5], v[4:5], s[2:3]
	v_pk_fma_f32 v[2:3], v[2:3], v[2:3], s[2:3]
	v_pk_fma_f32 v[4:5], v[4:5], v[4:5], s[2:3]
	v_pk_fma_f32 v[2:3], v[2:3], v[2:3], s[2:3]
	v_pk_fma_f32 v[4:5], v[4:5], v[4:5], s[2:3]
	v_pk_fma_f32 v[2:3], v[2:3], v[2:3], s[2:3]
	v_pk_fma_f32 v[4:5], v[4:5], v[4:5], s[2:3]
	v_pk_fma_f32 v[2:3], v[2:3], v[2:3], s[2:3]
	v_pk_fma_f32 v[4:5], v[4:5], v[4:5], s[2:3]
	v_pk_fma_f32 v[2:3], v[2:3], v[2:3], s[2:3]
	v_pk_fma_f32 v[4:5], v[4:5], v[4:5], s[2:3]
	v_pk_fma_f32 v[2:3], v[2:3], v[2:3], s[2:3]
	v_pk_fma_f32 v[4:5], v[4:5], v[4:5], s[2:3]
	v_pk_fma_f32 v[2:3], v[2:3], v[2:3], s[2:3]
	v_pk_fma_f32 v[4:5], v[4:5], v[4:5], s[2:3]
	v_pk_fma_f32 v[2:3], v[2:3], v[2:3], s[2:3]
	v_pk_fma_f32 v[4:5], v[4:5], v[4:5], s[2:3]
	v_pk_fma_f32 v[2:3], v[2:3], v[2:3], s[2:3]
	v_pk_fma_f32 v[4:5], v[4:5], v[4:5], s[2:3]
	v_pk_fma_f32 v[2:3], v[2:3], v[2:3], s[2:3]
	v_pk_fma_f32 v[4:5], v[4:5], v[4:5], s[2:3]
	v_pk_fma_f32 v[2:3], v[2:3], v[2:3], s[2:3]
	s_add_i32 s7, s7, -1
	v_pk_fma_f32 v[2:3], v[2:3], v[2:3], s[10:11]
	s_cmp_lg_u32 s7, 0
	v_pk_fma_f32 v[4:5], v[4:5], v[4:5], s[8:9]
	s_cbranch_scc1 .LBB0_2
.LBB0_3:
	s_load_dword s2, s[4:5], 0x30
	v_add_f32_e32 v1, v4, v5
	v_add_f32_e32 v1, v1, v2
	v_add_f32_e32 v1, v1, v3
	s_waitcnt lgkmcnt(0)
	v_cmp_eq_f32_e32 vcc, s2, v1
	s_and_saveexec_b64 s[2:3], vcc
	s_cbranch_execz .LBB0_5
; %bb.4:
	s_load_dword s2, s[4:5], 0x44
	v_mov_b32_e32 v4, s1
	v_mov_b32_e32 v3, 0
	s_waitcnt lgkmcnt(0)
	s_and_b32 s1, s2, 0xffff
	s_mul_i32 s6, s6, s1
	v_add_u32_e32 v2, s6, v0
	v_lshlrev_b64 v[2:3], 2, v[2:3]
	v_add_co_u32_e32 v2, vcc, s0, v2
	v_addc_co_u32_e32 v3, vcc, v4, v3, vcc
	global_store_dword v[2:3], v1, off
.LBB0_5:
	s_endpgm
	.section	.rodata,"a",@progbits
	.p2align	6, 0x0
	.amdhsa_kernel fp32_fma
		.amdhsa_group_segment_fixed_size 0
		.amdhsa_private_segment_fixed_size 0
		.amdhsa_kernarg_size 312
		.amdhsa_user_sgpr_count 6
		.amdhsa_user_sgpr_private_segment_buffer 1
		.amdhsa_user_sgpr_dispatch_ptr 0
		.amdhsa_user_sgpr_queue_ptr 0
		.amdhsa_user_sgpr_kernarg_segment_ptr 1
		.amdhsa_user_sgpr_dispatch_id 0
		.amdhsa_user_sgpr_flat_scratch_init 0
		.amdhsa_user_sgpr_kernarg_preload_length 0
		.amdhsa_user_sgpr_kernarg_preload_offset 0
		.amdhsa_user_sgpr_private_segment_size 0
		.amdhsa_uses_dynamic_stack 0
		.amdhsa_system_sgpr_private_segment_wavefront_offset 0
		.amdhsa_system_sgpr_workgroup_id_x 1
		.amdhsa_system_sgpr_workgroup_id_y 0
		.amdhsa_system_sgpr_workgroup_id_z 0
		.amdhsa_system_sgpr_workgroup_info 0
		.amdhsa_system_vgpr_workitem_id 0
		.amdhsa_next_free_vgpr 6
		.amdhsa_next_free_sgpr 12
		.amdhsa_accum_offset 8
		.amdhsa_reserve_vcc 1
		.amdhsa_reserve_flat_scratch 0
		.amdhsa_reserve_xnack_mask 1
		.amdhsa_float_round_mode_32 0
		.amdhsa_float_round_mode_16_64 0
		.amdhsa_float_denorm_mode_32 0
		.amdhsa_float_denorm_mode_16_64 3
		.amdhsa_dx10_clamp 1
		.amdhsa_ieee_mode 1
		.amdhsa_fp16_overflow 0
		.amdhsa_tg_split 0
		.amdhsa_exception_fp_ieee_invalid_op 0
		.amdhsa_exception_fp_denorm_src 0
		.amdhsa_exception_fp_ieee_div_zero 0
		.amdhsa_exception_fp_ieee_overflow 0
		.amdhsa_exception_fp_ieee_underflow 0
		.amdhsa_exception_fp_ieee_inexact 0
		.amdhsa_exception_int_div_zero 0
	.end_amdhsa_kernel
	.text
.Lfunc_end0:
	.size	fp32_fma, .Lfunc_end0-fp32_fma
                                        ; -- End function
	.section	.AMDGPU.csdata,"",@progbits
; Kernel info:
; codeLenInByte = 468
; NumSgprs: 16
; NumVgprs: 6
; NumAgprs: 0
; TotalNumVgprs: 6
; ScratchSize: 0
; MemoryBound: 0
; FloatMode: 192
; IeeeMode: 1
; LDSByteSize: 0 bytes/workgroup (compile time only)
; SGPRBlocks: 1
; VGPRBlocks: 0
; NumSGPRsForWavesPerEU: 16
; NumVGPRsForWavesPerEU: 6
; AccumOffset: 8
; Occupancy: 8
; WaveLimiterHint : 0
; COMPUTE_PGM_RSRC2:SCRATCH_EN: 0
; COMPUTE_PGM_RSRC2:USER_SGPR: 6
; COMPUTE_PGM_RSRC2:TRAP_HANDLER: 0
; COMPUTE_PGM_RSRC2:TGID_X_EN: 1
; COMPUTE_PGM_RSRC2:TGID_Y_EN: 0
; COMPUTE_PGM_RSRC2:TGID_Z_EN: 0
; COMPUTE_PGM_RSRC2:TIDIG_COMP_CNT: 0
; COMPUTE_PGM_RSRC3_GFX90A:ACCUM_OFFSET: 1
; COMPUTE_PGM_RSRC3_GFX90A:TG_SPLIT: 0
	.text
	.protected	fp32_addmul             ; -- Begin function fp32_addmul
	.globl	fp32_addmul
	.p2align	8
	.type	fp32_addmul,@function
fp32_addmul:                            ; @fp32_addmul
; %bb.0:
	s_load_dwordx2 s[0:1], s[4:5], 0x0
	s_load_dword s7, s[4:5], 0x10
	s_load_dwordx2 s[2:3], s[4:5], 0x20
	v_add_u32_e32 v1, 1, v0
	v_add_u32_e32 v2, 2, v0
	v_add_u32_e32 v3, 3, v0
	v_cvt_f32_u32_e32 v3, v3
	v_cvt_f32_u32_e32 v2, v2
	v_cvt_f32_u32_e32 v5, v1
	v_cvt_f32_u32_e32 v4, v0
	s_waitcnt lgkmcnt(0)
	s_cmp_lt_i32 s7, 1
	v_pk_mul_f32 v[2:3], v[2:3], s[2:3] op_sel:[0,1]
	v_pk_mul_f32 v[4:5], v[4:5], s[2:3] op_sel:[0,1]
	s_cbranch_scc1 .LBB1_3
; %bb.1:
	s_mov_b32 s3, s2
	s_mov_b32 s8, s2
	s_mov_b32 s9, s2
	s_mov_b32 s10, s2
	s_mov_b32 s11, s2
.LBB1_2:                                ; =>This Inner Loop Header: Depth=1
	v_mad_f32 v1, v4, v4, s2
	v_mad_f32 v4, v5, v5, s2
	v_mad_f32 v2, v2, v2, s2
	v_mad_f32 v3, v3, v3, s2
	v_mad_f32 v1, v1, v1, s2
	v_mad_f32 v4, v4, v4, s2
	v_mad_f32 v2, v2, v2, s2
	v_mad_f32 v3, v3, v3, s2
	v_mad_f32 v1, v1, v1, s2
	v_mad_f32 v4, v4, v4, s2
	v_mad_f32 v2, v2, v2, s2
	v_mad_f32 v3, v3, v3, s2
	v_mad_f32 v1, v1, v1, s2
	v_mad_f32 v4, v4, v4, s2
	v_mad_f32 v5, v2, v2, s2
	v_mad_f32 v6, v3, v3, s2
	v_mad_f32 v2, v1, v1, s2
	v_mad_f32 v3, v4, v4, s2
	v_mad_f32 v4, v5, v5, s2
	v_mad_f32 v5, v6, v6, s2
	v_pk_mul_f32 v[2:3], v[2:3], v[2:3]
	v_pk_mul_f32 v[4:5], v[4:5], v[4:5]
	v_pk_add_f32 v[2:3], v[2:3], s[2:3]
	v_pk_add_f32 v[4:5], v[4:5], s[2:3]
	v_pk_mul_f32 v[2:3], v[2:3], v[2:3]
	v_pk_mul_f32 v[4:5], v[4:5], v[4:5]
	v_pk_add_f32 v[2:3], v[2:3], s[2:3]
	v_pk_add_f32 v[4:5], v[4:5], s[2:3]
	v_pk_mul_f32 v[2:3], v[2:3], v[2:3]
	v_pk_mul_f32 v[4:5], v[4:5], v[4:5]
	v_pk_add_f32 v[2:3], v[2:3], s[2:3]
	v_pk_add_f32 v[4:5], v[4:5], s[2:3]
	v_pk_mul_f32 v[2:3], v[2:3], v[2:3]
	v_pk_mul_f32 v[4:5], v[4:5], v[4:5]
	v_pk_add_f32 v[2:3], v[2:3], s[2:3]
	v_pk_add_f32 v[4:5], v[4:5], s[2:3]
	v_pk_mul_f32 v[2:3], v[2:3], v[2:3]
	v_pk_mul_f32 v[4:5], v[4:5], v[4:5]
	v_pk_add_f32 v[2:3], v[2:3], s[2:3]
	v_pk_add_f32 v[4:5], v[4:5], s[2:3]
	v_pk_mul_f32 v[2:3], v[2:3], v[2:3]
	v_pk_mul_f32 v[4:5], v[4:5], v[4:5]
	v_pk_add_f32 v[2:3], v[2:3], s[2:3]
	v_pk_add_f32 v[4:5], v[4:5], s[2:3]
	v_pk_mul_f32 v[2:3], v[2:3], v[2:3]
	v_pk_mul_f32 v[4:5], v[4:5], v[4:5]
	v_pk_add_f32 v[2:3], v[2:3], s[2:3]
	v_pk_add_f32 v[4:5], v[4:5], s[2:3]
	v_pk_mul_f32 v[2:3], v[2:3], v[2:3]
	v_pk_mul_f32 v[4:5], v[4:5], v[4:5]
	v_pk_add_f32 v[2:3], v[2:3], s[2:3]
	v_pk_add_f32 v[4:5], v[4:5], s[2:3]
	v_pk_mul_f32 v[2:3], v[2:3], v[2:3]
	v_pk_mul_f32 v[4:5], v[4:5], v[4:5]
	v_pk_add_f32 v[2:3], v[2:3], s[2:3]
	v_pk_add_f32 v[4:5], v[4:5], s[2:3]
	v_pk_mul_f32 v[2:3], v[2:3], v[2:3]
	v_pk_mul_f32 v[4:5], v[4:5], v[4:5]
	v_pk_add_f32 v[2:3], v[2:3], s[2:3]
	v_pk_add_f32 v[4:5], v[4:5], s[2:3]
	v_pk_mul_f32 v[6:7], v[2:3], v[2:3]
	v_pk_mul_f32 v[2:3], v[4:5], v[4:5]
	s_add_i32 s7, s7, -1
	v_pk_add_f32 v[2:3], v[2:3], s[10:11]
	s_cmp_lg_u32 s7, 0
	v_pk_add_f32 v[4:5], v[6:7], s[8:9]
	s_cbranch_scc1 .LBB1_2
.LBB1_3:
	s_load_dword s2, s[4:5], 0x30
	v_add_f32_e32 v1, v4, v5
	v_add_f32_e32 v1, v1, v2
	v_add_f32_e32 v1, v1, v3
	s_waitcnt lgkmcnt(0)
	v_cmp_eq_f32_e32 vcc, s2, v1
	s_and_saveexec_b64 s[2:3], vcc
	s_cbranch_execz .LBB1_5
; %bb.4:
	s_load_dword s2, s[4:5], 0x44
	v_mov_b32_e32 v4, s1
	v_mov_b32_e32 v3, 0
	s_waitcnt lgkmcnt(0)
	s_and_b32 s1, s2, 0xffff
	s_mul_i32 s6, s6, s1
	v_add_u32_e32 v2, s6, v0
	v_lshlrev_b64 v[2:3], 2, v[2:3]
	v_add_co_u32_e32 v2, vcc, s0, v2
	v_addc_co_u32_e32 v3, vcc, v4, v3, vcc
	global_store_dword v[2:3], v1, off
.LBB1_5:
	s_endpgm
	.section	.rodata,"a",@progbits
	.p2align	6, 0x0
	.amdhsa_kernel fp32_addmul
		.amdhsa_group_segment_fixed_size 0
		.amdhsa_private_segment_fixed_size 0
		.amdhsa_kernarg_size 312
		.amdhsa_user_sgpr_count 6
		.amdhsa_user_sgpr_private_segment_buffer 1
		.amdhsa_user_sgpr_dispatch_ptr 0
		.amdhsa_user_sgpr_queue_ptr 0
		.amdhsa_user_sgpr_kernarg_segment_ptr 1
		.amdhsa_user_sgpr_dispatch_id 0
		.amdhsa_user_sgpr_flat_scratch_init 0
		.amdhsa_user_sgpr_kernarg_preload_length 0
		.amdhsa_user_sgpr_kernarg_preload_offset 0
		.amdhsa_user_sgpr_private_segment_size 0
		.amdhsa_uses_dynamic_stack 0
		.amdhsa_system_sgpr_private_segment_wavefront_offset 0
		.amdhsa_system_sgpr_workgroup_id_x 1
		.amdhsa_system_sgpr_workgroup_id_y 0
		.amdhsa_system_sgpr_workgroup_id_z 0
		.amdhsa_system_sgpr_workgroup_info 0
		.amdhsa_system_vgpr_workitem_id 0
		.amdhsa_next_free_vgpr 8
		.amdhsa_next_free_sgpr 12
		.amdhsa_accum_offset 8
		.amdhsa_reserve_vcc 1
		.amdhsa_reserve_flat_scratch 0
		.amdhsa_reserve_xnack_mask 1
		.amdhsa_float_round_mode_32 0
		.amdhsa_float_round_mode_16_64 0
		.amdhsa_float_denorm_mode_32 0
		.amdhsa_float_denorm_mode_16_64 3
		.amdhsa_dx10_clamp 1
		.amdhsa_ieee_mode 1
		.amdhsa_fp16_overflow 0
		.amdhsa_tg_split 0
		.amdhsa_exception_fp_ieee_invalid_op 0
		.amdhsa_exception_fp_denorm_src 0
		.amdhsa_exception_fp_ieee_div_zero 0
		.amdhsa_exception_fp_ieee_overflow 0
		.amdhsa_exception_fp_ieee_underflow 0
		.amdhsa_exception_fp_ieee_inexact 0
		.amdhsa_exception_int_div_zero 0
	.end_amdhsa_kernel
	.text
.Lfunc_end1:
	.size	fp32_addmul, .Lfunc_end1-fp32_addmul
                                        ; -- End function
	.section	.AMDGPU.csdata,"",@progbits
; Kernel info:
; codeLenInByte = 724
; NumSgprs: 16
; NumVgprs: 8
; NumAgprs: 0
; TotalNumVgprs: 8
; ScratchSize: 0
; MemoryBound: 0
; FloatMode: 192
; IeeeMode: 1
; LDSByteSize: 0 bytes/workgroup (compile time only)
; SGPRBlocks: 1
; VGPRBlocks: 0
; NumSGPRsForWavesPerEU: 16
; NumVGPRsForWavesPerEU: 8
; AccumOffset: 8
; Occupancy: 8
; WaveLimiterHint : 0
; COMPUTE_PGM_RSRC2:SCRATCH_EN: 0
; COMPUTE_PGM_RSRC2:USER_SGPR: 6
; COMPUTE_PGM_RSRC2:TRAP_HANDLER: 0
; COMPUTE_PGM_RSRC2:TGID_X_EN: 1
; COMPUTE_PGM_RSRC2:TGID_Y_EN: 0
; COMPUTE_PGM_RSRC2:TGID_Z_EN: 0
; COMPUTE_PGM_RSRC2:TIDIG_COMP_CNT: 0
; COMPUTE_PGM_RSRC3_GFX90A:ACCUM_OFFSET: 1
; COMPUTE_PGM_RSRC3_GFX90A:TG_SPLIT: 0
	.text
	.p2alignl 6, 3212836864
	.fill 256, 4, 3212836864
	.type	__hip_cuid_6da27f93e0ac425b,@object ; @__hip_cuid_6da27f93e0ac425b
	.section	.bss,"aw",@nobits
	.globl	__hip_cuid_6da27f93e0ac425b
__hip_cuid_6da27f93e0ac425b:
	.byte	0                               ; 0x0
	.size	__hip_cuid_6da27f93e0ac425b, 1

	.ident	"Debian clang version 19.1.7 (3~deb12u1)"
	.section	".note.GNU-stack","",@progbits
	.addrsig
	.addrsig_sym __hip_cuid_6da27f93e0ac425b
	.amdgpu_metadata
---
amdhsa.kernels:
  - .agpr_count:     0
    .args:
      - .actual_access:  write_only
        .address_space:  global
        .offset:         0
        .size:           8
        .value_kind:     global_buffer
      - .actual_access:  read_only
        .address_space:  global
        .offset:         8
        .size:           8
        .value_kind:     global_buffer
      - .offset:         16
        .size:           4
        .value_kind:     by_value
      - .offset:         24
        .size:           8
        .value_kind:     by_value
      - .offset:         32
        .size:           4
        .value_kind:     by_value
      - .offset:         36
        .size:           4
        .value_kind:     by_value
      - .offset:         40
        .size:           4
        .value_kind:     by_value
      - .offset:         44
        .size:           4
        .value_kind:     by_value
      - .offset:         48
        .size:           4
        .value_kind:     by_value
      - .offset:         56
        .size:           4
        .value_kind:     hidden_block_count_x
      - .offset:         60
        .size:           4
        .value_kind:     hidden_block_count_y
      - .offset:         64
        .size:           4
        .value_kind:     hidden_block_count_z
      - .offset:         68
        .size:           2
        .value_kind:     hidden_group_size_x
      - .offset:         70
        .size:           2
        .value_kind:     hidden_group_size_y
      - .offset:         72
        .size:           2
        .value_kind:     hidden_group_size_z
      - .offset:         74
        .size:           2
        .value_kind:     hidden_remainder_x
      - .offset:         76
        .size:           2
        .value_kind:     hidden_remainder_y
      - .offset:         78
        .size:           2
        .value_kind:     hidden_remainder_z
      - .offset:         96
        .size:           8
        .value_kind:     hidden_global_offset_x
      - .offset:         104
        .size:           8
        .value_kind:     hidden_global_offset_y
      - .offset:         112
        .size:           8
        .value_kind:     hidden_global_offset_z
      - .offset:         120
        .size:           2
        .value_kind:     hidden_grid_dims
    .group_segment_fixed_size: 0
    .kernarg_segment_align: 8
    .kernarg_segment_size: 312
    .max_flat_workgroup_size: 1024
    .name:           fp32_fma
    .private_segment_fixed_size: 0
    .sgpr_count:     16
    .sgpr_spill_count: 0
    .symbol:         fp32_fma.kd
    .uniform_work_group_size: 1
    .uses_dynamic_stack: false
    .vgpr_count:     6
    .vgpr_spill_count: 0
    .wavefront_size: 64
  - .agpr_count:     0
    .args:
      - .actual_access:  write_only
        .address_space:  global
        .offset:         0
        .size:           8
        .value_kind:     global_buffer
      - .actual_access:  read_only
        .address_space:  global
        .offset:         8
        .size:           8
        .value_kind:     global_buffer
      - .offset:         16
        .size:           4
        .value_kind:     by_value
      - .offset:         24
        .size:           8
        .value_kind:     by_value
      - .offset:         32
        .size:           4
        .value_kind:     by_value
      - .offset:         36
        .size:           4
        .value_kind:     by_value
      - .offset:         40
        .size:           4
        .value_kind:     by_value
      - .offset:         44
        .size:           4
        .value_kind:     by_value
      - .offset:         48
        .size:           4
        .value_kind:     by_value
      - .offset:         56
        .size:           4
        .value_kind:     hidden_block_count_x
      - .offset:         60
        .size:           4
        .value_kind:     hidden_block_count_y
      - .offset:         64
        .size:           4
        .value_kind:     hidden_block_count_z
      - .offset:         68
        .size:           2
        .value_kind:     hidden_group_size_x
      - .offset:         70
        .size:           2
        .value_kind:     hidden_group_size_y
      - .offset:         72
        .size:           2
        .value_kind:     hidden_group_size_z
      - .offset:         74
        .size:           2
        .value_kind:     hidden_remainder_x
      - .offset:         76
        .size:           2
        .value_kind:     hidden_remainder_y
      - .offset:         78
        .size:           2
        .value_kind:     hidden_remainder_z
      - .offset:         96
        .size:           8
        .value_kind:     hidden_global_offset_x
      - .offset:         104
        .size:           8
        .value_kind:     hidden_global_offset_y
      - .offset:         112
        .size:           8
        .value_kind:     hidden_global_offset_z
      - .offset:         120
        .size:           2
        .value_kind:     hidden_grid_dims
    .group_segment_fixed_size: 0
    .kernarg_segment_align: 8
    .kernarg_segment_size: 312
    .max_flat_workgroup_size: 1024
    .name:           fp32_addmul
    .private_segment_fixed_size: 0
    .sgpr_count:     16
    .sgpr_spill_count: 0
    .symbol:         fp32_addmul.kd
    .uniform_work_group_size: 1
    .uses_dynamic_stack: false
    .vgpr_count:     8
    .vgpr_spill_count: 0
    .wavefront_size: 64
amdhsa.target:   amdgcn-amd-amdhsa--gfx90a
amdhsa.version:
  - 1
  - 2
...

	.end_amdgpu_metadata
