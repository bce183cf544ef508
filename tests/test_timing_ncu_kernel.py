"""nvprof / ncu metric exports -> kernel descriptions (calib.importers.ncu_kernel)."""

from __future__ import annotations

import json

import pytest

from calib.core.errors import BadInputError
from calib.importers.ncu_kernel import is_profile_csv, main, read_profile
from calib.model.predict import kernel_description_table

NVPROF = """==12345== NVPROF is profiling process 12345, command: ./saxpy
==12345== Profiling application: ./saxpy
"Device","Kernel","Invocations","Metric Name","Metric Description","Min","Max","Avg"
"GeForce GTX 980 (0)","saxpy(int, float, float*, float*)",2,"inst_executed","Instructions Executed",1000,1000,1000
"GeForce GTX 980 (0)","saxpy(int, float, float*, float*)",2,"inst_executed_global_loads","Warp level global loads",200,200,200
"GeForce GTX 980 (0)","saxpy(int, float, float*, float*)",2,"inst_executed_global_stores","Warp level global stores",100,100,100
"GeForce GTX 980 (0)","saxpy(int, float, float*, float*)",2,"inst_executed_shared_loads","Warp level shared loads",50,50,50
"GeForce GTX 980 (0)","saxpy(int, float, float*, float*)",2,"inst_fp_32","FP Instructions(Single)",12800,12800,12800
"GeForce GTX 980 (0)","saxpy(int, float, float*, float*)",2,"inst_integer","Integer Instructions",6400,6400,6400
"GeForce GTX 980 (0)","saxpy(int, float, float*, float*)",2,"inst_control","Control-Flow Instructions",3200,3200,3200
"GeForce GTX 980 (0)","saxpy(int, float, float*, float*)",2,"flop_count_sp_special","FP special",3200,3200,3200
"GeForce GTX 980 (0)","saxpy(int, float, float*, float*)",2,"global_hit_rate","Global Hit Rate",0.00%,0.00%,0.00%
"GeForce GTX 980 (0)","saxpy(int, float, float*, float*)",2,"l2_tex_read_hit_rate","L2 Hit Rate",25.00%,25.00%,25.00%
"GeForce GTX 980 (0)","saxpy(int, float, float*, float*)",2,"gld_transactions_per_request","Transactions Per Request",11.000000,11.000000,11.000000
"GeForce GTX 980 (0)","saxpy(int, float, float*, float*)",2,"achieved_occupancy","Achieved Occupancy",0.500000,0.500000,0.500000
"GeForce GTX 980 (0)","saxpy(int, float, float*, float*)",2,"dram_utilization","Device Memory Utilization","High (7)","High (7)","High (7)"
"""

NCU = '''"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Section Name","Metric Name","Metric Unit","Metric Value"
"0","1","app","h","stencil","1","7","Command line profiler metrics","launch__grid_size","","1,024"
"0","1","app","h","stencil","1","7","Command line profiler metrics","launch__block_size","","256"
"0","1","app","h","stencil","1","7","Command line profiler metrics","smsp__inst_executed.sum","inst","8,192,000"
"0","1","app","h","stencil","1","7","Command line profiler metrics","smsp__inst_executed_pipe_fma.sum","inst","2,048,000"
"0","1","app","h","stencil","1","7","Command line profiler metrics","smsp__inst_executed_pipe_alu.sum","inst","1,024,000"
"0","1","app","h","stencil","1","7","Command line profiler metrics","smsp__inst_executed_pipe_xu.sum","inst","512,000"
"0","1","app","h","stencil","1","7","Command line profiler metrics","smsp__inst_executed_pipe_cbu.sum","inst","256,000"
"0","1","app","h","stencil","1","7","Command line profiler metrics","smsp__inst_executed_op_global_ld.sum","inst","1,024,000"
"0","1","app","h","stencil","1","7","Command line profiler metrics","smsp__inst_executed_op_global_st.sum","inst","256,000"
"0","1","app","h","stencil","1","7","Command line profiler metrics","smsp__inst_executed_op_shared_ld.sum","inst","512,000"
"0","1","app","h","stencil","1","7","Command line profiler metrics","l1tex__t_sector_hit_rate.pct","%","50"
"0","1","app","h","stencil","1","7","Command line profiler metrics","lts__t_sector_hit_rate.pct","%","80"
"0","1","app","h","stencil","1","7","Command line profiler metrics","l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum","sector","4,096,000"
"0","1","app","h","stencil","1","7","Command line profiler metrics","l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum","request","1,024,000"
"0","1","app","h","stencil","1","7","Command line profiler metrics","sm__warps_active.avg.per_cycle_active","warp","40"
"0","1","app","h","stencil","1","7","Command line profiler metrics","gpu__time_duration.sum","usecond","250"
"0","1","app","h","stencil","1","7","Command line profiler metrics","sm__cycles_elapsed.avg.per_second","cycle/nsecond","1.41"
"0","1","app","h","stencil","1","7","Command line profiler metrics","dram__cycles_elapsed.avg.per_second","cycle/usecond","877"
"1","1","app","h","stencil","1","7","Command line profiler metrics","smsp__inst_executed.sum","inst","8,192,000"
'''


