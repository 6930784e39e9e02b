"""Log-likelihood multiple choice (HELM's ``multiple_choice_separate_original``) and token logprobs
from every kind of deployment: the adapter, the echo requests, the scoring on hand-checked cases,
the offline, dev-server (real ``openai`` SDK over HTTP) and Hugging Face clients, and a board
through the CLI."""

from __future__ import annotations

import asyncio
import json
import math

import pytest
import yaml

from helmflow.adapters import adapt, template_versions
from helmflow.clients import make_client
from helmflow.metrics import METRICS
from helmflow.metrics.base import MetricInput
from helmflow.metrics.reference import continuation_logprob
from helmflow.records import AdapterSpec, Completion, Deployment, Input, Instance, Reference, RequestBody
from helmflow.request_builder import build_requests
from helmflow.versions import model_version, prompt_version, request_hash
from tests.support.cli import run_cli

SPEC = AdapterSpec(method="multiple_choice_separate_original", input_prefix="Question: ", input_suffix="\nAnswer:",
                   max_train_instances=0)
INSTANCE = Instance(id="q1", input=Input(text="Alice owns a cat . What does Alice own ?"),
                    references=[Reference(text=" dog"), Reference(text=" cat", correct=True), Reference(text=" fish")])
OFFLINE = Deployment(name="offline/solver-noisy", client="offline", model="solver", options={"behavior": "solver", "accuracy": 0.7})


def _run(coro):
    return asyncio.run(coro)


def test_one_echo_request_per_option_and_a_prompt_version_of_its_own():
    [prompt] = adapt(SPEC, [INSTANCE])
    assert prompt.text() == "Question: Alice owns a cat . What does Alice own ?\nAnswer:"
    requests = build_requests([prompt], SPEC, OFFLINE)
    assert [r.continuation for r in requests] == [" dog", " cat", " fish"]
    assert [r.body.prompt for r in requests] == [prompt.text() + o for o in (" dog", " cat", " fish")]
    assert all(r.body.echo and r.body.logprobs and r.body.max_tokens == 0 for r in requests)
    assert len({r.request_hash for r in requests}) == 3
    joint = SPEC.override(method="multiple_choice_joint")
    assert prompt_version(SPEC, template_versions(SPEC)) != prompt_version(joint, template_versions(joint))


def test_fields_added_for_echo_and_logprobs_leave_existing_hashes_alone():
    body = RequestBody(model="m", prompt="p", max_tokens=5, temperature=0.0)
    assert "echo" not in body.model_dump(mode="json", exclude_none=True)
    assert request_hash(body, 0) == request_hash(body.model_copy(update={"echo": None}), 0)
    plain = Deployment(name="d", client="openai-compatible", model="m", base_url="http://127.0.0.1:1/v1")
    asked = plain.model_copy(update={"logprobs": True})
    assert model_version(plain) != model_version(asked)
    [prompt] = adapt(AdapterSpec(max_train_instances=0), [INSTANCE])
    assert not build_requests([prompt], AdapterSpec(), plain)[0].body.logprobs
    assert build_requests([prompt], AdapterSpec(), asked)[0].body.logprobs


def _echo(option: str, logprobs: list[float], offsets: list[int] | None, tokens: list[str]):
    [prompt] = adapt(SPEC, [INSTANCE])
    request = next(r for r in build_requests([prompt], SPEC, OFFLINE) if r.continuation == option)
    return request, Completion(request_hash=request.request_hash, tokens=tokens, logprobs=logprobs, text_offsets=offsets)


def test_an_options_log_likelihood_is_read_from_its_own_tokens():
    context = len("Question: Alice owns a cat . What does Alice own ?\nAnswer:")
    # offsets: the last two tokens overlap " cat" (one of them straddles the boundary)
    request, completion = _echo(" cat", [0.0, -0.5, -0.25, -0.75], [0, 10, context - 1, context + 2],
                                ["Question:", " ...", "r: c", "at"])
    assert continuation_logprob(request, completion) == (-1.0, 2)
    # without offsets: tokens from the end until they cover the option's 4 characters
    request, completion = _echo(" cat", [-9.0, -0.5, -0.25], None, ["Answer:", " c", "at"])
    assert continuation_logprob(request, completion) == (-0.75, 2)
    request, completion = _echo(" cat", [], None, [])
    assert continuation_logprob(request, completion) is None


