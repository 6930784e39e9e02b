"""``helmflow check``: are the deployments usable, before a board spends time or money on them?

For each deployment: its credential is set (by name only; the value is never shown), and its
endpoint answers a 1-token request. Exit code: 0 all good, 3 a credential is missing, 4 an endpoint
failed, 5 both (2, as everywhere, is bad input such as an unknown model).
"""

from __future__ import annotations

import argparse
import asyncio
import time
from dataclasses import dataclass

from helmflow.cli.options import models_file_arg
from helmflow.errors import HelmflowError

EXIT_CREDENTIALS = 3
EXIT_ENDPOINTS = 4
EXIT_BOTH = 5

PROBE_PROMPT = "Reply with the single word OK."


@dataclass
class CheckResult:
    deployment: str
    credential: str  # "$VAR set", "$VAR missing", "none needed", ...
    credential_ok: bool
    endpoint: str  # "ok (123 ms)", the error, or "not tried"
    endpoint_ok: bool | None


#: the output budget of a reasoning deployment's probe: room to start thinking, little to pay
PROBE_REASONING_TOKENS = 16


def probe_reasoning(deployment) -> dict:
    """A reasoning deployment's probe carries its reasoning options (a reasoning model refuses a plain
    request's sampling parameters) but no thinking budget, which would make the probe pay for 1,024 tokens
    or more (Anthropic's least): the fields of :class:`RequestBody` to add, with a small ``max_tokens``."""
    from helmflow.records import ReasoningOptions

    if deployment.reasoning is None:
        return {}
    kept = deployment.reasoning.model_dump(exclude_none=True)
    kept.pop("budget_tokens", None)
    if kept.get("mode") == "enabled":
        kept.pop("mode")
    return {"reasoning": ReasoningOptions(**kept) if kept else None, "max_tokens": PROBE_REASONING_TOKENS}


async def _probe(deployment, timeout_s: float) -> CheckResult:
    from helmflow.clients import make_client
    from helmflow.clients.base import ClientError
    from helmflow.records import RequestBody

    try:
        client = make_client(deployment)
    except ClientError as exc:
        return CheckResult(deployment.name, "-", True, f"bad deployment: {exc}", False)
    name = client.credential_name()
    try:
        client.check_credentials()
    except ClientError:
        return CheckResult(deployment.name, f"{name} missing", False, "not tried", None)
    credential = f"{name} set" if name else "none needed"
    body = RequestBody(**{"model": deployment.model, "prompt": PROBE_PROMPT, "max_tokens": 1, "temperature": 0.0,
                          **probe_reasoning(deployment)})
    started = time.perf_counter()
    try:
        async with asyncio.timeout(timeout_s):
            await client.complete(body)
    except TimeoutError:
        return CheckResult(deployment.name, credential, True, f"no answer within {timeout_s:g} s", False)
    except ClientError as exc:
        return CheckResult(deployment.name, credential, True, str(exc), False)
    finally:
        await client.aclose()
    return CheckResult(deployment.name, credential, True, f"ok ({(time.perf_counter() - started) * 1000:.0f} ms)", True)


def check(deployments, timeout_s: float = 30.0) -> list[CheckResult]:
    from helmflow.aio import run_io

    async def all_probes() -> list[CheckResult]:
        return list(await asyncio.gather(*(_probe(d, timeout_s) for d in deployments)))

    return run_io(all_probes())


def exit_code(results: list[CheckResult]) -> int:
    creds = any(not r.credential_ok for r in results)
    endpoints = any(r.endpoint_ok is False for r in results)
    if creds and endpoints:
        return EXIT_BOTH
    return EXIT_CREDENTIALS if creds else EXIT_ENDPOINTS if endpoints else 0


def cmd_check(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from helmflow.clients import load_deployments
    from helmflow.terminal import print_table

    known = load_deployments(args.models_file)
    names = args.models or list(known)
    unknown = [n for n in names if n not in known]
    if unknown:
        from helmflow.errors import unknown_models

        raise HelmflowError(unknown_models(unknown, known))
    results = check([known[n] for n in names], args.timeout)
    table = Table("deployment", "credential", "endpoint (1-token request)")
    for r in results:
        cred = r.credential if r.credential_ok else f"[red]{escape(r.credential)}[/]"
        end = escape(r.endpoint) if r.endpoint_ok is not False else f"[red]{escape(r.endpoint)}[/]"
        table.add_row(escape(r.deployment), cred, end)
    print_table(Console(), table)
    return exit_code(results)


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "check", help="check each deployment's credential (by name) and endpoint (a 1-token request)",
        description=__doc__.split("\n\n")[1].replace("\n", " "),
    )
    p.add_argument("--models", type=lambda v: [x.strip() for x in v.split(",") if x.strip()],
                   help="comma-separated deployments (default: every known deployment)")
    models_file_arg(p)
    p.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for each endpoint (default 30)")
    p.set_defaults(func=cmd_check)
