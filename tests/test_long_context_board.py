"""HELM Long Context: RULER's QA synthesis (the same samples as crfm-helm 0.5.16's ``generate_samples`` on these
fixtures at budgets of 1,000 to 100,000 words, draw for draw, checked against the installed helper once; here
its rules are asserted), InfiniteBench and MRCR rows in their raw shapes, the two new metrics by hand, the
board's refusal of runs whose prompts do not fit a deployment's window (no request sent), and `helmflow run
long-context` end to end on mirrored fixtures against the dev server on a real Prefect server."""

from __future__ import annotations

import json
import re

import pyarrow.parquet as pq
import pytest
import yaml

from helmflow.metrics.openai_mrcr import mrcr_ratio
from helmflow.metrics.ruler_qa import string_match_part
from helmflow.scenarios import ScenarioError, get_scenario
from helmflow.scenarios.infinite_bench_en_mc import INSTRUCTIONS, OUTPUT_PREFIX
from helmflow.scenarios.ruler_qa import TEMPLATE, Synthesis, squad_questions, words
from tests.support import long_context_fixtures as fx
from tests.support.cli import run_cli


def _file(tmp_path, name: str, data: bytes) -> str:
    (tmp_path / name).write_bytes(data)
    return str(tmp_path / name)


def test_ruler_squad_keeps_the_question_its_paragraph_and_article_first_within_the_word_budget(tmp_path):
    url = _file(tmp_path, "dev-v2.0.json", fx.squad_dev(6, 5, words=50))
    questions, docs = squad_questions("ruler_squad", url)
    assert len(questions) == 30 and len(docs) == 30  # the unanswerable questions are dropped
    assert questions[7].more_context == [d for d in range(len(docs)) if docs[d].startswith("Para1x")
                                         and d != questions[7].context[0]]
    instances = list(get_scenario("ruler_squad", {"max_num_words": 1000}).load({"dev-v2.0.json": url}))
    assert [i.id for i in instances] == [str(k) for k in range(30)] and {i.split for i in instances} == {"valid"}
    first = instances[6]  # article 1, paragraph 1
    assert [r.text for r in first.references] == ["answer1x1", "answer1x1", "key is answer1x1"]
    assert all(r.correct for r in first.references)
    text = first.input.text
    assert text.endswith("Question: What is the key of paragraph 1-1? Answer:")
    assert words(text) + 32 <= 1000 and "The key is answer1x1." in text
    numbers = [int(n) for n in re.findall(r"^Document (\d+):$", text, re.M)]
    assert numbers == list(range(1, len(numbers) + 1)) and len(numbers) % 10 == 0
    # ten documents: its own paragraph, its article's four others, then five drawn from the rest
    small = next(Synthesis(questions, docs, TEMPLATE, 700).samples(1))[1]
    chosen = re.findall(r"Para(\d+)x\d+", small)
    assert len(chosen) == 10 and chosen.count("0") == 5


def test_ruler_uses_every_document_in_a_budget_larger_than_the_data_reshuffling_its_own_list(tmp_path):
    url = _file(tmp_path, "dev-v2.0.json", fx.squad_dev(2, 3, words=20))
    questions, docs = squad_questions("ruler_squad", url)
    samples = list(Synthesis(questions, list(docs), TEMPLATE, 100_000).samples(3))
    order = [re.findall(r"Para\d+x\d+", text) for _, text, _ in samples]
    assert all(sorted(o) == sorted(re.findall(r"Para\d+x\d+", " ".join(docs))) for o in order)
    # HELM shuffles its document list in place when it uses all of it: each sample sees the last one's order
    assert order[0] != order[1] != order[2]
    with pytest.raises(ScenarioError, match="does not fit in 64 words with 0 documents in 1000 draws"):
        list(get_scenario("ruler_squad", {"max_num_words": 64}).load({"dev-v2.0.json": url}))


def test_ruler_hotpotqa_reads_titled_paragraphs_and_asks_over_them(tmp_path):
    url = _file(tmp_path, "hotpot.json", fx.hotpot_dev(12, words=30))
    instances = list(get_scenario("ruler_hotpotqa", {"max_num_words": 2000}).load(
        {"hotpot_dev_distractor_v1.json": url}))
    assert len(instances) == 12 and [r.text for r in instances[3].references] == ["answer3"]
    text = instances[3].input.text
    assert "Document 1:\n" in text and "\nBridge 3\nBridge 3 leads to city3. " in text and "\nCity 3\n" in text
    assert words(text) + 32 <= 2000


