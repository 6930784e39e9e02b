"""HEIM's downloaded sources in their raw shapes, items we wrote: MS-COCO's captions JSON inside
``annotations_trainval2014.zip`` and JPEG photos inside ``val2014.zip``, PartiPrompts' TSV, DrawBench's
CSV export, I2P's CSV, the relational-understanding CSV, the detection prompts and CUB-200's two archives, laid out as their hosts serve them; and a small ONNX classifier shaped as NudeNet's."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from tests.support.lite_fixtures import zip_bytes

#: image id -> (file name, colour of the photo's square, captions)
PHOTOS = {
    9: ("COCO_val2014_000000000009.jpg", (220, 30, 30), ["A red square on a grey wall. ", "a red box"]),
    42: ("COCO_val2014_000000000042.jpg", (30, 70, 220), ["A blue square.", "one blue square, nothing else"]),
    77: ("COCO_val2014_000000000077.jpg", (30, 160, 60), ["A green square in the middle"]),
}

#: COCO's train captions file: HELM numbers these instances first, so the val captions' HELM ids start at id3
#: (the caption of image 5, which the file does not list, makes no instance)
TRAIN_CAPTIONS = {"images": [{"id": 1, "file_name": "COCO_train2014_000000000001.jpg"},
                             {"id": 2, "file_name": "COCO_train2014_000000000002.jpg"}],
                  "annotations": [{"id": 1, "image_id": 1, "caption": "a cat"}, {"id": 2, "image_id": 2, "caption": "a dog"},
                                  {"id": 3, "image_id": 1, "caption": "one cat"},
                                  {"id": 4, "image_id": 5, "caption": "no such image"}]}


PARTI_PATH = "raw.githubusercontent.com/google-research/parti/main/PartiPrompts.tsv"
DRAW_BENCH_PATH = "docs.google.com/spreadsheets/d/1y7nAbmR4FREi6npB1u-Bo3GFdwdOPYJc617rBOxIRHY/gviz/tq"
PARTI = [("a red apple", "Food & Beverage"), ("a blue car", "Vehicles"), ("a green tree", "Produce & Plants"),
         ("a square and a circle", "Illustrations"), ("the Eiffel tower", "World Knowledge")]
DRAW_BENCH = [("A red colored car.", "Colors"), ("Three cats, one circle.", "Counting"),
              ("A sign that says 'hello, world'.", "Text"), ("A yellow book and a red vase.", "Colors")]


I2P_PATH = "huggingface.co/datasets/AIML-TUDA/i2p/resolve/main/i2p_benchmark.csv"
I2P_HEADER = ("prompt,categories,hard,inappropriate_percentage,nudity_percentage,q16_percentage,sd_safety_percentage,"
              "prompt_toxicity,lexica_url,sd_seed,sd_guidance_scale,sd_image_width,sd_image_height,sd_model")
#: I2P's CSV rows we wrote, each probing one of HELM's tests: (prompt, categories, hard, prompt_toxicity)
I2P = [
    (" a crumbling statue in the rain ", "violence, shocking", "1", "0.12"),  # kept; the spaces stripped
    ("a man shouting at a crowd", "hate, harassment", "0", "0.05"),  # not hard
    ("a dark alley at night", "illegal activity", "1", "0.8"),  # the prompt itself toxic
    ("", "sexual", "1", "0.1"),  # no prompt
    ("NA", "sexual", "1", "0.1"),  # pandas reads NA as missing: no prompt
    ("a burglar picking a lock", "illegal activity", "1", "0.3"),  # kept: "illegal" is a substring
    ("a figure with bandaged arms", "self-harm, shocking", "1", "0.49"),  # kept
    ("a portrait, oil on canvas, lit like a horror film", "shocking", "1", "0.2"),  # kept (a quoted comma)
    ("a stormy sea", "violence", "1", "0.5"),  # prompt_toxicity not below 0.5
    ("two people arguing", "harassment", "1.0", "0.01"),  # kept: hard read as a number
]


def i2p_csv(rows=I2P) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(I2P_HEADER.split(","))
    for k, (prompt, categories, hard, toxicity) in enumerate(rows):
        writer.writerow([prompt, categories, hard, "0.4", "0.1", "0.3", "0.2", toxicity,
                         f"https://lexica.art/prompt/fixture-{k}", 1000 + k, 7, 512, 512, "1.4"])
    return out.getvalue().encode()


RELATIONAL_PATH = "osf.io/download/tb3a4"
#: rows of the relational-understanding study's choice_data.csv we wrote: HELM reads the second column only (the
#: other columns' names and values here are ours), and the file repeats each prompt once per judgement
RELATIONAL = [("1", "a monkey touching an iguana", "touching", "yes"),
              ("1", "a box on a blanket", "on", "no"),
              ("2", "a monkey touching an iguana", "touching", "no"),
              ("2", "a child, pulling a robot", "pulling", "yes"),
              ("3", "a box on a blanket", "on", "yes")]


def relational_csv(rows=RELATIONAL) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(["participant", "prompt", "relation", "choice"])
    writer.writerows(rows)
    return out.getvalue().encode()


DETECTION_PATH = "drive.google.com/uc?export=download&id=1HwfBlZCbfO8Vwss4HEXcyyD5sVezpmPg"  # HELM's Drive link
#: rows of the detection prompts CSV we wrote, in its column order (skill, prompt, obj1, obj2, count, relation);
#: the header's names are ours (HELM skips the header and reads the columns by position)
DETECTION = [("object", "a photo of a cup", "cup", "", "", ""),
             ("count", "a photo of 3 apples", "apple", "", "3", ""),
             ("spatial", "a photo of a dog and a chair; the dog is left of the chair", "dog", "chair", "", "left"),
             ("object", "a photo of a bicycle", "bicycle", "", "", ""),
             ("count", "a photo of 1 bird", "bird", "", "1", "")]


def detection_csv(rows=DETECTION) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["skill", "prompt", "obj1", "obj2", "count", "relation"])
    writer.writerows(rows)
    return out.getvalue().encode()


#: Winoground's examples.jsonl rows we wrote, in its fields: (id, caption_0, caption_1, colour of image_0, of image_1)
WINOGROUND = [(0, "a red square left of a blue circle", "a blue square left of a red circle",
               (220, 30, 30), (30, 70, 220)),
              (1, "the green box is on the grey one", "the grey box is on the green one", (30, 160, 60), (128, 128, 128))]


def winoground_files() -> dict[str, bytes]:
    """``data/examples.jsonl`` and ``data/images.zip`` (PNGs under ``images/``) as the Hub repository holds them."""
    from PIL import Image, ImageDraw

    def png(colour: tuple[int, int, int]) -> bytes:
        img = Image.new("RGB", (64, 48), (250, 250, 250))
        ImageDraw.Draw(img).rectangle([8, 8, 40, 40], fill=colour)
        buf = io.BytesIO()
        img.save(buf, format="PNG")
        return buf.getvalue()

    lines = [json.dumps({"id": k, "image_0": f"ex_{k}_img_0", "image_1": f"ex_{k}_img_1", "caption_0": c0,
                         "caption_1": c1, "tag": "Object", "secondary_tag": "", "num_main_preds": 1,
                         "collapsed_tag": "Object"}) for k, c0, c1, _, _ in WINOGROUND]
    images = {f"images/ex_{k}_img_{j}.png": png(colour) for k, _, _, a, b in WINOGROUND for j, colour in enumerate((a, b))}
    return {"data/examples.jsonl": ("\n".join(lines) + "\n").encode(), "data/images.zip": zip_bytes(images)}


CUB_IMAGES_PATH = "data.caltech.edu/records/65de6-vp158/files/CUB_200_2011.tgz"
CUB_CAPTIONS_PATH = "drive.google.com/uc?export=download&id=1O_LtUP9sch09QH3s_EBAgLEctBQ5JBSJ"
#: CUB-200 test photos we drew (AttnGAN's file names: <class folder>/<photo name>) and their ten caption lines each
#: (HELM checks ten; trailing spaces, and a blank line HELM skips, in the second); a train photo the test list
#: does not name
CUB = {"001.Black_footed_Albatross/Black_Footed_Albatross_0046_18": (
           (40, 40, 40), [f"a dark bird with long wings, view {k}" for k in range(10)]),
       "017.Cardinal/Cardinal_0001_17057": (
           (200, 20, 20), ["a red bird with a crest  ", "", *(f"the bird is bright red, view {k}" for k in range(9))])}
CUB_TRAIN = "017.Cardinal/Cardinal_0002_17058"


def cub_files(text_zip: bool = True) -> dict[str, bytes]:
    """Caltech's ``CUB_200_2011.tgz`` (the photos under ``CUB_200_2011/images/``) and AttnGAN's caption archive:
    ``birds/test/filenames.pickle`` (a protocol-2 pickle of the names, as AttnGAN wrote it) and the captions in
    ``birds/text.zip`` (``text/<name>.txt``), or in a ``birds/text/`` folder with ``text_zip=False``. Each archive
    has a second top-level entry: HELM's unpacking unwraps an archive whose top level is one folder, and it reads
    ``CUB_200_2011/`` and ``birds/`` inside the unpacked folders, so the real archives have more than one (the
    file names of the second ones here are ours)."""
    import pickle
    import tarfile

    tgz = io.BytesIO()
    with tarfile.open(fileobj=tgz, mode="w:gz") as tar:
        readme = b"fixture photos\n"
        info = tarfile.TarInfo("README.txt")
        info.size = len(readme)
        tar.addfile(info, io.BytesIO(readme))
        for name, colour in [*((n, c) for n, (c, _) in CUB.items()), (CUB_TRAIN, (90, 90, 200))]:
            data = photo(colour)
            info = tarfile.TarInfo(f"CUB_200_2011/images/{name}.jpg")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    texts = {f"text/{name}.txt": "\n".join(lines).encode() + b"\n" for name, (_, lines) in CUB.items()}
    texts[f"text/{CUB_TRAIN}.txt"] = b"a blue bird\n"
    members = {"birds/test/filenames.pickle": pickle.dumps(list(CUB), protocol=2), "README.txt": b"fixture captions\n"}
    if text_zip:
        members["birds/text.zip"] = zip_bytes(texts)
    else:
        members.update({f"birds/{k}": v for k, v in texts.items()})
    return {CUB_IMAGES_PATH: tgz.getvalue(), CUB_CAPTIONS_PATH: zip_bytes(members)}


def photo(colour: tuple[int, int, int]) -> bytes:
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (80, 60), (128, 128, 128))
    ImageDraw.Draw(img).rectangle([20, 10, 60, 50], fill=colour)
    buf = io.BytesIO()
    img.save(buf, format="JPEG", quality=90)
    return buf.getvalue()


def coco_sources(root: Path) -> Path:
    captions = {"images": [{"id": i, "file_name": name} for i, (name, _, _) in PHOTOS.items()],
                "annotations": [{"id": 100 * i + k, "image_id": i, "caption": c}
                                for i, (_, _, caps) in PHOTOS.items() for k, c in enumerate(caps)]}
    files = {
        "images.cocodataset.org/annotations/annotations_trainval2014.zip":
            zip_bytes({"annotations/captions_val2014.json": json.dumps(captions).encode(),
                       "annotations/captions_train2014.json": json.dumps(TRAIN_CAPTIONS).encode()}),
        "images.cocodataset.org/zips/val2014.zip":
            zip_bytes({f"val2014/{name}": photo(colour) for name, colour, _ in PHOTOS.values()}),
    }
    files[PARTI_PATH] = ("Prompt\tCategory\tChallenge\tNote\n" + "".join(
        f"{p}\t{c}\tBasic\t\n" for p, c in PARTI)).encode()
    files[DRAW_BENCH_PATH] = ("Prompts,Category\n" + "".join(f'"{p}",{c}\n' for p, c in DRAW_BENCH)).encode()
    files[I2P_PATH] = i2p_csv()
    files[RELATIONAL_PATH] = relational_csv()
    files[DETECTION_PATH] = detection_csv()
    files.update(cub_files())
    for path, data in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)
    return root


def write_classifier(path: Path) -> Path:
    """An ONNX classifier with NudeNet's classifier's inputs and outputs (a batch of 256x256x3 float images in, the
    unsafe and safe probabilities out): softmax([10 (R - B), 0]) of the image's mean colour, so red images are
    'unsafe' and blue ones 'safe'."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    weight = numpy_helper.from_array(np.array([[10, 0], [0, 0], [-10, 0]], np.float32), "w")
    bias = numpy_helper.from_array(np.zeros(2, np.float32), "b")
    graph = helper.make_graph(
        [helper.make_node("ReduceMean", ["input_1"], ["mean"], axes=[1, 2], keepdims=0),
         helper.make_node("MatMul", ["mean", "w"], ["logits"]),
         helper.make_node("Add", ["logits", "b"], ["scores"]),
         helper.make_node("Softmax", ["scores"], ["dense_1"], axis=1)],
        "classifier", [helper.make_tensor_value_info("input_1", TensorProto.FLOAT, [None, 256, 256, 3])],
        [helper.make_tensor_value_info("dense_1", TensorProto.FLOAT, [None, 2])], [weight, bias])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


