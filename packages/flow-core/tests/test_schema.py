"""The shipped report schema equals the model's, and real reports validate against it."""

from __future__ import annotations

import json
from importlib import resources

import jsonschema

from flow_core import Report, report_json_schema


def shipped() -> dict[str, object]:
    text = resources.files("flow_core").joinpath("report.schema.json").read_text("utf-8")
    data: dict[str, object] = json.loads(text)
    return data


def test_shipped_schema_equals_the_model() -> None:
    # Regenerate with: json.dumps(Report.model_json_schema(), indent=2, sort_keys=True) + "\n"
    assert shipped() == Report.model_json_schema() == report_json_schema()


def test_reports_validate_against_the_shipped_schema() -> None:
    schema = shipped()
    jsonschema.Draft202012Validator.check_schema(schema)
    report = Report(kind="status", ok=True, status="ok", flow_version="0.1.0")
    jsonschema.validate(report.to_dict(), schema)
    bad = report.to_dict() | {"status": "great"}
    validator = jsonschema.Draft202012Validator(schema)
    assert list(validator.iter_errors(bad))


def test_run_store_fields_are_in_the_schema() -> None:
    schema = shipped()
    props = schema["properties"]
    assert isinstance(props, dict)
    assert {"run_id", "run_dir", "isolation", "rolled_back", "warnings"} <= set(props)
    report = Report(
        kind="run",
        ok=False,
        status="unverified",
        flow_version="0.1.0",
        run_id="20261130T210856123456Z-abcdef",
        run_dir="/home/u/.local/state/flow/runs/20261130T210856123456Z-abcdef",
        isolation={"mode": "git-worktree", "applied": False, "reason": "not verified"},
    )
    jsonschema.validate(report.to_dict(), schema)
    bad = report.to_dict()
    bad["isolation"] = {"mode": "chroot", "applied": True}
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(bad))


def test_no_report_field_defaults_through_a_builtin_type() -> None:
    """Each report model's list defaults come from a plain function (``_report._empty``):
    pydantic reads a factory's signature, and ``list``'s text signature starts the tokenizer
    on every cold ``flow status`` (``bench/bench_cli.py``). Each list default stays a new list."""
    import flow_core._report as report_module

    models = [
        m
        for m in vars(report_module).values()
        if isinstance(m, type) and issubclass(m, report_module.BaseModel)
    ]
    factories = [
        (m.__name__, name, f.default_factory)
        for m in models
        for name, f in m.model_fields.items()
        if f.default_factory is not None
    ]
    assert factories, "the report has list fields with default factories"
    assert [f for f in factories if f[2] in (list, set, tuple, bytearray)] == []
    first = Report(kind="status", ok=True, status="ok", flow_version="0")
    first.config_sources.append("x.toml")
    assert Report(kind="status", ok=True, status="ok", flow_version="0").config_sources == []
