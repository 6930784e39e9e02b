"""One error base for bad input, and one way to say what a pydantic model refused.

``helmflow`` maps :class:`HelmflowError` to its ``exit_code`` (2: bad input, found before any
work), so a bug (a plain ``ValueError`` deep in a library) is never reported as the user's mistake.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pydantic is not imported for `helmflow --help`
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
        msg = "unknown field" if e["type"] == "extra_forbidden" else e["msg"]
        problems.append(f"{names.get(loc, loc) or 'value'}: {msg}")
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
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise error(f"{what} {path} is not valid YAML: {' '.join(str(exc).split())}") from None
