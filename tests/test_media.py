"""Images as data: the content-addressed store, validation at load, per-deployment resizing, request
hashes over sha256 (never paths), and prompts that keep text and images in order."""

from __future__ import annotations

import hashlib
import io

import pytest
from PIL import Image

from helmflow.adapters import ADAPTERS, MEDIA_MARK
from helmflow.media import ImageOptions, MediaError, MediaStore, image_options, inspect_image, prepare_image
from helmflow.records import (
    AdapterSpec,
    ContentPart,
    Deployment,
    GenerationParams,
    Input,
    Instance,
    Reference,
    RequestBody,
)
from helmflow.request_builder import build_requests
from helmflow.scenarios import ScenarioError, get_scenario
from helmflow.storage import Store
from helmflow.versions import request_hash


def png(width: int = 8, height: int = 6, color=(200, 10, 10), fmt: str = "PNG") -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (width, height), color).save(buf, format=fmt)
    return buf.getvalue()


# --------------------------------------------------------------------------- store and validation
def test_put_is_content_addressed_atomic_and_deduplicated(store: Store):
    media = MediaStore(store)
    data = png()
    a = media.put(data, "row 1")
    b = media.put(data, "row 2")
    sha = hashlib.sha256(data).hexdigest()
    assert a == b and a.uri == f"media/{sha}.png" and a.sha256 == sha and a.mime == "image/png"
    assert store.find("media") == [f"media/{sha}.png"]  # stored once, no temporaries left
    assert media.read(a) == data


def test_read_refuses_paths_out_of_the_media_store_and_corrupted_bytes(store: Store):
    media = MediaStore(store)
    part = media.put(png(), "row 1")
    with pytest.raises(MediaError, match="not media/"):
        media.read(part.model_copy(update={"uri": "../../etc/passwd"}))
    with pytest.raises(MediaError, match="not media/"):
        media.read(part.model_copy(update={"uri": f"media/{'0' * 64}.png"}))  # another image's key
    store.write_bytes(part.uri, png(color=(0, 0, 0)))
    with pytest.raises(MediaError, match="does not match its sha256"):
        media.read(part)


@pytest.mark.parametrize(
    "data, message",
    [
        (png()[:-30], "truncated"),
        (b"<svg xmlns='http://www.w3.org/2000/svg'><script>alert(1)</script></svg>", "not a readable image"),
        (png(fmt="BMP"), "unsupported image format 'BMP'"),
        (b"", "empty"),
    ],
)
def test_bad_images_are_one_error_naming_the_row(data: bytes, message: str):
    with pytest.raises(MediaError, match=message) as err:
        inspect_image(data, "train row 7")
    assert str(err.value).startswith("train row 7: ")


def test_decompression_bomb_is_refused(monkeypatch):
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 100)  # Pillow's own limit, lowered to keep the test small
    with pytest.raises(MediaError, match="decompression bomb"):
        inspect_image(png(20, 20), "row 3")  # 400 px: over the limit, under twice it (Pillow's warning)
    with pytest.raises(MediaError, match="decompression bomb"):
        inspect_image(png(40, 40), "row 4")  # 1,600 px: Pillow's error


def test_scenario_image_errors_name_the_scenario_and_row(store: Store):
    scen = get_scenario("vision_shapes")
    scen.media = MediaStore(store)
    with pytest.raises(ScenarioError, match=r"scenario 'vision_shapes': test row 5: the image has no embedded bytes \(only a path"):
        scen.image({"bytes": None, "path": "/etc/passwd"}, "test row 5")
    part = scen.image({"bytes": png(), "path": "x.png"}, "test row 6")  # a Hugging Face Image struct
    assert store.exists(part.uri)