def test_infinite_bench_rows_are_filtered_by_their_words_and_joined_as_helm_does(tmp_path):
    rows = [json.loads(line) for line in fx.infinite_bench_rows("choice", 3, 50).decode().splitlines()]
    rows[1]["context"] = " ".join(["word"] * 200)  # over the budget with its input and options
    url = _file(tmp_path, "c.jsonl", "".join(json.dumps(r) + "\n\n" for r in rows).encode())
    mc = list(get_scenario("infinite_bench_en_mc", {"max_num_words": 120}).load({"longbook_choice_eng.jsonl": url}))
    assert [i.id for i in mc] == ["0", "2"] and mc[0].split == "test"
    assert mc[1].input.text == rows[2]["context"] + "\n\n" + rows[2]["input"]
    assert [r.correct for r in mc[1].references] == [False, False, True, False]
    from helmflow.adapters import adapt

    text = adapt(get_scenario("infinite_bench_en_mc").default_adapter, mc[1:])[0].text()
    # HELM's layout: instructions, a blank line, the novel and question, the lettered options, the request again
    assert text.startswith(INSTRUCTIONS + "\n" + mc[1].input.text + "\nA. The lamp of chapter 2\nB. ")
    assert text.endswith("\nD. The falcon of chapter 2\n\n" + OUTPUT_PREFIX.strip()) and "\n\n\n" not in text
    budget = words(rows[2]["context"]) + words(rows[2]["input"]) + sum(words(o) for o in rows[2]["options"])
    for limit, kept in ((budget, ["0", "2"]), (budget - 1, [])):  # rows 0 and 2 have the same number of words
        assert [i.id for i in get_scenario("infinite_bench_en_mc", {"max_num_words": limit}).load(
            {"longbook_choice_eng.jsonl": url})] == kept
    url = _file(tmp_path, "s.jsonl", fx.infinite_bench_rows("sum", 2, 40))
    summaries = list(get_scenario("infinite_bench_en_sum").load({"longbook_sum_eng.jsonl": url}))
    assert summaries[1].references[0].text.startswith("Summary1 ") and summaries[1].references[0].correct
    assert summaries[1].input.text.endswith("\n\nSummarize the book above in about 1,000 words.")
    (tmp_path / "bad.jsonl").write_text('{"id": 1, "context": "x"}\n')
    with pytest.raises(ScenarioError, match="line 1: .*input"):
        list(get_scenario("infinite_bench_en_sum").load({"longbook_sum_eng.jsonl": str(tmp_path / "bad.jsonl")}))


def test_mrcr_conversations_keep_their_row_number_and_random_string(tmp_path):
    url = _file(tmp_path, "8needle.parquet", fx.mrcr_parquet(5, 400))
    table = pq.read_table(url).to_pylist()
    every = list(get_scenario("openai_mrcr", {"needles": 8}).load({"8needle.parquet": url}))
    assert [i.id for i in every] == [f"8needle{k}" for k in range(5)]
    assert [m.model_dump() for m in every[2].input.messages] == json.loads(table[2]["prompt"])
    assert every[2].extra == {"random_string_to_prepend": table[2]["random_string_to_prepend"]}
    assert every[2].references[0].text == table[2]["answer"]
    sizes = [sum(words(m["content"]) for m in json.loads(r["prompt"])) for r in table]
    limit = sorted(sizes)[2]
    kept = [i.id for i in get_scenario("openai_mrcr", {"needles": 8, "max_num_words": limit}).load(
        {"8needle.parquet": url})]
    assert kept == [f"8needle{k}" for k, n in enumerate(sizes) if n <= limit] and len(kept) == 3


def test_ruler_string_match_and_the_mrcr_ratio_by_hand():
    assert string_match_part(["Denver Broncos", "Broncos"], "The answer is the BRONCOS.") == 1.0
    assert string_match_part(["Denver Broncos"], "Denver") == 0.0
    # "Hello world" against "Hello word": 10 matching characters of 11 + 10
    assert mrcr_ratio("k3yHello world", "k3yHello word", "k3y") == pytest.approx(20 / 21)
    assert mrcr_ratio(" k3yHello word", "k3yHello word", "k3y") == 0.0  # the string must start the answer
    assert mrcr_ratio("k3y", "k3yabc", "k3y") == 0.0


def _plan(tmp_path, window: int):
    from helmflow import pipeline
    from helmflow.plan.compile import plan_board
    from helmflow.plan.spec import load_board
    from helmflow.records import Deployment
    from helmflow.storage import Store

    spec = {"name": "lc", "version": "1", "models": ["offline/echo-long"], "context_overflow": "refuse",
            "scenarios": [{"name": "arithmetic", "label": "arithmetic", "params": {"num_test": 4},
                           "adapter": {"max_train_instances": 0, "instructions": " ".join(["read"] * 300)}}]}
    echo = Deployment(name="offline/echo-long", client="offline", model="echo", context_window=window,
                      options={"behavior": "echo"})
    (plan,) = plan_board(load_board(spec), {echo.name: echo}).runs
    store = Store(str(tmp_path / f"store{window}"))
    prepared = pipeline.prepare_scenario(store, plan.scenario)
    return store, plan, prepared


