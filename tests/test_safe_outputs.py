"""Issue 17, finding 1 (and the output messages of finding 7, `-o -` of finding 8): outputs write through
symbolic links to their target, never replace a device node, refuse non-regular targets and /proc
naming the path, stream to stdout with `-o -`, and never name their temporary file."""

from __future__ import annotations

import json
import os
import shutil
import stat
import threading

import pytest


@pytest.fixture
def work(quick_run, tmp_path):
    """Copies of the quick campaign's parameter file and samples table."""
    shutil.copy(quick_run / "fitted" / "q.json", tmp_path / "p.json")
    shutil.copy(quick_run / "fitted" / "q.samples.csv", tmp_path / "s.csv")
    return tmp_path


def _no_temp_files(d):
    return [p.name for p in d.rglob("*.tmp")]


def test_fit_writes_through_a_symlink_to_its_target(cli, work):
    (work / "target.json").write_text("old\n")
    os.symlink("target.json", work / "link.json")
    rc, out, err = cli("fit", work / "s.csv", "-o", work / "link.json")
    assert rc == 0, err
    assert (work / "link.json").is_symlink() and os.readlink(work / "link.json") == "target.json"
    assert json.loads((work / "target.json").read_text())["power"]["model"] == "ipp"
    assert _no_temp_files(work) == []


def test_a_dangling_symlink_creates_its_target(cli, work):
    (work / "sub").mkdir()
    os.symlink("sub/new.csv", work / "out.csv")
    rc, out, err = cli("predict", work / "p.json", work / "s.csv", "-o", work / "out.csv", "--no-intervals")
    assert rc == 0, err
    assert (work / "out.csv").is_symlink()
    assert (work / "sub" / "new.csv").read_text().startswith("workload,")


@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root")
def test_a_device_node_is_refused_and_stays_a_device(cli, work):
    node = work / "full"
    os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 7))  # what /dev/full is
    rc, out, err = cli("fit", work / "s.csv", "-o", node)
    assert rc == 2
    assert err.strip().splitlines()[-1] == (
        f"ERROR: {node}: is a character device, not a regular file; refusing to write the parameter file "
        "there (use - for standard output)")
    assert stat.S_ISCHR(node.lstat().st_mode) and os.major(node.lstat().st_rdev) == 1
    # a symlink to a device node is no way around it
    os.symlink(node, work / "link")
    rc, out, err = cli("samples", "--help")
    assert rc == 0
    rc, out, err = cli("predict", work / "p.json", work / "s.csv", "-o", work / "link")
    assert rc == 2 and f"ERROR: {work / 'link'}: is a character device" in err
    assert stat.S_ISCHR(node.lstat().st_mode)


def test_proc_is_refused_without_naming_a_temporary_file(cli, work):
    rc, out, err = cli("fit", work / "s.csv", "-o", "/proc/x.json")
    assert rc == 2
    assert err.strip().splitlines()[-1] == (
        "ERROR: /proc/x.json: is on the /proc pseudo-file system, not a place for the parameter file; "
        "choose a path on a disk (or - for standard output)")
    assert ".tmp" not in err


def test_a_named_pipe_is_written_directly(cli, work):
    fifo = work / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()))
    reader.start()
    rc, out, err = cli("predict", work / "p.json", work / "s.csv", "-o", fifo, "--no-intervals")
    reader.join(10)
    assert rc == 0, err
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert got and got[0].decode().startswith("workload,") and "power_w_pred" in got[0].decode().splitlines()[0]


@pytest.mark.parametrize("dest", ["-", "/dev/stdout"])
def test_dash_streams_json_to_stdout_and_messages_to_stderr(cli, work, dest):
    rc, out, err = cli("fit", work / "s.csv", "-o", dest)
    assert rc == 0, err
    doc = json.loads(out)  # stdout carries the parameter file alone
    assert doc["power"]["model"] == "ipp"
    assert "[[power: model ipp]]" in err and "parameters written to standard output" in err
    assert not (work / "-").exists() and not os.path.exists("-")


def test_dash_streams_tables(cli, work, tmp_path):
    rc, out, err = cli("predict", work / "p.json", work / "s.csv", "-o", "-", "--no-intervals")
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("workload,") and "power_w_pred" in lines[0]
    assert len(lines) == 1 + sum(1 for _ in open(work / "s.csv")) - 1
    rc, out, err = cli("samples", tmp_path / "nosuch", "-o", "-")
    assert rc == 2 and out == ""


def test_a_directory_output_cannot_be_stdout(cli, work):
    rc, out, err = cli("report", work / "p.json", "-o", "-")
    assert rc == 2
    assert err.strip().splitlines()[-1] == "ERROR: report directory -: a directory cannot be standard output; give a directory path"


def test_write_errors_name_the_path_not_the_temporary_file(cli, work, monkeypatch):
    import calib.core.atomic as A

    def broken(fd):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(A.os, "fsync", broken)
    rc, out, err = cli("fit", work / "s.csv", "-o", work / "x.json")
    assert rc == 1
    assert err.strip().splitlines()[-1] == f"ERROR: {work / 'x.json'}: Input/output error"
    assert ".tmp" not in err and _no_temp_files(work) == [] and not (work / "x.json").exists()


def test_a_full_disk_during_run_names_the_file_and_leaves_no_empty_session(cli, tmp_path, monkeypatch):
    import calib.core.atomic as A

    def full(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(A.os, "replace", full)
    rc, out, err = cli("-q", "run", "--device", "sim:gtx280", "--campaign", "quick", "--name", "s",
                       "--logs-dir", tmp_path / "L", "--fitted-dir", tmp_path / "F")
    assert rc == 1
    assert err.strip().splitlines()[-1] == f"ERROR: {tmp_path / 'L' / 's' / 'manifest.json'}: No space left on device"
    assert not (tmp_path / "L" / "s").exists()
    assert _no_temp_files(tmp_path) == []
