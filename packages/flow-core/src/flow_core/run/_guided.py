"""Guided tool calls: each reply constrained to one of the role's calls or a final answer.

Where the server supports constrained decoding (a JSON Schema for the reply: Ollama's
``format``, llama.cpp's ``response_format`` schema, both sent through ``ChatBackend.chat``'s
``format``), a small model cannot write a malformed call, call a tool it was not offered or
name a file that does not exist (``docs/architecture.md``, "Guided tool calls"). The reply is
one JSON object:

* ``{"tool": NAME, "arguments": {...}}``: one call, its arguments valid against the tool's own
  parameters, where a ``path`` that must name an existing file is one of the workspace's
  files (``Workspace.walk``, at most ``MAX_GUIDED_FILES``; more files: any string), and in a
  small file a line number is within the file and an edit's old text is one of its lines
  (``guided_format``);
* ``{"answer": TEXT}``: the role's final answer.

``unwrap`` turns that object back into a structured call or plain text, so the rest of the
role loop sees what a native tool-calling server would have sent; a reply that is not such an
object (a server that ignored the schema) is left as it is, for ``parse_reply``.

The mode is the ``guided`` model option (``[ollama.options]``, ``[openai.options]``,
``[models.options.ROLE]``): ``"off"`` (the default), ``"on"``, or ``"auto"``: one short probe
per run and model (``probe_format``, sent with the role's tools as its requests are) asks for
an object only a constrained server produces, and guided calls are used where it came back
exactly. A role with a reply schema of its own
(the reviewer) or without tools is never guided. The report says which mode each role used
(``roles.ROLE.guided``).
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from flow_core._protocols import ChatMessage, ChatResponse, ToolCall
from flow_core.tools._map import task_words
from flow_core.tools._read import READ_LINE_CAP, READ_MAX_CHARS, READ_MAX_LINES
from flow_safeio import SafeIOError

if TYPE_CHECKING:
    from flow_safeio import Workspace

__all__ = [
    "ANSWER_OVERHEAD",
    "MAX_ANSWER_CHARS",
    "MAX_GUIDED_FILES",
    "MAX_GUIDED_LINES",
    "MAX_LINE_FILES",
    "MAX_QUERIES",
    "NEW_PATH",
    "PROBE_VALUE",
    "answer_limit",
    "guided_format",
    "new_path",
    "probe_format",
    "probe_messages",
    "probe_passed",
    "unwrap",
]

#: Most workspace files listed as the allowed values of an existing-file ``path``.
MAX_GUIDED_FILES = 300
#: Most files whose own lines bound ``read_file``'s line numbers and ``edit_file``'s old text.
MAX_LINE_FILES = 20
#: Most lines over those files (a larger schema makes a larger grammar for every reply).
MAX_GUIDED_LINES = 1_000
#: Files larger than this (bytes) are never bound to their lines.
MAX_LINE_FILE_BYTES = 64 * 1024
#: Tools whose ``path`` must name an existing file.
_EXISTING_FILE_TOOLS = frozenset({"read_file", "outline", "edit_file"})
#: Tools that change the file their ``path`` names (``guided_format``'s ``fixed``).
_CHANGING_TOOLS = frozenset({"edit_file", "write_file"})
#: Tools given one choice per file, bound to that file's lines (``_per_file``).
_LINE_TOOLS = frozenset({"read_file", "edit_file"})
#: Most characters of a guided answer (``answer_limit``).
MAX_ANSWER_CHARS = 1_000
#: Tokens of a reply cap left for the answer's JSON object around its text.
ANSWER_OVERHEAD = 16
#: The shortest line offered as an edit's old text (``6`` or ``)`` says too little to aim at).
MIN_OLD_CHARS = 3
#: Tools whose one enum argument says the whole call: a value already asked leaves the enum.
_ONE_ENUM = {"list_files": "path", "outline": "path", "run_check": "name", "search_text": "query"}
#: Most task identifiers offered as ``search_text`` queries.
MAX_QUERIES = 30
#: A new file's path: relative, starting with a letter, digit or ``_`` (no ``"`` or ``\\``),
#: at most 64 characters before its extension (a small model ran a path to the reply cap).
NEW_PATH = "^[A-Za-z0-9_][A-Za-z0-9_./-]{0,63}$"
#: Most file extensions a new file's path may end in (``new_path``).
MAX_NEW_KINDS = 30
#: The value the ``auto`` probe's schema requires: no model writes it unconstrained.
PROBE_VALUE = "flow-guided-probe-4f1c"


def guided_format(
    schemas: Sequence[Mapping[str, Any]],
    workspace: Workspace,
    done: Sequence[ToolCall] = (),
    *,
    task: str = "",
    first: Sequence[str] = (),
    calls: bool = True,
    answer: bool = True,
    answer_chars: int | None = None,
    fixed: Callable[[str], bool] | None = None,
) -> dict[str, Any]:
    """The reply schema for a role offered ``schemas`` (function-tool form), in ``workspace``,
    after the calls ``done`` answered since the role's last write (ok or not).

    Built from the workspace as it is now, so it is rebuilt for each request (an edit changes
    the lines). Where the workspace has at most ``MAX_GUIDED_FILES`` files: ``list_files``'s
    ``path`` is ``""`` or a folder holding files, and ``outline``'s ``path`` is one of the
    files (a path holding ``"`` or ``\\`` is left out everywhere: ``_grammar_safe``). Up to
    ``MAX_LINE_FILES`` small text files (``MAX_GUIDED_LINES`` lines in all) get a choice of
    their own for ``read_file`` (``start_line``/``end_line`` from 1 to the file's line
    count, no ``start_col``) and ``edit_file`` (``old_text`` one of its lines without
    indentation or line ending, at least ``MIN_OLD_CHARS`` characters, that occurs exactly
    once in the file's text and holds neither ``"`` nor ``\\``, so the edit keeps the line's
    indentation; a file with no such line is not bound); the other files share one choice
    whose ``path`` is one of them and whose other arguments are as the tool's schema says.

    A call in ``done`` is not offered again (its result is in the context and would be the
    same until a write): a folder already listed, a file already outlined, a check already
    run or a query already searched leaves its enum (the tool's choice goes when none is
    left), and a file already read without a range must be read from a ``start_line``.

    What was free text is drawn from the task and the workspace: ``search_text``'s ``query``
    is one of the task's identifiers (``tools/_map.task_words``) found in those small files,
    other than files read whole since the last write (at most ``MAX_QUERIES``; none: no
    choice), its only argument (a file read whole is not offered to ``outline`` either, nor
    to ``read_file`` when that read showed all of it: ``_one_read``); ``write_file``'s
    ``path`` is an existing file or a new relative path (``new_path``), its ``content`` not
    empty. ``first`` (``tools/_map.task_files``) comes first in every list of files, so it is
    those files that get choices of their own. Paths ``fixed`` says the role may read but not
    change (``run/_cycle.py``: a test harness the evidence run puts back) are offered to
    neither ``edit_file`` nor ``write_file``'s list of existing files.

    ``calls=False`` allows only the answer (a role's last turn, whose calls would not run);
    ``answer=False`` allows only calls (a role that can write, before its first write).
    ``answer_chars`` bounds the answer's length (``maxLength``: ``answer_limit``), and a
    one-line edit's new text to half of it (``_bounded``), so a reply closes within the cap.
    """
    if not calls:
        return {"anyOf": [_answer(answer_chars)]}
    walked = [p for p in workspace.walk(".", limit=MAX_GUIDED_FILES + 1) if _grammar_safe(p)]
    head = [p for p in dict.fromkeys(first) if p in walked]
    files = head + [p for p in walked if p not in head]
    listed = files if len(files) <= MAX_GUIDED_FILES else []
    texts = _file_texts(workspace, listed)
    unchangeable = {p for p in listed if fixed is not None and fixed(p)}
    # A file read whole since the last write is in the context: searching it or outlining it
    # tells nothing new.
    read = _read_whole(done)
    queries = _queries(task, {p: t for p, t in texts.items() if p not in read})
    done = (*done, *(ToolCall(f"read-{p}", "outline", {"path": p}) for p in sorted(read)))
    # ... and one that a read without a range showed whole is not read again, in any range.
    seen = {p for p in read if p in texts and _one_read(texts[p])}
    choices: list[dict[str, Any]] = []
    for schema in schemas:
        function = schema.get("function", {})
        name = str(function.get("name", ""))
        params = dict(function.get("parameters") or {"type": "object", "properties": {}})
        frozen = unchangeable if name in _CHANGING_TOOLS else set()
        for args in _arguments(name, params, listed, texts, queries, frozen=frozen):
            path = (args.get("properties") or {}).get("path") or {}
            if name == "read_file" and isinstance(path, Mapping) and path.get("const") in seen:
                continue
            kept = _drop_done(name, args, done)
            if kept is not None:
                choices.append(_call(name, _bounded(kept, answer_chars)))
    if answer or not choices:
        choices.append(_answer(answer_chars))
    return {"anyOf": choices}


def _bounded(args: dict[str, Any], answer_chars: int | None) -> dict[str, Any]:
    """An edit of one line (``old_text`` an enum of lines) with its ``new_text`` at most half
    of ``answer_chars``: the call's other half (its old text, path and JSON) must also close
    within the reply cap, or the reply is cut there and the turn is lost (a small model ran a
    new text of counting numbers to the cap)."""
    props = args.get("properties") or {}
    old, new = props.get("old_text"), props.get("new_text")
    if answer_chars is None or not isinstance(old, Mapping) or "enum" not in old or new is None:
        return args
    return _with(args, new_text={**new, "maxLength": max(1, answer_chars // 2)})


def answer_limit(reply_tokens: int, reply_chars: int) -> int:
    """The most characters of a guided answer under a reply cap of ``reply_tokens`` tokens
    (``RoleBudget.reserve_tokens``) and ``reply_chars`` characters: a character of plain text
    is at most one token, and ``ANSWER_OVERHEAD`` tokens are left for the object around it;
    at most ``MAX_ANSWER_CHARS`` (each allowed character is a rule of the server's grammar)."""
    return max(1, min(MAX_ANSWER_CHARS, reply_tokens - ANSWER_OVERHEAD, reply_chars))


def _answer(chars: int | None = None) -> dict[str, Any]:
    text: dict[str, Any] = {"type": "string"}
    if chars is not None:
        text["maxLength"] = chars
    return _object({"answer": text})


def _one_read(text: str) -> bool:
    """Whether a read without a range shows all of ``text`` (``tools/_read.read_window``)."""
    lines = text.splitlines()
    return (
        len(lines) <= READ_MAX_LINES
        and len(text) <= READ_MAX_CHARS
        and all(len(line) <= READ_LINE_CAP for line in lines)
    )


def _read_whole(done: Sequence[ToolCall]) -> set[str]:
    """The paths ``done`` read without a range."""
    return {
        str(c.arguments.get("path"))
        for c in done
        if c.name == "read_file"
        and isinstance(c.arguments, Mapping)
        and not ({"start_line", "end_line"} & set(c.arguments))
    }


def new_path(files: Sequence[str]) -> str:
    """The pattern of a new file's path in a workspace holding ``files``: ``NEW_PATH``
    ending in one of the files' extensions (letters and digits only), so a new file is of a
    kind the project has (a small model wrote files named ``write_file`` and ``read_file``);
    ``NEW_PATH`` itself when no file has such an extension."""
    names = [p.rsplit("/", 1)[-1].lstrip(".") for p in files]  # a dotfile has no extension
    found = sorted({n.rsplit(".", 1)[1] for n in names if "." in n})
    kinds = [e for e in found if e.isascii() and e.isalnum()][:MAX_NEW_KINDS]
    if not kinds:
        return NEW_PATH
    return NEW_PATH[:-1] + "[.](" + "|".join(kinds) + ")$"


def _queries(task: str, texts: Mapping[str, str]) -> list[str]:
    """The task's identifiers that occur in ``texts``, longest first, at most
    ``MAX_QUERIES``."""
    words = sorted(task_words(task), key=lambda w: (-len(w), w))
    found = [w for w in words if _grammar_safe(w) and any(w in t for t in texts.values())]
    return found[:MAX_QUERIES]


def _drop_done(name: str, args: dict[str, Any], done: Sequence[ToolCall]) -> dict[str, Any] | None:
    """``args`` without the calls of ``done`` (None: the choice allows nothing new)."""
    same = [c.arguments for c in done if c.name == name and isinstance(c.arguments, Mapping)]
    props = args.get("properties") or {}
    if not same:
        return args
    key = _ONE_ENUM.get(name)
    enum = props.get(key) if key is not None else None
    if key is not None and isinstance(enum, Mapping) and "enum" in enum:
        seen = {str(a.get(key) or "").strip("/") for a in same}
        left = [v for v in enum["enum"] if str(v).strip("/") not in seen]
        return _with(args, **{key: {**enum, "enum": left}}) if left else None
    path = props.get("path") or {}
    whole = {a.get("path") for a in same if not ({"start_line", "end_line"} & set(a))}
    if name == "read_file" and isinstance(path, Mapping) and path.get("const") in whole:
        required = sorted({*args.get("required", []), "start_line"})
        return {**args, "required": required}
    return args


def _call(name: str, params: dict[str, Any]) -> dict[str, Any]:
    return _object({"tool": {"type": "string", "const": name}, "arguments": params})


def _arguments(
    name: str,
    params: dict[str, Any],
    listed: list[str],
    texts: dict[str, str],
    queries: list[str],
    *,
    frozen: set[str],
) -> list[dict[str, Any]]:
    """The argument schemas of one tool's choices (several where bound to files' lines; none
    for a search with no query to offer, or an edit with no file it may change); ``frozen``:
    the listed files this tool may not name."""
    if name == "search_text" and listed:
        if not queries:
            return []
        return [_object({"query": {"type": "string", "enum": queries}})]
    if "path" not in (params.get("properties") or {}) or not listed:
        return [params]
    allowed = [p for p in listed if p not in frozen]
    if name == "write_file":
        new: dict[str, Any] = {"type": "string", "pattern": new_path(listed)}
        path = {"anyOf": [{"type": "string", "enum": allowed}, new]} if allowed else new
        return [_with(params, path=path, content={"type": "string", "minLength": 1})]
    if name == "list_files":
        folders = sorted({""} | {p.rsplit("/", 1)[0] for p in listed if "/" in p})
        return [_with(params, path={"type": "string", "enum": folders})]
    if name not in _EXISTING_FILE_TOOLS:
        return [params]
    found = {
        p: _per_file(name, params, p, t)
        for p, t in texts.items()
        if name in _LINE_TOOLS and p in allowed
    }
    out = [a for a in found.values() if a is not None]
    rest = [p for p in allowed if found.get(p) is None]
    if rest:
        out.append(_with(params, path={"type": "string", "enum": rest}))
    return out if out or frozen else [params]


def _per_file(name: str, params: dict[str, Any], path: str, text: str) -> dict[str, Any] | None:
    """``read_file``/``edit_file``'s arguments bound to one file's lines (None: no choice)."""
    lines = text.splitlines()
    fixed: dict[str, Any] = {"path": {"type": "string", "const": path}}
    props = params.get("properties") or {}
    if name == "read_file":
        numbers = {"type": "integer", "enum": list(range(1, max(1, len(lines)) + 1))}
        fixed.update({k: numbers for k in ("start_line", "end_line") if k in props})
        # A small file's lines fit a read whole: no column to start from (a free number).
        bound = _with(params, **fixed)
        bound["properties"].pop("start_col", None)
        return bound
    # A line without its indentation, so the edit keeps the file's indentation and the new
    # text need not repeat it; it must still occur once in the whole text (edit_ambiguous).
    once = [
        line
        for line in dict.fromkeys(raw.strip() for raw in lines)
        if len(line) >= MIN_OLD_CHARS and text.count(line) == 1 and _grammar_safe(line)
    ]
    if not once or "old_text" not in props:
        return None  # the file joins the shared choice, with any old text
    return _with(params, **fixed, old_text={"type": "string", "enum": once})


def _grammar_safe(value: str) -> bool:
    """Whether ``value`` can be an allowed value of the schema on every server: llama-cpp-python
    0.3.36's schema-to-grammar converter leaves the backslash JSON puts before ``"`` and ``\\``
    unescaped, so a value holding either makes a grammar that does not parse, and the server
    drops the request (measured on the demo's docstring lines)."""
    return '"' not in value and "\\" not in value


def _with(params: dict[str, Any], **properties: Any) -> dict[str, Any]:
    """``params`` with some properties' schemas replaced."""
    return {**params, "properties": {**(params.get("properties") or {}), **properties}}


def _file_texts(workspace: Workspace, files: list[str]) -> dict[str, str]:
    """The text of the small text files bound to their lines, in ``files``' order."""
    out: dict[str, str] = {}
    total = 0
    for path in files:
        if len(out) >= MAX_LINE_FILES:
            break
        try:
            if workspace.stat(path).size > MAX_LINE_FILE_BYTES:
                continue
            text = workspace.read_text(path)
        except (SafeIOError, ValueError):
            continue
        count = len(text.splitlines())
        if total + count <= MAX_GUIDED_LINES:
            out[path] = text
            total += count
    return out


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def unwrap(response: ChatResponse) -> ChatResponse:
    """A guided reply as a structured call or plain text; any other reply unchanged.

    A raw control character (a newline) inside a string is accepted: llama-cpp-python 0.3.36's
    grammar lets one through, and strict JSON would turn the constrained call into plain text
    (measured: a ``write_file`` whose content held a newline ended the coder as an answer).
    """
    if response.tool_calls:
        return response
    try:
        value = json.loads(response.content, strict=False)
    except (ValueError, RecursionError):
        return response
    if not isinstance(value, dict):
        return response
    if set(value) == {"answer"} and isinstance(value["answer"], str):
        return _replace(response, content=value["answer"], calls=())
    tool, args = value.get("tool"), value.get("arguments")
    if set(value) == {"tool", "arguments"} and isinstance(tool, str) and isinstance(args, dict):
        call = ToolCall(id="guided_" + uuid.uuid4().hex[:12], name=tool, arguments=args)
        return _replace(response, content="", calls=(call,))
    return response


def _replace(response: ChatResponse, *, content: str, calls: tuple[ToolCall, ...]) -> ChatResponse:
    return dataclasses.replace(response, content=content, tool_calls=calls)


def probe_format() -> dict[str, Any]:
    """The ``auto`` probe's schema: an object whose one key holds ``PROBE_VALUE``."""
    return _object({"probe": {"type": "string", "const": PROBE_VALUE}})


def probe_messages() -> list[ChatMessage]:
    """The ``auto`` probe's conversation (one short user message)."""
    return [ChatMessage(role="user", content="Reply with a JSON object.")]


def probe_passed(response: ChatResponse) -> bool:
    """Whether the probe's reply is exactly the object only a constrained server writes."""
    try:
        value = json.loads(response.content)
    except (ValueError, RecursionError):
        return False
    return bool(value == {"probe": PROBE_VALUE})
