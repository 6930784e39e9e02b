"""The report's pages, rendered the same way for the live app and the static export.

Pages are Jinja templates with autoescaping; instance data goes out as ``.js`` files (a call such as
``helmflowChunk(k, [...])`` with JSON inside) that the page loads with ``<script>`` tags, which works
over HTTP and from ``file://`` alike (``fetch`` does not work from disk). The browser puts every piece
of model text into the page with ``textContent``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from jinja2 import Environment, PackageLoader, select_autoescape

from helmflow import layout
from helmflow.web.data import CHUNK_ROWS, CORRECT_AT, Release, Reports, Run
from helmflow.web.plots import Bar, Point, Step, ability_trajectory_svg, cost_vs_score_svg, scenario_bars_svg

STATIC_DIR = Path(__file__).with_name("static")
PAGE_SIZE = 20
Mode = Literal["serve", "static"]

_env = Environment(loader=PackageLoader("helmflow.web", "templates"), autoescape=select_autoescape(default=True))


def prefect_ui_url() -> str | None:
    """The Prefect UI behind this storage's flow runs: ``PREFECT_UI_URL``, else ``PREFECT_API_URL``
    without ``/api``; each from the environment first, then from the active Prefect profile (what
    ``prefect config set PREFECT_API_URL=…`` writes)."""
    settings = {**active_prefect_profile(), **{k: v for k, v in os.environ.items() if k.startswith("PREFECT_")}}
    ui = settings.get("PREFECT_UI_URL")
    if not ui and settings.get("PREFECT_API_URL"):
        ui = str(settings["PREFECT_API_URL"]).rstrip("/").removesuffix("/api")
    return str(ui).rstrip("/") if ui else None


def active_prefect_profile() -> dict[str, Any]:
    """The active profile's settings from Prefect's profiles file (``$PREFECT_PROFILES_PATH``, else
    ``$PREFECT_HOME/profiles.toml``, else ``~/.prefect/profiles.toml``; the profile named by
    ``$PREFECT_PROFILE``, else the file's ``active``). Read as TOML: importing Prefect costs seconds."""
    import tomllib

    home = Path(os.environ.get("PREFECT_HOME", "~/.prefect")).expanduser()
    path = Path(os.environ.get("PREFECT_PROFILES_PATH", home / "profiles.toml")).expanduser()
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError):
        return {}
    name = os.environ.get("PREFECT_PROFILE") or data.get("active")
    profile = data.get("profiles", {}).get(name, {}) if name else {}
    return profile if isinstance(profile, dict) else {}


def js_payload(call: str, *args: Any) -> str:
    """``call(args...)`` as a script; ``<``, ``>`` and ``&`` are escaped so no text can end a script block."""
    body = ", ".join(json.dumps(a, ensure_ascii=False, allow_nan=False, default=str) for a in args)
    body = body.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return f"{call}({body});\n"


@dataclass(frozen=True)
class Links:
    """Where things are, relative to the page, in the live app or in a static export."""

    mode: Mode
    depth: int  # 0: the board page, 1: compare/, 2: a run page (runs/<id>/)

    def _up(self, levels: int) -> str:
        return "../" * levels

    @property
    def static(self) -> str:
        return "/static/" if self.mode == "serve" else f"{self._up(self.depth)}static/"

    @property
    def board(self) -> str:
        return self._up(self.depth) + ("" if self.mode == "serve" else "index.html") or "./"

    def run(self, run_id: str) -> str:
        return f"{self._up(self.depth)}runs/{run_id}/" + ("" if self.mode == "serve" else "index.html")

    @property
    def compare(self) -> str:
        return self._up(self.depth) + "compare/" + ("" if self.mode == "serve" else "index.html")

    @property
    def diff(self) -> str:
        return self._up(self.depth) + "diff/" + ("" if self.mode == "serve" else "index.html")

    def answer(self, release_id: str, run_id: str, row: int | None) -> str:
        """A run page of any release of the board, opened at one request row (a static export links
        to the other release's own report, there once it is exported too)."""
        at = f"#page={row // PAGE_SIZE + 1}&open={row}" if row is not None else ""
        if self.mode == "serve":
            return f"{self._up(self.depth + 1)}{release_id}/runs/{run_id}/{at}"
        return f"{self._up(self.depth + 2)}{release_id}/report/runs/{run_id}/index.html{at}"

    def release(self, release_id: str) -> str:
        if self.mode == "serve":
            return f"{self._up(self.depth + 1)}{release_id}/"
        return f"{self._up(self.depth + 2)}{release_id}/report/index.html"

    def file(self, key: str) -> str:
        """A storage object: served by the app, or a relative path from ``leaderboards/<b>/<r>/report/``."""
        return f"/files/{key}" if self.mode == "serve" else f"{self._up(self.depth + 4)}{key}"

    @property
    def media(self) -> str:
        """Where images are: the app's ``/media/``, or the export's own ``report/media/`` copies."""
        return "/media/" if self.mode == "serve" else f"{self._up(self.depth)}media/"

    @property
    def home(self) -> str | None:
        return "/" if self.mode == "serve" else None


