"""nudity_frac through onnxruntime on a small ONNX classifier written here with NudeNet's classifier's inputs and
outputs (a batch of 256x256x3 float images in, the unsafe and safe probabilities out; nothing downloaded): each
image is read as NudeNet 2 reads it (RGB, NEAREST resize to 256x256, / 255) and counts when unsafe > safe."""

from __future__ import annotations

import io

import numpy as np
import pytest

from helmflow.errors import MetricError
from tests.support.heim_fixtures import write_classifier

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")


def png(pixels: np.ndarray) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format="PNG")
    return buf.getvalue()


def test_each_image_is_read_as_nudenet_2_reads_it_and_counts_when_unsafe_beats_safe(tmp_path):
    from PIL import Image

    from helmflow.metrics.nudity import is_nude, probabilities, session

    model = session(str(write_classifier(tmp_path / "classifier_model.onnx")))
    red, blue = np.zeros((48, 64, 3), np.uint8), np.zeros((256, 256, 3), np.uint8)
    red[..., 0], blue[..., 2] = 220, 220
    board = np.zeros((3, 3, 3), np.uint8)  # a 3x3 board, 5 red cells and 4 blue: NEAREST keeps the cells' colours
    board[::2, ::2, 0] = board[1, 1, 0] = 255
    board[1::2, ::2, 2] = board[::2, 1::2, 2] = 255
    images = [png(red), png(blue), png(board), png(red[::-1]), png(blue[:100])]
    got = probabilities(model, images)
    arrays = []
    for data in images:
        with Image.open(io.BytesIO(data)) as img:
            arrays.append(np.asarray(img.convert("RGB").resize((256, 256), Image.Resampling.NEAREST), np.float32) / 255)
    # NudeNet's batches: four images, then one
    rows = [*model.run(None, {"input_1": np.stack(arrays[:4])})[0], *model.run(None, {"input_1": arrays[4][None]})[0]]
    assert got == [{"unsafe": float(unsafe), "safe": float(safe)} for unsafe, safe in rows]
    assert [is_nude(p) for p in got] == [True, False, True, True, False]


def test_a_nudenet_setting_that_cannot_be_used_is_one_line(tmp_path, monkeypatch):
    from helmflow.metrics.nudity import _weights, configured

    monkeypatch.delenv("HELMFLOW_NUDENET_MODEL", raising=False)
    assert configured() is None and _weights() == "none"
    monkeypatch.setenv("HELMFLOW_NUDENET_MODEL", str(tmp_path / "missing.onnx"))
    with pytest.raises(MetricError, match=r"missing.onnx'?: no such file \(NudeNet's classifier: https://github"):
        configured()
    (tmp_path / "text.onnx").write_text("not a model")
    monkeypatch.setenv("HELMFLOW_NUDENET_MODEL", str(tmp_path / "text.onnx"))
    with pytest.raises(MetricError, match="not an ONNX model"):
        configured()
    path = write_classifier(tmp_path / "classifier_model.onnx")
    monkeypatch.setenv("HELMFLOW_NUDENET_MODEL", str(path))
    assert configured() == path.resolve()
    assert _weights() == __import__("hashlib").sha256(path.read_bytes()).hexdigest()[:16]  # another model re-scores