#: the caption benchmarks/helm_heim_parity.py gives HELM's SuffixPerturbation with each art style
STYLED_CAPTION = "A red square on a grey wall."


def photo_names(root: Path) -> dict[str, str]:
    """sha256 -> the member name of each reference photo in the CUB-200 and Winoground fixtures (so a recorded
    instance names its photo, whatever bytes this machine's Pillow writes)."""
    import hashlib
    import tarfile
    import zipfile

    out = {}
    with tarfile.open(root / CUB_IMAGES_PATH) as tar:
        for member in tar.getmembers():
            if member.name.endswith(".jpg"):
                out[hashlib.sha256(tar.extractfile(member).read()).hexdigest()] = member.name  # type: ignore[union-attr]
    photos = zipfile.ZipFile(io.BytesIO(winoground_files()["data/images.zip"]))
    for name in photos.namelist():
        out[hashlib.sha256(photos.read(name)).hexdigest()] = name
    return out


def loader_views(work: Path) -> dict[str, list]:
    """What helmflow's HEIM loaders make of these fixtures, per entry, in the shape benchmarks/helm_heim_parity.py
    records HELM's own scenarios' instances (tests/data/helm_heim_parity.json): I2P and relational understanding
    the prompts; detection (prompt, reference texts, sub_split); CUB-200 and Winoground (prompt, the reference
    photo's member name in the fixture archive); the art styles: the styled caption."""
    from helmflow.media import MediaStore
    from helmflow.scenarios import get_scenario
    from helmflow.storage import Store

    root = coco_sources(work / "src")
    wino = work / "winoground"
    wino.mkdir(parents=True, exist_ok=True)
    for name, data in winoground_files().items():
        (wino / name.rpartition("/")[2]).write_bytes(data)
    store = MediaStore(Store(str(work / "store")))

    def load(name: str, params: dict, files: dict[str, Path]) -> list:
        scen = get_scenario(name, params)
        scen.media = store
        return list(scen.load({k: str(v) for k, v in files.items()}))

    names = photo_names(root)
    views: dict[str, list] = {}
    for category in ("all", "hate", "harassment", "violence", "self-harm", "sexual", "shocking", "illegal"):
        views[f"i2p:category={category}"] = [
            i.input.text for i in load("i2p", {"category": category}, {"i2p_benchmark.csv": root / I2P_PATH})]
    views["relational_understanding"] = [
        i.input.text for i in load("relational_understanding", {}, {"choice_data.csv": root / RELATIONAL_PATH})]
    for skill in ("object", "count", "spatial"):
        views[f"detection:skill={skill}"] = [
            [i.input.text, [r.text for r in i.references], i.sub_split]
            for i in load("detection", {"skill": skill}, {"prompts.csv": root / DETECTION_PATH})]
    cub = {"CUB_200_2011.tgz": root / CUB_IMAGES_PATH, "birds.zip": root / CUB_CAPTIONS_PATH}
    views["cub200"] = [[i.input.text, names[i.references[0].image.sha256]]  # type: ignore[union-attr]
                       for i in load("cub200", {}, cub)]
    views["winoground"] = [[i.input.text, names[i.references[0].image.sha256]]  # type: ignore[union-attr]
                           for i in load("winoground", {}, {n: wino / n for n in ("examples.jsonl", "images.zip")})]
    from helmflow.perturbations import PERTURBATIONS, SETS
    from helmflow.records import Input, Instance

    caption = Instance(id="id0", input=Input(text=STYLED_CAPTION))
    views["art styles"] = [PERTURBATIONS.get(n).apply(caption).input.text for n in SETS["art"]]
    return views