def test_nvprof_export(tmp_path):
    f = tmp_path / "nv.csv"
    f.write_text(NVPROF)
    assert is_profile_csv(f)
    with pytest.warns(UserWarning, match="not used for kernel descriptions: dram_utilization"):
        (k,) = read_profile(f, blocks=10, threads_per_block=320, core_mhz=1126)
    # 10 blocks x 10 warps = 100 warps; 1000 warp instructions
    pw = k["per_warp"]
    assert sum(pw.values()) == pytest.approx(10.0)
    assert pw["shared"] == pytest.approx(0.5)
    # global: 300 warp instructions, L1 hit 0 %, L2 hit 25 % -> 0.75 l2, 2.25 global per warp
    assert pw["l2"] == pytest.approx(0.75) and pw["global"] == pytest.approx(2.25)
    # 650 non-memory warp instructions split by thread-level shares: fp 12800-3200, sfu 3200, int 6400, ctrl
    # 3200 (22400 in all)
    assert pw["fp"] == pytest.approx(6.5 * 9600 / 22400)
    assert pw["sfu"] == pytest.approx(6.5 * 3200 / 22400)
    assert pw["ctrl"] == pytest.approx(6.5 * 3200 / 22400)
    assert k["memory"]["uncoalesced_fraction"] == pytest.approx((11 - 4) / 28)
    assert k["launch"] == {"blocks": 10, "threads_per_block": 320, "active_blocks_per_sm": pytest.approx(3.2)}
    assert k["core_mhz"] == 1126.0


def test_ncu_export_and_kernel_description_round_trip(tmp_path):
    f = tmp_path / "ncu.csv"
    f.write_text(NCU)
    (k,) = read_profile(f)
    warps = 1024 * 8
    pw = k["per_warp"]
    assert sum(pw.values()) == pytest.approx(8_192_000 / warps)
    assert pw["fp"] == pytest.approx(2_048_000 / warps) and pw["int"] == pytest.approx(1_024_000 / warps)
    assert pw["sfu"] == pytest.approx(512_000 / warps) and pw["shared"] == pytest.approx(512_000 / warps)
    # global 1.28 M: 50 % L1 hits; of the rest 80 % L2 hits
    g = 1_280_000 / warps
    assert pw["l1"] == pytest.approx(0.5 * g) and pw["l2"] == pytest.approx(0.4 * g) and pw["global"] == pytest.approx(0.1 * g)
    # unclaimed instructions (uniform datapath, ...) count as alu so the total is kept
    assert pw["alu"] == pytest.approx((8_192_000 - 2_048_000 - 1_024_000 - 512_000 - 256_000 - 1_280_000 - 512_000) / warps)
    assert k["memory"]["uncoalesced_fraction"] == 0.0          # 4 sectors per request: coalesced
    assert k["launch"]["active_blocks_per_sm"] == pytest.approx(5.0)   # 40 warps / 8 per block
    assert k["time_s"] == pytest.approx(250e-6) and k["core_mhz"] == pytest.approx(1410) and k["mem_mhz"] == pytest.approx(877)
    out = tmp_path / "k.json"
    assert main([str(f), "-o", str(out)]) == 0
    df = kernel_description_table(out)
    assert df["active_blocks_per_sm"].iloc[0] == pytest.approx(5.0)
    assert df["uncoal_frac"].iloc[0] == 0.0 and df["cnt_l1"].iloc[0] == pytest.approx(0.5 * g)