def test_a_run_whose_prompts_pass_the_window_is_refused_before_any_request(tmp_path):
    from helmflow import layout, pipeline
    from helmflow.query import RunRefused

    store, plan, prepared = _plan(tmp_path, 200)
    assert plan.refuse_overflow
    with pytest.raises(RunRefused) as err:
        pipeline.query_pair(store, plan, prepared.prompts)
    line = str(err.value)
    assert "\n" not in line and line.startswith("arithmetic x offline/echo-long: refused: 4 of 4 prompts do not fit")
    assert "context window of 200 tokens with " in line and "by whitespace); no request sent" in line
    longest = max(len(p.split()) for p in pq.read_table(store.inside(pipeline.prompts_key(plan.scenario)))["query"]
                  .to_pylist()) + 300
    assert f"the longest has {longest:,} prompt tokens" in line
    assert not store.exists(f"{layout.query_dir(plan.query_key)}/completions.parquet")
    assert not store.exists(layout.journal_dir(plan.deployment.name))  # nothing was asked, so nothing answered
    store, plan, prepared = _plan(tmp_path, 4096)  # the same prompts in a window they fit: sent as they are
    query = pipeline.query_pair(store, plan, prepared.prompts)
    assert (query.sent, query.num_requests) == (4, 4)


def test_reproduce_long_context_explains_the_refusal_and_the_wording():
    out = run_cli("reproduce", "long-context", "--explain")
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    assert "is refused before any request; HELM cuts generation prompts from the right" in text
    assert "helmflow's wording of RULER's QA template" in text


@pytest.mark.slow
def test_helmflow_run_long_context_end_to_end_refusing_the_small_window(tmp_path, prefect_server, dev_server):
    from tests.support.hub_server import HubServer
    from tests.support.lite_fixtures import serve

    mirror, storage, src = tmp_path / "mirror", tmp_path / "store", tmp_path / "src"
    files = fx.sources(words=4000, rows=3)
    with HubServer(tmp_path / "hub") as hub:
        for path, data in files.items():
            if path.startswith("huggingface.co/"):
                repo, rev_path = path.removeprefix("huggingface.co/datasets/").split("/resolve/")
                revision, name = rev_path.split("/", 1)
                hub.add_file(repo, revision, name, data)
            else:
                (src / path).parent.mkdir(parents=True, exist_ok=True)
                (src / path).write_bytes(data)
        with serve(src) as host:
            out = run_cli("mirror", "long-context", "--to", str(mirror),
                          env={"HELMFLOW_SOURCE_HOST": host.url, "HF_ENDPOINT": hub.url})
    assert out.returncode == 0, out.stdout + out.stderr
    wide, narrow = dev_server.scoped(f"{dev_server.scope}-wide"), dev_server.scoped(f"{dev_server.scope}-narrow")
    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"deployments": [
        {"name": "dev/wide", "client": "openai-compatible", "model": "dev-model", "base_url": wide.openai_url,
         "context_window": 1_000_000},
        {"name": "dev/narrow", "client": "openai-compatible", "model": "dev-model", "base_url": narrow.openai_url,
         "context_window": 3000}]}))  # above MRCR's 2,000 output tokens, below every prompt
    out = run_cli("run", "long-context", "--models", "dev/wide,dev/narrow", "--models-file", str(models),
                  "--storage", str(storage), env={"HELMFLOW_MIRROR": str(mirror)}, timeout=600)
    assert out.returncode == 1, out.stdout + out.stderr  # a partial release: the narrow window's runs are refused
    text = out.stdout + out.stderr
    refused = [line for line in text.splitlines() if "refused:" in line]
    labels = ("ruler_squad", "ruler_hotpotqa", "infinite_bench_en_mc", "infinite_bench_en_sum", "openai_mrcr")
    assert len(refused) == 5 and "Traceback" not in text, text  # one line per refused run, no task tracebacks
    for label in labels:
        assert sum(f"RunRefused: {label} x dev/narrow: refused:" in line and line.endswith("no request sent")
                   for line in refused) == 1, text
    assert narrow.requests == 0  # no request of a refused run reached the server
    runs = [json.loads(p.read_text()) for p in storage.glob("runs/*/run.json")]
    assert sorted(r["scenario"]["label"] for r in runs) == sorted(labels)
    assert {r["deployment"]["name"] for r in runs} == {"dev/wide"}
    assert wide.requests == sum(r["counts"]["requests"] for r in runs) > 0
    latest = json.loads((storage / "leaderboards/long-context/latest-subset-partial.json").read_text())
    rows = {r["deployment"]: r for r in pq.read_table(f"{latest['uri']}/leaderboard.parquet").to_pylist()}
    scores = [rows["dev/wide"][label] for label in labels]
    assert rows["dev/wide"]["mean_score"] == pytest.approx(sum(scores) / 5)  # HELM's mean aggregation
    assert all(rows["dev/narrow"][label] is None for label in labels)  # refused: no cell
