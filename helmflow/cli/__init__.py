"""The ``helmflow`` command. ``--help``, ``list`` and ``show`` never import Prefect (it costs seconds).

Each command lives in its own module with ``add_parser(subparsers)`` that sets ``func`` and imports
nothing heavy at module level; the options several commands share are in :mod:`helmflow.cli.options`.

Exit codes: 0 done; 1 a run published a partial release (some pairs failed); 2 bad input, found
before any work (a :class:`~helmflow.errors.HelmflowError`, which carries its exit code).
"""

from __future__ import annotations

import argparse
import importlib
import sys

from helmflow.cli.options import Parser, forbid_repeats
from helmflow.errors import EXIT_USAGE, HelmflowError, OutsideRoot, format_validation_error

# The modules that register commands, with the commands each registers (a command line naming one imports
# that module alone). Add yours here.
COMMANDS: dict[str, tuple[str, ...]] = {
    "helmflow.cli.run": ("run",),
    "helmflow.cli.boards": ("list", "show", "prompts"),
    "helmflow.web.cli_serve": ("serve",),
    "helmflow.web.cli_report": ("report",),
    "helmflow.mirror": ("mirror",),
    "helmflow.cli.assets": ("fetch-assets",),
    "helmflow.cli.eval": ("eval",),
    "helmflow.devserver": ("dev-server",),
    "helmflow.check": ("check",),
    "helmflow.cli.operations": ("lineage", "retry", "compact"),
    "helmflow.cli.reproduce": ("reproduce",),
    "helmflow.cli.helm_models": ("import-helm-models",),
    "helmflow.cli.helm_io": ("import-helm", "import-inspect", "export", "import"),
    "helmflow.cli.track": ("track",),
    "helmflow.cli.publish": ("publish",),
    "helmflow.cli.compare": ("compare", "diff", "agreement"),
    "helmflow.cli.calibrate": ("calibrate-items",),
    "helmflow.cli.server": ("server",),
    "helmflow.cli.batches": ("batches",),
}
COMMAND_MODULES: list[str] = list(COMMANDS)

# --help lists commands in the order a user reaches for them; commands not named here follow, as registered
HELP_ORDER = ("run", "eval", "list", "show", "serve", "report", "compare", "diff", "agreement", "retry", "lineage",
              "check", "prompts", "mirror", "server", "dev-server", "compact", "reproduce", "import-helm-models",
              "import-helm", "export", "import")


def command_modules(argv: list[str] | None) -> list[str]:
    """The modules to build the parser from: the one registering the command ``argv`` names (its first
    word after the global options), else every one (``--help``, no command, an unknown one)."""
    words = iter(argv or [])
    for word in words:
        if word == "--plugin":
            next(words, None)
        elif not word.startswith("-"):
            return [m for m, names in COMMANDS.items() if word in names] or COMMAND_MODULES
    return COMMAND_MODULES


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or (``argv`` given) of the command it names: importing every command's
    module costs a command about 0.06 CPU-s."""
    p = Parser(
        prog="helmflow",
        description="Holistic, reproducible evaluation of language models as Prefect flows.",
    )
    p.add_argument("--plugin", action="append", default=[], metavar="MODULE_OR_FILE",
                   help="import a module or .py file that registers scenarios, metrics or clients (repeatable)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in command_modules(argv):
        importlib.import_module(module).add_parser(sub)
    rank = {name: i for i, name in enumerate(HELP_ORDER)}
    sub._choices_actions.sort(key=lambda a: rank.get(a.dest, len(rank)))  # stable: unnamed ones keep their order
    forbid_repeats(p)
    return p


def _fail(message: str) -> int:
    print(f"helmflow: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(argv).parse_args(argv)
    from helmflow.registry import add_plugins

    add_plugins(args.plugin)
    from pydantic import ValidationError

    try:
        return args.func(args)
    except HelmflowError as exc:  # bad input, found before any work; anything else is a bug and shows its traceback
        print(f"helmflow: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except ValidationError as exc:  # a record built from the user's values: name the fields, not pydantic's dump
        return _fail(f"{exc.title}: {format_validation_error(exc)}")
    except OutsideRoot as exc:  # a planted link in the store (a lease file, a record): refused, and said in one line
        print(f"helmflow: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("helmflow: interrupted; finished responses are in the journal and will be reused", file=sys.stderr)
        return 130


def entry() -> None:
    """The process's entry point (the ``helmflow`` script, ``python -m helmflow``): :func:`main`, then
    :func:`~helmflow.stopping.end_process`, which skips a native teardown that can abort a finished run.
    ``main`` stays a plain function for callers in-process."""
    try:
        code = main()
    except SystemExit as exc:  # argparse's usage errors and --help, with Python's meaning of its code
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    from helmflow.stopping import end_process

    end_process(code)

