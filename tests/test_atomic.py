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


def test_json_safe_and_finite_or_none_give_strict_json_values():
    """The one JSON cleaner (it replaced copies in fleet, selftest, power_sampling and the timing fit): a
    NaN, an infinity or a numpy scalar left in a document makes ``atomic_write_json`` (allow_nan=False) or
    ``json.dumps`` fail; expected values written by hand."""
    import json
    import math
    from pathlib import PurePosixPath

    import numpy as np

    from calib.core.atomic import finite_or_none, json_safe

    doc = {1: (np.float64("nan"), np.int64(3), np.bool_(True), None, "a", np.array([1.5, np.inf]), -math.inf,
               PurePosixPath("/x"))}
    assert json_safe(doc) == {"1": [None, 3, True, None, "a", [1.5, None], None, "/x"]}
    assert json.dumps(json_safe(doc), allow_nan=False) == '{"1": [null, 3, true, null, "a", [1.5, null], null, "/x"]}'
    assert [finite_or_none(x) for x in (2, np.float32(0.5), math.nan, -math.inf, None, "3", np.array([1.0]))] == \
        [2.0, 0.5, None, None, None, None, None]