def test_the_best_option_per_token_wins_and_calibration_is_the_softmax():
    pairs = [_echo(" dog", [-3.0], None, [" dog"]), _echo(" cat", [-0.2, -0.2], None, [" c", "at"]),
             _echo(" fish", [-1.0, -2.0], None, [" fi", "sh"])]
    x = MetricInput(INSTANCE, [p[0] for p in pairs], [p[1] for p in pairs], SPEC)
    assert METRICS.get("multiple_choice_accuracy").fn(x) == {"multiple_choice_accuracy": 1.0}
    assert METRICS.get("exact_match").fn(x) == {"exact_match": 1.0}
    scores = [-3.0, -0.2, -1.5]  # mean logprob per token
    expected = math.exp(-0.2) / sum(math.exp(s) for s in scores)
    stats = METRICS.get("calibration").fn(x)
    assert stats == {"logprobs_available": 1.0, "max_prob": pytest.approx(expected), "max_prob_correct": 1.0}
    # one option without logprobs: no prediction and no calibration, never a 0
    pairs[2] = _echo(" fish", [], None, [])
    x = MetricInput(INSTANCE, [p[0] for p in pairs], [p[1] for p in pairs], SPEC)
    assert METRICS.get("multiple_choice_accuracy").fn(x) == {}
    assert METRICS.get("calibration").fn(x) == {"logprobs_available": 0.0}


def test_the_offline_solver_scores_the_option_it_believes():
    client = make_client(Deployment(name="offline/solver", client="offline", model="solver", options={"behavior": "solver"}))
    for option, expected in (("5", math.log(0.99)), ("6", math.log(0.01 / 3))):
        prompt = "What is 2 + 3?\nAnswer: " + option
        result = _run(client.complete(RequestBody(model="solver", prompt=prompt, max_tokens=0, temperature=0.0,
                                                  logprobs=True, echo=True)))
        assert "".join(result.tokens) == prompt and result.text == ""
        assert result.text_offsets == [0, 4, 7, 9, 11, 14, 22]
        assert result.logprobs[-1] == pytest.approx(expected)
        assert all(math.log(0.5) <= v < 0 for v in result.logprobs[:-1])


# --------------------------------------------------------------------------- calibrated (GPT-3's section 2.4)
CALIBRATED = AdapterSpec(method="multiple_choice_separate_calibrated", input_prefix="", input_suffix=" ",
                         max_train_instances=0)
CAT = Instance(id="i1", input=Input(text="The cat sat on the"),
               references=[Reference(text="mat", correct=True), Reference(text="moon")])
# crfm-helm 0.5.16's MultipleChoiceCalibratedAdapter on CAT, with HELM's spec for it
# (get_multiple_choice_separate_adapter_spec: input prefix and suffix "", output prefix " "), run in a
# throwaway venv: [reference index, request mode, prompt], without and with instructions ("Pick the word.\n",
# as HELM's run specs format them)
HELM_CALIBRATED = {
    "": [[0, "original", "The cat sat on the mat"], [0, "calibration", "Answer: mat"],
         [1, "original", "The cat sat on the moon"], [1, "calibration", "Answer: moon"]],
    "Pick the word.": [[0, "original", "Pick the word.\n\nThe cat sat on the mat"],
                       [0, "calibration", "Pick the word.\n\nAnswer: mat"],
                       [1, "original", "Pick the word.\n\nThe cat sat on the moon"],
                       [1, "calibration", "Pick the word.\n\nAnswer: moon"]],
}


@pytest.mark.parametrize("instructions", sorted(HELM_CALIBRATED))
def test_calibrated_requests_are_helms_option_by_option(instructions):
    spec = CALIBRATED.override(instructions=instructions)
    requests = build_requests(adapt(spec, [CAT]), spec, OFFLINE)
    ours = [[["mat", "moon"].index(r.continuation), r.request_mode or "original", r.body.prompt] for r in requests]
    assert ours == HELM_CALIBRATED[instructions]
    assert all(r.body.echo and r.body.max_tokens == 0 for r in requests) and len({r.request_hash for r in requests}) == 4
    original = CALIBRATED.override(method="multiple_choice_separate_original")
    assert prompt_version(CALIBRATED, template_versions(CALIBRATED)) != prompt_version(original, template_versions(original))


