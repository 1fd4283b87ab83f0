"""Checks a decoded JSON answer against an SDK response type (its TypedDicts, lists, literals and unions).

Strict where a client breaks: every required key present, `null` only where the type allows None, an optional
(NotRequired) key absent or of its type. Extra keys are allowed: the SDK ignores them and the spec adds some.
"""

from __future__ import annotations

import collections.abc
import types
import typing
from typing import Any


def problems(value: Any, expected: Any, path: str = "$") -> list[str]:
    """Every place where `value` does not fit `expected`, as "path: what is wrong"; empty when it fits."""
    if expected is Any or expected is object:
        return []
    if expected is None or expected is types.NoneType:
        return [] if value is None else [f"{path}: expected null, got {_kind(value)}"]
    if typing.is_typeddict(expected):
        return _typed_dict(value, expected, path)
    origin, args = typing.get_origin(expected), typing.get_args(expected)
    if origin is typing.Union or origin is types.UnionType:
        found = [problems(value, option, path) for option in args]
        return [] if any(not found_problems for found_problems in found) else min(found, key=len)
    if origin is typing.Literal:
        return [] if value in args and type(value) in {type(arg) for arg in args} else [f"{path}: expected one of {list(args)}, got {value!r}"]
    if origin in (list, collections.abc.Sequence):
        if not isinstance(value, list):
            return [f"{path}: expected a list, got {_kind(value)}"]
        return [problem for index, item in enumerate(value) for problem in problems(item, args[0] if args else Any, f"{path}[{index}]")]
    if origin is dict or expected is dict:
        if not isinstance(value, dict):
            return [f"{path}: expected an object, got {_kind(value)}"]
        item_type = args[1] if len(args) == 2 else Any
        return [problem for key, item in value.items() for problem in problems(item, item_type, f"{path}.{key}")]
    if expected is float:
        return [] if isinstance(value, (int, float)) and not isinstance(value, bool) else [f"{path}: expected a number, got {_kind(value)}"]
    if expected is int:
        return [] if isinstance(value, int) and not isinstance(value, bool) else [f"{path}: expected an integer, got {_kind(value)}"]
    if expected in (str, bool):
        return [] if isinstance(value, expected) else [f"{path}: expected {expected.__name__}, got {_kind(value)}"]
    if expected is list:
        return [] if isinstance(value, list) else [f"{path}: expected a list, got {_kind(value)}"]
    raise TypeError(f"{path}: no rule for the type {expected!r}")


def _typed_dict(value: Any, expected: Any, path: str) -> list[str]:
    if not isinstance(value, dict):
        return [f"{path}: expected an object ({expected.__name__}), got {_kind(value)}"]
    found: list[str] = []
    for key, field_type in typing.get_type_hints(expected).items():
        if key not in value:
            if key in expected.__required_keys__:
                found.append(f"{path}.{key}: missing")
            continue
        found.extend(problems(value[key], field_type, f"{path}.{key}"))
    return found


def _kind(value: Any) -> str:
    return "null" if value is None else f"{type(value).__name__} {value!r}"[:80]
