"""HELM Classic's targeted scenarios added after the core: entity matching, data imputation, the Pile, synthetic
efficiency and ICE, compared with
crfm-helm 0.5.16's own scenario classes run on the same fixture sources (``tests/data/helm_classic_targeted.json``,
written by ``benchmarks/helm_classic_targeted_parity.py``), their prompts and their bad input."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from pathlib import Path

import pytest

from helmflow.adapters import ADAPTERS
from helmflow.scenarios import ScenarioError, get_scenario
from helmflow.scenarios.base import Scenario
from tests.support.classic_fixtures import (
    EM_HOST,
    EM_STATE,
    IMPUTATION,
    PILE,
    PILE_INDICES,
    classic_files,
    em_tables,
    ice_mirror,
    pile_docs,
)

HELM = json.loads((Path(__file__).parent / "data" / "helm_classic_targeted.json").read_text())["runs"]


def fixture_paths(tmp_path: Path, scen: Scenario, files: dict[str, bytes] | None = None) -> dict[str, str]:
    """The scenario's sources from the fixture tree, by file name, as the data path hands them to ``load``."""
    files = classic_files() if files is None else files
    out = {}
    for source in scen.sources():
        path = tmp_path / source.filename
        path.write_bytes(files[source.url.split("://", 1)[1]])
        out[source.filename] = str(path)
    return out


def rows(instances) -> list:
    return [[i.split, i.input.text, [r.text for r in i.references]] for i in instances]


def digest(rows: list) -> str:
    return hashlib.sha256(json.dumps(rows, ensure_ascii=False).encode()).hexdigest()


@pytest.mark.parametrize("run", list(HELM))
def test_targeted_scenarios_are_helms(tmp_path, run):
    """Our loader's instances equal HELM's own on the same files. Entity matching: the train pairs cut to as many
    non-matches as matches from HELM's pinned random state (Beer, Abt_Buy) or seed 0 (Dirty_iTunes_Amazon, absent
    from it); imputation: pandas' 10% / 20% splits; ``nan`` for empty cells. The Pile: the set's documents through
    HELM's CSV cache (CR and CRLF read as LF), at lm_perplexity's sorted unique indices (BookCorpus2: all)."""
    name, _, spec = run.partition(":")
    params = dict(item.split("=", 1) for item in spec.split(","))
    value = next(iter(params.values()))
    scen = get_scenario(name, {k: int(v) if v.isdigit() else v for k, v in params.items()})
    if name == "ice":
        ice_mirror(tmp_path / "ice")
        instances = scen.load({s.filename: str(tmp_path / "ice" / s.filename) for s in scen.sources()})
    else:
        instances = scen.load(fixture_paths(tmp_path, scen))
    ours = rows(instances)
    assert ours == HELM[run]["rows"] and digest(ours) == HELM[run]["sha256"]
    assert [i.id for i in instances] == [f"id{k}" for k in range(len(instances))]
    if name == "synthetic_efficiency":
        assert len(instances) == 10 and all(i.split == "test" and "\r" not in i.input.text for i in instances)
    elif name == "ice":
        assert instances and all(i.split == "test" and not i.references for i in instances)
        assert not any("<#>" in i.input.text or "<O>" in i.input.text or "\r" in i.input.text for i in instances)
    elif name == "the_pile":
        assert all(i.split == "test" and not i.references and "\r" not in i.input.text for i in instances)
        assert all(i.input.text.startswith(value) for i in instances)
        assert scen.default_adapter.method == "language_modeling" and scen.main_metric == "bits_per_byte"
    else:
        assert all(len(i.references) == 1 and i.references[0].correct for i in instances)
        assert {i.split for i in instances} == {"train", "valid", "test"}


def test_entity_matching_train_pairs_are_balanced_and_drawn_from_the_pinned_state(tmp_path):
    scen = get_scenario("entity_matching", {"dataset": "Beer"})
    paths = fixture_paths(tmp_path, scen)
    train = [i for i in scen.load(paths) if i.split == "train"]
    labels = [i.references[0].text for i in train]
    assert labels.count("Yes") == labels.count("No") == 4  # 4 matches among the 10 fixture pairs
    assert labels == ["No"] * 4 + ["Yes"] * 4  # pandas' groupby: label 0 first
    assert any("ABV: nan" in i.input.text for i in scen.load(paths))  # an empty cell, as pandas shows it
    # another pinned state draws other non-matches
    states = json.loads(classic_files()[EM_STATE])
    states["Beer"] = states["Abt_Buy"]
    (tmp_path / "entity_matching_scenario_fixed_random_state.json").write_text(json.dumps(states))
    assert [i.input.text for i in scen.load(paths) if i.split == "train"] != [i.input.text for i in train]


