"""calib.core.atomic.atomic_writer: on any exception of the caller's block, the old file stays and no
temporary file is left behind, whatever the exception (not only an OSError)."""

from __future__ import annotations

import pytest

from calib.core.atomic import atomic_write_json, atomic_writer


class _Boom(Exception):
    pass


@pytest.mark.parametrize("exc", [ValueError("bad row"), _Boom(), KeyboardInterrupt(), SystemExit(3),
                                 OSError(28, "No space left on device")],
                         ids=lambda e: type(e).__name__)
def test_an_exception_in_the_block_leaves_the_old_file_and_no_temporary(tmp_path, exc):
    """The bug: the temporary file left behind on an exception that is not an OSError (a caller's own
    ValueError, Ctrl-C, sys.exit): only OSError cleaned up, and a directory of outputs filled with
    .<name>.*.tmp files that nothing removes."""
    target = tmp_path / "out.json"
    target.write_text("old\n")
    with pytest.raises(type(exc)):
        with atomic_writer(target) as fh:
            fh.write(b"half of the new cont")
            assert len(list(tmp_path.glob(".out.json.*.tmp"))) == 1   # the writer did make one
            raise exc
    assert target.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_a_complete_block_replaces_the_file(tmp_path):
    target = tmp_path / "out.json"
    target.write_text("old\n")
    atomic_write_json(target, {"a": 1})
    assert target.read_text().strip() == '{\n  "a": 1\n}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]
