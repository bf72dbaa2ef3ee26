"""``flow run --isolate`` in a Git LFS repository: the tree holds the pointers, no filter runs.

git-lfs itself is not needed: the repository is configured the way ``git lfs install
--local`` leaves it (``filter.lfs.clean``/``smudge`` commands, ``filter.lfs.required =
true``), with a stand-in filter program that writes the "downloaded" content and notes every
call. The workspace holds that content (as after a checkout with git-lfs); the isolated tree
must hold the pointers git stores, whether git's index still vouches for the working file or
not, and Flow must never run the filter.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

#: Each test drives whole `flow run`s against the fake model server.
pytestmark = pytest.mark.slow

POINTER = "version https://git-lfs.github.com/spec/v1\noid sha256:{oid}\nsize {size}\n"
FIXED = "def add(a: int, b: int) -> int:\n    return a + b  # checked\n"


def _pointer(content: bytes) -> str:
    return POINTER.format(oid=hashlib.sha256(content).hexdigest(), size=len(content))


def _fake_lfs(tmp_path: Path, contents: dict[str, bytes]) -> Path:
    """A filter program: ``smudge PATH`` prints the content, ``clean PATH`` the pointer; each
    call is appended to ``filter-calls``."""
    script = tmp_path / "fake_git_lfs.py"
    table = {name: data.decode() for name, data in contents.items()}
    script.write_text(
        "import json, sys\n"
        f"calls = {json.dumps(str(tmp_path / 'filter-calls'))}\n"
        "open(calls, 'a').write(' '.join(sys.argv[1:]) + '\\n')\n"
        "sys.stdin.buffer.read()\n"
        f"table = {json.dumps(table)}\n"
        "text = table[sys.argv[2].rsplit('/', 1)[-1]]\n"
        "if sys.argv[1] == 'clean':\n"
        "    import hashlib\n"
        "    data = text.encode()\n"
        f"    text = {POINTER!r}.format(oid=hashlib.sha256(data).hexdigest(), size=len(data))\n"
        "sys.stdout.write(text)\n"
    )
    return script


def test_the_isolated_tree_holds_lfs_pointers_and_runs_no_filter(
    env, h, tmp_path: Path, repo: Path, state: Path, fake_ollama
) -> None:
    contents = {"model.bin": b"downloaded weights\n", "data.bin": b"downloaded data\n"}
    (repo / ".gitattributes").write_text("*.bin filter=lfs diff=lfs merge=lfs -text\n")
    for name, data in contents.items():
        (repo / name).write_text(_pointer(data))  # committed before the filter exists
    (repo / "gone.bin").write_text(_pointer(b"old\n"))
    h.git(repo, "add", ".")
    h.git(repo, "commit", "-q", "-m", "lfs files")
    script = _fake_lfs(tmp_path, {**contents, "gone.bin": b"old\n"})
    h.git(repo, "config", "filter.lfs.clean", f"{sys.executable} {script} clean %f")
    h.git(repo, "config", "filter.lfs.smudge", f"{sys.executable} {script} smudge %f")
    h.git(repo, "config", "filter.lfs.required", "true")
    for name in contents:  # as git-lfs leaves them: the content, the index vouching for it
        (repo / name).unlink()
    h.git(repo, "checkout", "--", *contents)
    assert (repo / "model.bin").read_bytes() == contents["model.bin"]
    (repo / "data.bin").write_bytes(contents["data.bin"])  # rewritten: the index cannot vouch
    (repo / "gone.bin").unlink()  # the user deleted one
    calls = (tmp_path / "filter-calls").read_text()

    check = (
        "import pathlib; "
        "assert pathlib.Path('model.bin').read_text().startswith('version https://git-lfs'); "
        "assert pathlib.Path('data.bin').read_text().startswith('version https://git-lfs'); "
        "assert not pathlib.Path('gone.bin').exists(); "
        "import calc; assert calc.add(2, 3) == 5"
    )
    lint = [sys.executable, "-m", "py_compile", "calc.py"]
    checks = h.check_table("unit", [sys.executable, "-c", check]) + h.check_table(
        "compile", lint, kind="lint", filetypes=["python", "docs"]
    )
    url = fake_ollama(h.calc_script(FIXED)).url
    cfg = h.operator_config(tmp_path / "op.toml", repo, base_url=url, checks=checks)
    result = env.flow("run", "--trusted", "--isolate", "--config", str(cfg), "fix add")
    assert result.code == 0, result.stderr
    report = result.json()
    assert report["verified"] is True, report["verification"]
    assert report["changed_files"] == ["calc.py", "notes.md"]
    # Flow ran no filter; the workspace's files are as the user had them.
    assert (tmp_path / "filter-calls").read_text() == calls
    assert (repo / "model.bin").read_bytes() == contents["model.bin"]
    assert (repo / "data.bin").read_bytes() == contents["data.bin"]
    assert not (repo / "gone.bin").exists()
    assert (repo / "calc.py").read_text() == FIXED  # applied
    assert h.git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
