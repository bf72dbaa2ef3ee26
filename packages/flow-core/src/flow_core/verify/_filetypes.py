"""Coverage keys: which language, documentation or tool-configuration class a file belongs to.

The gate (``flow_core.verify._gate``) asks for static coverage per key, and the runtime uses the
same keys to pick the files Rose's native linter sees. Keys, in the order they are decided
(:func:`language_key`):

1. ``"tool-config"``: a file that configures the tools the checks run (:func:`is_tool_config`);
2. ``"docs"``: documentation and data (a known extension or a well-known name like ``LICENSE``);
3. ``"file:NAME"``: any other file without an extension;
4. the language name for a known extension (``".py"`` → ``"python"``), else the lower-cased
   extension.
"""

from __future__ import annotations

from collections.abc import Mapping
from fnmatch import fnmatchcase
from pathlib import PurePosixPath

__all__ = [
    "DOC_EXTENSIONS",
    "DOC_KEY",
    "FILE_KEY_PREFIX",
    "LANGUAGE_BY_EXTENSION",
    "TOOL_CONFIG_DIRS",
    "TOOL_CONFIG_KEY",
    "TOOL_CONFIG_NAMES",
    "TOOL_CONFIG_PATTERNS",
    "is_tool_config",
    "language_key",
]

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
