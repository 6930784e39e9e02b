"""Perturbations: HELM parity on our fixture texts, hand-checked cases, versions that follow the data."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from helmflow.perturbations import PERTURBATIONS, SETS, PerturbationError, data_sha256, resolve
from helmflow.records import ChatMessage, ContentPart, Input, Instance, Reference

DATA = Path(__file__).parent / "data"
FIXTURE = [json.loads(x) for x in (DATA / "perturbation_fixture.jsonl").read_text().splitlines()]
EXPECTED = [json.loads(x) for x in (DATA / "perturbation_parity.jsonl").read_text().splitlines()]


def _variant(name: str):
    """helmflow's perturbation for a name of the parity file (``*_half``/``*_fixture``: other parameters)."""
    if name in ("misspellings_half", "typos_half"):
        return dataclasses.replace(PERTURBATIONS.get(name.removesuffix("_half")), params={"prob": 0.5})
    if name.startswith("dialect_fixture"):
        prob = 0.5 if name.endswith("half") else 1.0
        return dataclasses.replace(PERTURBATIONS.get("dialect"), data=(),
                                   params={"prob": prob, "mapping": str(DATA / "dialect_fixture_mapping.json")})
    return PERTURBATIONS.get(name)


def _instance(row: dict) -> Instance:
    return Instance(id=row["id"], input=Input(text=row["input"]),
                    references=[Reference(text=r["text"], correct=r["correct"]) for r in row["references"]])


def test_parity_file_covers_every_perturbation_and_fixture():
    names = {r["perturbation"] for r in EXPECTED}
    assert names >= {"lowercase", "contraction", "expansion", "misspellings", "space", "filler_words", "mild_mix",
                     "gender", "gender_terms", "person_name", "dialect_fixture", "extra_space", "typos",
                     "typos_half"}
    assert len(FIXTURE) >= 40 and len(EXPECTED) == len(names) * len(FIXTURE)


@pytest.mark.parametrize("name", sorted({r["perturbation"] for r in EXPECTED}))
def test_perturbed_texts_equal_helms(name):
    """Our port gives HELM 0.5.16's own output, text for text, for the same instance ids (the generator
    is ``random.Random(instance.id)``), references included; a fixed file makes it machine-independent."""
    p = _variant(name)
    by_id = {r["id"]: r for r in FIXTURE}
    expected = [r for r in EXPECTED if r["perturbation"] == name]
    changed = 0
    for row in expected:
        original = _instance(by_id[row["id"]])
        out = p.apply(original)
        assert out.input.text == row["input"], (name, row["id"])
        assert [r.text for r in out.references] == row["references"], (name, row["id"])
        assert [r.correct for r in out.references] == [r.correct for r in original.references]
        assert out.id == original.id
        changed += out != original
    assert changed >= 3  # the fixture exercises every perturbation


def test_hand_checked_cases():
    def run(name: str, text: str, refs: list[str], id_: str = "id0") -> tuple[str, list[str]]:
        inst = Instance(id=id_, input=Input(text=text), references=[Reference(text=r) for r in refs])
        out = PERTURBATIONS.get(name).apply(inst)
        return out.input.text, [r.text for r in out.references]

    # HELM's own test cases (test_perturbation.py)
    assert run("gender", "Did she mention that he was coming with his parents and their friends?",
               ["She didn't, perhaps he didn't tell her!"]) == (
        "Did she mention that she was coming with her parents and their friends?",
        ["She didn't, perhaps she didn't tell her!"])
    assert run("gender_terms", "His grandsons looked a lot like their dad.", ["How did their father look like?"]) == (
        "His granddaughters looked a lot like their mom.", ["How did their mother look like?"])
    # a word at the very start or end is not matched by HELM's pattern (kept deliberately)
    assert run("gender", "he left with him", [])[0] == "he left with him"
    assert run("lowercase", "ABC Def", ["KEEP"]) == ("abc def", ["KEEP"])  # references untouched
    assert run("expansion", "She's sure I'm late", []) == ("She is sure I am late", [])
    assert run("contraction", "She is sure I am late.", []) == ("She's sure I'm late.", [])
    # names: the same substitute in the references as in the input, gender kept
    text, refs = run("person_name", "Jack met Emily.", ["Jack", "Emily"])
    jack, emily = refs
    assert text == f"{jack} met {emily}." and jack != "Jack" and emily != "Emily"
    from helmflow.perturbations import _names

    table = _names("person_names.txt")
    assert jack.lower() in table["gender"]["male"] and emily.lower() in table["gender"]["female"]
    assert jack.lower() in table["race"]["black_american"]