def test_entity_matching_and_imputation_prompts_are_helms(tmp_path):
    """HELM's get_generation_adapter_spec(instructions, output_noun="Answer"): no input noun, ``Answer:``."""
    for name, params, instructions in (
            ("entity_matching", {"dataset": "Beer"}, "Are Product A and Product B the same? Yes or No?"),
            ("entity_data_imputation", {"dataset": "Restaurant"}, "What is the missing value?")):
        scen = get_scenario(name, params)
        instances = scen.load(fixture_paths(tmp_path, scen))
        spec = scen.default_adapter
        train, query = instances[:2], next(i for i in instances if i.split == "test")
        prompt = ADAPTERS.get(spec.method).fn(spec, query, train)
        blocks = [f"{i.input.text}\nAnswer: {i.references[0].text}\n" for i in train]
        assert prompt.text() == "\n".join([instructions + "\n", *blocks, f"{query.input.text}\nAnswer:"])
        assert (spec.max_train_instances, spec.generation.max_tokens, spec.generation.stop) == (5, 5, ["\n"])
        assert scen.main_metric == "quasi_exact_match"
    assert query.input.text.endswith(". city?") and "class" not in query.input.text


def test_entity_matching_sources_are_helms_urls():
    scen = get_scenario("entity_matching", {"dataset": "Dirty_iTunes_Amazon"})
    assert [s.url for s in scen.sources()] == [
        "http://pages.cs.wisc.edu/~anhai/data1/deepmatcher_data/Dirty/iTunes-Amazon/dirty_itunes_amazon_exp_data.zip",
        "https://worksheets.codalab.org/rest/bundles/0x4d0a972e99c848d2ab3ecf129bb77d29/contents/blob/"]
    assert get_scenario("entity_data_imputation", {"dataset": "Buy"}).sources()[0].url.endswith(
        "/entity_data_imputation/Abt-Buy.zip")
    with pytest.raises(ValueError):
        get_scenario("entity_matching", {"dataset": "Not_A_Dataset"})


def test_entity_matching_bad_input_is_one_clear_error(tmp_path):
    files = classic_files()
    key = f"{EM_HOST}/Structured/Beer/beer_exp_data.zip"
    scen = get_scenario("entity_matching", {"dataset": "Beer"})
    tables = em_tables("Beer")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in tables.items():
            if name != "valid.csv":
                z.writestr(f"exp_data/{name}", data)
    with pytest.raises(ScenarioError, match="has no valid.csv"):
        scen.load(fixture_paths(tmp_path, scen, {**files, key: buf.getvalue()}))
    with pytest.raises(ScenarioError, match="not DeepMatcher's zip"):
        scen.load(fixture_paths(tmp_path, scen, {**files, key: b"not a zip"}))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in tables.items():
            z.writestr(name, data.replace(b"label", b"match") if name == "test.csv" else data)  # no top folder
    with pytest.raises(ScenarioError, match="test.csv or its tables lack column 'label'"):
        scen.load(fixture_paths(tmp_path, scen, {**files, key: buf.getvalue()}))
    imputation = get_scenario("entity_data_imputation", {"dataset": "Buy"})
    with pytest.raises(ScenarioError, match="has no Buy.csv"):
        imputation.load(fixture_paths(tmp_path, imputation, {**files, f"{IMPUTATION}/Abt-Buy.zip": buf.getvalue()}))


def test_the_pile_keeps_helms_indices_and_refuses_bad_input(tmp_path):
    import zstandard

    from tests.support.lite_fixtures import jsonl

    scen = get_scenario("the_pile", {"subset": "Enron Emails"})
    assert [s.filename for s in scen.sources()] == ["test.jsonl.zst", "enron-group0.json"]
    assert [s.filename for s in get_scenario("the_pile", {"subset": "BookCorpus2"}).sources()] == ["test.jsonl.zst"]
    files = classic_files()
    enron = [d["text"].replace("\r\n", "\n").replace("\r", "\n") for d in pile_docs()
             if d["meta"]["pile_set_name"] == "Enron Emails"]
    indices = json.loads(files[f"{PILE_INDICES}/enron/group0.json"])
    assert [i.input.text for i in scen.load(fixture_paths(tmp_path, scen))] == [enron[k] for k in sorted(set(indices))]
    too_far = {**files, f"{PILE_INDICES}/enron/group0.json": json.dumps([0, 99]).encode()}
    with pytest.raises(ScenarioError, match="names document 99, but .* has 6 Enron Emails documents"):
        scen.load(fixture_paths(tmp_path, scen, too_far))
    bad = {**files, PILE: zstandard.ZstdCompressor().compress(jsonl([{"text": "x", "meta": {"pile_set_name": "Y"}}]))}
    with pytest.raises(ScenarioError, match="line 1 is not a Pile document .*pile_set_name 'Y'"):
        scen.load(fixture_paths(tmp_path, scen, bad))
    with pytest.raises(ScenarioError, match="is not zstd-compressed"):
        scen.load(fixture_paths(tmp_path, scen, {**files, PILE: b"plain text"}))
    with pytest.raises(ValueError):
        get_scenario("the_pile", {"subset": "Wikipedia"})


