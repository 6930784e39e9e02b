"""The board's scenario subflows keep their API writes apart (flows/evaluate.py ``SubflowStarts``): one
subflow starts or ends at a time, no work begins before every subflow has started, and a subflow that
never got to run its work does not keep the others waiting."""

from __future__ import annotations

import threading
import time

from helmflow.flows.evaluate import SubflowStarts


def _board(n: int, never_runs: set[int]) -> tuple[list[tuple[str, int]], list[threading.Thread], int]:
    starts, events, lock = SubflowStarts(n), [], threading.Lock()
    inside, most = [0], [0]  # threads in Prefect's part (a start or an end) at once

    def note(what: str, i: int) -> None:
        with lock:
            events.append((what, i))

    def prefects_writes(i: int) -> None:
        with lock:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        time.sleep(0.01)
        with lock:
            inside[0] -= 1

    def subflow(i: int) -> None:  # what run_scenarios' thread does around Prefect's calls
        starts.begin()
        try:
            starts.starting()
            note("start", i)
            prefects_writes(i)
            if i in never_runs:  # Prefect refused the subflow before its function ran
                return
            starts.running()
            note("work", i)
            starts.ending()
            note("end", i)
            prefects_writes(i)
        finally:
            starts.ended()

    threads = [threading.Thread(target=subflow, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    return events, threads, most[0]


def test_every_subflow_starts_before_any_works_and_a_refused_one_keeps_nobody_waiting():
    events, threads, at_once = _board(5, never_runs={2})
    assert not any(t.is_alive() for t in threads)  # no thread left waiting for the refused subflow
    assert at_once == 1  # Prefect's writes of one subflow at a time
    kinds = [what for what, _ in events]
    assert kinds[:5] == ["start"] * 5  # every start before the first work
    assert sorted(i for what, i in events if what == "work") == [0, 1, 3, 4]


def test_no_subflow_is_nothing_to_wait_for():
    starts = SubflowStarts(0)
    assert starts.all_started.is_set()


def test_a_board_with_subflows_by_group_has_one_subflow_per_run_group_and_the_same_version():
    """``subflows: group`` (ToRR: 35 entries per dataset) groups the flow-run graph by the entries' ``group:``, with
    each entry's perturbed copies; an entry without a group stands alone. The graph's shape changes no version."""
    from helmflow.clients import load_deployments
    from helmflow.flows.evaluate import scenario_groups
    from helmflow.plan.compile import plan_board
    from helmflow.plan.spec import load_board

    entries = [{"name": "arithmetic", "params": {"digits": d, "seed": k}, "label": f"{g or 'solo'}-{d}-{k}",
                **({"group": g} if g else {})}
               for g, d, k in (("a", 2, 0), ("a", 3, 0), ("b", 2, 1), ("b", 3, 1), (None, 2, 2))]
    entries[0]["perturbations"] = "robustness"
    spec = {"name": "grouped", "version": "1", "models": ["offline/solver", "offline/echo"], "max_instances": 2,
            "scenarios": entries}
    by_entry = plan_board(load_board(spec), load_deployments())
    by_group = plan_board(load_board({**spec, "subflows": "group"}), load_deployments())
    assert by_group.board_version == by_entry.board_version
    assert [r.run_id for r in by_group.runs] == [r.run_id for r in by_entry.runs]
    assert [label for label, _, _ in scenario_groups(by_entry)] == [e["label"] for e in entries]
    groups = {label: (scenarios, runs) for label, scenarios, runs in scenario_groups(by_group)}
    assert list(groups) == ["a", "b", "solo-2-2"]
    scenarios, runs = groups["a"]
    assert [s.label for s in scenarios if s.perturbation is None] == ["a-2-0", "a-3-0"]
    assert len(scenarios) > 2 and all(s.perturbation.label == "a-2-0" for s in scenarios if s.perturbation)
    assert {r.scenario.label for r in runs} == {s.label for s in scenarios}  # every cell of the group, perturbed too
    assert sum(len(r) for _, (_, r) in groups.items()) == len(by_group.runs)
