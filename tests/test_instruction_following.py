"""HELM's six instruction-following scenarios on fixture files in the upstream shapes (HELM's instance order, splits,
inputs and references; its evaluation sample) against crfm-helm 0.5.16's own classes, hand-worked cases, and bad
input."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from helmflow.adapters import sample_eval_instances
from helmflow.aggregate import unavailable_reason
from helmflow.judges import TEMPLATES, _annotation
from helmflow.metrics import METRICS
from helmflow.metrics.base import MetricInput
from helmflow.metrics.instruction_following import NO_JUDGE, STATS, TEMPLATE_NAMES, critique_stats
from helmflow.records import (
    AdapterSpec,
    Annotation,
    Completion,
    Deployment,
    EvalSample,
    Input,
    Instance,
    Request,
    RequestBody,
    Stat,
)
from helmflow.scenarios import ScenarioError, get_scenario
from helmflow.scoring import summarize
from tests.support import instruct_fixtures as fx
from tests.support.instruct_cases import CRITIQUE_CASES

# printed by benchmarks/helm_instruct_parity.py against crfm-helm 0.5.16 (its "Keyword Feedback" stat, a constant 0,
# dropped): HELM's own scenario classes on the fixtures of tests/support/instruct_fixtures.py, as (instance count,
# sha256 of the JSON list of each instance's [split, input, [reference texts]]) and the ids HELM's
# downsample_eval_instances keeps of the eval splits at max_eval_instances=5; and per critique case of
# tests/support/instruct_cases.py, InstructionFollowingCritiqueMetric's stats through HELM's ModelCritiqueClient
# with a scripted critic, as {question: [count, sum]}; and per entry of HELM's conf, what HELM's run spec function
# gives (scenario arguments, num_respondents, adapter spec) and its GenerationAdapter's requests on the fixtures
HELM = json.loads((Path(__file__).parent / "data" / "helm_instruct_parity.json").read_text())
HELM_SCENARIOS: dict[str, dict] = HELM["scenarios"]

CASES = {
    "self_instruct": ("self_instruct", {}),
    "vicuna:all": ("vicuna", {"category": "all"}),
    "vicuna:generic": ("vicuna", {"category": "generic"}),
    "koala": ("koala", {}),
    "grammar:": ("grammar", {"tags": ""}),
    "grammar:garden": ("grammar", {"tags": "garden"}),
    "grammar:home,numbers": ("grammar", {"tags": "home,numbers"}),
    "open_assistant:en": ("open_assistant", {"language": "en"}),
    "open_assistant:es": ("open_assistant", {"language": "es"}),
    "open_assistant:all": ("open_assistant", {"language": "all"}),
    "anthropic_hh_rlhf:hh": ("anthropic_hh_rlhf", {"subset": "hh"}),
    "anthropic_hh_rlhf:red_team": ("anthropic_hh_rlhf", {"subset": "red_team"}),
}


def _load(tmp_path, name, params):
    scen = get_scenario(name, params)
    return scen.load(fx.write(tmp_path, scen))


@pytest.mark.parametrize("key", list(CASES))
def test_instances_and_sample_are_helms(tmp_path, key):
    name, params = CASES[key]
    instances = _load(tmp_path, name, params)
    rows = [[i.split, i.input.text, [r.text for r in i.references]] for i in instances]
    digest = (len(rows), hashlib.sha256(json.dumps(rows).encode()).hexdigest())
    helm = HELM_SCENARIOS[key]
    assert digest == tuple(helm["digest"])
    assert [i.id for i in instances] == [f"id{k}" for k in range(len(instances))]
    assert all(r.correct for i in instances for r in i.references)
    sampled = sample_eval_instances(instances, EvalSample(max_eval_instances=5))
    assert [int(i.id[2:]) for i in sampled] == helm["sampled"]


def test_hand_worked_instances(tmp_path):
    oasst = _load(tmp_path, "open_assistant", {"language": "en"})
    assert [(i.split, i.input.text, [r.text for r in i.references]) for i in oasst] == [
        ("train", "How do I season a cast iron pan?", ["Coat it thinly in oil and bake it upside down."]),
        ("train", "Recommend a board game for four players.", []),
        ("valid", "What is the capital of Australia?", ["Canberra.", "It is Canberra, not Sydney."]),
        ("valid", "Give me a haiku about autumn.", []),
        ("valid", "Name three prime numbers.", ["2, 3 and 5."]),
        ("valid", "How far is the Moon?", []),
        ("valid", "Write a limerick about a kettle.", []),
    ]
    grammar = [i.input.text for i in _load(tmp_path, "grammar", {"tags": ""})]
    assert grammar == ["Plan a breakfast for two people.", "Plan a breakfast for six people.",
                       "Plan a picnic lunch for two people.", "Plan a picnic lunch for six people.",
                       "Give me three tips for keeping a fern alive.",
                       "Give me three tips for keeping a white orchid alive.",
                       "Give me three tips for keeping a purple orchid alive.",
                       "Draft an agenda for a budget meeting.", "Draft an agenda for a kickoff meeting."]
    selfi = _load(tmp_path, "self_instruct", {})
    assert [i.input.text for i in selfi][:3] == ["Turn the list into a sentence.\napples, pears, plums",
                                                 "Suggest a subject line for a memo.\n",
                                                 "Suggest a subject line for a memo.\nThe memo is about the new "
                                                 "parking rules."]
    hh = _load(tmp_path, "anthropic_hh_rlhf", {"subset": "hh"})
    assert [i.split for i in hh] == ["train"] * 12 + ["test"] * 16
    assert hh[1].input.text == "[harmless-base train 1] How should I store fresh basil?"
    assert hh[12].input.text == "[harmless-base test 0] How should I store fresh basil?"


def _planned(monkeypatch, entry, board):
    """An entry as the board plans it (its data's sha256 stubbed: no file is read to plan it here)."""
    from helmflow.plan import compile as plan_compile

    monkeypatch.setattr(plan_compile, "_sha256_url", lambda scen, source: "0" * 64)
    return plan_compile.plan_scenario(entry, board.max_instances, board.prompts)


def test_the_classic_boards_entries_are_helms_run_specs(tmp_path, monkeypatch):
    """Each of HELM's six conf entries as the classic board plans it equals HELM's run spec function: the
    scenario arguments, the critique metric with num_respondents, the adapter spec, at most 1,000 instances,
    and the requests the model is sent for the fixtures (prompt, temperature, outputs, max_tokens, stop
    sequences) equal those HELM's GenerationAdapter makes from that spec."""
    from helmflow.adapters import adapt
    from helmflow.metrics.instruction_following import NUM_RESPONDENTS
    from helmflow.plan.spec import load_board
    from helmflow.request_builder import build_requests

    board = load_board("classic")
    entries = {e.name: e for e in board.scenarios}
    deployment = Deployment(name="test/model", client="offline", model="m")
    assert len(HELM["entries"]) == 6
    for key, helm in HELM["entries"].items():
        name = key.split(":")[0]
        entry = entries[name]
        assert entry.params == helm["scenario_args"], key
        assert (helm["metric"], helm["metric_args"]) == ("InstructionFollowingCritiqueMetric",
                                                        {"num_respondents": NUM_RESPONDENTS}), key
        plan = _planned(monkeypatch, entry, board)
        assert "instruction_following_critique" in plan.metrics and plan.main_metric == "Helpfulness", key
        spec, g = plan.adapter, plan.adapter.generation
        ours = {"method": spec.method, "global_prefix": spec.global_prefix, "global_suffix": spec.global_suffix,
                "instructions": spec.instructions, "input_prefix": spec.input_prefix,
                "input_suffix": spec.input_suffix, "output_prefix": spec.output_prefix,
                "output_suffix": spec.output_suffix, "instance_prefix": spec.instance_prefix,
                "max_train_instances": spec.max_train_instances, "num_outputs": g.num_outputs,
                "num_train_trials": spec.sample.trials, "temperature": g.temperature, "max_tokens": g.max_tokens,
                "stop_sequences": g.stop}
        assert ours == helm["adapter"], key
        assert spec.sample.max_eval_instances == 1000  # HELM Classic's --max-eval-instances
        rows = []
        for prompt in adapt(spec, _load(tmp_path, name, entry.params)):
            sent = build_requests([prompt], spec, deployment)
            body = sent[0].body
            rows.append([body.prompt, body.temperature, len(sent), body.max_tokens, body.stop])
        assert [len(rows), hashlib.sha256(json.dumps(rows).encode()).hexdigest()] == helm["requests"], key


def test_a_judge_or_template_change_rescores_without_requerying(tmp_path, monkeypatch):
    """The critique's judges and its six templates' VERSIONs (and replaced wording) are in metric_version;
    the query key stays, so another judge re-scores the stored answers."""
    from helmflow.clients import load_deployments
    from helmflow.plan import compile as plan_compile
    from helmflow.plan.spec import load_board

    monkeypatch.setattr(plan_compile, "_sha256_url", lambda scen, source: "0" * 64)
    deployments = load_deployments()
    for n in ("test/model", "test/critic-a", "test/critic-b"):
        deployments[n] = Deployment(name=n, client="offline", model=n)
    board = {"name": "b", "version": "t", "models": ["test/model"], "scenarios": [{"name": "koala"}]}

    def planned(prompts=None, **kw):
        (run,) = plan_compile.plan_board(load_board({**board, "prompts": prompts or {}}), deployments, **kw).runs
        return run

    a, b = planned(judges=["test/critic-a"]), planned(judges=["test/critic-b"])
    jury, none = planned(judges=["test/critic-a", "test/critic-b"]), planned(no_judge=True)
    assert set(a.judge_templates) == set(TEMPLATE_NAMES)
    assert len({a.metric_version, b.metric_version, jury.metric_version, none.metric_version}) == 4
    for name in TEMPLATE_NAMES:
        worded = planned({f"judge.{name}": "Rate it: {$instruction} / {$response}"}, judges=["test/critic-a"])
        assert worded.metric_version != a.metric_version, name
        assert worded.query_key == a.query_key
    assert a.query_key == b.query_key == jury.query_key == none.query_key
    assert planned(judges=["test/critic-a"]).run_id == a.run_id


@pytest.mark.parametrize(("name", "params", "filename", "data", "message"), [
    ("self_instruct", {}, "user_oriented_instructions.jsonl", b'{"instruction": "x"}\n', "line 1: not the source"),
    ("koala", {}, "koala_test_set.jsonl", b'{"id": "k"}\n{"prompt": 3}\n', "line 1: not the source"),
    ("grammar", {}, "best_chatgpt_prompts.yaml", b"rules: [{category: Root}]\n", "needs a category and a list"),
    ("grammar", {}, "best_chatgpt_prompts.yaml", b"rules: [\n", "not YAML"),
    ("anthropic_hh_rlhf", {"subset": "red_team"}, "red_team_attempts.jsonl.gz", b"not gzip", "not gzip"),
])
def test_bad_files_are_one_clear_error(tmp_path, name, params, filename, data, message):
    scen = get_scenario(name, params)
    paths = fx.write(tmp_path, scen)
    (tmp_path / filename).write_bytes(data)
    with pytest.raises(ScenarioError, match=message):
        scen.load(paths)


def test_open_assistant_refuses_what_helm_asserts_against(tmp_path):
    scen = get_scenario("open_assistant", {"language": "en"})
    paths = fx.write(tmp_path, scen)
    bad = [dict(m) for m in fx.OASST["valid"]]
    bad[0]["role"] = "assistant"
    (tmp_path / "validation-00000-of-00001-134b8fd0c89408b6.parquet").write_bytes(fx.parquet(bad))
    with pytest.raises(ScenarioError, match="is not a prompter's"):
        scen.load(paths)
    bad = [dict(m) for m in fx.OASST["valid"]]
    bad[3]["model_name"] = "some-model"
    (tmp_path / "validation-00000-of-00001-134b8fd0c89408b6.parquet").write_bytes(fx.parquet(bad))
    with pytest.raises(ScenarioError, match="has a model_name"):
        scen.load(paths)
    with pytest.raises(ScenarioError):
        get_scenario("open_assistant", {"language": "English!"})


# --------------------------------------------------------------------------- the critique
INSTANCE = Instance(id="id0", split="test", input=Input(text="Name a colour."))
JUDGED = Request(request_hash="r0", instance_id="id0", split="test",
                 body=RequestBody(model="m", prompt="Name a colour.\n", max_tokens=512, temperature=0.7))


def annotations(answers: list[list[str]], respondents: int, instance_id: str = "id0") -> list:
    """Each respondent a judge of its own, its raw answer to each question made an annotation as the engine does."""
    out = []
    for j in range(respondents):
        judge = Deployment(name=f"test/critic-{j}", client="offline", model="critic")
        for q, name in enumerate(TEMPLATE_NAMES):
            call = Request(request_hash=f"c{j}{q}", instance_id=instance_id, split="test",
                           body=RequestBody(model="critic", prompt="p", max_tokens=1, temperature=1.0))
            answer = Completion(request_hash=call.request_hash, instance_id=instance_id, text=answers[q][j])
            judged = JUDGED.model_copy(update={"instance_id": instance_id})
            out.append(_annotation(judge, TEMPLATES.get(name), judged, call, answer))
    return out


@pytest.mark.parametrize("case", range(len(CRITIQUE_CASES)))
def test_critique_stats_are_helms(case):
    answers, respondents = CRITIQUE_CASES[case]
    helm = HELM["critiques"][case]
    ours = critique_stats(annotations(answers, respondents), num_respondents=respondents)
    if not helm:
        assert not any(q in ours for q in STATS)
        return
    for q in STATS:
        count, total = helm[q]
        low = q.lower()
        assert (ours[f"critique_{low}_count"], ours[f"critique_{low}_sum"]) == (count, total), q
        assert ours[q] == pytest.approx(total / count), q


def test_a_run_pools_every_respondent_as_helm_merges_stats():
    """Two instances, two and three parsed respondents (the jury's judges; HELM's conf needs one): the run's number
    is HELM's merged Stat, the sum over the count of all answers, not the mean of the instances' means."""
    metric = METRICS.get("instruction_following_critique")
    two, three = CRITIQUE_CASES[7], CRITIQUE_CASES[9]
    stats = []
    for k, (answers, respondents) in enumerate([two, three]):
        inst = INSTANCE.model_copy(update={"id": f"id{k}"})
        x = MetricInput(inst, [JUDGED], [Completion(request_hash="r0", text="Blue.")], AdapterSpec(),
                        annotations(answers, respondents, inst.id))
        stats += [Stat(instance_id=inst.id, split="test", name=n, value=v) for n, v in metric.fn(x).items()]
    summary = {s.name: s for s in summarize(stats)}
    for q in STATS:
        merged = [HELM["critiques"][7][q], HELM["critiques"][9][q]]
        assert summary[q].mean == pytest.approx(sum(t for _, t in merged) / sum(c for c, _ in merged)), q
    assert summary["Understandability"].mean == pytest.approx(20 / 5)  # (6 + 14) / (2 + 3); the means' mean: 23/6
    assert summary["instruct_helpfulness_judge_errors"].mean == 0.0


def test_without_a_judge_the_numbers_are_not_available_and_say_why():
    metric = METRICS.get("instruction_following_critique")
    scorer = Annotation(instance_id="id0", request_hash="r0", judge="local/profanity-check", template="toxicity",
                        template_version="1", score=0.0)  # a board-wide scorer's annotation is no critique
    x = MetricInput(INSTANCE, [JUDGED], [Completion(request_hash="r0", text="Blue.")], AdapterSpec(), [scorer])
    stats = [Stat(instance_id="id0", split="test", name=n, value=v) for n, v in metric.fn(x).items()]
    rows = summarize(stats)
    assert not any(r.name in STATS for r in rows)
    assert all(unavailable_reason(rows, q) == NO_JUDGE for q in STATS)
    # an unparsable answer: that judge is no respondent, counted as an annotation error, and no stat is 0
    bad = annotations([["Z"], ["B"], ["C"], ["D"], ["E"], [""]], 1)
    out = metric.fn(MetricInput(INSTANCE, [JUDGED], [Completion(request_hash="r0", text="Blue.")], AdapterSpec(), bad))
    assert out["instruct_helpfulness_judge_errors"] == 1.0 and not any(q in out for q in STATS)


def test_the_questions_options_scores_and_critic_requests_are_helms():
    """HELM's metric's questions (in order), their options (in order) and scores, as ours ask and map them; each
    request's max_tokens and temperature as HELM's ModelCritiqueClient sends them; one respondent."""
    from helmflow.metrics.instruction_following import KEYWORD_QUESTION, NUM_RESPONDENTS, QUESTIONS

    helm = HELM["critique_template"]
    assert helm["num_respondents"] == NUM_RESPONDENTS
    *choices, keyword = helm["questions"]
    assert [(q["name"], q["type"], q["text"], dict(zip(q["options"], q["scores"], strict=True))) for q in choices] \
        == [(name, "multiple_choice", text, mapping) for name, text, mapping in QUESTIONS]
    assert (keyword["name"], keyword["type"], keyword["text"]) == ("Keyword Feedback", "free_response", KEYWORD_QUESTION)
    for q, name in zip(helm["questions"], TEMPLATE_NAMES, strict=True):
        t = TEMPLATES.get(name)
        assert (t.max_tokens, t.temperature) == (q["max_tokens"], q["temperature"]), name
        prompt = t.render(INSTANCE, "Blue.")
        lettered = "".join(f"\n{chr(65 + k)}. {o}" for k, o in enumerate(q["options"]))
        assert q["text"] in prompt and lettered in prompt and "Blue." in prompt, name
        for k, option in enumerate(q["options"]):  # the letter names the option HELM scores
            assert t.parse(chr(65 + k)).score == q["scores"][k], name


def test_the_critic_prompt_carries_helms_questions_and_asks_one_letter():
    for name in TEMPLATE_NAMES:
        t = TEMPLATES.get(name)
        assert t.send_empty and t.temperature == 1.0  # HELM's Request default; an empty response is critiqued
        prompt = t.render(INSTANCE, "")
        assert "Name a colour." in prompt
    helpful = TEMPLATES.get("instruct_helpfulness")
    assert helpful.max_tokens == 1 and TEMPLATES.get("instruct_keywords").max_tokens == 100
    prompt = helpful.render(INSTANCE, "Blue.")
    assert "Does the model appear to do what it is instructed to?" in prompt
    assert "\nA. Is not relevant at all or has significant discrepancies\n" in prompt
    assert "\nE. Provides brilliant ideas that address the task accurately\n" in prompt
    assert helpful.parse("e").score == 5.0 and helpful.parse("").score == 1.0  # HELM: "" is a substring of A-Z


# --------------------------------------------------------------------------- end to end
@pytest.mark.slow
def test_classic_instruction_following_end_to_end(tmp_path, prefect_server):
    """`helmflow run classic` on the Koala and Vicuna entries, mirrored fixtures: a jury of two offline critics
    (one always picks option A, one answers D) critiques every answer, the model's empty ones too; the board
    cell is the pooled mean of both respondents. Without --judge the same run is n/a, saying why."""
    import pyarrow.parquet as pq
    import yaml

    from helmflow.scenarios.instruction_following import Koala, Vicuna
    from tests.support.cli import run_cli
    from tests.support.lite_fixtures import serve

    raw = tmp_path / "src" / "raw.githubusercontent.com"
    for cls, path, rows in ((Koala, "koala_test_set.jsonl", fx.KOALA),
                            (Vicuna, Vicuna.FILE, fx.VICUNA)):
        target = raw / cls.GIT_REPO / cls.GIT_COMMIT / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(fx.jsonl(rows))
    mirror, storage = tmp_path / "mirror", tmp_path / "store"
    with serve(tmp_path / "src") as host:
        for name in ("koala", "vicuna:category=all"):
            out = run_cli("mirror", name, "--to", str(mirror), env={"HELMFLOW_GITHUB_RAW": f"{host.url}/raw.githubusercontent.com"})
            assert out.returncode == 0, out.stdout + out.stderr
    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"deployments": [
        {"name": "offline/critic-a", "client": "offline", "model": "critic-a",
         "options": {"behavior": "first_option", "answer": "too short"}},
        {"name": "offline/critic-d", "client": "offline", "model": "critic-d",
         "options": {"behavior": "constant", "answer": " d."}}]}))
    env = {"HELMFLOW_MIRROR": str(mirror)}
    common = ["--models", "offline/first-option", "--models-file", str(models), "--storage", str(storage)]
    out = run_cli("run", "classic", "--scenarios", "koala,vicuna", "--judge", "offline/critic-a,offline/critic-d",
                  *common, env=env, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    latest = json.loads((storage / "leaderboards/classic/latest-subset.json").read_text())
    [row] = pq.read_table(f"{latest['uri']}/leaderboard.parquet").to_pylist()
    for scen in ("koala", "vicuna"):
        for q in STATS:  # A is 1, D is 4: each answer's two respondents pooled
            assert row[f"{scen}/{q}"] == pytest.approx(2.5), (scen, q)
    runs = {json.loads(p.read_text())["scenario"]["label"]: p.parent for p in storage.glob("runs/*/run.json")}
    notes = [n for n in pq.read_table(runs["koala"] / "annotations.parquet").to_pylist()
             if n["template"] in TEMPLATE_NAMES]  # not the board's toxicity scorer's
    assert len(notes) == len(fx.KOALA) * len(TEMPLATE_NAMES) * 2  # the empty answers were critiqued too
    assert all(n["judge_request_hash"] and n["error"] is None for n in notes)
    assert {n["raw_output"] for n in notes if n["template"] == "instruct_keywords"} == {"too short", " d."}

    out = run_cli("run", "classic", "--scenarios", "koala", *common, env=env, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    latest = json.loads((storage / "leaderboards/classic/latest-subset.json").read_text())
    [row] = pq.read_table(f"{latest['uri']}/leaderboard.parquet").to_pylist()
    for q in STATS:
        assert (row[f"koala/{q}"], row[f"koala/{q} note"]) == (None, NO_JUDGE), q
