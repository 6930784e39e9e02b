"""The ``huggingface`` client on a tiny randomly initialised LLaVA built here (no download).

The model (a 2-layer CLIP vision tower and a 2-layer Llama) and its processor (a BPE trained here,
a CLIP image processor, a LLaVA-style chat template) are saved to a folder and loaded by path as a
user's checkpoint is. The tests prove that the stored image is what the model sees: the pixel
values of every forward pass are captured and compared with the image processor applied to the
original bytes, and the client's tokens and log-probabilities match a hand-written greedy loop
over the same prompt and pixels (and differ for another image).
"""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import pytest
from PIL import Image

from helmflow.clients import ClientResult, PermanentError, make_client
from helmflow.media import MediaStore
from helmflow.records import ContentPart, Deployment, RequestBody
from helmflow.storage import Store
from tests.support.cli import run_cli
from tests.support.tiny_hf import POSITIONS, build_tiny_model, build_tiny_vlm


@pytest.fixture(scope="module")
def tiny_vlm(tmp_path_factory) -> Path:
    return build_tiny_vlm(tmp_path_factory.mktemp("hf") / "tiny-llava")


def deployment(model: Path, **options) -> Deployment:
    return Deployment(
        name="tiny-vlm", client="huggingface", model=str(model), tokenizer=f"hf:{model}", context_window=POSITIONS,
        options={"device": "cpu", **options},
    )


