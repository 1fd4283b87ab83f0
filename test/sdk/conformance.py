"""Drives the real ultralytics-platform SDK against a running appliance, one check per SDK operation.

Reads {"url", "key", "seeded": {...}} as JSON on standard input. Prints first {"operations": [...]}, every public
method of every resource of the client, then one JSON line per operation, {"operation", "ok", "error"}: ok when its
check ran and the answer fits the SDK's own response type. An operation without a check is reported with ok false
and error "no check".
"""

from __future__ import annotations

import importlib
import inspect
import json
import sys
import traceback
import typing
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from registry import CHECKS, Context  # noqa: E402
from ultralytics_platform import APIError, Platform  # noqa: E402
from validate import problems  # noqa: E402

# Check modules, in the order they run: later groups may delete what earlier ones read.
GROUPS = ["account", "billing", "explore", "projects", "datasets", "images", "versions", "upload", "models", "training", "exports", "deployments", "agents", "annotate", "embeddings", "integrations", "unbuilt", "lifecycle"]


def operations(client: Platform) -> dict[str, typing.Callable]:
    """Every public method of every resource the client has, by "resource.method"."""
    found = {}
    for resource_name, resource in vars(client).items():
        if resource_name.startswith("_"):
            continue
        for method_name, method in inspect.getmembers(resource, inspect.ismethod):
            if not method_name.startswith("_"):
                found[f"{resource_name}.{method_name}"] = method
    return found


def run(operation: str, method: typing.Callable, context: Context) -> str | None:
    """The check's failure, or None when it passed."""
    try:
        answer = CHECKS[operation](context)
    except APIError as error:
        return f"HTTP {error.status_code}: {str(error)[:300]}"
    except AssertionError as error:
        return f"behaviour: {error}"
    except Exception:  # a check that crashes is a failure of its operation, not of the run
        return traceback.format_exc(limit=3)[-600:]
    wrong = problems(answer, typing.get_type_hints(method)["return"])
    return "; ".join(wrong[:8]) + (f" (+{len(wrong) - 8} more)" if len(wrong) > 8 else "") if wrong else None


def main() -> None:
    given = json.load(sys.stdin)
    for group in GROUPS:
        importlib.import_module(f"checks.{group}")
    with Platform(api_key=given["key"], base_url=given["url"], max_retries=0) as client:
        every = operations(client)
        print(json.dumps({"operations": sorted(every)}), flush=True)
        context = Context(client=client, seeded=given["seeded"])
        for operation in CHECKS:
            if operation not in every:
                print(json.dumps({"operation": operation, "ok": False, "error": "a check for an operation the SDK does not have"}), flush=True)
                continue
            error = run(operation, every[operation], context)
            print(json.dumps({"operation": operation, "ok": error is None, "error": error}), flush=True)
        for operation in sorted(set(every) - set(CHECKS)):
            print(json.dumps({"operation": operation, "ok": False, "error": "no check"}), flush=True)


if __name__ == "__main__":
    main()
