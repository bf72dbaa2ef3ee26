"""The verification gate: the seed's five conditions, judged by the host from recorded facts.

Source: the seed's section "What verified means". A run is verified only when

1. the planner and coder completed within their budgets;
2. at least one required named check ran, and every required check passed;
3. every file changed through Flow has passing static analysis for its language;
4. a separate read-only reviewer returned a valid structured approval;
5. the edited files did not change between verification and the end of review, and no editor
   buffer is dirty.

Nothing here asks the model anything: the inputs are check results, hashes, editor freshness
and the validated review that the runtime recorded.

Coverage rules (condition 3):

* Each changed file maps to one key (:func:`language_key`), checked in this order:

  1. ``"tool-config"`` for a file that configures the tools the checks run (``pytest.ini``,
     ``pyproject.toml``, ``conftest.py``, ``ruff.toml``, ``package.json``, ``Makefile``,
     ``.github/workflows/*.yml``, ... see :func:`is_tool_config`). Its entry is always
     ``vetoed``: editing ``addopts = --co`` into ``pytest.ini`` or ``exclude = ["*"]`` into
     ``ruff.toml`` switches the checks off while they still exit 0, so no check result can
     vouch for such a run. Nothing covers this key, not even ``"*"`` or native editor lint.
  2. ``"docs"`` for documentation and data: a known extension (``.md``, ``.json``, ``.toml``,
     ``.yaml``, ``.txt``, ...) or a well-known document name without extension (``README``,
     ``LICENSE``, ...). Such files need the named gate (condition 2) but no linter: their
     entry is ``not_required``.
  3. ``"file:NAME"`` for any other file without an extension (``scripts/python`` →
     ``"file:python"``). The namespace keeps an extension-less file from passing for a
     language or for documentation: only a ``filetypes`` entry ``"file:NAME"`` or ``"*"``
     covers it.
  4. The language name for a known extension (``".py"`` → ``"python"``), otherwise the
     lower-cased extension (``".foo"``).

* A cycle that changed no file has nothing to cover (condition 3 holds); conditions 2, 4 and 5
  still apply.
* A file is covered by a *passing required* check of kind ``lint``, ``typecheck`` or
  ``diagnostics`` whose ``filetypes`` include the file's key, its ``.ext`` (files with an
  extension only), or ``"*"``; ``filetypes`` entries and keys are compared case-insensitively.
  ``test``, ``build`` and ``check`` kinds never give static coverage; optional checks never
  replace a required gate.
* A native Rose lint result covers its files only with ``status == "ok"`` and ``verified``;
  ``"unavailable"`` never covers. A result with ``error_count > 0`` or ``stale`` for a file
  vetoes that file's language entry, whatever else passed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import PurePosixPath

from flow_core._protocols import EditorLintResult
from flow_core._report import (
    CheckResult,
    CoverageEntry,
    GateConditions,
    Review,
    Verification,
)

__all__ = [
    "DOC_EXTENSIONS",
    "DOC_KEY",
    "FILE_KEY_PREFIX",
    "LANGUAGE_BY_EXTENSION",
    "STATIC_KINDS",
    "TOOL_CONFIG_DIRS",
    "TOOL_CONFIG_KEY",
    "TOOL_CONFIG_NAMES",
    "TOOL_CONFIG_PATTERNS",
    "GateFacts",
    "evaluate_gate",
    "is_tool_config",
    "language_key",
]

#: Check kinds that establish static language coverage.
STATIC_KINDS = frozenset({"lint", "typecheck", "diagnostics"})
#: The coverage key shared by documentation and data files.
DOC_KEY = "docs"
#: The coverage key of files that configure the tools the checks run: always vetoed.
TOOL_CONFIG_KEY = "tool-config"
#: Prefix of the key of a file without an extension (``"file:python"``).
FILE_KEY_PREFIX = "file:"
#: Extensions mapped to a language name.
LANGUAGE_BY_EXTENSION: Mapping[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".rs": "rust",
    ".go": "go",
    ".ts": "typescript",
    ".tsx": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".js": "javascript",
    ".jsx": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hh": "cpp",
    ".hpp": "cpp",
    ".nix": "nix",
    ".lua": "lua",
    ".sh": "sh",
    ".bash": "sh",
    ".rb": "ruby",
    ".java": "java",
    ".kt": "kotlin",
    ".swift": "swift",
    ".zig": "zig",
    ".hs": "haskell",
    ".ml": "ocaml",
    ".php": "php",
    ".cs": "csharp",
    ".scala": "scala",
    ".vim": "vim",
}
#: Documentation and data extensions: they need the named gate but no linter.
DOC_EXTENSIONS = frozenset(
    {".md", ".markdown", ".json", ".toml", ".yaml", ".yml", ".txt", ".rst", ".csv", ".ini", ".cfg"}
)
_DOC_NAMES = frozenset(
    {
        "README",
        "LICENSE",
        "LICENCE",
        "COPYING",
        "NOTICE",
        "AUTHORS",
        "CHANGELOG",
        "CHANGES",
        "CONTRIBUTING",
        "NEWS",
    }
)

#: Base names (lower case) of files that configure the tools a check may run. Matching is on
#: the base name in any directory (``pkg/pyproject.toml`` too: tools read nested configuration,
#: and a workspace may hold several projects) and ignores case (a case-insensitive file system
#: reads ``PYTEST.INI`` as ``pytest.ini``). Wrongly vetoing a file costs a human look at the
#: diff; wrongly trusting one lets a run switch its own checks off.
TOOL_CONFIG_NAMES = frozenset(
    {
        # Python: pytest, ruff, mypy, flake8, pylint, coverage, pyright, tox, nox, pre-commit.
        "pyproject.toml",
        "setup.cfg",
        "tox.ini",
        "pytest.ini",
        "pytest.toml",
        ".pytest.toml",
        "conftest.py",
        "noxfile.py",
        "ruff.toml",
        ".ruff.toml",
        "mypy.ini",
        ".mypy.ini",
        ".flake8",
        ".pylintrc",
        "pylintrc",
        ".pylintrc.toml",
        ".coveragerc",
        "pyrightconfig.json",
        ".isort.cfg",
        ".pydocstyle",
        ".pydocstyle.ini",
        ".bandit",
        "sitecustomize.py",
        "usercustomize.py",
        ".pre-commit-config.yaml",
        ".pre-commit-config.yml",
        # Ignore files that linters honour (ruff skips what .gitignore/.ignore list).
        ".gitignore",
        ".ignore",
        ".eslintignore",
        ".prettierignore",
        # JavaScript / TypeScript.
        "package.json",
        ".npmrc",
        ".yarnrc",
        ".yarnrc.yml",
        "deno.json",
        "deno.jsonc",
        "biome.json",
        "biome.jsonc",
        ".swcrc",
        # Rust.
        "cargo.toml",
        "rust-toolchain",
        "rust-toolchain.toml",
        "clippy.toml",
        ".clippy.toml",
        "rustfmt.toml",
        ".rustfmt.toml",
        # Go.
        "go.mod",
        "go.work",
        "staticcheck.conf",
        # C / C++ and build systems.
        "makefile",
        "gnumakefile",
        "cmakelists.txt",
        "cmakepresets.json",
        "cmakeuserpresets.json",
        "meson.build",
        "meson.options",
        "meson_options.txt",
        "build.ninja",
        "configure.ac",
        "makefile.am",
        ".clang-tidy",
        ".clang-format",
        "compile_flags.txt",
        "compile_commands.json",
        "build",
        "build.bazel",
        "workspace",
        "workspace.bazel",
        "module.bazel",
        ".bazelrc",
        ".bazelversion",
        "justfile",
        ".justfile",
        "taskfile.yml",
        "taskfile.yaml",
        # JVM, Ruby, PHP, Lua, shell, Nix.
        "pom.xml",
        "build.gradle",
        "build.gradle.kts",
        "settings.gradle",
        "settings.gradle.kts",
        "gradle.properties",
        "gemfile",
        "rakefile",
        ".rubocop.yml",
        ".rspec",
        "composer.json",
        "phpunit.xml",
        "phpunit.xml.dist",
        "phpstan.neon",
        "phpstan.neon.dist",
        "psalm.xml",
        ".luacheckrc",
        ".luarc.json",
        "stylua.toml",
        ".stylua.toml",
        ".shellcheckrc",
        "flake.nix",
        "flake.lock",
    }
)
#: Shell-style patterns (``fnmatch``, case-sensitive on the lower-cased base name) for tool
#: configuration that comes in several spellings (``.eslintrc.json``, ``jest.config.ts``).
TOOL_CONFIG_PATTERNS: tuple[str, ...] = (
    ".eslintrc*",
    "eslint.config.*",
    ".prettierrc*",
    "prettier.config.*",
    "jest.config.*",
    "vitest.config.*",
    "vitest.workspace.*",
    "vite.config.*",
    "babel.config.*",
    ".babelrc*",
    ".mocharc*",
    "karma.conf.*",
    "playwright.config.*",
    "tsconfig*.json",
    "jsconfig*.json",
    ".golangci.*",
    "*.cmake",
    "*.mk",
)
#: Directories (lower-cased runs of consecutive path components, at any depth) whose every file
#: is tool configuration: CI workflows and Cargo's ``.cargo/config.toml`` (a ``runner`` there
#: replaces the test binaries).
TOOL_CONFIG_DIRS: tuple[tuple[str, ...], ...] = ((".github", "workflows"), (".cargo",))


def is_tool_config(path: str) -> bool:
    """Whether a workspace-relative path configures the tools that checks run.

    True when the lower-cased base name is in :data:`TOOL_CONFIG_NAMES` or matches one of
    :data:`TOOL_CONFIG_PATTERNS`, or when the path lies under one of :data:`TOOL_CONFIG_DIRS`.
    The list is fixed: configuration an operator's check reads from elsewhere (``pytest -c
    ci.ini``, a script the check runs) is not recognised here.
    """
    p = PurePosixPath(path)
    name = p.name.lower()
    if name in TOOL_CONFIG_NAMES or any(fnmatchcase(name, pat) for pat in TOOL_CONFIG_PATTERNS):
        return True
    dirs = tuple(part.lower() for part in p.parts[:-1])
    return any(
        dirs[i : i + len(run)] == run
        for run in TOOL_CONFIG_DIRS
        for i in range(len(dirs) - len(run) + 1)
    )


def language_key(path: str) -> str:
    """The coverage key of a workspace-relative path.

    Returns:
        ``"tool-config"`` for a file that configures the tools the checks run
        (:func:`is_tool_config`); ``"docs"`` for documentation/data (a documentation extension,
        or a well-known name such as ``LICENSE``); ``"file:NAME"`` for any other file without
        an extension (``"scripts/python"`` → ``"file:python"``); otherwise the language name
        for a known extension, or the lower-cased extension (``".foo"``).
    """
    if is_tool_config(path):
        return TOOL_CONFIG_KEY
    p = PurePosixPath(path)
    ext = p.suffix.lower()
    if not ext:
        return DOC_KEY if p.name.upper() in _DOC_NAMES else FILE_KEY_PREFIX + p.name
    if ext in DOC_EXTENSIONS:
        return DOC_KEY
    return LANGUAGE_BY_EXTENSION.get(ext, ext)


def _keys_for(path: str) -> frozenset[str]:
    """Every lower-cased filetypes entry that covers this file: its key, ``.ext`` and ``*``.

    A file without an extension is covered only by its ``file:NAME`` key or ``*``.
    """
    p = PurePosixPath(path)
    keys = {language_key(path).lower(), "*"}
    if p.suffix:
        keys.add(p.suffix.lower())
    return frozenset(keys)


@dataclass(frozen=True)
class GateFacts:
    """What the host recorded for one cycle; the only input of :func:`evaluate_gate`.

    Attributes:
        within_budgets: planner and coder completed without exhausting a budget.
        budget_reasons: why not, when ``within_budgets`` is False.
        required_checks: names of every configured required check.
        checks: results of the checks the host ran this cycle (required and optional).
        check_filetypes: ``filetypes`` of each configured check, by name.
        changed_files: workspace-relative paths changed through Flow.
        native_lint: Rose native lint results gathered by the host (may be empty).
        review: the validated review, or None when there was none or it was invalid.
        review_reason: why there is no valid review (e.g. "review_invalid").
        hashes_before_checks / hashes_after_review: sha256 per edited file (None = unreadable),
            taken when the coder finished (before any check ran) and at the end of review, so
            a check or anything else that rewrites an edited file is seen.
        freshness_equal: the editor snapshot was the same before the checks and after review
            (True when no editor is attached).
        dirty_buffers: unsaved buffers at the end of review.
    """

    within_budgets: bool
    required_checks: Sequence[str]
    checks: Sequence[CheckResult]
    check_filetypes: Mapping[str, Sequence[str]]
    changed_files: Sequence[str]
    review: Review | None
    hashes_before_checks: Mapping[str, str | None]
    hashes_after_review: Mapping[str, str | None]
    native_lint: Sequence[EditorLintResult] = ()
    budget_reasons: Sequence[str] = ()
    review_reason: str = "no review"
    freshness_equal: bool = True
    dirty_buffers: Sequence[str] = ()


def _coverage(facts: GateFacts, reasons: list[str]) -> tuple[list[CoverageEntry], bool]:
    passed_static: list[tuple[str, frozenset[str]]] = []
    for result in facts.checks:
        if result.required and result.status == "passed" and result.kind in STATIC_KINDS:
            types = facts.check_filetypes.get(result.name, ())
            passed_static.append((result.name, frozenset(t.lower() for t in types)))
    native_ok: set[str] = set()
    vetoed: set[str] = set()
    for lint in facts.native_lint:
        if lint.error_count > 0 or lint.stale:
            vetoed.update(lint.files)
        elif lint.status == "ok" and lint.verified:
            native_ok.update(lint.files)
    native_ok -= vetoed

    by_key: dict[str, list[str]] = {}
    for path in sorted(set(facts.changed_files)):
        by_key.setdefault(language_key(path), []).append(path)

    entries: list[CoverageEntry] = []
    all_ok = True
    for key, files in sorted(by_key.items()):
        if key == DOC_KEY:
            entries.append(CoverageEntry(key=key, files=files, status="not_required"))
            continue
        if key == TOOL_CONFIG_KEY:
            # Never covered: the checks' own configuration cannot be vouched for by the checks.
            all_ok = False
            listed = ", ".join(files)
            it, verb = ("it", "configures") if len(files) == 1 else ("them", "configure")
            reasons.append(
                f"{listed} {verb} the tools the checks run; a run that edits {it} cannot be "
                "verified by those checks — review the diff yourself"
            )
            entries.append(CoverageEntry(key=key, files=files, status="vetoed"))
            continue
        by: set[str] = set()
        uncovered: list[str] = []
        for path in files:
            wanted = _keys_for(path)
            names = [n for n, types in passed_static if types & wanted]
            if path in native_ok:
                names.append("rose:editor_lint")
            by.update(names)
            if not names:
                uncovered.append(path)
        bad = [p for p in files if p in vetoed]
        if bad:
            status = "vetoed"
            reasons.append(
                f"static analysis for {key!r} vetoed: editor lint reported errors or stale "
                f"results for {', '.join(bad)}"
            )
        elif uncovered:
            status = "uncovered"
            reasons.append(
                f"no passing required lint/typecheck/diagnostics check covers {key!r} "
                f"({', '.join(uncovered)})"
            )
        else:
            status = "covered"
        all_ok = all_ok and status == "covered"
        entries.append(CoverageEntry(key=key, files=files, status=status, by=sorted(by)))  # type: ignore[arg-type]
    return entries, all_ok


def _required_passed(facts: GateFacts, reasons: list[str]) -> bool:
    if not facts.required_checks:
        reasons.append("no required named check is configured")
        return False
    results = {r.name: r for r in facts.checks}
    ok = True
    for name in facts.required_checks:
        result = results.get(name)
        if result is None:
            reasons.append(f"required check {name!r} did not run")
            ok = False
        elif result.status != "passed" or not result.required:
            code = result.error.code if result.error else result.status
            reasons.append(f"required check {name!r} did not pass: {result.status} ({code})")
            ok = False
    return ok


def _unchanged(facts: GateFacts, reasons: list[str]) -> bool:
    ok = True
    for path in sorted(set(facts.hashes_before_checks) | set(facts.hashes_after_review)):
        before = facts.hashes_before_checks.get(path)
        after = facts.hashes_after_review.get(path)
        if before is None or after is None or before != after:
            reasons.append(f"{path} changed (or became unreadable) during verification/review")
            ok = False
    missing = set(facts.changed_files) - set(facts.hashes_before_checks)
    if missing:
        reasons.append("no verification hash for " + ", ".join(sorted(missing)))
        ok = False
    if not facts.freshness_equal:
        reasons.append("editor workspace snapshot changed during verification/review")
        ok = False
    if facts.dirty_buffers:
        reasons.append("unsaved editor buffers: " + ", ".join(sorted(facts.dirty_buffers)))
        ok = False
    return ok


def evaluate_gate(facts: GateFacts) -> Verification:
    """Judge the five conditions; ``verified`` is their conjunction and nothing else.

    Args:
        facts: what the host recorded for the cycle.

    Returns:
        A ``Verification`` with each condition, the coverage entries (one per language key) and
        a human-readable reason for every condition that failed.
    """
    reasons: list[str] = []
    within = facts.within_budgets
    if not within:
        reasons.extend(facts.budget_reasons or ["a role did not complete within its budget"])
    required = _required_passed(facts, reasons)
    coverage, static_ok = _coverage(facts, reasons)
    approved = facts.review is not None and facts.review.approved
    if facts.review is None:
        reasons.append(f"reviewer did not approve: {facts.review_reason}")
    elif not facts.review.approved:
        reasons.append("reviewer rejected the change")
    unchanged = _unchanged(facts, reasons)
    conditions = GateConditions(
        within_budgets=within,
        required_checks_passed=required,
        static_coverage=static_ok,
        review_approved=approved,
        unchanged=unchanged,
    )
    verified = all(_conditions(conditions))
    return Verification(
        verified=verified, conditions=conditions, coverage=coverage, reasons=reasons
    )


def _conditions(c: GateConditions) -> Iterable[bool]:
    return (
        c.within_budgets,
        c.required_checks_passed,
        c.static_coverage,
        c.review_approved,
        c.unchanged,
    )