def png(color: tuple[int, int, int], size: tuple[int, int] = (40, 30), mode: str = "RGB") -> bytes:
    """A picture with a colour gradient, so that two pictures differ in every patch."""
    img = Image.new(mode, size, color if mode == "RGB" else (*color, 128))
    for x in range(size[0]):
        img.putpixel((x, x * size[1] // size[0]), (255 - color[0], x * 6 % 256, 0) + (() if mode == "RGB" else (255,)))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def text(t: str) -> ContentPart:
    return ContentPart(type="text", text=t)


def body(parts: list[ContentPart], max_tokens: int = 6) -> RequestBody:
    return RequestBody(model="tiny-vlm", parts=parts, max_tokens=max_tokens, temperature=0.0)


def complete_all(client, bodies: list[RequestBody]) -> list[ClientResult]:
    async def go():
        return await asyncio.gather(*(client.complete(b) for b in bodies))

    return asyncio.run(go())


class SeenPixels:
    """The pixel values the vision tower encodes, and the prompt ids of every prefill, while active."""

    def __init__(self, model):
        self.model, self.pixels, self.ids = model, [], []

    def __enter__(self) -> SeenPixels:
        def vision(module, args, kwargs):
            self.pixels.append((args[0] if args else kwargs["pixel_values"]).clone())

        def prefill(module, args, kwargs):
            if kwargs.get("input_ids") is not None and kwargs["input_ids"].shape[1] > 1:  # not a decoding step
                self.ids.append(kwargs["input_ids"].clone())

        self._handles = [self.model.model.vision_tower.register_forward_pre_hook(vision, with_kwargs=True),
                         self.model.register_forward_pre_hook(prefill, with_kwargs=True)]
        return self

    def __exit__(self, *exc) -> None:
        for handle in self._handles:
            handle.remove()


def expected_pixels(lm, *images: bytes):
    """The image processor on the original bytes, outside the client (RGB, as the client converts)."""
    pil = [Image.open(io.BytesIO(b)).convert("RGB") for b in images]
    return lm.processor.image_processor(pil, return_tensors="pt")["pixel_values"]


def hand_greedy(lm, prompt: str, images: list[bytes], n: int) -> tuple[list[str], list[float]]:
    """Greedy decoding by hand: the processor on the prompt and images, n full forward passes."""
    import torch

    pil = [Image.open(io.BytesIO(b)).convert("RGB") for b in images]
    enc = lm.processor(text=[prompt], images=[pil], return_tensors="pt", add_special_tokens=False)
    ids, out, logprobs = enc["input_ids"][0].tolist(), [], []
    with torch.no_grad():
        for _ in range(n):
            step = lm.model(input_ids=torch.tensor([ids + out]), pixel_values=enc["pixel_values"]).logits[0, -1]
            step = step.log_softmax(-1)
            out.append(int(step.argmax()))
            logprobs.append(float(step[out[-1]]))
    return [lm.tokenizer.decode([t]) for t in out], logprobs


def test_the_stored_image_is_what_the_model_sees(tiny_vlm: Path, store: Store) -> None:
    red, blue = png((200, 10, 10)), png((10, 10, 200), size=(24, 48))
    media = MediaStore(store)
    a, b = media.put(red, "red"), media.put(blue, "blue")
    client = make_client(deployment(tiny_vlm), store)
    client.check_credentials()
    lm = client.local_model()
    assert lm.processor is not None and type(lm.model).__name__ == "LlavaForConditionalGeneration"
    parts = [text("Look: "), a, text(" then "), b, text(" How many shapes are there?")]
    with SeenPixels(lm.model) as seen:
        [r] = complete_all(client, [body(parts)])
    assert r.output_tokens == len(r.logprobs) == 6 and r.finish_reason == "length"
    # the pixels of the first forward pass are the two stored images, in the request's order
    assert len(seen.pixels) == 1  # later steps reuse the cache: images are encoded once
    assert seen.pixels[0].equal(expected_pixels(lm, red, blue))
    assert not seen.pixels[0].equal(expected_pixels(lm, blue, red))
    # ... and their image positions sit between the texts, where the parts put them
    prompt = "USER: Look: <image> then <image> How many shapes are there?\nASSISTANT:"
    assert lm.tokenizer.decode(seen.ids[0][0]) == prompt.replace("<image>", "<image>" * 4)
    assert (r.tokens, pytest.approx(r.logprobs, abs=1e-4)) == hand_greedy(lm, prompt, [red, blue], 6)
    # the same text with the images swapped is another input: other log-probabilities
    [swapped] = complete_all(client, [body([text("Look: "), b, text(" then "), a, text(" How many shapes are there?")])])
    assert swapped.logprobs != pytest.approx(r.logprobs, abs=1e-4)
    assert (swapped.tokens, pytest.approx(swapped.logprobs, abs=1e-4)) == hand_greedy(lm, prompt, [blue, red], 6)


def test_rgba_images_are_converted_and_bytes_checked(tiny_vlm: Path, store: Store) -> None:
    rgba = png((0, 120, 0), mode="RGBA")
    part = MediaStore(store).put(rgba, "rgba")
    client = make_client(deployment(tiny_vlm), store)
    lm = client.local_model()
    with SeenPixels(lm.model) as seen:
        complete_all(client, [body([part, text("cat")], max_tokens=2)])
    assert seen.pixels[0].equal(expected_pixels(lm, rgba))
    # a store whose bytes no longer match the part's sha256 is refused, not evaluated
    store.write_bytes(part.uri, png((1, 2, 3)))
    with pytest.raises(PermanentError, match="does not match its sha256"):
        complete_all(make_client(deployment(tiny_vlm), store), [body([part, text("cat")], max_tokens=2)])


def test_image_rows_batch_like_text_rows(tiny_vlm: Path, store: Store) -> None:
    media = MediaStore(store)
    images = [media.put(png(c), str(c)) for c in [(250, 0, 0), (0, 250, 0), (0, 0, 250)]]
    bodies = [
        body([images[0], text("What is 12 + 30?")]),
        body([text("cat "), images[1], text(" dog "), images[2]], max_tokens=3),
        RequestBody(model="tiny-vlm", prompt="cat dog", max_tokens=4, temperature=0.0),  # text only
        body([images[2], text("Answer:")], max_tokens=5),
    ]
    batched = make_client(deployment(tiny_vlm, max_batch_size=8), store)
    lm = batched.local_model()
    with SeenPixels(lm.model) as seen:
        together = complete_all(batched, bodies)
    assert batched.batch_sizes == [4]
    # rows with images share one generate call (4 images, one pass); the text row is generated apart
    assert [p.shape[0] for p in seen.pixels] == [4]
    one_by_one = make_client(deployment(tiny_vlm, max_batch_size=1), store)
    alone = complete_all(one_by_one, bodies)
    assert one_by_one.batch_sizes == [1, 1, 1, 1]
    assert [r.tokens for r in together] == [r.tokens for r in alone]
    assert [r.output_tokens for r in together] == [6, 3, 4, 5]
    for x, y in zip(together, alone):
        assert x.logprobs == pytest.approx(y.logprobs, abs=1e-4)
        assert x.prompt_tokens == y.prompt_tokens
    assert together[1].prompt_tokens == len(lm.tokenizer("USER: cat  dog \nASSISTANT:")["input_ids"]) + 2 * 4


def test_without_a_chat_template_images_take_the_image_token(tmp_path: Path, store: Store) -> None:
    folder = build_tiny_vlm(tmp_path / "plain", chat_template=False)
    red = png((200, 10, 10))
    client = make_client(deployment(folder), store)
    lm = client.local_model()
    with SeenPixels(lm.model) as seen:
        complete_all(client, [body([text("Look: "), MediaStore(store).put(red, "red"), text(" cat")], max_tokens=2)])
    assert lm.tokenizer.decode(seen.ids[0][0]) == "Look: " + "<image>" * 4 + " cat"
    assert seen.pixels[0].equal(expected_pixels(lm, red))


def test_clear_errors_for_images_a_model_cannot_take(tiny_vlm: Path, store: Store, tmp_path: Path) -> None:
    part = MediaStore(store).put(png((9, 9, 9)), "grey")
    text_model = build_tiny_model(tmp_path / "gpt2")
    gpt2 = Deployment(name="tiny", client="huggingface", model=str(text_model), context_window=POSITIONS,
                      options={"device": "cpu"})
    with pytest.raises(PermanentError, match="deployment 'tiny': the model is not a vision-language model"):
        complete_all(make_client(gpt2, store), [body([part, text("cat")])])
    missing = part.model_copy(update={"sha256": "0" * 64, "uri": f"media/{'0' * 64}.png"})
    with pytest.raises(PermanentError, match="deployment 'tiny-vlm': .*media/0{64}.png"):
        complete_all(make_client(deployment(tiny_vlm), store), [body([missing, text("cat")])])
    with pytest.raises(PermanentError, match="bad options: images"):
        make_client(deployment(tiny_vlm, images={"max_side": 0}))
    # each image takes 4 positions of the 256: the error says where they went
    long = body([part, text(" cat" * 250)], max_tokens=4)
    with pytest.raises(PermanentError, match="exceeds the model's 256 positions.*tokens_per_image"):
        complete_all(make_client(deployment(tiny_vlm), store), [long])


@pytest.mark.slow
def test_vision_demo_board_through_a_local_vlm(tiny_vlm: Path, tmp_path: Path, prefect_server) -> None:
    """``helmflow run vision-demo`` with a huggingface VLM deployment: every request carries its
    images, the model answers each one, and the run is cached."""
    import pyarrow.parquet as pq

    models = tmp_path / "models.yaml"
    models.write_text(
        f"deployments:\n  - name: local/tiny-vlm\n    client: huggingface\n    model: {tiny_vlm}\n"
        f"    tokenizer: hf:{tiny_vlm}\n    context_window: {POSITIONS}\n    max_output_tokens: 4\n"
        f"    options: {{device: cpu, max_batch_size: 8, images: {{tokens_per_image: 4}}}}\n"
    )
    storage = tmp_path / "store"
    args = ("run", "vision-demo", "--models-file", str(models), "--models", "local/tiny-vlm", "--max-instances", "4",
            "--storage", str(storage))
    proc = run_cli(*args, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    runs = sorted((storage / "runs").iterdir())
    assert len(runs) == 4  # the board's four scenarios x one deployment
    images = 0
    for run in runs:
        completions = pq.read_table(run / "completions.parquet").to_pylist()
        requests = pq.read_table(run / "requests.parquet").to_pylist()
        assert len(completions) == 4 and all(not c["error"] for c in completions)
        assert all(0 < c["output_tokens"] <= 4 and c["prompt_tokens"] > 0 for c in completions)
        for r in requests:
            parts = json.loads(r["body_json"])["parts"]
            for p in parts:
                if p["type"] == "image":
                    images += 1
                    assert (storage / p["uri"]).is_file()
        assert any(p["type"] == "image" for r in requests for p in json.loads(r["body_json"])["parts"])
    assert images >= 4 * 4
    again = run_cli(*args, timeout=900)
    assert again.returncode == 0, again.stderr[-3000:]
    assert sorted((storage / "runs").iterdir()) == runs
