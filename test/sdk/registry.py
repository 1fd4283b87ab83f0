"""The checks, one per SDK operation ("resource.method"), in the order they run."""

from __future__ import annotations

import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ultralytics_platform import Platform
from validate import problems


@dataclass
class Context:
    """What every check gets: the client, what the test seeded (see test/sdk-conformance.test.ts) and what earlier checks made."""

    client: Platform
    seeded: dict[str, Any]
    made: dict[str, Any] = field(default_factory=dict)

    @property
    def owner(self) -> str:
        return self.seeded["owner"]


Check = Callable[[Context], Any]
CHECKS: dict[str, Check] = {}


def check(operation: str) -> Callable[[Check], Check]:
    """Registers the decorated function as the check of `operation`; it returns the SDK method's answer."""

    def register(function: Check) -> Check:
        if operation in CHECKS:
            raise ValueError(f"two checks for {operation}")
        CHECKS[operation] = function
        return function

    return register


def expect(condition: bool, message: str) -> None:
    """A behaviour the spec promises, beyond the answer's type."""
    if not condition:
        raise AssertionError(message)


def expect_fits(answer: Any, method: Callable, what: str) -> None:
    """A second answer of the operation (the one a check returns is validated by the driver) fits its SDK type too."""
    wrong = problems(answer, typing.get_type_hints(method)["return"])
    expect(not wrong, f"{what} fits the type: {wrong[:3]}")