def _scored(spec: AdapterSpec, logprobs: dict[tuple[str, str | None], list[float]]) -> MetricInput:
    """CAT's requests under ``spec``, each answered with ``logprobs`` for its option's tokens (one per word)."""
    requests = build_requests(adapt(spec, [CAT]), spec, OFFLINE)
    completions = [Completion(request_hash=r.request_hash, tokens=[" " + r.continuation],
                              logprobs=logprobs[(r.continuation, r.request_mode)], text_offsets=None)
                   for r in requests]
    return MetricInput(CAT, requests, completions, spec)


def test_calibrated_scores_are_helms_difference_of_sums():
    """HELM's basic_metrics: score = logprob(option | prompt) - logprob(option | "Answer:"), summed over
    the option's tokens. Here "moon" is likelier after the prompt (-1.0 against -2.0) but far likelier
    still after "Answer:" alone (-0.5 against -4.0): calibrated, "mat" wins (2.0 against -0.5)."""
    logprobs = {("mat", None): [-2.0], ("mat", "calibration"): [-4.0],
                ("moon", None): [-1.0], ("moon", "calibration"): [-0.5]}
    x = _scored(CALIBRATED, logprobs)
    assert METRICS.get("exact_match").fn(x) == {"exact_match": 1.0}
    expected = math.exp(2.0) / (math.exp(2.0) + math.exp(-0.5))  # HELM's max of the softmax of the scores
    assert METRICS.get("calibration").fn(x)["max_prob"] == pytest.approx(expected)
    uncalibrated = _scored(CALIBRATED.override(method="multiple_choice_separate_original"),
                           {k: v for k, v in logprobs.items() if k[1] is None})
    assert METRICS.get("exact_match").fn(uncalibrated) == {"exact_match": 0.0}  # per token, "moon" wins
    logprobs[("moon", "calibration")] = []  # a calibration request without logprobs: no prediction, never a 0
    assert METRICS.get("exact_match").fn(_scored(CALIBRATED, logprobs)) == {}


# --------------------------------------------------------------------------- over HTTP and through the CLI
@pytest.mark.slow
def test_dev_server_echoes_logprobs_on_the_openai_wire(dev_server):
    import openai

    sdk = openai.OpenAI(base_url=dev_server.openai_url, api_key="none", max_retries=0)
    prompt = "the cat saw the cat"
    resp = sdk.completions.create(model="m", prompt=prompt, max_tokens=0, echo=True, logprobs=1)
    choice = resp.choices[0]
    assert choice.text == prompt and "".join(choice.logprobs.tokens) == prompt
    assert choice.logprobs.text_offset == [0, 3, 7, 11, 15]
    lps = choice.logprobs.token_logprobs
    assert lps[0] is None and lps[3] == -0.1 and lps[4] == -0.1 and all(-3.3 < v <= -2.3 for v in lps[1:3])
    with pytest.raises(openai.BadRequestError):
        sdk.completions.create(model="m", prompt=prompt, max_tokens=0, logprobs=1)  # 0 needs echo
    # a deployment that asks for logprobs gets the chat tokens' logprobs through the client
    chat = make_client(Deployment(name="dev/chat", client="openai-compatible", model="m", base_url=dev_server.openai_url,
                                  logprobs=True))
    [prompt_] = adapt(AdapterSpec(max_train_instances=0), [INSTANCE])
    [request] = build_requests([prompt_], AdapterSpec(), chat.deployment)
    result = _run(chat.complete(request.body))
    assert request.body.logprobs and result.tokens == ["Output:"]  # the echo policy: the prompt's last line
    assert len(result.logprobs) == 1 and -2.3 <= result.logprobs[0] < 0
    # the chat endpoint cannot score a prompt
    from helmflow.clients.base import PermanentError

    with pytest.raises(PermanentError, match="completions endpoint"):
        _run(chat.complete(RequestBody(model="m", prompt="x", max_tokens=0, temperature=0.0, logprobs=True, echo=True)))