def test_fixed_outputs_do_not_depend_on_the_process():
    """Seeded by the instance id alone: the same id gives the same text, another id another draw."""
    p = PERTURBATIONS.get("mild_mix")
    inst = _instance(FIXTURE[0])
    assert p.apply(inst).input.text == "he   said  that his brother  would arrive before noon, but   he  didn't."
    assert p.apply(inst.model_copy(update={"id": "id999"})).input.text != p.apply(inst).input.text


def test_multimodal_and_chat_inputs_perturb_only_text():
    image = ContentPart(type="image", uri="media/x.png", sha256="0" * 64, mime="image/png")
    inst = Instance(id="id1", input=Input(parts=[ContentPart(type="text", text="Look AT This"), image]))
    out = PERTURBATIONS.get("lowercase").apply(inst)
    assert out.input.parts[0].text == "look at this" and out.input.parts[1] == image
    chat = Instance(id="id1", input=Input(messages=[ChatMessage(role="system", content="Be BRIEF"),
                                                     ChatMessage(role="user", content="Hello THERE")]))
    out = PERTURBATIONS.get("lowercase").apply(chat)
    assert [m.content for m in out.input.messages] == ["Be BRIEF", "hello there"]


def test_versions_record_the_data_sha256_and_sets_resolve():
    v = PERTURBATIONS.get("mild_mix").version_data()
    assert v["data"]["correct_to_misspelling.json"] == data_sha256("correct_to_misspelling.json")
    assert len(v["data"]["correct_to_misspelling.json"]) == 64
    assert [p.name for p in resolve("robustness")] == ["mild_mix"]
    assert [p.name for p in resolve(["fairness", "lowercase", "gender"])] == ["gender", "person_name", "lowercase"]
    assert set(SETS) >= {"robustness", "fairness"}
    with pytest.raises(PerturbationError, match="unknown perturbation 'nope'"):
        resolve("nope")
    with pytest.raises(PerturbationError, match="SAE_to_AAVE_mapping.json is missing"):
        resolve("dialect")  # not shipped: a clear error, not a silent no-op


def test_every_data_file_is_documented():
    from helmflow.perturbations import DATA_DIR

    readme = (DATA_DIR / "README.md").read_text()
    for f in DATA_DIR.iterdir():
        if f.name != "README.md":
            assert f"`{f.name}`" in readme


def test_fast_misspelling_matcher_equals_helms_regex():
    """The key index finds exactly what HELM's 6,523-way ``\\b(...)\\b`` regex finds, in order, on texts
    built from the keys themselves (multi-word keys, keys ending in an apostrophe, words glued together)."""
    import random
    import re

    from helmflow.perturbations import _json, _misspelling_index, _sub_keys

    table = _json("correct_to_misspelling.json")
    pattern = re.compile(r"\b({})\b".format("|".join(table)))
    keys = list(table)
    rng = random.Random(7)
    for _ in range(300):
        parts = [rng.choice(keys) if rng.random() < 0.7 else rng.choice(["the", "x", "a", "about", "Ünïcode", "42"])
                 for _ in range(rng.randint(1, 12))]
        text = "".join(p + rng.choice([" ", "", ", ", "'", "-", "_", "\n"]) for p in parts)
        assert _sub_keys(_misspelling_index()[1], text, lambda w: f"<{w}>") == pattern.sub(lambda m: f"<{m.group(1)}>", text)