def test_ncu_occupancy_given_as_a_percentage(tmp_path):
    """ncu may give the active warps only as sm__warps_active.avg.pct_of_peak_sustained_active (%): 62.5 % of
    the 64 resident warps = 40 warps, 5 blocks of 8 warps per SM by hand, as the warps-per-cycle form gives
    above. The percentage divided by 10 instead of 100 made it 50 blocks."""
    f = tmp_path / "ncu.csv"
    f.write_text(NCU.replace('"sm__warps_active.avg.per_cycle_active","warp","40"',
                             '"sm__warps_active.avg.pct_of_peak_sustained_active","%","62.5"'))
    (k,) = read_profile(f, max_warps_per_sm=64)
    assert k["launch"]["active_blocks_per_sm"] == pytest.approx(5.0, rel=1e-12)


@pytest.mark.filterwarnings("ignore:.*not used for kernel descriptions")
def test_bad_exports(tmp_path, capsys):
    f = tmp_path / "nv.csv"
    f.write_text(NVPROF)
    with pytest.raises(BadInputError, match="no launch shape in the export; give blocks and threads per block"):
        read_profile(f)
    g = tmp_path / "other.csv"
    g.write_text("a,b\n1,2\n")
    with pytest.raises(BadInputError, match="neither an nvprof export"):
        read_profile(g)
    assert not is_profile_csv(g)
    h = tmp_path / "nototal.csv"
    h.write_text("\n".join(line for line in NCU.splitlines() if "smsp__inst_executed.sum" not in line))
    with pytest.raises(BadInputError, match="no smsp__inst_executed.sum"):
        read_profile(h)
    bad = tmp_path / "bad.csv"
    bad.write_text(NCU.replace('"256"', '"two hundred"'))
    assert main([str(bad), "-o", str(tmp_path / "x.json")]) == 2
    assert "launch__block_size: 'two hundred' is not a number" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()


def test_kernel_description_timing_fields(tmp_path):
    k = {"name": "k", "per_warp": {"fp": 100, "global": 10}, "launch": {"blocks": 60, "threads_per_block": 256,
                                                                        "active_blocks_per_sm": 2},
         "ilp": 2, "sync_insts": 3, "memory": {"uncoalesced_fraction": 0.25, "l2_hit_rate": 0.5,
                                              "transactions_per_uncoalesced": 16, "independent_insts": 4}}
    f = tmp_path / "k.json"
    f.write_text(json.dumps(k))
    df = kernel_description_table(f)
    row = df.iloc[0]
    assert (row["active_blocks_per_sm"], row["ilp"], row["sync_insts"], row["uncoal_frac"], row["l2_hit_rate"],
            row["trans_per_uncoal"], row["ind_mem_insts"]) == (2, 2, 3, 0.25, 0.5, 16, 4)
    # without the fields the table has no timing columns (backward compatible)
    f.write_text(json.dumps({"name": "k", "per_warp": {"fp": 1}, "launch": {"blocks": 1, "threads_per_block": 32}}))
    assert "ilp" not in kernel_description_table(f).columns
    for bad, msg in ((dict(k, ilp=0.5), "field 'ilp': 0.5 is outside >= 1"),
                     (dict(k, memory={"l2_hit_rate": 1.5}), "field 'memory.l2_hit_rate': 1.5 is outside [0, 1]"),
                     (dict(k, memory="x"), "field 'memory' must be an object"),
                     (dict(k, launch={"blocks": 1, "threads_per_block": 32, "active_blocks_per_sm": 0}),
                      "field 'launch.active_blocks_per_sm': 0 is outside > 0"),
                     (dict(k, sync_insts="many"), "field 'sync_insts': 'many' is not a number")):
        f.write_text(json.dumps(bad))
        with pytest.raises(BadInputError, match=msg.replace("[", r"\[").replace("]", r"\]")):
            kernel_description_table(f)
