"""The Image2Struct scenarios on fixture mirrors and their metric on known answers: a perfect LaTeX
answer scores 1, a broken one 0 on everything, LPIPS and the FID proxy are named as not available."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from helmflow import render
from helmflow.aggregate import unavailable_reason
from helmflow.clients import load_deployments
from helmflow.datasets import read_instances
from helmflow.media import scoring_media
from helmflow.pipeline import download_scenario
from helmflow.plan.compile import plan_board
from helmflow.plan.spec import load_board
from helmflow.records import AdapterSpec, Completion, Request, RequestBody
from helmflow.scoring import score_instances, summarize
from helmflow.storage import Store

pytest.importorskip("cv2")
pytestmark = pytest.mark.skipif(shutil.which("pdflatex") is None, reason="needs TeX Live (texlive-latex-base)")


@pytest.fixture(scope="module")
def mirror(tmp_path_factory) -> Iterator[Path]:
    from tests.support.image2struct_fixtures import write_mirror

    root = write_mirror(tmp_path_factory.mktemp("image2struct") / "mirror", music=render.lilypond_missing() is None)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HELMFLOW_MIRROR", str(root))
        yield root


def instances(store: Store, label: str):
    s = plan_board(load_board("image2struct"), load_deployments(), scenarios=[label]).scenarios[0]
    return read_instances(store, download_scenario(store, s).instances_key), s


def test_rows_are_filtered_by_quoted_category_and_difficulty(mirror, store):
    easy, _ = instances(store, "image2latex-equation-easy")
    assert [i.id for i in easy] == ["eq-1"]  # the uuid's quotes dropped; the table row and medium one filtered
    (inst,) = easy
    assert inst.split == "valid" and inst.extra["difficulty"] == "easy"
    assert inst.input.parts[0].text.startswith("Please provide the LaTeX code")
    assert inst.input.parts[1].type == "image" and store.exists(inst.input.parts[1].uri)
    assert inst.references[0].text == "$$x^2$$"


def test_a_web_page_rows_repository_gives_its_assets_named_in_the_prompt(mirror, store):
    from tests.support.image2struct_fixtures import ASSET, asset_png

    (inst,), _ = instances(store, "image2webpage-css-hard")
    assert inst.id == "css-3"
    # HELM's list_assets: the repository's images, not its HTML or CSS, not Jekyll's _site copy
    (asset,) = inst.extra["assets"]
    assert asset["name"] == ASSET and store.read_bytes(asset["uri"]) == asset_png()
    assert inst.input.parts[0].text.endswith("\nYou have access to the following assets:\n- img/logo.png\n")
    (plain,), _ = instances(store, "image2webpage-css-easy")
    assert plain.extra["assets"] == [] and "assets" not in plain.input.parts[0].text
    (wild,), _ = instances(store, "image2webpage-wild")
    assert wild.extra["wild"] is True and "assets" not in wild.extra


needs_lilypond = pytest.mark.skipif("render.lilypond_missing() is not None",
                                    reason="needs LilyPond and bubblewrap (apt-get install lilypond bubblewrap)")


@needs_lilypond
def test_music_sheets_engrave_in_the_jail_and_score_without_edit_similarity(mirror, store):
    from tests.support.image2struct_fixtures import music_answer

    (easy,), s = instances(store, "image2musicsheet-easy")
    (hard,), _ = instances(store, "image2musicsheet-hard")
    assert easy.id == "music-1" and easy.input.parts[0].text.startswith("Please generate the Lilypond code")
    assert s.metrics == ["image2struct_musicsheet"]
    stats = score(store, [easy, hard], [music_answer("music-1"), music_answer("music-3")], s.metrics[0])
    got = {(st.instance_id, st.name): st.value for st in stats}
    assert got["music-1", "compilation_success"] == 1.0
    assert got["music-1", "earth_mover_similarity"] == pytest.approx(1.0)
    assert got["music-1", "pixel_similarity"] == pytest.approx(1.0)
    assert got["music-3", "compilation_success"] == 0.0 and got["music-3", "earth_mover_similarity"] == 0.0
    assert not any(name == "edit_similarity" for _, name in got)  # HELM: no ground truth for music sheets


def score(store: Store, insts, answers: list[str], metric: str, requests: str = "r"):
    reqs = [Request(request_hash=f"{requests}{k}", instance_id=i.id, split=i.split, body=RequestBody(model="m", prompt="p", max_tokens=2000,
                                                                                temperature=0.0))
            for k, i in enumerate(insts)]
    comps = [Completion(request_hash=f"{requests}{k}", instance_id=i.id, text=a) for k, (i, a) in enumerate(zip(insts, answers))]
    with scoring_media(store):
        return score_instances(insts, reqs, comps, AdapterSpec(method="generation"), [metric])


def test_a_perfect_answer_scores_one_and_a_broken_one_zero(mirror, store):
    from tests.support.image2struct_fixtures import answer_for

    easy, s = instances(store, "image2latex-equation-easy")
    medium, _ = instances(store, "image2latex-equation-medium")
    insts = easy + medium
    assert [i.id for i in insts] == ["eq-1", "eq-2"]
    stats = score(store, insts, [answer_for("eq-1"), "\\begin{broken"], s.metrics[0])
    got = {(st.instance_id, st.name): st.value for st in stats}
    assert got["eq-1", "compilation_success"] == 1.0
    assert got["eq-1", "earth_mover_similarity"] == pytest.approx(1.0)
    assert got["eq-1", "ssim_similarity"] == pytest.approx(1.0)
    assert got["eq-1", "edit_similarity"] == 1.0
    for name in ("compilation_success", "earth_mover_similarity", "block_emd", "pixel_similarity",
                 "ssim_similarity", "edit_similarity"):
        assert got["eq-2", name] == 0.0
    summary = summarize(stats)
    names = {r.name for r in summary}
    assert "lpips_similarity" not in names and "fid_similarity" not in names
    assert "torchvision weights" in (unavailable_reason(summary, "lpips_similarity") or "")
    assert next(r.mean for r in summary if r.name == "compilation_success") == 0.5


def test_a_render_is_stored_once_and_the_same_answer_scored_again_is_not_rendered(mirror, store, tmp_path, monkeypatch):
    """The render cache: the image goes to the media store, a record keyed on the answer and the renderer's
    version says what was drawn, and another request with the same answer (another model, a rescoring) reads
    it back. Renderer runs are counted from outside, as the scratch folders $HELMFLOW_RENDER_KEEP keeps."""
    import hashlib

    from helmflow import layout, renders
    from tests.support.image2struct_fixtures import answer_for

    keep = tmp_path / "scratch"
    monkeypatch.setenv("HELMFLOW_RENDER_KEEP", str(keep))
    easy, s = instances(store, "image2latex-equation-easy")
    medium, _ = instances(store, "image2latex-equation-medium")
    answers = [answer_for("eq-1"), "\\begin{broken"]
    with renders.collecting() as first:
        stats = score(store, easy + medium, answers, s.metrics[0])
    assert len(list(keep.iterdir())) == 2  # pdflatex ran once per answer
    drawn, failed = first
    assert (drawn.instance_id, drawn.request_hash, drawn.compiled, drawn.reused) == ("eq-1", "r0", True, False)
    assert drawn.renderer == "latex" and drawn.renderer_version == render.VERSIONS["latex"]
    assert drawn.image.uri == f"media/{drawn.image.sha256}.png"
    assert hashlib.sha256(store.read_bytes(drawn.image.uri)).hexdigest() == drawn.image.sha256
    assert store.exists(layout.render_record("latex", render.VERSIONS["latex"], drawn.render_key))
    assert not failed.compiled and failed.image is None and "File ended" in (failed.error or "")  # kept too
    with renders.collecting() as second:
        again = score(store, easy + medium, answers, s.metrics[0], requests="other-model-")
    assert len(list(keep.iterdir())) == 2  # nothing rendered again
    assert [(r.request_hash, r.reused, r.render_key, r.image, r.error) for r in second] == [
        ("other-model-0", True, drawn.render_key, drawn.image, None), ("other-model-1", True, failed.render_key, None,
                                                                        failed.error)]
    assert [(st.instance_id, st.name, st.value) for st in again] == [(st.instance_id, st.name, st.value) for st in stats]
    # a different answer is a different key: drawn anew
    with renders.collecting() as third:
        score(store, easy, ["```latex\n$$x^2$$ \n```"], s.metrics[0])
    assert len(list(keep.iterdir())) == 3 and not third[0].reused and third[0].image == drawn.image  # same pixels


@pytest.mark.slow
def test_helmflow_run_image2struct_end_to_end_against_the_dev_server(mirror, tmp_path, prefect_server):
    """Perfect LaTeX, web page and LilyPond answers and one of each that does not compile, through the CLI, the
    OpenAI SDK and the sandboxed renderers: the board's cells are the means worked out by hand. Each run lists
    its renders (renders.parquet, run.json); a second model giving the same answers renders none of them
    (renderer runs counted as the scratch folders $HELMFLOW_RENDER_KEEP keeps)."""
    import hashlib
    import json

    from helmflow import layout
    from helmflow.devserver import start_dev_server
    from helmflow.manifests import RunManifest, RunRenders
    from tests.support.cli import run_cli
    from tests.support.image2struct_fixtures import write_answers

    if render.lilypond_missing() is not None:
        pytest.skip(f"LilyPond: {render.lilypond_missing()}")
    answers = write_answers(mirror)
    repo = Path(__file__).resolve().parents[1]
    with start_dev_server("--policy", "fn:tests.support.image2struct_fixtures:policy",
                          env={"PYTHONPATH": str(repo), "IMAGE2STRUCT_ANSWERS": str(answers)}) as server:
        models = tmp_path / "models.yaml"
        models.write_text(json.dumps({"deployments": [
            {"name": name, "client": "openai-compatible", "model": "dev-vlm", "base_url": server.openai_url,
             "context_window": 32768} for name in ("dev/vlm", "dev/vlm-again")]}))
        storage, keep = tmp_path / "store", tmp_path / "scratch"
        env = {"HELMFLOW_MIRROR": str(mirror), "HELMFLOW_RENDER_KEEP": str(keep)}
        proc = run_cli("run", "image2struct", "--models-file", str(models), "--models", "dev/vlm",
                       "--storage", str(storage), env=env, timeout=900)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert server.stats()["answered"] == 26  # one fixture per cell: HELM's 26 runs
        # each answer rendered once (js-2's bare HTML is refused before any renderer starts: not a list of files)
        assert len(list(keep.iterdir())) == 25
        store = Store(str(storage))
        latest = store.read_json(layout.latest("image2struct", subset=True))
        prefix = latest["uri"].removeprefix(store.root + "/")
        (row,) = store.read_parquet(f"{prefix}/leaderboard.parquet").to_pylist()
        again = ["image2latex-equation-easy", "image2latex-table-easy", "image2webpage-css-hard", "image2musicsheet-easy"]
        proc = run_cli("run", "image2struct", "--models-file", str(models), "--models", "dev/vlm-again",
                       "--scenarios", ",".join(again), "--storage", str(storage), env=env, timeout=900)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert server.stats()["answered"] == 30
        assert len(list(keep.iterdir())) == 25  # the same answers: every render read back, none drawn again
    # each cell has one instance: eleven answers draw their image exactly, tab-1 does not compile
    assert row["image2latex-equation-easy"] == 1.0 and row["image2latex-table-easy"] == 0.0
    assert row["image2latex/earth_mover_similarity"] == pytest.approx(11 / 12)
    assert row["image2latex/compilation_success"] == pytest.approx(11 / 12)
    assert row["image2latex/edit_similarity"] == pytest.approx(11 / 12)
    assert row["image2latex/lpips_similarity"] is None
    assert "torchvision weights" in row["image2latex/lpips_similarity note"]
    assert row["image2latex-wild"] == 1.0
    # nine web pages: eight drawn exactly (css-3 only with the dataset's image served into its folder),
    # js-2 answered with bare HTML instead of HELM's JSON list of files
    assert row["image2webpage-css-hard"] == 1.0 and row["image2webpage-javascript-medium"] == 0.0
    assert row["image2webpage/earth_mover_similarity"] == pytest.approx(8 / 9)
    assert row["image2webpage/compilation_success"] == pytest.approx(8 / 9)
    assert row["image2webpage/edit_similarity"] == pytest.approx(8 / 9)
    assert row["image2webpage-wild"] == 1.0
    # three music sheets: two engraved exactly, the hard one answered without a \version (HELM's convert-ly fails)
    assert row["image2musicsheet-easy"] == 1.0 and row["image2musicsheet-hard"] == 0.0
    assert row["image2musicsheet/earth_mover_similarity"] == pytest.approx(2 / 3)
    assert row["image2musicsheet/compilation_success"] == pytest.approx(2 / 3)
    assert "image2musicsheet/edit_similarity" not in row
    # lineage: each run's renders.parquet names the image (media store, sha256) and the renderer's version
    runs = {(r.scenario.label, r.deployment.name): r for r in (RunManifest.model_validate(store.read_json(key))
                                                    for key in store.find("runs") if key.endswith("/run.json"))}
    assert len(runs) == 30
    for label in again:
        renderer = {"image2latex": "latex", "image2webpage": "webpage", "image2musicsheet": "lilypond"}[
            label.split("-")[0]]
        first, second = (runs[label, model] for model in ("dev/vlm", "dev/vlm-again"))
        (drawn,) = store.read_parquet(layout.run_file(first.run_id, layout.RUN_RENDERS)).to_pylist()
        (read,) = store.read_parquet(layout.run_file(second.run_id, layout.RUN_RENDERS)).to_pylist()
        assert (drawn["renderer"], drawn["renderer_version"]) == (renderer, render.VERSIONS[renderer])
        assert drawn["run_id"] == first.run_id and not drawn["reused"] and read["reused"]
        assert read["render_key"] == drawn["render_key"] and read["image"] == drawn["image"]
        ok = label != "image2latex-table-easy"
        assert drawn["compiled"] is ok and (drawn["image"] is not None) is ok
        if ok:
            image = drawn["image"]
            assert image["uri"] == f"media/{image['sha256']}.png"
            assert hashlib.sha256(store.read_bytes(image["uri"])).hexdigest() == image["sha256"]
        assert first.renders == RunRenders(renderers={renderer: render.VERSIONS[renderer]}, rendered=1, failed=int(not ok))
        assert second.renders == RunRenders(renderers={renderer: render.VERSIONS[renderer]}, reused=1, failed=int(not ok))
        assert f"runs/{first.run_id}/renders.parquet" in first.files
