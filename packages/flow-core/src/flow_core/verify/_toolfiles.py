"""Files other tools run or obey: the one table of what the file tools refuse or the gate vetoes.

Some workspace files are not the project's code but instructions and settings that another
program reads, later and often with more power than Flow gave the model: a coding agent obeys
``CLAUDE.md``, direnv runs ``.envrc``, CI runs ``.gitlab-ci.yml`` with the repository's
secrets, every Python interpreter runs a ``.pth`` file on its path, pytest obeys
``pytest.ini``. :data:`TOOL_FILES` lists them in groups, each with its action and the reason:

* ``protected``: Flow's file tools (and the editor bridge) may read but never write them
  (error code ``protected``). A change to one can make another program run code, so no check
  result could vouch for it.
* ``tool-config``: they configure the tools the checks run. The file tools may write them, but
  the gate gives them the coverage key ``"tool-config"``, which is always vetoed: ``addopts =
  --co`` in ``pytest.ini`` switches the tests off while pytest still exits 0. A human reviews
  such a diff.

Matching (:func:`classify`) is on NFC-normalised, case-folded names (a case-insensitive file
system opens ``CLAUDE.MD`` as ``claude.md``), anywhere in the tree unless a group lists root
paths: a base name in ``names``, a base-name pattern in ``globs`` (``fnmatch``), a run of
directory components in ``dirs`` (everything below it, at any depth), or a root-relative path
(or directory) in ``paths``. Protected groups are tried first.

The table is documented row by row in flow-core's README; a test keeps the two in step.
Source of the rule: ``docs/architecture.md``, section "Evidence".
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import PurePosixPath
from typing import Literal

__all__ = [
    "PYTHON_STARTUP",
    "ROOT_PROTECTED",
    "TOOL_FILES",
    "ToolFiles",
    "classify",
    "is_python_startup",
    "is_tool_config",
    "protected_reason",
]

Action = Literal["protected", "tool-config"]


def _fold(text: str) -> str:
    return unicodedata.normalize("NFC", text).casefold()


@dataclass(frozen=True)
class ToolFiles:
    """One row of the table: a group of files, what Flow does with them, and why.

    Attributes:
        title: the group's name in the README.
        action: ``"protected"`` (never written by the file tools) or ``"tool-config"``
            (written, but the run cannot be verified).
        reason: why, in one sentence.
        names: base names matched in any directory (case-folded).
        globs: ``fnmatch`` patterns on the case-folded base name, in any directory.
        dirs: runs of directory components (case-folded); every file below one, at any depth.
        paths: workspace-relative paths from the root (a directory covers everything below).
    """

    title: str
    action: Action
    reason: str
    names: frozenset[str] = frozenset()
    globs: tuple[str, ...] = ()
    dirs: tuple[tuple[str, ...], ...] = ()
    paths: tuple[str, ...] = ()

    def matches(self, parts: tuple[str, ...]) -> bool:
        """Whether a path, as case-folded components, belongs to this group."""
        if not parts:
            return False
        name = parts[-1]
        if name in self.names or any(fnmatchcase(name, g) for g in self.globs):
            return True
        folders = parts[:-1]
        for run in self.dirs:
            n = len(run)
            if any(folders[i : i + n] == run for i in range(len(folders) - n + 1)):
                return True
        for path in self.paths:
            prefix = tuple(_fold(p) for p in path.split("/"))
            if parts[: len(prefix)] == prefix:
                return True
        return False


def _names(*names: str) -> frozenset[str]:
    return frozenset(_fold(n) for n in names)


#: Files every interpreter runs at start; also the what-runs rule's ``python_startup``
#: (``tools/_policy.py``).
PYTHON_STARTUP = ToolFiles(
    "Python startup files",
    "protected",
    "every Python interpreter that finds them on its path runs them at start, before any "
    "test or tool: a .pth line starting with 'import', sitecustomize, usercustomize",
    names=_names("sitecustomize.py", "usercustomize.py"),
    globs=("*.pth",),
)

_PROTECTED: tuple[ToolFiles, ...] = (
    ToolFiles(
        "Coding-agent instructions",
        "protected",
        "coding agents read these as instructions from the project's owner and obey them in "
        "their next session (Claude Code, Codex, Gemini CLI, Copilot, Cursor, Windsurf, Cline)",
        names=_names(
            "CLAUDE.md",
            "CLAUDE.local.md",
            "AGENTS.md",
            "AGENT.md",
            "GEMINI.md",
            ".cursorrules",
            ".windsurfrules",
            ".clinerules",
            ".roorules",
            "copilot-instructions.md",
        ),
        dirs=((".github", "instructions"), (".github", "prompts"), (".github", "chatmodes")),
    ),
    ToolFiles(
        "Coding-agent and editor settings",
        "protected",
        "settings of coding agents and editors: the MCP servers they launch, hooks, tasks, "
        "commands and the interpreters they run",
        names=_names(
            ".mcp.json",
            "opencode.json",
            ".aider.conf.yml",
            ".aider.model.settings.yml",
            ".aider.model.metadata.json",
        ),
        dirs=(
            (".claude",),
            (".cursor",),
            (".gemini",),
            (".roo",),
            (".amazonq",),
            (".continue",),
            (".zed",),
            (".windsurf",),
            (".clinerules",),
            (".kiro",),
            (".junie",),
        ),
        paths=(
            ".vscode/mcp.json",
            ".vscode/tasks.json",
            ".vscode/settings.json",
            ".vscode/launch.json",
        ),
    ),
    ToolFiles(
        "Editor startup files",
        "protected",
        "Vim and Neovim run a project's exrc files, and Emacs evaluates directory locals, "
        "when the project is opened",
        names=_names(
            ".vimrc", ".gvimrc", ".exrc", ".nvimrc", ".nvim.lua", ".lvimrc", ".dir-locals.el"
        ),
    ),
    ToolFiles(
        "CI definitions",
        "protected",
        "CI services run these on the next push, with the repository's secrets",
        names=_names(
            ".gitlab-ci.yml",
            ".travis.yml",
            "azure-pipelines.yml",
            "bitbucket-pipelines.yml",
            "Jenkinsfile",
            ".drone.yml",
            ".woodpecker.yml",
        ),
        dirs=(
            (".github", "workflows"),
            (".github", "actions"),
            (".circleci",),
            (".woodpecker",),
            (".buildkite",),
        ),
    ),
    ToolFiles(
        "Dev containers",
        "protected",
        "dev-container tools run their lifecycle commands (postCreateCommand, ...) when the "
        "container is built or the project opened",
        names=_names(".devcontainer.json"),
        dirs=((".devcontainer",),),
    ),
    ToolFiles(
        "Environment managers and dotenv files",
        "protected",
        "loaded on entering the directory or starting a tool: direnv runs .envrc, mise and "
        "asdf pick the programs (mise also runs tasks and hooks), dotenv files set the "
        "variables tools trust",
        names=_names(
            ".envrc",
            "mise.toml",
            ".mise.toml",
            "mise.local.toml",
            ".mise.local.toml",
            ".rtx.toml",
            ".tool-versions",
            ".python-version",
            ".nvmrc",
            ".node-version",
            ".ruby-version",
            ".sdkmanrc",
        ),
        globs=(".env", ".env.*", "*.env"),
        dirs=((".mise",),),
    ),
    ToolFiles(
        "Package-manager settings",
        "protected",
        "they set the registry, credentials and the scripts package managers run "
        "(.yarnrc.yml yarnPath, .pnpmfile.cjs, npm script-shell)",
        names=_names(
            ".npmrc",
            ".yarnrc",
            ".yarnrc.yml",
            ".pnpmfile.cjs",
            "bunfig.toml",
            ".bunfig.toml",
            ".pypirc",
            "pip.conf",
            "pip.ini",
            "uv.toml",
            ".condarc",
            ".gemrc",
        ),
        dirs=((".bundle",), (".yarn", "plugins"), (".yarn", "releases")),
    ),
    ToolFiles(
        "Git attributes, modules and hooks",
        "protected",
        "a .gitattributes line (-diff, filter=) can hide a change from git diff; .gitmodules "
        "makes git fetch other repositories; hook managers run their files on commit",
        names=_names(
            ".gitattributes",
            ".gitmodules",
            ".pre-commit-config.yaml",
            ".pre-commit-config.yml",
            "lefthook.yml",
            ".lefthook.yml",
        ),
        dirs=((".githooks",), (".husky",)),
    ),
    PYTHON_STARTUP,
)

_TOOL_CONFIG_REASON = (
    "configures the tools the checks run: an edit can switch a check off while it still exits 0"
)

_TOOL_CONFIG: tuple[ToolFiles, ...] = (
    ToolFiles(
        "Python tool configuration",
        "tool-config",
        _TOOL_CONFIG_REASON + " (addopts = --co in pytest.ini, exclude in ruff.toml)",
        names=_names(
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
        ),
    ),
    ToolFiles(
        "Ignore files",
        "tool-config",
        _TOOL_CONFIG_REASON + " (ruff and other linters skip what .gitignore and .ignore list)",
        names=_names(".gitignore", ".ignore", ".eslintignore", ".prettierignore"),
    ),
    ToolFiles(
        "JavaScript and TypeScript tool configuration",
        "tool-config",
        _TOOL_CONFIG_REASON + " (package.json scripts, test runner and linter configs)",
        names=_names(
            "package.json", "deno.json", "deno.jsonc", "biome.json", "biome.jsonc", ".swcrc"
        ),
        globs=(
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
        ),
    ),
    ToolFiles(
        "Rust and Go tool configuration",
        "tool-config",
        _TOOL_CONFIG_REASON + " (a runner in .cargo/config.toml replaces the test binaries)",
        names=_names(
            "Cargo.toml",
            "rust-toolchain",
            "rust-toolchain.toml",
            "clippy.toml",
            ".clippy.toml",
            "rustfmt.toml",
            ".rustfmt.toml",
            "go.mod",
            "go.work",
            "staticcheck.conf",
        ),
        globs=(".golangci.*",),
        dirs=((".cargo",),),
    ),
    ToolFiles(
        "Build systems",
        "tool-config",
        _TOOL_CONFIG_REASON + " (a check that runs make or cmake runs what these say)",
        names=_names(
            "Makefile",
            "GNUmakefile",
            "CMakeLists.txt",
            "CMakePresets.json",
            "CMakeUserPresets.json",
            "meson.build",
            "meson.options",
            "meson_options.txt",
            "build.ninja",
            "configure.ac",
            "Makefile.am",
            ".clang-tidy",
            ".clang-format",
            "compile_flags.txt",
            "compile_commands.json",
            "BUILD",
            "BUILD.bazel",
            "WORKSPACE",
            "WORKSPACE.bazel",
            "MODULE.bazel",
            ".bazelrc",
            ".bazelversion",
            "justfile",
            ".justfile",
            "Taskfile.yml",
            "Taskfile.yaml",
        ),
        globs=("*.cmake", "*.mk"),
    ),
    ToolFiles(
        "JVM, Ruby, PHP, Lua, shell and Nix tool configuration",
        "tool-config",
        _TOOL_CONFIG_REASON,
        names=_names(
            "pom.xml",
            "build.gradle",
            "build.gradle.kts",
            "settings.gradle",
            "settings.gradle.kts",
            "gradle.properties",
            "Gemfile",
            "Rakefile",
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
        ),
    ),
)

#: The table: protected groups first, then tool configuration.
TOOL_FILES: tuple[ToolFiles, ...] = _PROTECTED + _TOOL_CONFIG


def _parts(path: str) -> tuple[str, ...]:
    return tuple(_fold(p) for p in PurePosixPath(path).parts if p not in ("", "."))


def is_python_startup(path: str) -> bool:
    """Whether ``path`` is a Python startup file (the what-runs rule's ``python_startup``,
    ``tools/_policy.py``)."""
    return PYTHON_STARTUP.matches(_parts(path))


def classify(path: str) -> ToolFiles | None:
    """The table row a workspace-relative ``/`` path belongs to, or None.

    Protected rows are tried before tool-config rows, so a file in both is protected.
    """
    parts = _parts(path)
    for row in TOOL_FILES:
        if row.matches(parts):
            return row
    return None


def protected_reason(path: str) -> str | None:
    """Why the file tools must not write ``path`` (a protected row's reason), or None."""
    row = classify(path)
    return (
        f"{row.title.lower()}: {row.reason}"
        if row is not None and row.action == "protected"
        else None
    )


def is_tool_config(path: str) -> bool:
    """Whether ``path`` configures the tools the checks run (a ``tool-config`` row)."""
    row = classify(path)
    return row is not None and row.action == "tool-config"


#: Root-level protected paths handed to flow-safeio (``Workspace(protected=...)``), so every
#: write channel refuses them even before the table is consulted; and the exact paths the
#: whole-tree fingerprint watches inside generated folders (``.vscode/`` is one).
ROOT_PROTECTED: tuple[str, ...] = tuple(
    dict.fromkeys(
        [
            *(p for row in _PROTECTED for p in row.paths),
            *(n for row in _PROTECTED for n in sorted(row.names)),
            *("/".join(run) for row in _PROTECTED for run in row.dirs),
        ]
    )
)
