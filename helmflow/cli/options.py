"""The options the commands share, defined once: value types (comma lists, counts, amounts), a parser
whose usage errors are one line and exit 2, and the argument groups several commands take
(``--storage``, ``--models-file``, the selection of a board, the jury)."""

from __future__ import annotations

import argparse
import math

from helmflow.errors import EXIT_USAGE, HelmflowError, format_validation_error


class UsageError(HelmflowError):
    """Options that cannot go together or name nothing."""


def csv_list(value: str) -> list[str]:
    """``a,b,c``; a name given twice is a mistake (it would run or judge the same thing twice)."""
    items = [v.strip() for v in value.split(",") if v.strip()]
    if not items:  # `--models ,` names nothing: never read as "the default"
        raise argparse.ArgumentTypeError(f"{value!r} names nothing")
    twice = sorted({v for v in items if items.count(v) > 1})
    if twice:
        raise argparse.ArgumentTypeError(f"{', '.join(twice)} given twice in {value!r}")
    return items


def assignments(value: str) -> dict[str, str]:
    """``a=x,b=y``: each name once, each with a value."""
    out: dict[str, str] = {}
    for item in csv_list(value):
        name, sep, given = (part.strip() for part in item.partition("="))
        if not sep or not name or not given:
            raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {item!r}")
        if name in out:
            raise argparse.ArgumentTypeError(f"{name} given twice in {value!r}")
        out[name] = given
    return out


def positive_int(value: str) -> int:
    """A count the user gives (``--max-instances``): 1 or more, said about the flag, not a model."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {number}")
    return number


_ONCE: dict[type[argparse.Action], type[argparse.Action]] = {}


def _once(action_class: type[argparse.Action]) -> type[argparse.Action]:
    """``action_class`` that refuses a second occurrence (argparse keeps the last one silently);
    one class per action class."""
    if action_class in _ONCE:
        return _ONCE[action_class]

    class Once(action_class):  # type: ignore[misc, valid-type]
        def __call__(self, parser, namespace, values, option_string=None):
            seen = namespace.__dict__.setdefault("_given", set())
            if self.dest in seen:
                parser.error(f"{'/'.join(self.option_strings)} given twice")
            seen.add(self.dest)
            super().__call__(parser, namespace, values, option_string)

    _ONCE[action_class] = Once
    return Once


def forbid_repeats(parser: argparse.ArgumentParser) -> None:
    """Every single-valued option of ``parser`` and its subcommands may be given once
    (``append`` options such as ``--plugin`` stay repeatable)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in set(action.choices.values()):
                forbid_repeats(sub)
        elif action.option_strings and not isinstance(
            action, (argparse._AppendAction, argparse._CountAction, argparse._HelpAction, argparse._VersionAction)
        ):
            action.__class__ = _once(type(action))


class Parser(argparse.ArgumentParser):
    """Usage errors are one line (the flag and what is wrong) and exit 2, like every bad input."""

    def error(self, message: str):
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def budget_usd(value: str) -> float:
    """A spending cap: a finite amount, zero or more (``nan`` would compare false and never stop)."""
    try:
        usd = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an amount in USD, got {value!r}") from None
    if not math.isfinite(usd) or usd < 0:
        raise argparse.ArgumentTypeError(f"must be a finite amount of zero or more, got {value!r} "
                                         "(leave the option out for no cap)")
    return usd


# --------------------------------------------------------------------------- shared arguments
def storage_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--storage", help="storage root URL (default $HELMFLOW_STORAGE or ./helmflow-store)")


def models_file_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--models-file", help="extra deployments YAML (also $HELMFLOW_MODELS)")


def models_arg(p: argparse.ArgumentParser, default: str = "the board's") -> None:
    p.add_argument("--models", type=csv_list, help=f"comma-separated deployments (default: {default})")


def max_instances_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--max-instances", type=positive_int, metavar="N", help="evaluate at most N instances per scenario")


def verbose_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("-v", "--verbose", action="store_true", help="show Prefect's own log lines")


def ephemeral_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--ephemeral", action="store_true",
                   help="use a temporary Prefect server that stops with the command, instead of helmflow's managed "
                        "one (`helmflow server`; $PREFECT_API_URL, when set, wins over both)")


def budget_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--budget-usd", type=budget_usd, metavar="USD",
                   help="stop sending new priced requests (model and judge) before the projected spend passes USD")


