"""Regression alerts: after a refresh publishes a new release, every cell that got significantly worse
than in the previous release of the same kind emits the Prefect event ``helmflow.cell.regressed``, and
the flow run gets a markdown artifact listing them (:func:`alert_regressions`). A refresh with no
significant regression emits nothing and writes no artifact.

"Significantly worse" is :func:`helmflow.compare.regressions`: the paired change's whole 95% interval
is below 0 and the drop is at least ``$HELMFLOW_REGRESSION_THRESHOLD`` (default 0).
"""

from __future__ import annotations

from typing import Any

from helmflow import compare, layout
from helmflow.outcomes import ReleaseOutcome
from helmflow.storage import Store, safe_key

REGRESSED = "helmflow.cell.regressed"


def _run_link(store: Store, board: str, release_id: str, run_id: str | None) -> str | None:
    from helmflow.settings import settings

    if run_id is None:
        return None
    base = (settings().report_url or "").rstrip("/")
    if base:
        return f"{base}/boards/{board}/{release_id}/runs/{run_id}/"
    return store.url(layout.run_dir(run_id))


def regression_events(store: Store, board: str, release: ReleaseOutcome,
                      threshold: float | None = None) -> list[dict[str, Any]]:
    """The ``helmflow.cell.regressed`` events this release calls for (event, resource, related,
    payload): one per significantly worse cell; none for a board's first release."""
    from helmflow.settings import settings
    from helmflow.tasks.evaluation import release_link

    name = safe_key(board)
    try:
        diff = compare.release_diff(store, name, None, release.release_id, max_flips=10)
    except compare.NoSuchName:  # the first release of its kind: nothing to compare with
        return []
    threshold = settings().regression_threshold if threshold is None else threshold
    events = []
    for cell in compare.regressions(diff, threshold):
        links = {
            "release": release_link(board, release.release_id, release.uri),
            "diff": f"{release_link(board, release.release_id, release.uri).rstrip('/')}/diff/"
            if settings().report_url else None,
            "before": _run_link(store, name, diff["from"], cell["run_before"]),
            "after": _run_link(store, name, diff["to"], cell["run_after"]),
        }
        payload = {k: cell[k] for k in ("scenario", "deployment", "metric", "before", "after", "delta", "ci_low",
                                        "ci_high", "p_value", "n", "flipped", "changed")}
        payload |= {"board": board, "cell": f"{cell['scenario']} x {cell['deployment']}", "threshold": threshold,
                    "from_release": diff["from"], "to_release": diff["to"], "links": links,
                    "flips": [f["instance_id"] for f in cell["flips"]]}
        events.append({
            "event": REGRESSED,
            "resource": {
                "prefect.resource.id": ".".join(("helmflow.cell", name, safe_key(cell["scenario"]),
                                                 safe_key(cell["deployment"]))),
                "prefect.resource.name": payload["cell"],
                "helmflow.board": board,
                "helmflow.scenario": cell["scenario"],
                "helmflow.deployment": cell["deployment"],
            },
            "related": [{"prefect.resource.id": f"helmflow.release.{name}.{release.release_id}",
                         "prefect.resource.role": "release", "prefect.resource.name": release.release_id}],
            "payload": payload,
        })
    return events


def regressions_markdown(board: str, events: list[dict[str, Any]]) -> str:
    first = events[0]["payload"]
    lines = [f"# {board}: {len(events)} cell(s) regressed", "",
             f"Release {first['to_release']} against {first['from_release']}: the paired change of the main metric "
             f"on the instances both runs scored, 95% interval entirely below 0"
             + (f", drop of at least {first['threshold']:g}" if first["threshold"] else "") + ".", "",
             "| cell | metric | before | after | change [95% CI] | flipped | what changed | runs |", "|---" * 8 + "|"]
    for e in events:
        p = e["payload"]
        runs = " · ".join(f"[{k}]({v if '://' in v else 'file://' + v})" for k, v in p["links"].items()
                          if v and k in ("before", "after"))
        lines.append(f"| {p['cell']} | {p['metric']} | {p['before']:.3f} | {p['after']:.3f} | "
                     f"{p['delta']:+.3f} [{p['ci_low']:+.3f}, {p['ci_high']:+.3f}] | {p['flipped']} | "
                     f"{', '.join(p['changed']) or 're-run'} | {runs} |")
    return "\n".join(lines)


def alert_regressions(store: Store, board: str, release: ReleaseOutcome) -> list[dict[str, Any]]:
    """Emit one ``helmflow.cell.regressed`` event per significantly worse cell of a newly written
    release and list them in the flow run's ``<board>-regressions`` markdown artifact; returns the
    events (none: nothing emitted, no artifact)."""
    if not release.wrote:  # the same run set as a published release: nothing was refreshed
        return []
    events = regression_events(store, board, release)
    if not events:
        return []
    from prefect.artifacts import create_markdown_artifact
    from prefect.events import emit_event

    from helmflow.tasks.evaluation import artifact_key

    for e in events:
        emit_event(event=e["event"], resource=e["resource"], related=e["related"], payload=e["payload"])
    create_markdown_artifact(key=f"{artifact_key(board)}-regressions", markdown=regressions_markdown(board, events),
                             description=f"{board}: cells significantly worse than in the previous release")
    return events
