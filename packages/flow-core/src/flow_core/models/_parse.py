"""Reading a model reply: tool calls recovered and every misbehaviour classified.

Small local models often break the tool-calling protocol (``docs/architecture.md``,
"Backends"). ``parse_reply`` turns one ``ChatResponse`` into a ``ParsedReply`` whose tool calls
are all known tools with JSON-object arguments, a list of ``ReplyIssue`` entries (one per
misbehaviour), and ``echo_calls``: every call of the reply under a unique id, safe to send back
in the next request, each answered exactly once by the runtime (a result or an error). The
runtime charges each issue to the budget and never counts a reply with an issue as a role's
successful end.

What is acted on (the rules that keep Flow from executing what the model did not commit to):

* a reply that ended on the length limit (``finish_reason`` ``"length"``) executes none of its
  calls, structured or written as text: each is answered with a ``call_cut_off`` error;
* text-form calls are read only from the model's committed answer: reasoning blocks
  (``<think>...</think>``, also unclosed) are not part of it;
* they are recovered only from an explicit wrapper (``<tool_call>...</tool_call>``,
  ``<function=NAME>...</function>``) outside Markdown code, or from a reply that is nothing
  but a call (a bare JSON call, or one fenced JSON block holding only a call); JSON quoted in
  prose, fenced or not, is prose; a call whose value holds the wrapper's own tags is taken
  whole or not run (``models/_textcalls.py``, ``ambiguous_call``);
* two calls with the same id get distinct ids (``ID~2``, ...), so each gets its own result;
* text that is not valid Unicode (a lone UTF-16 surrogate) is replaced by U+FFFD in the text
  (``invalid_unicode``) and makes a call's arguments invalid (``invalid_arguments``), as does
  a number JSON cannot carry (NaN, Infinity); nothing the model sends raises.

Issue codes: see ``REPLY_ISSUE_CODES``. Dropped calls keep their id in the issue and in
``echo_calls``, so the runtime answers them with the error.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from flow_core._catalogue import ErrorCode, codes_of
from flow_core._protocols import ChatResponse, ToolCall
from flow_core._unicode import first_surrogate, valid_text
from flow_core.models._textcalls import WRAPPER_OPEN, committed as _committed, mask_code, text_calls

__all__ = ["REPLY_ISSUE_CODES", "ParsedReply", "ReplyIssue", "parse_reply"]

REPLY_ISSUE_CODES: dict[str, str] = codes_of("reply")

#: ``finish_reason`` values that mean the reply was stopped by a length limit.
_CUT_OFF_REASONS = frozenset({"length", "max_tokens", "max_output_tokens", "model_length"})

_MAX_NAME_SHOWN = 60


@dataclass(frozen=True)
class ReplyIssue:
    """One misbehaviour found in a reply.

    Attributes:
        code: a key of ``REPLY_ISSUE_CODES``.
        message: a human sentence, also fit to show the model (never the whole reply).
        tool_call_id: the call concerned, when there is one.
    """

    code: ErrorCode
    message: str
    tool_call_id: str | None = None


@dataclass(frozen=True)
class ParsedReply:
    """A reply as the runtime uses it.

    Attributes:
        text: the committed answer (reasoning blocks and text-form calls removed), truncated
            to ``max_chars``, valid Unicode.
        tool_calls: calls to run: known tools, arguments always a JSON-encodable ``dict``.
        issues: every misbehaviour found, in the order found.
        echo_calls: every call of the reply (run or dropped) under its unique id, with valid
            Unicode and JSON-encodable arguments: what the assistant message carries in the
            next request. Each id is answered once (a result, or the issue's error).
    """

    text: str
    tool_calls: tuple[ToolCall, ...]
    issues: tuple[ReplyIssue, ...]
    echo_calls: tuple[ToolCall, ...] = ()

    @property
    def codes(self) -> tuple[str, ...]:
        """The issue codes, in order."""
        return tuple(i.code for i in self.issues)


def parse_reply(
    response: ChatResponse, tool_names: Collection[str], *, max_chars: int
) -> ParsedReply:
    """Classify one model reply and recover what can be recovered.

    Args:
        response: the backend's reply.
        tool_names: names of the tools offered in this request.
        max_chars: the most characters of content kept (> 0).

    Returns:
        The reply's text, its usable tool calls, its issues and the calls to echo.

    Raises:
        ValueError: if ``max_chars`` is not positive.
    """
    if max_chars <= 0:
        raise ValueError("max_chars must be positive")
    issues: list[ReplyIssue] = []
    content, bad = _bounded_content(response, max_chars, issues)
    cut_off = (response.finish_reason or "").lower() in _CUT_OFF_REASONS
    if cut_off:
        issues.append(
            ReplyIssue(
                "context_overflow",
                "the reply was cut short by the context window or token limit; "
                "answer more briefly or in smaller steps",
            )
        )
    committed = _committed(content)
    raw_calls = _unique_ids(list(response.tool_calls))
    text = committed
    if not raw_calls:
        raw_calls, text = _recovered_calls(committed, cut_off, issues)
    if not text.strip() and not raw_calls:
        issues.append(_no_answer(response, content, committed))
        return ParsedReply(text="", tool_calls=(), issues=tuple(issues))

    # Text-form calls from text that held lone surrogates carry U+FFFD where the model wrote
    # something else: their arguments are not what the model meant, so they are not run.
    tainted = {c.id for c in raw_calls if bad is not None and not response.tool_calls}
    calls = [
        c
        for c in (_usable_call(c, tool_names, cut_off, issues, c.id in tainted) for c in raw_calls)
        if c
    ]
    return ParsedReply(
        text=text,
        tool_calls=tuple(calls),
        issues=tuple(issues),
        echo_calls=tuple(_echo(c) for c in raw_calls),
    )


def _bounded_content(
    response: ChatResponse, max_chars: int, issues: list[ReplyIssue]
) -> tuple[str, int | None]:
    """The reply's content cut to ``max_chars`` and made valid Unicode.

    Returns:
        The content, and the index of its first lone surrogate (``None`` when there was none).
        Each change made is appended to ``issues``.
    """
    content = response.content if isinstance(response.content, str) else ""
    if len(content) > max_chars:
        issues.append(
            ReplyIssue(
                "reply_too_large",
                f"the reply had {len(content)} characters; only the first {max_chars} were kept",
            )
        )
        content = content[:max_chars]
    bad = first_surrogate(content)
    if bad is not None:
        issues.append(
            ReplyIssue(
                "invalid_unicode",
                f"the reply text held invalid Unicode (a lone surrogate at character {bad}); "
                "send valid UTF-8 text",
            )
        )
        content = valid_text(content)
    return content, bad


def _recovered_calls(
    committed: str, cut_off: bool, issues: list[ReplyIssue]
) -> tuple[list[ToolCall], str]:
    """The calls written as text in a reply that had no structured calls.

    Returns:
        The recovered calls and the text left once they are taken out. Each call recovered,
        an ambiguous wrapper and a call cut off by the length limit add an issue.
    """
    recovered, text, ambiguous = text_calls(committed)
    if ambiguous:
        issues.append(
            ReplyIssue(
                "ambiguous_call",
                "a tool call written as text had the wrapper's own tags inside a value, "
                "so where it ends is unclear; none of the reply's text calls was run; "
                "use the structured tool-calling interface, or JSON arguments",
            )
        )
    for call in recovered:
        issues.append(
            ReplyIssue(
                "text_tool_call",
                f"the call to {_show(call.name)} was written as text; "
                "use the structured tool-calling interface",
                call.id,
            )
        )
    if cut_off and not recovered and WRAPPER_OPEN.search(mask_code(committed)):
        issues.append(
            ReplyIssue(
                "call_cut_off",
                "a tool call written in the reply was cut off by the length limit and was "
                "not run; send it again, complete (write large files in smaller edits)",
            )
        )
    return list(recovered), text


def _no_answer(response: ChatResponse, content: str, committed: str) -> ReplyIssue:
    """The issue of a reply with neither answer text nor calls: reasoning only, or empty."""
    thought = len(response.reasoning.strip()) + (len(content.strip()) - len(committed))
    if thought > 0:
        return ReplyIssue(
            "reasoning_only",
            f"the reply held only reasoning ({thought} characters) and no answer; "
            "now give the answer, or one tool call",
        )
    return ReplyIssue("empty_reply", "the reply had neither text nor tool calls")


def _usable_call(
    call: ToolCall,
    names: Collection[str],
    cut_off: bool,
    issues: list[ReplyIssue],
    tainted: bool = False,
) -> ToolCall | None:
    """``call`` with its arguments as a ``dict``, or None (its issue appended to ``issues``)."""
    if cut_off:
        issues.append(
            ReplyIssue(
                "call_cut_off",
                f"the call to {_show(call.name)} was not run: the reply was cut off by the "
                "length limit, so its arguments may be incomplete; send it again, shorter",
                call.id,
            )
        )
        return None
    if call.name not in names:
        offered = ", ".join(sorted(names)) or "none"
        issues.append(
            ReplyIssue(
                "unknown_tool",
                f"there is no tool named {_show(call.name)}; the tools offered are: {offered}",
                call.id,
            )
        )
        return None
    args, found = _arguments(call)
    issues.extend(found)
    if args is not None and tainted and "\ufffd" in json.dumps(args, ensure_ascii=False):
        issues.append(
            ReplyIssue(
                "invalid_arguments",
                f"the arguments of {_show(call.name)} held invalid Unicode (a lone surrogate); "
                "send valid UTF-8 text",
                call.id,
            )
        )
        return None
    return None if args is None else ToolCall(id=call.id, name=call.name, arguments=args)


# --------------------------------------------------------------------------------------------
# Arguments, ids and safe text


def _arguments(call: ToolCall) -> tuple[dict[str, Any] | None, list[ReplyIssue]]:
    """The call's arguments as a JSON-encodable dict, or None with the issue that drops it."""
    issues: list[ReplyIssue] = []
    args: Any = call.arguments
    name = _show(call.name)

    def invalid(why: str) -> tuple[None, list[ReplyIssue]]:
        issues.append(ReplyIssue("invalid_arguments", f"the arguments of {name} {why}", call.id))
        return None, issues

    if isinstance(args, str):
        if first_surrogate(args) is not None:
            return invalid("hold invalid Unicode (a lone surrogate); send valid UTF-8 text")
        try:
            decoded = json.loads(args) if args.strip() else {}
        except (ValueError, RecursionError) as err:
            why = (
                f"{err.msg} at character {err.pos}"
                if isinstance(err, json.JSONDecodeError)
                else "nested too deeply"
            )
            return invalid(f"are not valid JSON ({why}); send a JSON object")
        if isinstance(decoded, dict):
            issues.append(
                ReplyIssue(
                    "arguments_as_string",
                    f"the arguments of {name} were a JSON string; send a JSON object",
                    call.id,
                )
            )
        args = decoded
    if not isinstance(args, dict) or not all(isinstance(k, str) for k in args):
        return invalid(f"must be a JSON object, not {_json_type(args)}")
    problem = _encoding_problem(args)
    if problem is not None:
        return invalid(problem)
    return args, issues


def _encoding_problem(value: Any) -> str | None:
    """Why ``value`` cannot be sent as strict UTF-8 JSON, else None."""
    try:
        json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except UnicodeEncodeError:
        return "hold invalid Unicode (a lone surrogate); send valid UTF-8 text"
    except RecursionError:
        return "are nested too deeply"
    except (ValueError, TypeError):
        return "hold a number JSON cannot carry (NaN or Infinity)"
    return None


def _clean_value(value: Any, depth: int = 0) -> Any:
    if isinstance(value, str):
        return valid_text(value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if depth > 64:
        return None
    if isinstance(value, dict):
        return {valid_text(str(k)): _clean_value(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean_value(v, depth + 1) for v in value]
    return value


def _echo(call: ToolCall) -> ToolCall:
    """The call as the next request may carry it: valid Unicode, encodable arguments."""
    args = call.arguments
    safe: dict[str, Any] | str
    if isinstance(args, str):
        safe = valid_text(args)
    elif _encoding_problem(args) is None:
        safe = args
    else:
        cleaned = _clean_value(args)
        safe = cleaned if _encoding_problem(cleaned) is None else {}
    return ToolCall(id=valid_text(call.id), name=valid_text(call.name), arguments=safe)


def _unique_ids(calls: list[ToolCall]) -> list[ToolCall]:
    """Distinct, valid-Unicode ids and names: a repeated (or empty) id becomes ``ID~2``, ..."""
    seen: set[str] = set()
    out: list[ToolCall] = []
    for call in calls:
        base = valid_text(call.id) if isinstance(call.id, str) and call.id else "call"
        name = valid_text(call.name) if isinstance(call.name, str) else str(call.name)
        ident, n = base, 1
        while ident in seen:
            n += 1
            ident = f"{base}~{n}"
        seen.add(ident)
        same = ident == call.id and name == call.name
        out.append(call if same else ToolCall(ident, name, call.arguments))
    return out


def _show(name: Any) -> str:
    text = name if isinstance(name, str) else str(name)
    short = text[:_MAX_NAME_SHOWN] + ("…" if len(text) > _MAX_NAME_SHOWN else "")
    return repr(short)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object with non-string keys" if isinstance(value, dict) else type(value).__name__