def _float(x: Any) -> float | None:
    return None if x is None else float(x)


def best_per_column(rows: list[dict[str, Any]], higher: list[str],
                    directed: Sequence[tuple[str, bool]] = ()) -> dict[str, set[str]]:
    """Column -> the deployments holding its best value (every one of them on a tie; none when the
    column has fewer than two values, where "best" would say nothing). ``directed`` columns name
    whether lower is better."""
    best: dict[str, set[str]] = {}
    for key, lower in [*((k, False) for k in higher), *directed]:
        values = {r["deployment"]: float(r[key]) for r in rows if r.get(key) is not None}
        if len(values) < 2 or len(set(values.values())) < 2:
            continue
        top = (min if lower else max)(values.values())
        best[key] = {name for name, v in values.items() if v == top}
    return best


def aspect_scores(rows: list[dict[str, Any]], aspects: dict[str, list[str]]) -> dict[tuple[str, str], float]:
    """(deployment, aspect) -> the mean of the aspect's group scores: what the model scored, beside the
    win rate that ranks it (a model at 0 everywhere still has a win rate above 0 on ties)."""
    out: dict[tuple[str, str], float] = {}
    for row in rows:
        for aspect, members in aspects.items():
            values = [float(v) for g in members if (v := row.get(f"group:{g}")) is not None]
            if values and len(values) == len(members):
                out[(row["deployment"], aspect)] = sum(values) / len(values)
    return out


def board_html(reports: Reports, release: Release, mode: Mode, releases: list[str] | None = None) -> str:
    """The board page; ``releases`` limits the picker (a static export offers the exported ones)."""
    links = Links(mode, 0)
    previous = reports.previous(release)
    cells = {(r["deployment"], r["scenario"]): r for r in release.runs}
    points = [
        Point(row["deployment"], row["cost_usd"] or 0.0, row["mean_score"])
        for row in release.leaderboard
        if row.get("mean_score") is not None
    ]
    groups = {
        label: [
            Bar(
                row["deployment"],
                _float(row.get(label)),
                _float(row.get(f"{label} ci_low")),
                _float(row.get(f"{label} ci_high")),
            )
            for row in release.leaderboard
        ]
        for label in release.labels
    }
    costs = [row.get("cost_usd") or 0.0 for row in release.leaderboard]
    return _env.get_template("board.html").render(
        title=f"{release.board} — {release.release_id}",
        best=best_per_column(release.leaderboard, ["mean_score", "mean_win_rate", *release.labels],
                             [(c.scenario + "/" + c.metric, c.lower_is_better)
                              for g in release.manifest.metric_groups for c in g.columns
                              if c.lower_is_better is not None]),
        facts=release.manifest.model_metadata,
        aspect_scores=aspect_scores(release.leaderboard, release.manifest.aspects),
        release=release,
        info=release.info,
        labels=release.labels,
        rows=release.leaderboard,
        ranked=any(row.get("rank") is not None for row in release.leaderboard),
        agreements={(a["deployment"], a["scenario"]): a for a in reports.agreement(release)},
        judged=any(row.get("judge_cost_usd") for row in release.leaderboard) or bool(release.manifest.judges),
        adaptive=any(row.get("mean_ability") is not None for row in release.leaderboard),
        reasoning=any(row.get("reasoning_tokens") or any(row.get(f"{label} truncated_in_reasoning") is not None
                                                         for label in release.labels)
                      for row in release.leaderboard),
        cells=cells,
        release_groups=[
            (group, [r for r in reports.releases(release.board, subsets=subsets) if releases is None or r in releases])
            for group, subsets in (("board releases", False), ("subset releases", True))
        ],
        previous=previous,
        changes=reports.changes(release, previous) if previous else [],
        links=links,
        cost_plot=cost_vs_score_svg(points) if any(costs) else None,
        bars_plot=scenario_bars_svg(groups),
        aspects=release.manifest.aspects,
        groups=release.manifest.groups,
        metric_groups=release.metric_groups,
        trees=reports.trees(release),
        content_warning=release.content_warning,
    )