@pytest.mark.slow
def test_a_board_scores_options_by_log_likelihood_through_the_cli(prefect_server, dev_server, tmp_path):
    rows = [{"id": f"q{i}", "question": f"{who} owns a {pet} . What does {who} own ?", "choices": opts, "answer": pet}
            for i, (who, pet, opts) in enumerate([
                ("Alice", "cat", ["dog", "cat", "fish"]), ("Bob", "fish", ["fish", "bird", "cow"]),
                ("Carol", "cow", ["horse", "goat", "cow"]), ("Dan", "bird", ["bird", "ant", "bee"]),
                ("Eve", "bee", ["ant", "bee", "fox"]), ("Fay", "fox", ["fox", "owl", "eel"])])]
    data = tmp_path / "pets.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"deployments": [
        {"name": "dev/base", "client": "openai-compatible", "model": "m", "base_url": dev_server.openai_url,
         "options": {"endpoint": "completions"}},
    ]}))
    separate = {"method": "multiple_choice_separate_original", "max_train_instances": 0}
    board = tmp_path / "board.yaml"
    board.write_text(yaml.safe_dump({
        "name": "loglik", "version": "1", "models": ["dev/base", "offline/solver", "offline/solver-noisy"],
        "scenarios": [
            {"name": "custom", "params": {"path": str(data), "format": "jsonl", "question": "question",
                                         "choices": "choices", "answer": "answer", "id": "id"},
             "adapter": separate, "metrics": ["multiple_choice_accuracy", "calibration"],
             "main_metric": "multiple_choice_accuracy", "label": "pets"},
            {"name": "arithmetic", "params": {"digits": 2, "ops": "+", "choices": 4}, "adapter": separate,
             "metrics": ["multiple_choice_accuracy", "calibration"], "main_metric": "multiple_choice_accuracy",
             "label": "arith"},
        ],
        "max_instances": 20,
        "metric_groups": [{"name": "calibration", "columns": [{"scenario": "arith", "metric": "ece_10_bin",
                                                               "lower_is_better": True}]}],
    }))
    root = tmp_path / "store"
    args = ["run", "--board-file", str(board), "--models-file", str(models), "--storage", str(root)]
    out = run_cli(*args)
    assert out.returncode == 0, out.stdout + out.stderr
    # one echo request per option: 6 questions x 3 options on pets, 20 x 4 on arithmetic
    assert dev_server.stats()["by_endpoint"] == {"completions": 6 * 3 + 20 * 4}
    runs = {(r["deployment"]["name"], r["scenario"]["label"]): r for r in map(json.loads, map(
        lambda p: p.read_text(), root.glob("runs/*/run.json")))}
    assert runs[("dev/base", "pets")]["score"] == 1.0  # the dev server's copying rule prefers the word it has seen
    assert runs[("offline/solver", "arith")]["score"] == 1.0
    assert 0.4 < runs[("offline/solver-noisy", "arith")]["score"] < 1.0
    assert runs[("dev/base", "pets")]["counts"]["requests"] == 18
    assert "arith/ece_10_bin" in out.stdout
    again = run_cli(*args)
    assert again.returncode == 0 and dev_server.stats()["by_endpoint"] == {"completions": 98}  # cached: nothing sent


@pytest.mark.slow
def test_a_local_checkpoint_scores_its_prompt_in_one_forward_pass(tmp_path):
    torch = pytest.importorskip("torch", reason="the huggingface client needs torch")
    pytest.importorskip("transformers")
    from tests.support.tiny_hf import POSITIONS, build_tiny_model

    folder = build_tiny_model(tmp_path / "tiny")
    client = make_client(Deployment(name="tiny", client="huggingface", model=str(folder), tokenizer=f"hf:{folder}",
                                    context_window=POSITIONS, options={"device": "cpu"}))
    prompt = "What is 12 + 30? 42"
    result = _run(client.complete(RequestBody(model=str(folder), prompt=prompt, max_tokens=0, temperature=0.0,
                                              logprobs=True, echo=True)))
    lm = client.local_model()
    ids = lm.tokenizer(prompt)["input_ids"]
    with torch.no_grad():
        steps = lm.model(torch.tensor([ids])).logits[0].log_softmax(-1)
    assert result.logprobs == pytest.approx([0.0] + [float(steps[i - 1, ids[i]]) for i in range(1, len(ids))], abs=1e-4)
    assert "".join(result.tokens) == prompt and result.text == "" and result.output_tokens == 0
    assert [prompt[o:o + len(t)] for o, t in zip(result.text_offsets, result.tokens)] == result.tokens