def test_synthetic_efficiency_prompt_is_the_file_alone_with_the_sweeps_output_length(tmp_path):
    """HELM's get_completion_adapter_spec(max_tokens=num_output_tokens): the prompt file's text and nothing else,
    zero-shot, temperature 0, no stop sequence; ten files per prompt size, named as HELM's bundle names them."""
    scen = get_scenario("synthetic_efficiency", {"num_prompt_tokens": 256, "num_output_tokens": 16})
    assert [s.filename for s in scen.sources()][:2] == [
        "num_prompt_tokens=256,tokenizer=huggingface_gpt2,id=0.txt",
        "num_prompt_tokens=256,tokenizer=huggingface_gpt2,id=1.txt"]
    assert scen.sources()[0].url == ("https://worksheets.codalab.org/rest/bundles/0x17a361bc066b4b0e87d968069759d361/"
                                     "contents/blob/num_prompt_tokens=256,tokenizer=huggingface_gpt2,id=0.txt")
    instances = scen.load(fixture_paths(tmp_path, scen))
    assert len(instances) == 10 and all(i.split == "test" and [(r.text, r.correct) for r in i.references] == [
        ("", True)] for i in instances)
    assert any("\nand " in i.input.text for i in instances) and not any("\r" in i.input.text for i in instances)
    spec = scen.default_adapter
    prompt = ADAPTERS.get(spec.method).fn(spec, instances[1], [])
    assert prompt.text() == instances[1].input.text
    assert (spec.max_train_instances, spec.generation.max_tokens, spec.generation.stop, spec.generation.temperature,
            spec.generation.num_outputs) == (0, 16, [], 0.0, 1)
    assert scen.main_metric == "inference_denoised_runtime"
    with pytest.raises(ValueError):
        get_scenario("synthetic_efficiency", {"num_prompt_tokens": 100})


def test_ice_reads_helms_folders_and_metadata(tmp_path):
    """HELM's ICE: the pinned order where it has the corpus folder (Hong Kong), else sorted; gender= alone reads
    Canada, Hong Kong, India and the USA, a text kept when one of its .xls gender columns or every one of its .hdr
    gender tags has that gender; a text
    code matches as a prefix (HELM's re.match), so W2A-011 also selects W2A-0110."""
    from helmflow.scenarios.ice import preprocess

    ice_mirror(tmp_path)

    def texts(**params):
        scen = get_scenario("ice", params)
        return scen, scen.load({s.filename: str(tmp_path / s.filename) for s in scen.sources()})

    scen, hk = texts(subset="hk")
    assert [s.filename for s in scen.sources()] == ["ice_scenario_pinned_file_order.json", "ice-hk.zip"]
    assert scen.sources()[1].gated and scen.default_adapter.method == "language_modeling"
    assert ["HK:" + i.input.text.split("the (old) ")[1].split(" ")[0] for i in hk] == [
        "HK:market", "HK:match", "HK:bus", "HK:bus", "HK:rain"]  # W2A-011, S1A-002, W2A-0110, S1A-001, W1A-010
    scen, female = texts(gender="female")
    assert [s.filename for s in scen.sources()][1:] == ["ice-can.zip", "ice-hk.zip", "ice-ind.zip", "ice-usa.zip"]
    # .xls: any of the sheet's gender columns (can: S2A-002 F, W1A-003 female/F, W2B-004 male/F; the second sheet
    # of Canada's spoken file unread; hk: S1A-002 f, W1A-010 F); .hdr: every tag (ind: S2A-005 F F, W2C-007 F;
    # usa: W2A-002 F F, not W2B-003 M F)
    assert len(female) == 3 + 2 + 2 + 1
    assert len(texts(gender="male")[1]) == 7
    assert len(texts(subset="ea")[1]) == 5  # three files, five text codes
    assert all(i.input.text.startswith("late again") for i in hk)  # HELM's greedy <ICE.+> untagging, kept
    assert preprocess("  <#> a <,> b &ersand; c <O>x</O>d <-> y</-> ") == "a, b & c d"
    with pytest.raises(ValueError, match="cannot be filtered through metadata"):
        get_scenario("ice", {"subset": "ea", "gender": "male"})
    (tmp_path / "ice-usa.zip").write_bytes(b"nope")
    with pytest.raises(ScenarioError, match="is not a zip of an ICE subset's folder"):
        texts(subset="usa")
