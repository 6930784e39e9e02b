"""One error base for bad input, and one way to say what a pydantic model refused.

``helmflow`` maps :class:`HelmflowError` to its ``exit_code`` (2: bad input, found before any
work), so a bug (a plain ``ValueError`` deep in a library) is never reported as the user's mistake.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pydantic is not imported for `helmflow --help`
    from collections.abc import Iterable

    from pydantic import ValidationError

EXIT_USAGE = 2


class HelmflowError(Exception):
    """Bad input the user can fix; the message is one line naming what and where."""

    exit_code: int = EXIT_USAGE


class MetricError(HelmflowError, ValueError):
    """An instance a metric, or the judge template it reads, cannot score: the board pairs the metric
    with a scenario whose instances lack what it reads. Checked when the scenario is loaded
    (:func:`helmflow.metrics.check_scorable`), so it stops a run before any model is queried."""


def format_validation_error(exc: ValidationError, names: dict[str, str] | None = None) -> str:
    """``loc: message; loc: message``, without pydantic's banner, input dump and URL.

    ``names`` maps a location (``"sample.max_eval_instances"``) to what the user typed
    (``"--max-instances"``), so the message names the flag or field they know.
    """
    names = names or {}
    problems = []
    for e in exc.errors():
        loc = ".".join(map(str, e["loc"]))
        msg = "unknown field" if e["type"] == "extra_forbidden" else e["msg"].removeprefix("Value error, ")
        where = names.get(loc, loc)
        # a check of the whole record names its field(s) itself
        problems.append(f"{where}: {msg}" if where or e["type"] != "value_error" else msg)
    return "; ".join(problems)


def read_yaml_file(path: str | Path, what: str, error: type[Exception] = HelmflowError) -> Any:
    """A YAML file's data; a missing, non-UTF-8 or malformed file is one ``error`` naming it."""
    import yaml

    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except FileNotFoundError:
        raise error(f"{what} {path} does not exist") from None
    except IsADirectoryError:
        raise error(f"{what} {path} is a directory, not a file") from None
    except UnicodeDecodeError as exc:
        raise error(f"{what} {path} is not UTF-8 text (byte {exc.start}: {exc.reason})") from None
    try:
        return load_yaml(text)
    except yaml.YAMLError as exc:
        raise error(f"{what} {path} is not valid YAML: {' '.join(str(exc).split())}") from None


def load_yaml(text: str) -> Any:
    """``yaml.safe_load(text)``, parsed by libyaml when PyYAML has it (about 7× less CPU: the 20 board
    files cost 0.35 s in PyYAML's pure-Python parser, 0.05 s in libyaml's). Same constructor and resolver,
    so the same data; a document libyaml refuses is parsed again by the pure-Python parser, so its
    error is the one PyYAML has always given (with the line it points at)."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", None)
    if loader is None:
        return yaml.safe_load(text)
    try:
        return yaml.load(text, Loader=loader)  # noqa: S506 - CSafeLoader is the safe loader, in C
    except yaml.YAMLError:
        return yaml.safe_load(text)


# --------------------------------------------------------------------------- an unreachable host
# Exceptions (by class name, so no network library is imported to ask) that mean the request never
# got an answer: the host's name did not resolve, the connection was refused, reset or timed out.
_UNREACHABLE_NAMES = frozenset({
    "ConnectError", "ConnectTimeout", "ClientConnectorError", "ClientConnectorDNSError", "ServerTimeoutError",
    "EndpointConnectionError", "ConnectTimeoutError", "NewConnectionError", "NameResolutionError",
    "OfflineModeIsEnabled",
})


def host_of(url: str) -> str:
    """The host a URL is read from: the remote end of an fsspec chain (``zip://m::simplecache::https://h/x``),
    ``huggingface.co`` (or ``$HF_ENDPOINT``'s host) for ``hf://``, else the URL's own host."""
    import os
    from urllib.parse import urlsplit

    last = url.rpartition("::")[2]
    if last.startswith("hf://"):
        last = os.environ.get("HF_ENDPOINT") or "https://huggingface.co"
    return urlsplit(last).netloc or last


def unreachable(exc: BaseException) -> str | None:
    """Why no answer came back, when ``exc`` (or anything in its chain) says the host was not reached
    (a name that does not resolve, a refused, reset or timed-out connection, the Hub's offline mode);
    None when the host answered, e.g. with 404: only then may a file be said not to exist."""
    import socket

    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not c for c in chain):
        chain.append(current)
        current = current.__cause__ or current.__context__
    if any(getattr(getattr(c, "response", None), "status_code", None) or isinstance(getattr(c, "status", None), int)
           for c in chain):
        return None  # an HTTP answer (404, 403, ...) somewhere in the chain: the host was reached
    if any(type(c).__name__ == "OfflineModeIsEnabled" for c in chain):
        return "HF_HUB_OFFLINE is set"
    if not any(isinstance(c, (ConnectionError, TimeoutError, socket.gaierror, socket.herror))
               or type(c).__name__ in _UNREACHABLE_NAMES for c in chain):
        return None
    reasons = [c.strerror for c in chain if isinstance(c, OSError) and c.strerror]
    reason = reasons[-1] if reasons else next((str(c) for c in chain if str(c)), type(exc).__name__)
    return " ".join(reason.split())


def probe(url: str, timeout: float = 3.0) -> str | None:
    """Why the host of ``url`` cannot be reached (its name does not resolve, nothing accepts a
    connection), None when it accepts one. For errors that lost their cause (fsspec's simplecache
    says "not found" for an archive host it never reached); opens one TCP connection, sends nothing."""
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(url.rpartition("::")[2])
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None
    try:
        socket.create_connection((parts.hostname, port), timeout=timeout).close()
    except OSError as exc:
        return " ".join(str(exc.strerror or exc or type(exc).__name__).split())
    return None


def unknown_models(unknown: list[str], known: Iterable[str]) -> str:
    """The line for model names no models file declares: the names, the known ones, and where one's own
    deployments go (the first mistake of anyone who brings their own server)."""
    return (f"unknown model(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}. Your own deployments go in "
            f"a models file: --models-file FILE or $HELMFLOW_MODELS (see docs/models.md)")


def install_command(extra: str) -> str:
    """The pip command that adds ``extra`` to this install: ``pip install 'helmflow[extra]'`` from an index,
    ``pip install -e '.[extra]'`` (or the checkout's path) when helmflow runs from a source checkout."""
    checkout = Path(__file__).resolve().parents[1]
    if (checkout / "pyproject.toml").is_file() and (checkout / "helmflow" / "__init__.py").is_file():
        where = "." if checkout == Path.cwd().resolve() else str(checkout)
        return f"pip install -e '{where}[{extra}]'"
    return f"pip install 'helmflow[{extra}]'"


class OutsideRoot(PermissionError):
    """A key that resolves (through a symlink or ``..``) to a place outside the storage root
    (:meth:`helmflow.storage.Store.inside`); the CLI says so in one line, exit 1."""
