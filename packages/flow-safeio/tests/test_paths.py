"""The pure path rules of validate_path."""

from __future__ import annotations

import pytest

from flow_safeio import GitPathError, InvalidPathError, PathEscapeError, validate_path


@pytest.mark.parametrize(
    ("given", "normal"),
    [
        ("a.txt", "a.txt"),
        ("a/b/c.txt", "a/b/c.txt"),
        ("./a//b/./c/", "a/b/c"),
        (".", "."),
        ("./", "."),
        ("...hidden", "...hidden"),
        (".gitignore", ".gitignore"),
        (".github/workflows/ci.yml", ".github/workflows/ci.yml"),
        ("git/x", "git/x"),
        ("caf\u00e9/\u65e5\u672c.txt", "caf\u00e9/\u65e5\u672c.txt"),
        ("notes:v2.txt", "notes:v2.txt"),
    ],
)
def test_accepted(given: str, normal: str) -> None:
    assert validate_path(given) == normal


@pytest.mark.parametrize(
    ("given", "error", "code"),
    [
        ("", InvalidPathError, "path_invalid"),
        ("/etc/passwd", PathEscapeError, "path_outside"),
        ("//server/share", PathEscapeError, "path_outside"),
        ("C:/Windows", PathEscapeError, "path_outside"),
        ("c:x", PathEscapeError, "path_outside"),
        ("..", PathEscapeError, "path_outside"),
        ("a/../b", PathEscapeError, "path_outside"),
        ("a/..", PathEscapeError, "path_outside"),
        ("a\\b", InvalidPathError, "path_invalid"),
        ("a\x00b", InvalidPathError, "path_invalid"),
        ("a\nb", InvalidPathError, "path_invalid"),
        ("a\x7fb", InvalidPathError, "path_invalid"),
        ("...", InvalidPathError, "path_invalid"),
        (". .", InvalidPathError, "path_invalid"),
        ("a/\udcff", InvalidPathError, "path_invalid"),
        ("x" * 256, InvalidPathError, "path_invalid"),
        ("a/" * 2100, InvalidPathError, "path_invalid"),
        (".git", GitPathError, "git_path"),
        ("src/.git/config", GitPathError, "git_path"),
        (".GIT", GitPathError, "git_path"),
        (".gIt/hooks", GitPathError, "git_path"),
        (".git.", GitPathError, "git_path"),
        (".git ", GitPathError, "git_path"),
        (".git. . ", GitPathError, "git_path"),
        ("GIT~1", GitPathError, "git_path"),
        (".git::$INDEX_ALLOCATION", GitPathError, "git_path"),
        (".g\u200cit", GitPathError, "git_path"),
        ("\ufeff.git", GitPathError, "git_path"),
    ],
)
def test_refused(given: str, error: type[InvalidPathError], code: str) -> None:
    with pytest.raises(error) as info:
        validate_path(given)
    assert info.value.code == code
    assert isinstance(info.value, InvalidPathError)
    assert info.value.path == given


def test_non_str_is_refused() -> None:
    with pytest.raises(InvalidPathError):
        validate_path(b"a.txt")  # type: ignore[arg-type]