# --------------------------------------------------------------------------- per-deployment limits
def test_over_limit_image_is_shrunk_keeping_aspect_and_the_change_is_recorded(store: Store):
    media = MediaStore(store)
    part = media.put(png(400, 100), "row 1")
    new, note = prepare_image(media, part, ImageOptions(max_side=200), "row 1")
    with Image.open(io.BytesIO(media.read(new))) as img:
        assert img.size == (200, 50) and img.format == "PNG"
    assert note and "resized 400x100 -> 200x50" in note and "max_side 200" in note
    same, none = prepare_image(media, part, ImageOptions(max_side=400), "row 1")
    assert same == part and none is None
    with pytest.raises(MediaError, match="resize is 'error'"):
        prepare_image(media, part, ImageOptions(max_pixels=1000, resize="error"), "row 1")


def test_byte_limit_and_reencode_to_jpeg(store: Store):
    media = MediaStore(store)
    noisy = Image.effect_noise((300, 300), 100).convert("RGB")
    buf = io.BytesIO()
    noisy.save(buf, format="PNG")
    part = media.put(buf.getvalue(), "row 1")
    new, note = prepare_image(media, part, ImageOptions(max_bytes=20_000), "row 1")
    assert len(media.read(new)) <= 20_000 and "max_bytes 20000" in note
    jpeg, note = prepare_image(media, media.put(png(), "row 2"), ImageOptions(reencode="jpeg"), "row 2")
    assert jpeg.mime == "image/jpeg" and jpeg.uri.endswith(".jpg") and "re-encoded as JPEG" in note


def test_anthropic_deployments_get_the_providers_limits_by_default():
    dep = Deployment(name="a", client="anthropic", model="m")
    assert image_options(dep).max_side == 8000 and image_options(dep).max_bytes == 5 * 1024 * 1024
    dep = Deployment(name="a", client="anthropic", model="m", options={"images": {"max_side": 1000}})
    assert image_options(dep).max_side == 1000 and image_options(dep).max_bytes == 5 * 1024 * 1024


# --------------------------------------------------------------------------- hashing
def test_request_hash_covers_image_sha256_never_its_path():
    sha = "ab" * 32
    body = RequestBody(model="m", max_tokens=1, temperature=0, parts=[
        ContentPart(type="text", text="Q"), ContentPart(type="image", uri=f"media/{sha}.png", sha256=sha, mime="image/png")])
    moved = body.model_copy(deep=True)
    moved.parts[1].uri = f"elsewhere/{sha}.png"
    assert request_hash(body, 0) == request_hash(moved, 0)
    other = body.model_copy(deep=True)
    other.parts[1].sha256 = "cd" * 32
    assert request_hash(body, 0) != request_hash(other, 0)
    swapped = body.model_copy(deep=True)
    swapped.parts.reverse()
    assert request_hash(body, 0) != request_hash(swapped, 0)  # order is part of what is sent


# --------------------------------------------------------------------------- adapters and fitting
def image(n: int) -> ContentPart:
    sha = f"{n:064x}"
    return ContentPart(type="image", uri=f"media/{sha}.png", sha256=sha, mime="image/png")


def vqa(iid: str, split: str, answer: str, *images: int) -> Instance:
    parts = [ContentPart(type="text", text="Look: "), image(images[0]), ContentPart(type="text", text=" and "),
             *(image(i) for i in images[1:]), ContentPart(type="text", text=" what?")]
    return Instance(id=iid, split=split, input=Input(parts=parts), references=[Reference(text=answer, correct=True)])


SPEC = AdapterSpec(instructions="Answer.", input_prefix="", input_suffix="\n", output_prefix="Answer: ",
                   generation=GenerationParams(max_tokens=5))


def test_generation_keeps_text_and_images_in_order_with_example_images():
    train = [vqa("t1", "train", "cat", 1, 2)]
    p = ADAPTERS.get("generation").fn(SPEC, vqa("e1", "test", "dog", 3, 4), train)
    assert [m.sha256 for m in p.media] == [image(i).sha256 for i in (1, 2, 3, 4)]
    reqs = build_requests([p], SPEC, Deployment(name="d", client="offline", model="m"))
    parts = reqs[0].body.parts
    assert reqs[0].body.prompt is None
    assert [(x.type, x.text if x.type == "text" else x.sha256) for x in parts] == [
        ("text", "Answer.\n\nLook: "), ("image", image(1).sha256), ("text", " and "), ("image", image(2).sha256),
        ("text", " what?\nAnswer: cat\n\nLook: "), ("image", image(3).sha256), ("text", " and "),
        ("image", image(4).sha256), ("text", " what?\nAnswer:"),
    ]


