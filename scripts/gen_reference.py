"""The documentation's two generated pages, written at build time by the mkdocs-gen-files plugin
(``mkdocs.yml``): ``reference/cli.md`` from the argparse parsers (:func:`helmflow.cli.build_parser`)
and ``reference/configuration.md`` from the pydantic models behind the models file, the board YAML
and the ``HELMFLOW_*`` environment variables. Nothing here is committed as Markdown, so neither page
can drift from the code. A field without a description is a warning, which ``mkdocs build --strict``
turns into a failed build.

``python scripts/gen_reference.py OUT_DIR`` writes the two pages without MkDocs (to read them raw).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import types
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

log = logging.getLogger("mkdocs.plugins.helmflow_reference")
WIDTH = 100  # argparse wraps usage lines to the terminal: fixed here, so the page is the same everywhere


# --------------------------------------------------------------------------- helpers
def cell(text: object) -> str:
    """Text for one Markdown table cell: pipes escaped, newlines folded."""
    return " ".join(str(text).split()).replace("|", "\\|")


def code(text: object) -> str:
    value = str(text).replace("|", "\\|")
    return f"`` {value} ``" if "`" in value else f"`{value}`"


# --------------------------------------------------------------------------- the CLI
def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction | None:
    return next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)


def _flag_cell(action: argparse.Action) -> str:
    if not action.option_strings:
        name = action.metavar or action.dest
        return code(name if isinstance(name, str) else " ".join(name))
    names = ", ".join(code(o) for o in action.option_strings)
    if action.nargs == 0:
        return names
    metavar = action.metavar or (("{" + ",".join(map(str, action.choices)) + "}") if action.choices else
                                 action.dest.upper())
    return f"{names} {code(metavar if isinstance(metavar, str) else ' '.join(metavar))}"


def _default_cell(action: argparse.Action) -> str:
    default = action.default
    if action.nargs == 0 or default is None or default is argparse.SUPPRESS or default == [] or default == "":
        return ""
    return code(default)


def _command_section(parser: argparse.ArgumentParser, path: str, summary: str | None) -> list[str]:
    lines = [f"## `{path}`", ""]
    if summary:
        lines += [summary[0].upper() + summary[1:] + ("" if summary.endswith(".") else "."), ""]
    if parser.description and parser.description != summary:
        lines += [parser.description, ""]
    usage = parser.format_usage().removeprefix("usage: ").rstrip()
    lines += ["```text", usage, "```", ""]
    skip = (argparse._HelpAction, argparse._SubParsersAction)
    rows = [a for a in parser._actions if not isinstance(a, skip) and a.help is not argparse.SUPPRESS]
    if rows:
        lines += ["| argument | default | what it does |", "|---|---|---|"]
        for action in rows:
            lines.append(f"| {_flag_cell(action)} | {_default_cell(action)} | {cell(action.help or '')} |")
        lines.append("")
    if parser.epilog:
        lines += [parser.epilog, ""]
    sub = _subparsers(parser)
    if sub is not None:
        helps = {a.dest: a.help for a in sub._choices_actions}
        for name, child in sub.choices.items():
            if path == "helmflow" or child is not parser:
                lines += _command_section(child, f"{path} {name}", helps.get(name))
    return lines


@contextlib.contextmanager
def _usage_width():
    """argparse wraps usage to ``$COLUMNS``: fixed while the page is written, then put back (a test
    process that writes the page must not hand a narrow terminal to the commands it runs later)."""
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(WIDTH)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = before


def cli_markdown() -> str:
    with _usage_width():
        return _cli_markdown()


def _cli_markdown() -> str:
    from helmflow.cli import build_parser

    parser = build_parser()
    sub = _subparsers(parser)
    assert sub is not None
    helps = {a.dest: a.help for a in sub._choices_actions}
    lines = [
        "# CLI reference",
        "",
        "Generated when the site is built, from the same argparse parsers `helmflow --help` prints "
        "(`helmflow.cli.build_parser`), so it always matches the installed code. "
        "[Commands at a glance](../commands.md) says what each command is for, with its exit codes.",
        "",
        "| command | what it does |",
        "|---|---|",
    ]
    lines += [f"| [`helmflow {name}`](#helmflow-{name}) | {cell(helps.get(name) or '')} |" for name in sub.choices]
    lines.append("")
    lines += ["## `helmflow`", "", parser.description or "", "", "```text",
              parser.format_usage().removeprefix("usage: ").rstrip(), "```", "",
              "| argument | default | what it does |", "|---|---|---|"]
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        lines.append(f"| {_flag_cell(action)} | {_default_cell(action)} | {cell(action.help or '')} |")
    lines.append("")
    for name, child in sub.choices.items():
        lines += _command_section(child, f"helmflow {name}", helps.get(name))
    return "\n".join(lines)


# --------------------------------------------------------------------------- configuration
def type_name(annotation: Any) -> str:
    """A field's type as a reader writes it in YAML terms."""
    if annotation is type(None):
        return "null"
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return " \\| ".join(repr(a).replace("'", '"') for a in args)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(type_name(a) for a in args)
    if origin is list:
        return f"list of {type_name(args[0])}" if args else "list"
    if origin is dict:
        return f"mapping {type_name(args[0])} → {type_name(args[1])}" if args else "mapping"
    if origin is typing.Annotated:
        return type_name(args[0])
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return f"[{annotation.__name__}](#{annotation.__name__.lower()})"
    return {str: "string", int: "integer", float: "number", bool: "boolean", typing.Any: "any"}.get(
        annotation, getattr(annotation, "__name__", str(annotation)))