# --------------------------------------------------------------------------- typos and extra_space, by hand
def test_typos_by_hand_at_probabilities_zero_and_one():
    """HELM's ``TyposPerturbation``: a letter is replaced by one of its QWERTY neighbours (never itself)
    in its own case; anything that is not an ASCII letter stays, and draws nothing from the generator."""
    from random import Random

    from helmflow.perturbations import KEY_NEIGHBOURS, typos

    text = "Typing QWERTY, 42 times! É"
    assert typos(0.0)(text, Random(0)) == text
    out = typos(1.0)(text, Random(0))
    assert len(out) == len(text)
    for before, after in zip(text, out, strict=True):
        if before.lower() in KEY_NEIGHBOURS:
            assert after.lower() in KEY_NEIGHBOURS[before.lower()] and after.isupper() == before.isupper()
        else:
            assert after == before
    assert sorted(KEY_NEIGHBOURS) == list("abcdefghijklmnopqrstuvwxyz")
    assert all(k not in v for k, v in KEY_NEIGHBOURS.items())
    # one draw of random() per letter and one choice per replaced letter: "ab" at p = 1 is the same two
    # choices as drawing them by hand
    rng = Random(5)
    rng.random(), (a := rng.choice(list("qwsz"))), rng.random(), (b := rng.choice(list("ghnv")))
    assert typos(1.0)("a-b", Random(5)) == f"{a}-{b}"


def test_extra_space_doubles_every_space_and_only_spaces():
    out = PERTURBATIONS.get("extra_space").apply(Instance(id="x", input=Input(text=" a  b\tc "),
                                                          references=[Reference(text="a b", correct=True)]))
    assert out.input.text == "  a    b\tc  " and out.references[0].text == "a b"  # references untouched


def test_heims_translations_read_a_declared_table_and_draw_nothing(tmp_path):
    """HELM's ``TranslatePerturbation`` is Google Translate of the input and the references; here a table
    (English -> translation) stands in for the API. An empty text stays empty; a text the table lacks is an
    error naming it; an image reference (MS-COCO's photo: HELM's text is empty) keeps its text."""
    from helmflow.perturbations import perturb_evaluated, translate

    table = tmp_path / "google_translate_zh-CN.json"
    table.write_text(json.dumps({"A blue square.": "一个蓝色的正方形。", "two": "二"}, ensure_ascii=False))
    p = dataclasses.replace(PERTURBATIONS.get("translate_chinese"), data=(),
                            params={"language_code": "zh-CN", "table": str(table)})
    image = ContentPart(type="image", uri="media/x.png", sha256="0" * 64, mime="image/png")
    inst = Instance(id="9-0", input=Input(text="A blue square."),
                    references=[Reference(text="<image x.jpg>", correct=True, image=image), Reference(text="two")])
    out = p.apply(inst)
    assert out.input.text == "一个蓝色的正方形。"
    assert [r.text for r in out.references] == ["<image x.jpg>", "二"] and out.references[0].image == image
    assert translate("zh-CN", str(table))("", None) == ""  # type: ignore[arg-type]  # no generator is needed
    with pytest.raises(PerturbationError, match="no zh-CN translation of 'A red box'"):
        p.apply(inst.model_copy(update={"input": Input(text="A red box")}))
    assert PERTURBATIONS.get("translate_hindi").params["language_code"] == "hi"
    assert PERTURBATIONS.get("translate_spanish").kind == "multilinguality"
    with pytest.raises(PerturbationError, match="translation table google_translate_es.json is missing"):
        resolve("translate_spanish")
    # a perturbed instance records what HEIM's CLIPScore reads: its perturbation and the text before it
    from helmflow.scenarios.text_to_image import image_adapter

    [marked] = perturb_evaluated("mild_mix", [inst.model_copy(update={"split": "valid"})], image_adapter().sample)
    assert marked.extra["perturbation"] == "mild_mix" and marked.extra["unperturbed_text"] == "A blue square."


def test_draws_are_seeded_with_helms_id_when_the_scenario_records_it():
    """MS-COCO's ids are ours (``<image>-<caption>``); HELM seeds with its own (``id<position>``)."""
    p = PERTURBATIONS.get("mild_mix")
    text = "A Man riding a horse on a beach, he is not going to fall off the horse."
    ours = Instance(id="9-0", input=Input(text=text), extra={"helm_id": "id414116"})
    assert p.apply(ours).input.text == p.apply(Instance(id="id414116", input=Input(text=text))).input.text
    assert p.apply(ours).input.text != p.apply(ours.model_copy(update={"extra": {}})).input.text
