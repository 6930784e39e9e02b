"""Regression alerts on a real Prefect server: a second demo release in which one deployment got noisier
emits ``helmflow.cell.regressed`` for its cells (and the flow run gets the markdown artifact), the
automation docs/comparing.md shows fires (its webhook receives the notification), and refreshes
without a significant regression (a cached one, an improving one) emit nothing."""

from __future__ import annotations

import json
import re
import threading
import time
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from helmflow import compare
from helmflow.storage import Store, safe_key
from tests.support.cli import REPO, flow_run_id_from, run_cli, run_python

pytestmark = pytest.mark.slow

NOISIER = """deployments:
  - name: offline/solver
    client: offline
    model: solver-2
    revision: "2"
    description: The solver, now wrong on a seeded half of the requests.
    options: {behavior: solver, accuracy: 0.5}
"""
BETTER = NOISIER + """  - name: offline/solver-noisy
    client: offline
    model: solver-3
    revision: "3"
    description: The noisy solver, now wrong on a seeded 5%.
    options: {behavior: solver, accuracy: 0.95}
"""


class Webhook:
    """An HTTP endpoint on 127.0.0.1 that keeps every JSON body POSTed to it."""

    def __init__(self):
        received = self.received = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"


def docs_automation(url: str) -> str:
    page = (REPO / "docs" / "comparing.md").read_text()
    code = next(b for b in re.findall(r"```python\n(.*?)```", page, re.S) if b.startswith("# regression_alert.py"))
    assert 'WEBHOOK_URL = "https://hooks.example.com/helmflow"' in code
    return code.replace("https://hooks.example.com/helmflow", url)


BARRIER = "helmflow-tests.barrier"


def barrier_automation(url: str) -> str:
    """A script that has the server POST a notification to ``url`` for every ``{BARRIER}`` event."""
    return f"""
from prefect.automations import Automation
from prefect.blocks.notifications import CustomWebhookNotificationBlock
from prefect.events.actions import SendNotification
from prefect.events.schemas.automations import EventTrigger, Posture

block_id = CustomWebhookNotificationBlock(name="barrier", url="{url}", method="POST",
                                          json_data={{"subject": "{{{{subject}}}}", "text": "{{{{body}}}}"}}).save(
    "helmflow-tests-barrier", overwrite=True)
Automation(name="helmflow tests barrier", trigger=EventTrigger(expect={{"{BARRIER}"}}, posture=Posture.Reactive,
           threshold=1), actions=[SendNotification(block_document_id=block_id, subject="{BARRIER}",
           body="{{{{ event.resource['prefect.resource.id'] }}}}")]).create()
"""


def pass_barrier(api: str, hook: "Webhook") -> None:
    """Until the server has handled everything sent to it before now: an event sent by a process of its own
    (as each refresh's events were, by its command's) is stored, and the automation it triggers has notified
    ``hook``. The server handles events in the order they arrive (two at a time), so the events the commands sent
    before, seconds earlier, have been stored and have fired whatever automation they trigger."""
    import uuid

    mark = f"helmflow-tests.barrier.{uuid.uuid4().hex}"
    sent = run_python(f"from prefect.events import emit_event\nfrom prefect.events.worker import EventsWorker\n"
                      f"emit_event(event={BARRIER!r}, resource={{'prefect.resource.id': {mark!r}}})\n"
                      "EventsWorker.drain_all()\n", cwd=Path.cwd(), timeout=120)
    assert sent.returncode == 0, sent.stderr
    body = {"filter": {"event": {"name": [BARRIER]}, "resource": {"id": [mark]}}, "limit": 1}
    wait_for(lambda: httpx.post(f"{api}/events/filter", json=body, timeout=30).raise_for_status().json()["events"],
             what="the barrier event")
    wait_for(lambda: any(p["text"] == mark for p in hook.received), what="the barrier's notification")


def regressed_events(api: str, since: str) -> list[dict]:
    """The regressed events the server got since ``since`` (the session's server also holds other tests')."""
    body = {"filter": {"event": {"name": ["helmflow.cell.regressed"]}, "occurred": {"since": since}}, "limit": 50}
    return httpx.post(f"{api}/events/filter", json=body, timeout=30).raise_for_status().json()["events"]


def wait_for(check, timeout: float = 90.0, what: str = ""):
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found or time.monotonic() > deadline:
            assert found, f"waited {timeout:.0f} s for {what}"
            return found
        time.sleep(1)


def artifact_flow_runs(key: str) -> list[str]:
    import asyncio

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    async def read():
        async with get_client() as client:
            found = await client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key])))
            return [str(a.flow_run_id) for a in found]

    return asyncio.run(read())