def _default(field: Any) -> str:
    if field.default_factory is not None:
        value = field.default_factory()
    elif field.default is PydanticUndefined:
        return "**required**"
    else:
        value = field.default
    if isinstance(value, BaseModel):
        return "(its defaults)"
    if value is None:
        return "null"
    if value in ("", [], {}):
        return code(repr(value).replace("'", '"'))
    return code(str(value).lower() if isinstance(value, bool) else value)


MISSING: list[str] = []


def model_table(model: type[BaseModel], title: str | None = None, prefix: str = "") -> list[str]:
    """A heading (its anchor is the model's name) and one row per field: name, type, default, description."""
    lines = [f"### {title or model.__name__} {{#{model.__name__.lower()}}}", ""]
    doc = (model.__doc__ or "").strip()
    if doc and not doc.startswith(("Usage docs", "A base class")):
        lines += [" ".join(doc.split("\n\n")[0].split()), ""]
    lines += ["| field | type | default | what it is |", "|---|---|---|---|"]
    for name, field in model.model_fields.items():
        if not field.description:
            MISSING.append(f"{model.__module__}.{model.__name__}.{name}")
        lines.append(f"| `{prefix}{name}` | {type_name(field.annotation)} | {_default(field)} | "
                     f"{cell(field.description or '')} |")
    return lines + [""]


def _client_options() -> list[tuple[str, type[BaseModel] | None]]:
    """Each registered client kind and the model its ``options:`` are checked against (None: takes none)."""
    from helmflow.clients import CLIENTS
    from helmflow.clients.anthropic import AnthropicOptions
    from helmflow.clients.diffusers_pipeline import DiffusersOptions
    from helmflow.clients.huggingface import HuggingFaceOptions
    from helmflow.clients.offline import OfflineOptions
    from helmflow.clients.openai import OpenAIOptions

    known: dict[str, type[BaseModel] | None] = {
        "offline": OfflineOptions, "openai": OpenAIOptions, "openai-compatible": OpenAIOptions,
        "anthropic": AnthropicOptions, "huggingface": HuggingFaceOptions, "diffusers": DiffusersOptions,
        "perspective": None, "profanity-check": None,
    }
    kinds = sorted(CLIENTS.names())
    for kind in kinds:
        if kind not in known:
            log.warning("client kind %r has no entry in scripts/gen_reference.py: say which options it takes", kind)
    return [(kind, known.get(kind)) for kind in kinds]


def _board_models() -> list[type[BaseModel]]:
    from helmflow.plan.spec import (
        AdaptiveSpec,
        BoardSpec,
        GroupColumn,
        MetricGroup,
        MlflowTracking,
        ScenarioEntry,
        TrackingSpec,
        WandbTracking,
    )

    return [BoardSpec, ScenarioEntry, MetricGroup, GroupColumn, AdaptiveSpec, TrackingSpec, MlflowTracking,
            WandbTracking]


