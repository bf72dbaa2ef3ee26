"""The files a task concerns, and their numbered lines for a guided coder (``tools/_map.py``)."""

from __future__ import annotations

from pathlib import Path

from flow_core.tools._map import FileView, file_views, task_files
from flow_core.tools._read import read_window
from flow_safeio import Workspace

CALC = "def inclusive_sum(start, stop):\n    return sum(range(start, stop))\n"
TEST = "from calc import inclusive_sum\n\n\ndef test_sum():\n    assert inclusive_sum(1, 3) == 6\n"
TASK = "inclusive_sum(1, 3) returns 3, so test_calc.py fails. Fix calc.py."


def _ws(tmp_path: Path, files: dict[str, str]) -> Workspace:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return Workspace(tmp_path)


def test_a_named_file_that_defines_the_tasks_identifier_comes_first(tmp_path: Path) -> None:
    files = {"calc.py": CALC, "test_calc.py": TEST, "other.py": "x = 1\n", "lib/sums.py": CALC}
    with _ws(tmp_path, files) as ws:
        # Named: calc.py defines inclusive_sum, test_calc.py does not (named first, though).
        # Then the unnamed file that defines it; other.py is not related.
        assert task_files(ws, TASK) == ["calc.py", "test_calc.py", "lib/sums.py"]
        # Named files that define nothing keep the order named.
        assert task_files(ws, "see other.py and test_calc.py") == ["other.py", "test_calc.py"]


def _text(views: list[FileView]) -> str:
    return "\n\n".join(v.text for v in views)


def test_the_views_are_read_file_s_rendering_within_the_budget(tmp_path: Path) -> None:
    with _ws(tmp_path, {"calc.py": CALC, "test_calc.py": TEST}) as ws:
        views = file_views(ws, TASK)
        assert views == [
            FileView("calc.py", read_window("calc.py", CALC), whole=True),
            FileView("test_calc.py", read_window("test_calc.py", TEST), whole=True),
        ]
        assert views[0].text.startswith("calc.py: lines 1-2 of 2\n1\tdef inclusive_sum(start")
        # A budget that fits the first file and part of the second: the second is cut at a
        # line, says so, and is not whole.
        room = len(read_window("calc.py", CALC)) + 2 + 120
        cut = file_views(ws, TASK, budget=room)
        assert len(_text(cut)) <= room
        assert [v.whole for v in cut] == [True, False]
        assert cut[1].text.endswith("[cut to fit; read_file shows the rest]")
        assert "1\tfrom calc import inclusive_sum" in cut[1].text
        # Too small for even one file's first rows: nothing.
        assert file_views(ws, TASK, budget=30) == []
        assert file_views(ws, "nothing related here") == []


def test_a_file_longer_than_one_read_is_not_whole(tmp_path: Path) -> None:
    long = "def inclusive_sum():\n" + "    x = 1\n" * 150
    with _ws(tmp_path, {"calc.py": long}) as ws:
        (view,) = file_views(ws, "fix inclusive_sum in calc.py", budget=100_000)
    assert not view.whole
    assert "[more: call read_file" in view.text


def test_a_file_the_workspace_refuses_or_that_is_not_text_is_never_shown(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("SECRET=1\n")
    (tmp_path / "blob.py").write_bytes(b"\0\1\2inclusive_sum")
    with _ws(tmp_path, {"calc.py": CALC}) as ws:
        views = _text(file_views(ws, "fix inclusive_sum in calc.py, .env and blob.py"))
    assert "SECRET" not in views
    assert "blob.py" not in views
    assert views.startswith("calc.py: lines 1-2 of 2")