def batch_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--batch", action="store_true",
                   help="send the requests of every openai and anthropic deployment (judges too) through the "
                        "provider's batch API, at its batch price (docs/batch.md); a rerun collects batches a "
                        "stopped run left running")
    p.add_argument("--cancel-batches", action="store_true",
                   help="on Ctrl-C, cancel the provider batches the run is waiting on (default: leave them running "
                        "for the next run to collect); the next run keeps the lines they finished and sends the rest")


def force_flow_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--force-flow", action="store_true",
                   help="run the Prefect flow even when the board's exact release is already published "
                        "(by default the CLI then prints it and starts no flow run)")


def dry_run_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dry-run", action="store_true",
                   help="print requests, prompt tokens and worst-case cost per run; call no model, write nothing")


def task_runner_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--task-runner", choices=["thread", "dask"], help="thread pool (default) or a local Dask cluster "
                   "(extra helmflow[dask]; also $HELMFLOW_TASK_RUNNER, which accepts dask:<scheduler address>)")


def judge_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--judge", dest="judges", type=csv_list, metavar="A[,B,C]",
                   help="judge deployment(s) for LLM-judged scenarios, a jury averaged over the judges that parse "
                        "(default: the board's `judges:`)")
    p.add_argument("--no-judge", action="store_true",
                   help="no judges: judge-only metrics stay missing, rule-based ones are still computed")
    p.add_argument("--board-wide", type=assignments, metavar="METRIC=VALUE[,...]",
                   help="board-wide metrics on every scenario they fit, by metric name: the scorer deployment of a "
                        "metric that reads one (local/profanity-check, google/perspective, or an LLM judge), `on` for "
                        "one that does not, `none` to drop one (default: the board's own)")


def prompts_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--prompts", metavar="FILE",
                   help="a prompts file (YAML `prompts: {<scenario>.<text>: ...}`) replacing prompt or judge wording; "
                        "`helmflow prompts <board>` writes a template. The board publishes as <board>-<file stem>")


def selection_from(args: argparse.Namespace, **given):
    """The :class:`~helmflow.plan.selection.Selection` of a command's parsed options (the ones it has),
    ``given`` taking precedence; one that cannot be (``--judge`` with ``--no-judge``) is a usage error."""
    from pydantic import ValidationError

    from helmflow.plan.selection import Selection

    values = {k: v for k, v in vars(args).items() if k in Selection.model_fields and v is not None}
    values = {k: v for k, v in {**values, **given}.items() if v is not None}
    try:
        return Selection.of(**values)
    except ValidationError as exc:
        raise UsageError(format_validation_error(exc)) from None


def selection_args(p: argparse.ArgumentParser) -> None:
    """What to take from a board: models, scenarios, sample size, storage, deployments, jury."""
    models_arg(p)
    p.add_argument("--scenarios", type=csv_list, help="comma-separated scenario labels or names (default: all)")
    max_instances_arg(p)
    storage_arg(p)
    models_file_arg(p)
    judge_args(p)


def _data_path(value: str) -> tuple[str, str]:
    name, sep, folder = value.partition("=")
    if not sep or not name.strip() or not folder.strip():
        raise argparse.ArgumentTypeError(f"expected SCENARIO=DIR, got {value!r}")
    return name.strip(), folder.strip()


def data_path_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data-path", type=_data_path, action="append", default=[], metavar="SCENARIO=DIR",
                   help="read SCENARIO's files from DIR (a local folder or fsspec URL holding them as the scenario "
                        "names them), e.g. a credential-gated dataset: mimiciv_billing_code=/secure/mimic "
                        "(repeatable; for this command, as $HELMFLOW_MIRROR_<SCENARIO> is for every command)")


def apply_data_paths(args: argparse.Namespace) -> None:
    """``--data-path NAME=DIR``: NAME's mirror folder for this process (the flow it runs reads the same), checked
    first: an unknown scenario or a local folder that does not exist is bad input."""
    import os

    from helmflow.scenarios import SCENARIOS
    from helmflow.settings import scenario_mirror_var

    for name, folder in getattr(args, "data_path", None) or []:
        if name not in SCENARIOS:
            raise UsageError(f"--data-path {name}={folder}: unknown scenario {name!r}; known: "
                             f"{', '.join(SCENARIOS.names())}")
        if "://" not in folder and not os.path.isdir(folder):
            raise UsageError(f"--data-path {name}={folder}: {folder} is not a folder")
        os.environ[scenario_mirror_var(name)] = folder if "://" in folder else os.path.abspath(folder)