def test_multiple_choice_joint_with_image_valued_choices():
    spec = SPEC.model_copy(update={"method": "multiple_choice_joint"})
    refs = [Reference(text="<image 1>", image=image(7)), Reference(text="<image 2>", correct=True, image=image(8))]
    q = Instance(id="q", input=Input(parts=[ContentPart(type="text", text="Which is red?")]), references=refs)
    p = ADAPTERS.get("multiple_choice_joint").fn(spec, q, [])
    assert p.query == f"Which is red?\nA. {MEDIA_MARK}\nB. {MEDIA_MARK}\nAnswer:"
    assert [m.sha256 for m in p.media] == [image(7).sha256, image(8).sha256]
    assert p.output_mapping == {"A": "<image 1>", "B": "<image 2>"}


def test_window_fitting_counts_a_declared_cost_per_image_and_drops_example_images():
    train = [vqa("t1", "train", "cat", 1), vqa("t2", "train", "cow", 2)]
    p = ADAPTERS.get("generation").fn(SPEC, vqa("e1", "test", "dog", 3), train)
    roomy = Deployment(name="d", client="offline", model="m", context_window=4000,
                       options={"images": {"tokens_per_image": 1000}})
    assert build_requests([p], SPEC, roomy)[0].num_train_instances == 2
    tight = roomy.model_copy(update={"context_window": 2100})  # room for two images, not three
    req = build_requests([p], SPEC, tight)[0]
    assert req.num_train_instances == 1 and req.prompt_truncated
    assert [x.sha256 for x in req.body.parts if x.type == "image"] == [image(1).sha256, image(3).sha256]
    free = roomy.model_copy(update={"context_window": 2100, "options": {}})  # images cost nothing declared
    assert build_requests([p], SPEC, free)[0].num_train_instances == 2


def test_dataset_text_cannot_forge_an_image_mark():
    q = Instance(id="q", input=Input(parts=[ContentPart(type="text", text=f"sneaky {MEDIA_MARK} mark"), image(1)]),
                 references=[Reference(text="x", correct=True)])
    p = ADAPTERS.get("generation").fn(SPEC, q, [])
    reqs = build_requests([p], SPEC, Deployment(name="d", client="offline", model="m"))
    assert [x.type for x in reqs[0].body.parts] == ["text", "image", "text"]
    assert "\ufffd" in reqs[0].body.parts[0].text


def test_build_requests_resizes_for_the_deployment_and_records_it(store: Store):
    media = MediaStore(store)
    big = media.put(png(300, 150), "row 1")
    q = Instance(id="q", input=Input(parts=[big, ContentPart(type="text", text="What?")]),
                 references=[Reference(text="x", correct=True)])
    p = ADAPTERS.get("generation").fn(SPEC, q, [])
    dep = Deployment(name="small", client="openai", model="m", options={"images": {"max_side": 100, "detail": "low"}})
    req = build_requests([p], SPEC, dep, store)[0]
    sent = req.body.parts[1]
    assert sent.sha256 != big.sha256 and req.body.image_detail == "low"
    assert len(req.media_transforms) == 1 and "300x150 -> 100x50" in req.media_transforms[0]
    with Image.open(io.BytesIO(media.read(sent))) as img:
        assert img.size == (100, 50)


def test_image_options_are_part_of_model_version_only_when_set():
    from helmflow.versions import model_version

    plain = Deployment(name="d", client="openai", model="m")
    assert model_version(plain) == model_version(plain.model_copy(update={"options": {"top_logprobs": 2}}))
    jpeg = plain.model_copy(update={"options": {"images": {"reencode": "jpeg"}}})
    assert model_version(jpeg) != model_version(plain)
