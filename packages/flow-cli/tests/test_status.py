"""``flow status``: one JSON object, flags before or after the subcommand, no model needed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest


def test_status_with_workspace_only(env, workspace: Path) -> None:
    result = env.flow("status", "--workspace", str(workspace))
    assert result.code == 0, result.stderr
    report = result.json()
    assert report["kind"] == "status"
    assert report["status"] == "ok"
    # No check is configured, so no run could be verified: status says so, not "ok".
    assert report["ok"] is False
    assert [w["code"] for w in report["warnings"]] == ["preflight_no_required_check"]
    assert report["workspace"] == str(workspace)
    assert report["trusted"] is False
    assert report["config_sources"] == []
    # stderr is not a terminal: no summary line, only the warning.
    (line,) = result.stderr.splitlines()
    assert line.startswith("flow: warning: no required check is configured")
    assert line.endswith("[preflight_no_required_check]")


@pytest.mark.parametrize(
    "args",
    [
        ["--workspace", "{ws}", "--trusted", "status"],
        ["status", "--workspace", "{ws}", "--trusted"],
        ["--trusted", "status", "--workspace", "{ws}"],
        ["--workspace", "{ws}", "status", "--trusted"],
    ],
    ids=["before", "after", "mixed-1", "mixed-2"],
)
def test_common_flags_before_or_after(env, workspace: Path, args: list[str]) -> None:
    result = env.flow(*[a.format(ws=workspace) for a in args])
    assert result.code == 0, result.stderr
    report = result.json()
    assert report["workspace"] == str(workspace)
    assert report["trusted"] is True


def test_model_overrides_every_role_and_later_flag_wins(env, workspace: Path, tmp_path, h) -> None:
    cfg = h.operator_config(tmp_path / "op.toml", workspace, model="configured")
    result = env.flow("--model", "early", "status", "--config", str(cfg), "--model", "late")
    assert result.code == 0, result.stderr
    models = result.json()["models"]
    assert set(models) == {"planner", "coder", "reviewer"}
    assert set(models.values()) == {"late"}

    result = env.flow("--model", "early", "status", "--config", str(cfg))
    assert set(result.json()["models"].values()) == {"early"}

    result = env.flow("status", "--config", str(cfg))
    assert set(result.json()["models"].values()) == {"configured"}


def test_workspace_flag_overrides_configured_workspace(env, workspace: Path, tmp_path, h) -> None:
    other = tmp_path / "other"
    other.mkdir()
    cfg = h.operator_config(tmp_path / "op.toml", workspace)
    result = env.flow("--config", str(cfg), "status", "--workspace", str(other))
    assert result.code == 0, result.stderr
    assert result.json()["workspace"] == str(other)


def test_user_config_is_read_and_listed(env, workspace: Path, h) -> None:
    path = env.user_config(
        f'workspace_dir = "{workspace}"\n'
        + h.check_table("unit", [sys.executable, "-m", "pytest", "-q"], kind="test")
    )
    result = env.flow("status")
    assert result.code == 0, result.stderr
    report = result.json()
    assert report["config_sources"] == [str(path)]
    assert report["workspace"] == str(workspace)
    (spec,) = report["configured_checks"]
    assert spec["name"] == "unit"
    assert spec["argv"] == [sys.executable, "-m", "pytest", "-q"]
    assert spec["required"] is True
    assert spec["kind"] == "test"


def test_status_sends_no_model_request(env, workspace: Path, tmp_path, h, fake_ollama) -> None:
    fake = fake_ollama(lambda request: ("unexpected", []))
    cfg = h.operator_config(tmp_path / "op.toml", workspace, base_url=fake.url)
    result = env.flow("status", "--config", str(cfg))
    assert result.code == 0, result.stderr
    assert fake.received == []


def test_status_does_not_import_the_mcp_server_or_live_display(env, workspace: Path) -> None:
    env.vars["PYTHONPROFILEIMPORTTIME"] = "1"
    result = env.flow("status", "--workspace", str(workspace))
    assert result.code == 0
    imported = {
        line.split("|")[-1].strip()
        for line in result.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert "flow_cli._cli" in imported  # the probe sees our own imports
    assert "flow_mcp" not in imported
    assert "rich.live" not in imported
    assert "flow_cli._tui" not in imported
    result.json()


def test_bad_config_key_is_a_usage_error_naming_key_and_file(env, workspace, tmp_path) -> None:
    cfg = tmp_path / "bad.toml"
    cfg.write_text(f'workspace_dir = "{workspace}"\n[agent]\nmax_iterationz = 3\n')
    result = env.flow("status", "--config", str(cfg))
    assert result.code == 2
    report = result.json()
    assert report["status"] == "error"
    assert report["ok"] is False
    assert report["errors"][0]["code"].startswith("config")
    assert "max_iterationz" in result.stderr
    assert str(cfg) in result.stderr


def test_missing_workspace_directory_names_the_flag(env, tmp_path) -> None:
    result = env.flow("status", "--workspace", str(tmp_path / "nope"))
    assert result.code == 2
    assert "--workspace" in result.stderr
    assert result.json()["status"] == "error"


def test_unknown_option_still_prints_one_json_object(env, workspace) -> None:
    result = env.flow("--workspace", str(workspace), "status", "--bogus")
    assert result.code == 2
    assert "--bogus" in result.stderr
    report = result.json()
    assert report["kind"] == "status"
    assert report["errors"][0]["code"] == "usage_error"


def test_unknown_option_before_subcommand_finds_the_subcommand(env, workspace) -> None:
    result = env.flow("--bogus", "--model", "run", "status")
    assert result.code == 2
    assert result.json()["kind"] == "status"


def test_missing_check_executables_are_warned_about(env, workspace: Path, tmp_path, h) -> None:
    checks = (
        # not tests: a test check Flow reads no results from would add a weak_evidence line
        h.check_table("found", [sys.executable, "-V"], kind="lint")
        + h.check_table("bare", ["no-such-flow-tool", "-q"], kind="lint")
        + h.check_table("venv", [".venv/bin/python", "-m", "pytest"])
    )
    cfg = h.operator_config(tmp_path / "op.toml", workspace, checks=checks)
    result = env.flow("status", "--config", str(cfg))
    assert result.code == 0, result.stderr
    report = result.json()
    assert [c["executable"] is None for c in report["configured_checks"]] == [False, True, True]
    assert result.stderr.splitlines() == [
        "flow: warning: check bare: executable 'no-such-flow-tool' was not found on PATH; "
        "install it, or correct checks.bare.cmd[0] in your config [check_missing]",
        f"flow: warning: check venv: '.venv/bin/python' is not an executable file "
        f"({workspace}/.venv/bin/python); install it, or correct checks.venv.cmd[0] in your "
        "config [check_missing]",
    ]


def test_status_summary_line_on_a_terminal_stderr(env, workspace: Path, tmp_path, h) -> None:
    pexpect = pytest.importorskip("pexpect")
    checks = h.check_table("unit", [sys.executable, "-V"], kind="lint")  # no weak_evidence line
    cfg = h.operator_config(tmp_path / "op.toml", workspace, model="fake-coder", checks=checks)
    out = tmp_path / "report.json"
    command = f"{sys.executable} -m flow_cli status --config {cfg} > {out}; echo EXIT=$?"
    child = pexpect.spawn(
        "/bin/sh",
        ["-c", command],
        env={**env.vars, "TERM": "xterm-256color", "COLUMNS": "200"},
        encoding="utf-8",
        timeout=60,
        dimensions=(30, 200),
    )
    try:
        child.expect("EXIT=0")
        stderr = child.before
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert stderr.splitlines() == [
        "flow: backend ollama at http://127.0.0.1:9 · models fake-coder (planner, coder, "
        "reviewer) · 1 check configured · read-only"
    ]
    import json

    assert json.loads(out.read_text())["status"] == "ok"


@pytest.mark.parametrize("redirect", ["0<&-", "2>&-"])
def test_status_with_a_standard_descriptor_closed_prints_one_report(
    env, workspace: Path, redirect: str
) -> None:
    import json
    import subprocess

    launch = f'exec "$0" -m flow_cli status --workspace "$1" {redirect}'
    proc = subprocess.run(
        ["sh", "-c", launch, sys.executable, str(workspace)],
        capture_output=True,
        env=env.vars,
        cwd=env.home,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["kind"] == "status"


def test_a_config_file_that_is_not_toml_exits_2_by_its_category(env, tmp_path: Path) -> None:
    import flow_core

    cfg = tmp_path / "operator.toml"
    cfg.write_text("workspace_dir = [\n")
    result = env.flow("status", "--config", str(cfg))
    assert result.json()["errors"][0]["code"] == "config_syntax"
    assert flow_core.error_category("config_syntax") == "usage"
    assert result.code == 2