def test_a_noisier_deployment_emits_regressed_events_and_the_docs_automation_fires(prefect_server, tmp_path):
    since = datetime.now(UTC).isoformat()
    hook = Webhook()
    made = run_python(docs_automation(hook.url), cwd=Path.cwd(), timeout=120)  # the page's script, as python -c
    assert made.returncode == 0, made.stderr
    barrier = Webhook()  # notified of the barrier events (pass_barrier) only
    made = run_python(barrier_automation(barrier.url), cwd=Path.cwd(), timeout=120)
    assert made.returncode == 0, made.stderr
    root = tmp_path / "store"
    store = Store(str(root))
    (tmp_path / "noisier.yaml").write_text(NOISIER)
    (tmp_path / "better.yaml").write_text(BETTER)
    base = ["run", "demo", "--models", "offline/solver,offline/solver-noisy", "--scenarios", "arithmetic-3",
            "--max-instances", "30", "--storage", str(root)]

    first = run_cli(*base)
    assert first.returncode == 0, first.stdout + first.stderr
    assert re.search(r"rank \(95%\)\s+│\s+1( \(1–\d\))?\s+│\s+2( \(\d–2\))?", first.stdout), first.stdout  # the board table
    r1 = store.read_json("leaderboards/demo/latest-subset.json")["release_id"]
    noisier = run_cli(*base, "--models-file", str(tmp_path / "noisier.yaml"))
    assert noisier.returncode == 0, noisier.stdout + noisier.stderr
    r2 = store.read_json("leaderboards/demo/latest-subset.json")["release_id"]
    assert r2 != r1
    expected = compare.regressions(compare.release_diff(store, "demo", r1, r2))
    assert {c["deployment"] for c in expected} == {"offline/solver"} and len(expected) >= 1
    assert "regressed" in noisier.stderr and "helmflow.cell.regressed" in noisier.stderr

    events = wait_for(lambda: len(got := regressed_events(prefect_server, since)) >= len(expected) and got,
                      what="events")
    assert len(events) == len(expected)
    by_cell = {e["payload"]["cell"]: e for e in events}
    for cell in expected:
        e = by_cell[f"{cell['scenario']} x offline/solver"]
        p = e["payload"]
        assert (p["board"], p["from_release"], p["to_release"]) == ("demo", r1, r2)
        assert p["delta"] == pytest.approx(cell["delta"]) and p["ci_low"] == pytest.approx(cell["ci_low"])
        assert p["ci_high"] < 0 and p["ci_high"] == pytest.approx(cell["ci_high"])
        assert p["changed"] == ["model"] and p["flipped"] == cell["flipped"] > 0
        assert p["links"]["after"].endswith(f"runs/{cell['run_after']}")
        assert p["links"]["before"].endswith(f"runs/{cell['run_before']}")
        assert e["resource"]["prefect.resource.id"] == f"helmflow.cell.demo.{safe_key(cell['scenario'])}.offline--solver"
        assert e["resource"]["helmflow.deployment"] == "offline/solver"
    # the flow run that published the noisier release has the markdown artifact; the first has none
    ours = {str(flow_run_id_from(first)), str(flow_run_id_from(noisier))}  # the session's server has other tests'
    assert [f for f in artifact_flow_runs("demo-regressions") if f in ours] == [str(flow_run_id_from(noisier))]

    # the documented automation fired: its webhook got one notification per event, with the cell in it
    posts = wait_for(lambda: len(hook.received) >= len(expected) and hook.received, what="the webhook")
    assert len(posts) == len(expected)
    assert all(p["subject"].startswith("helmflow: ") and "regressed on demo" in p["subject"] for p in posts)
    assert {p["subject"].split("helmflow: ", 1)[1].split(" regressed", 1)[0] for p in posts} == set(by_cell)
    assert all(r2 in p["text"] for p in posts)

    # refreshes with no significant regression emit nothing: the same run set again (cached), then a
    # release where only the other deployment changed, for the better
    again = run_cli(*base, "--models-file", str(tmp_path / "noisier.yaml"))
    assert again.returncode == 0 and "regressed" not in again.stderr, again.stderr
    better = run_cli(*base, "--models-file", str(tmp_path / "better.yaml"))
    assert better.returncode == 0, better.stdout + better.stderr
    r3 = store.read_json("leaderboards/demo/latest-subset.json")["release_id"]
    assert r3 != r2 and "regressed" not in better.stderr
    improved = compare.release_diff(store, "demo", r2, r3)
    assert any(c["significant"] and c["ci_low"] > 0 for c in improved["cells"])  # it did change, upwards
    pass_barrier(prefect_server, barrier)  # what the commands sent, the server has handled
    assert len(regressed_events(prefect_server, since)) == len(expected)
    assert len(hook.received) == len(expected)
    ours |= {str(flow_run_id_from(out)) for out in (again, better) if "flow run:" in out.stdout}
    assert [f for f in artifact_flow_runs("demo-regressions") if f in ours] == [str(flow_run_id_from(noisier))]