def config_markdown() -> str:
    from helmflow.media import ImageOptions
    from helmflow.records import (
        AdapterSpec,
        Deployment,
        EvalSample,
        GenerationParams,
        ImageGenerationParams,
        ModelMetadata,
        ReasoningOptions,
        RetrySettings,
    )
    from helmflow.settings import Settings, scenario_mirror_var

    MISSING.clear()
    lines = [
        "# Configuration reference",
        "",
        "Generated when the site is built from the pydantic models that read these files, with their "
        "fields' own descriptions, so it always matches the installed code. Unknown fields are errors "
        "in every file below (one line naming the file and the field, exit 2, before any work).",
        "",
        "## The models file",
        "",
        "A YAML mapping with one key, `deployments:`, a list of deployments. `clients/deployments.yaml` "
        "ships with helmflow; yours is passed with `--models-file` or `$HELMFLOW_MODELS`. An entry with a "
        "shipped name replaces it (with one warning); a name given twice is an error. "
        "[Models and deployments](../models.md) has worked examples.",
        "",
    ]
    lines += model_table(Deployment, "Deployment (one entry of `deployments:`)")
    lines += model_table(RetrySettings, "RetrySettings (`retry:`)")
    lines += model_table(ModelMetadata, "ModelMetadata (`metadata:`)")
    lines += model_table(ReasoningOptions, "ReasoningOptions (`reasoning:`; see [Reasoning models](../reasoning.md))")
    lines += ["### `options:` per client kind", "",
              "`options:` is checked against the client kind's own model:", ""]
    options = _client_options()
    lines += ["| client kind | options |", "|---|---|"]
    for kind, model in options:
        lines.append(f"| `{kind}` | {type_name(model) if model else 'none: it reads no options'} |")
    lines.append("")
    seen: set[type[BaseModel]] = set()
    for _kind, model in options:
        if model is not None and model not in seen:
            seen.add(model)
            lines += model_table(model)
    lines += model_table(ImageOptions, "ImageOptions (`options: {images: …}`)")

    lines += [
        "## The board file",
        "",
        "A board is a YAML file: the shipped ones are `flows/<board>.yaml`, yours is run with "
        "`helmflow run --board-file FILE`. [Run what you want](../eval.md#board-files) shows a whole one.",
        "",
    ]
    spec, entry, group, column, adaptive, tracking, mlflow, wandb = _board_models()
    lines += model_table(spec, "BoardSpec (the file)")
    lines += model_table(entry, "ScenarioEntry (one item of `scenarios:`)")
    lines += model_table(group, "MetricGroup (one item of `metric_groups:`)")
    lines += model_table(column, "GroupColumn (one item of a group's `columns:`)")
    lines += model_table(adaptive, "AdaptiveSpec (`adaptive:` of the board or of an entry; see "
                                   "[REEval / adaptive testing](../adaptive.md))")
    lines += model_table(tracking, "TrackingSpec (`tracking:`; see [Publishing results](../publishing.md))")
    lines += model_table(mlflow, "MlflowTracking (`tracking: {mlflow: …}`)")
    lines += model_table(wandb, "WandbTracking (`tracking: {wandb: …}`; offline W&B runs)")
    lines += [
        "### Adapter fields (`adapter:`)", "",
        "A scenario entry's `adapter:` (and `helmflow eval --adapter k=v,…`) overrides fields of the "
        "scenario's default adapter spec. The fields of `generation` and `sample` may be given flat "
        "(`max_tokens: 5`) or dotted (`generation.max_tokens: 5`).", "",
    ]
    lines += model_table(AdapterSpec, "AdapterSpec")
    lines += model_table(GenerationParams, "GenerationParams (`generation:`)")
    lines += model_table(EvalSample, "EvalSample (`sample:`)")
    lines += model_table(ImageGenerationParams, "ImageGenerationParams (`image_generation:`; text-to-image boards)")

    from helmflow.plan.selection import Selection

    lines += [
        "## A run's selection",
        "",
        "What a run takes from its board: the `selection` parameter of every board's flow (Prefect's "
        "run form draws these fields; a deployment sets them under `parameters: {selection: …}`) and "
        "the options `--models`, `--scenarios`, `--max-instances`, `--judge`, `--no-judge` and "
        "`--board-wide` of `helmflow run` and `show`. A field left unset takes the board's own value; a "
        "run that narrows its board publishes a subset release.",
        "",
    ]
    lines += model_table(Selection, "Selection (the flow parameter `selection`)")

    lines += [
        "## Environment variables",
        "",
        "Every `HELMFLOW_*` variable is read in one place (`helmflow/settings.py`), when it is needed "
        "rather than when helmflow is imported.",
        "",
        "| variable | type | default | what it sets |",
        "|---|---|---|---|",
    ]
    for name, field in Settings.model_fields.items():
        if not field.description:
            MISSING.append(f"helmflow.settings.Settings.{name}")
        lines.append(f"| `HELMFLOW_{name.upper()}` | {type_name(field.annotation)} | {_default(field)} | "
                     f"{cell(field.description or '')} |")
    example = scenario_mirror_var("mmlu_pro")
    lines.append(f"| `HELMFLOW_MIRROR_<NAME>` | string | null | one scenario's files directly in a folder or "
                 f"prefix, the name upper-cased with other characters as `_` (e.g. `{example}`) |")
    lines.append("")
    for where in MISSING:
        log.warning("%s has no description: give the field Field(description=...)", where)
    return "\n".join(lines)


PAGES = {"reference/cli.md": cli_markdown, "reference/configuration.md": config_markdown}


def write_with_mkdocs() -> None:
    import mkdocs_gen_files

    for path, render in PAGES.items():
        with mkdocs_gen_files.open(path, "w") as f:
            f.write(render())
        mkdocs_gen_files.set_edit_path(path, "scripts/gen_reference.py")


if __name__ == "__main__" and len(sys.argv) > 1:
    out = Path(sys.argv[1])
    for path, render in PAGES.items():
        (out / path).parent.mkdir(parents=True, exist_ok=True)
        (out / path).write_text(render())
elif __name__ != "gen_reference":  # run by mkdocs-gen-files (runpy), not imported by a test
    write_with_mkdocs()