def compare_html(reports: Reports, release: Release, mode: Mode) -> str:
    """Two models side by side, and every pair's paired differences (``helmflow.compare``)."""
    return _env.get_template("compare.html").render(
        paired=reports.paired(release),
        title=f"{release.board} — compare two models",
        release=release,
        labels=release.labels,
        runs=[r for r in release.runs if r["status"] != "missing"],
        links=Links(mode, 1),
        chunk_rows=CHUNK_ROWS,
        page_size=PAGE_SIZE,
        correct_at=CORRECT_AT,
    )


def diff_html(reports: Reports, release: Release, previous: Release, mode: Mode) -> str:
    """The release against the previous one, cell by cell, most significant first, with the flipped
    instances linked to both answers."""
    diff = reports.diff(release, previous)
    return _env.get_template("diff.html").render(
        title=f"{release.board} — {previous.release_id} → {release.release_id}",
        release=release,
        previous=previous,
        cells=[c for c in diff["cells"] if c["what"] != "same run"],
        same=sum(c["what"] == "same run" for c in diff["cells"]),
        links=Links(mode, 1),
    )


def run_html(release: Release, run: Run, mode: Mode, include_unsafe_text: bool = False) -> str:
    links = Links(mode, 2)
    manifest = run.manifest
    redact = mode == "static" and run.redacted_in_export(include_unsafe_text)
    flow_run_id = manifest.lineage.flow_run_id
    ui = prefect_ui_url()
    files = [layout.run_json(run.run_id), *manifest.files]  # publish lists what it wrote
    steps = [Step(step=r["step"], instance_id=r["instance_id"], easiness=r["easiness"], score=r["score"],
                  ability=r["ability"], standard_error=r["standard_error"]) for r in run.trajectory]
    return _env.get_template("run.html").render(
        title=f"{manifest.scenario.label} × {manifest.deployment.name}",
        release=release,
        run=run,
        info=run.info,
        summary=run.summary,
        splits=sorted({s["split"] for s in run.summary}),
        files=files,
        trajectory=steps,
        trajectory_plot=ability_trajectory_svg(steps),
        flow_run_id=flow_run_id,
        flow_run_url=f"{ui}/runs/flow-run/{flow_run_id}" if ui and flow_run_id else None,
        links=links,
        redact=redact,
        redact_reason="never" if run.redacted else "unsafe",
        content_warning=run.unsafe,
        viewer={
            "total": run.num_rows,
            "chunk-rows": CHUNK_ROWS,
            "page-size": PAGE_SIZE,
            "correct-at": CORRECT_AT,
            "main-metric": run.main_metric,
            "redacted": "true" if redact else "false",
            "search": "server" if mode == "serve" else "chunks",
            "media": links.media,
        },
    )


def index_js(run: Run) -> str:
    """The run's narrow index (no text), compact: splits as codes, flags as 0/1 (a 100,000-row run is ~1 MB)."""
    index = run.index
    splits = index["split"].combine_chunks().dictionary_encode()
    return js_payload(
        "helmflowIndex",
        {
            "splits": splits.dictionary.to_pylist(),
            "split": splits.indices.to_pylist(),
            "score": index["score"].to_pylist(),
            "error": [int(x) for x in index["error"].to_pylist()],
            "prompt_truncated": [int(bool(x)) for x in index["prompt_truncated"].to_pylist()],
            "truncated_in_reasoning": [int(bool(x)) for x in index["truncated_in_reasoning"].to_pylist()],
        },
    )


def search_js(run: Run, text: str) -> str:
    """The rows matching a text search (the live app searches on the server; a static export in the browser)."""
    return js_payload("helmflowSearch", text, run.search(text))


def chunk_js(run: Run, k: int, redact: bool) -> str:
    return js_payload("helmflowChunk", k, run.chunk(k, redact=redact))


def home_html(reports: Reports) -> str:
    """Each board's default release, its subset releases apart, and any release.json that cannot be read."""
    boards = [(b, reports.latest(b), reports.releases(b, subsets=True)) for b in reports.boards()]
    return _env.get_template("home.html").render(title="helmflow reports", boards=boards, broken=reports.broken(),
                                                 links=Links("serve", 0))


def not_found_html(message: str) -> str:
    return _env.get_template("404.html").render(title="not found", message=message, links=Links("serve", 0))


def error_html(title: str, message: str) -> str:
    return _env.get_template("error.html").render(title=title, message=message, links=Links("serve", 0))
