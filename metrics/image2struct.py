"""Image2Struct's image metrics (HELM ``metrics/vision_language/image_metrics.py``, ``emd_utils.py``,
``image_utils.py``): a model's LaTeX / HTML / LilyPond answer is rendered to an image (helmflow's
renderers) and compared with the reference image.

Ported as HELM computes them, quirks included: ``pixel_similarity`` works on the grey image's rows (HELM
reshapes an (H, W) array to (-1, W), so a "colour" is a whole row) and subtracts ``uint8`` arrays (so the
difference wraps modulo 256); ``earth_mover_similarity`` normalises the block EMD by the EMD of the
reference against a constant image, white when the reference's most frequent colour is dark and black
otherwise. LPIPS and the Inception-feature "FID" need pretrained torchvision weights: they are reported as
not available with :data:`NO_WEIGHTS`, never as 0. A failed render scores 0 on every image metric and on
``compilation_success``, as in HELM."""

from __future__ import annotations

import io
import math
from typing import Any

import numpy as np

from helmflow import render
from helmflow.errors import MetricError, install_command
from helmflow.metrics import Pooled, metric
from helmflow.metrics.base import MetricInput
from helmflow.metrics.copyright import edit_distance  # HELM's copyright-metric distance, as HELM's compute_edit_sim

COMPILE = "compilation_success"
EMS = "earth_mover_similarity"
BLOCK_EMD = "block_emd"
PIXEL = "pixel_similarity"
SSIM = "ssim_similarity"
EDIT = "edit_similarity"
LPIPS = "lpips_similarity"
FID = "fid_similarity"
IMAGE_METRICS = (EMS, BLOCK_EMD, PIXEL, SSIM)
NO_WEIGHTS = ("needs pretrained torchvision weights (VGG for LPIPS, Inception-v3 for the FID proxy), "
              "which an offline install does not have")


def _cv2() -> Any:
    try:
        import cv2
    except ModuleNotFoundError:
        raise ModuleNotFoundError(f"the Image2Struct metrics need OpenCV: {install_command('image2struct')}") from None
    return cv2


# ---- emd_utils.py --------------------------------------------------------------------------------------

def to_gray(img: np.ndarray) -> np.ndarray:
    return np.matmul(img, np.array([[0.299], [0.587], [0.114]]))


def most_frequent_color(img: np.ndarray) -> tuple[np.ndarray, float]:
    """The most frequent colour of an (H, W, C) image and the share of pixels that have it."""
    pixels = img.reshape(-1, img.shape[2])
    colors, counts = np.unique(pixels, axis=0, return_counts=True)
    k = int(np.argmax(counts))
    return colors[k], counts[k] / pixels.shape[0]


def _sig_patches(img: np.ndarray, rgb_mfc: np.ndarray, patch: tuple[int, int], w_mfc: float) -> np.ndarray:
    """HELM ``img_to_sig_patches``: one row per patch (weight, grey pixels, normalised position)."""
    img = np.array(img, dtype=np.float32)
    pad_h, pad_w = (-img.shape[0]) % patch[0], (-img.shape[1]) % patch[1]
    if pad_h > 0 or pad_w > 0:
        values = tuple((rgb_mfc[c], rgb_mfc[c]) for c in range(3))
        img = np.pad(img, ((0, pad_h), (0, pad_w), (0, 0)), "constant", constant_values=values)
    img /= 255.0
    img = to_gray(img)
    rows, cols = img.shape[0] // patch[0], img.shape[1] // patch[1]
    patches = img.reshape((rows, patch[0], cols, patch[1], img.shape[2])).transpose(0, 2, 1, 3, 4)
    patches = patches.reshape(-1, *patch, img.shape[2])
    positions = np.mgrid[0:rows, 0:cols].transpose(1, 2, 0).reshape(-1, 2) / np.array([rows, cols])
    flat = patches.reshape(patches.shape[0], -1)
    gray_mfc = float(to_gray(rgb_mfc).squeeze() / 255.0)
    weight = w_mfc + (1 - w_mfc) * np.any(flat != gray_mfc, axis=1, keepdims=True).astype(np.float32)
    weight /= np.sum(weight)
    return np.hstack((weight, flat, positions)).astype(np.float32)


def _sub_sigs(sub: np.ndarray, patch: tuple[int, int], gray_mfc: float, w_mfc: float) -> np.ndarray:
    """HELM ``reshape_sub_sig_batch``: each patch as a pixel-level signature (weight, grey, x, y)."""
    n, flat = sub.shape[0], patch[0] * patch[1]
    pixels = sub[:, 1:].reshape(n, flat, 1)
    x, y = np.meshgrid(np.arange(patch[0]) / patch[0], np.arange(patch[1]) / patch[1])
    spatial = np.repeat(np.stack((x.ravel(), y.ravel()), axis=1)[np.newaxis], n, axis=0)
    local = w_mfc + (1 - w_mfc) * (pixels != gray_mfc).astype(np.float32)
    local *= sub[:, 0:1].reshape(-1, 1, 1)
    local /= np.sum(local, axis=1, keepdims=True)
    return np.concatenate((local, pixels, spatial), axis=2)


def _cost_matrix(sig1: np.ndarray, sig2: np.ndarray, gray_mfc: float, patch: tuple[int, int],
                 dim: tuple[int, int], w_mfc: float) -> np.ndarray:
    cv2 = _cv2()
    s1 = _sub_sigs(sig1[:, :-2], patch, gray_mfc, w_mfc).astype(np.float32)
    s2 = _sub_sigs(sig2[:, :-2], patch, gray_mfc, w_mfc).astype(np.float32)
    cost = np.zeros((sig1.shape[0], sig2.shape[0]))
    multiplier = (patch[0] * patch[1]) ** 0.5 / (dim[0] + dim[1])
    for i in range(sig1.shape[0]):
        for j in range(sig2.shape[0]):
            emd, _, _ = cv2.EMD(s1[i], s2[j], cv2.DIST_L1)
            cost[i, j] = emd + np.linalg.norm(sig1[i, -2:] - sig2[j, -2:], 1) * multiplier
    return cost.astype(np.float32)


def block_emd(img1: Any, img2: Any, threshold_mfc: float = 0.5, patch: tuple[int, int] = (8, 8),
              max_patches: int = 100, w_mfc: float = 0.001) -> float:
    """HELM ``compute_emd_recursive``: the EMD between two same-size PIL images, moving 8x8 blocks (at
    most 100, the images resized to fit); ``img2`` is the reference, whose most frequent colour weighs
    ``w_mfc`` and whose constant background blocks are ignored when it covers over half the image."""
    assert img1.size == img2.size
    cv2 = _cv2()
    img1, img2 = img1.convert("RGB"), img2.convert("RGB")
    n = math.ceil(img1.size[0] / patch[0]) * math.ceil(img1.size[1] / patch[1])
    if n > max_patches:
        divider = (n / max_patches) ** 0.5
        width = math.ceil((img1.size[0] / patch[1]) / divider) * patch[1]
        height = math.floor(max_patches / (width / patch[0])) * patch[0]
        img1, img2 = img1.resize((width, height)), img2.resize((width, height))
    a, b = np.array(img1), np.array(img2)
    rgb_mfc, freq = most_frequent_color(b)
    gray_mfc = float(to_gray(rgb_mfc).squeeze() / 255.0)
    sig1, sig2 = _sig_patches(a, rgb_mfc, patch, w_mfc), _sig_patches(b, rgb_mfc, patch, w_mfc)
    if freq > threshold_mfc:
        mask = np.logical_or(np.any(sig1[:, 1:-2] != gray_mfc, axis=1), np.any(sig2[:, 1:-2] != gray_mfc, axis=1))
        if np.any(mask):
            sig1, sig2 = sig1[mask], sig2[mask]
    weights = np.maximum(sig1[:, 0], sig2[:, 0])
    weights /= np.sum(weights)
    sig1[:, 0] = weights
    sig2[:, 0] = weights
    cost = _cost_matrix(sig1, sig2, gray_mfc, patch, img1.size, w_mfc)
    emd, _, _ = cv2.EMD(sig1, sig2, cv2.DIST_USER, cost)
    return float(emd)


def baseline_image(reference: Any) -> Any:
    """HELM ``ems``'s denominator image: white when the reference's most frequent colour is dark
    (grey < 127), black otherwise, at the reference's size."""
    from PIL import Image

    rgb_mfc, _ = most_frequent_color(np.array(reference.convert("RGB")))
    dark = to_gray(rgb_mfc)[0] < 127
    return Image.new("RGB", reference.size, (255, 255, 255) if dark else (0, 0, 0))


def earth_mover_similarity(generated: Any, reference: Any, raw: float | None = None) -> float:
    """HELM ``ems``: 1 - block_emd(generated, reference) / block_emd(baseline, reference); ``raw``: the
    numerator when already computed (HELM caches it between ``block_emd`` and ``ems``)."""
    numerator = block_emd(generated, reference) if raw is None else raw
    return 1.0 - numerator / block_emd(baseline_image(reference), reference)


# ---- image_utils.py and the rest -------------------------------------------------------------------------

def gray(image: Any) -> np.ndarray:
    """HELM ``preprocess_image``: the ``L`` (grey, uint8) array of a PIL image."""
    return np.array(image.convert("L"))


def pixel_similarity(img_a: np.ndarray, img_b: np.ndarray, threshold: float = 0.5, tolerance: float = 0.02) -> float:
    """HELM ``pixel_similarity`` on grey uint8 arrays, verbatim (see the module's note on its quirks)."""
    if img_a.shape != img_b.shape:
        raise ValueError(f"images differ in shape: {img_a.shape} and {img_b.shape}")
    a = img_a.reshape(-1, img_a.shape[-1])
    b = img_b.reshape(-1, img_b.shape[-1])
    within = np.linalg.norm(a - b, axis=1) / 255 <= tolerance
    _, indices = np.unique(np.concatenate((a, b), axis=0), axis=0, return_inverse=True)
    indices = indices.reshape(-1)
    counts = np.bincount(indices)
    ignore = counts > (len(a) + len(b)) * threshold / 2
    valid = np.logical_not(np.logical_or(ignore[indices[: len(a)]], ignore[indices[len(a):]])) & within
    return float(np.mean(valid)) if len(valid) > 0 else 0.0


def ssim_similarity(img_a: np.ndarray, img_b: np.ndarray) -> float:
    """HELM ``compute_ssim``: (scikit-image SSIM of the grey images + 1) / 2."""
    from skimage.metrics import structural_similarity

    return float((structural_similarity(img_a, img_b) + 1) / 2)


def edit_similarity(completion: str, reference: str) -> float:
    """HELM ``compute_edit_sim``: Treebank-token edit similarity, the reference truncated to the
    completion's length in characters first (HELM's copyright-metric habit); 0 when either is empty."""
    from nltk.tokenize.treebank import TreebankWordTokenizer

    tokenizer = TreebankWordTokenizer()
    s1 = tokenizer.tokenize(completion)
    s2 = tokenizer.tokenize(reference[: len(completion)])
    if not s1 or not s2:
        return 0.0
    return 1.0 - edit_distance(s1, s2) / max(len(s1), len(s2))


def image_scores(rendered: Any | None, reference: Any, text: str | None = None,
                 reference_text: str | None = None) -> dict[str, float]:
    """Every Image2Struct stat of one completion: ``rendered`` is its image (None when it did not
    compile), resized to the reference's size as HELM's default ``resize`` handling does; ``text`` the
    structure's text for ``edit_similarity`` (absent for the wild subsets, which have no reference text)."""
    with_text = reference_text is not None
    if rendered is None:
        return {COMPILE: 0.0, **{m: 0.0 for m in IMAGE_METRICS}, **({EDIT: 0.0} if with_text else {})}
    reference = reference.convert("RGB")
    image = rendered.convert("RGB")
    if image.size != reference.size:
        image = image.resize(reference.size)
    g_img, g_ref = gray(image), gray(reference)
    raw = block_emd(image, reference)
    out = {
        COMPILE: 1.0,
        BLOCK_EMD: raw,
        EMS: earth_mover_similarity(image, reference, raw),
        PIXEL: pixel_similarity(g_img, g_ref),
        SSIM: ssim_similarity(g_img, g_ref),
    }
    if with_text:
        assert reference_text is not None
        out[EDIT] = edit_similarity(text or "", reference_text)
    return out


# ---- the registered metrics --------------------------------------------------------------------------------

def _not_available(columns: dict[str, Any], n: int) -> float:
    return math.nan  # absent from the summary, with NO_WEIGHTS as the reason (never 0)


#: LPIPS and the Inception "FID" proxy: named in every Image2Struct summary as not available, and why.
NOT_AVAILABLE = tuple(Pooled(name, (COMPILE,), _not_available, unavailable=(COMPILE, NO_WEIGHTS), bootstrap=False)
                      for name in (LPIPS, FID))


def pad(small: Any, large: Any, axis: int) -> Any:
    """HELM ``pad``: ``small`` on a white canvas as long as ``large`` along ``axis``, at the top left."""
    from PIL import Image

    size = list(small.size)
    size[axis] = large.size[axis]
    canvas = Image.new("RGB", (size[0], size[1]), (255, 255, 255))
    canvas.paste(small, (0, 0))
    return canvas


def _reference_image(x: MetricInput) -> Any:
    from PIL import Image

    from helmflow.media import scoring_store

    parts = [p for p in x.instance.input.parts or [] if p.type == "image"]
    if not parts:
        raise MetricError(f"instance {x.instance.id}: Image2Struct needs the reference image in the prompt")
    return Image.open(io.BytesIO(scoring_store().read(parts[0]))).convert("RGB")


def _scored(x: MetricInput, rendered: Any, size_handling: str, with_text: bool = True) -> dict[str, float]:
    reference = _reference_image(x)
    reference_text = (None if x.instance.extra.get("wild") or not with_text
                      else (x.correct_texts[0] if x.correct_texts else ""))
    image = rendered.image
    if image is not None and size_handling == "padding":
        image = image.convert("RGB")
        for axis in range(2):
            if image.size[axis] < reference.size[axis]:
                image = pad(image, reference, axis)
            elif image.size[axis] > reference.size[axis]:
                reference = pad(reference, image, axis)
    out = image_scores(image, reference, rendered.text or "", reference_text)
    out["render_seconds"] = rendered.seconds
    return out


def _rendered(x: MetricInput, renderer: str, draw: Any, assets: dict[str, bytes] | None = None) -> render.Rendered:
    """The first completion drawn by ``renderer`` (``draw(completion)``), through the render cache: an answer
    already drawn by this renderer version is read back from the media store, not rendered again."""
    from helmflow.media import scoring_store
    from helmflow.renders import cached_render

    completion = x.texts[0] if x.texts else ""
    request = x.requests[0] if x.requests else None
    return cached_render(scoring_store(), renderer, completion, lambda: draw(completion), instance_id=x.instance.id,
                         request_hash=request.request_hash if request else "",
                         sample_index=request.sample_index if request else 0, assets=assets)


def _check(instance: Any) -> None:
    if not any(p.type == "image" for p in instance.input.parts or []):
        raise MetricError(f"instance {instance.id}: Image2Struct needs the reference image in the prompt")


REQUIRES = ("cv2", "skimage", "nltk")


@metric("image2struct_latex", version=f"1+render-latex-{render.VERSIONS['latex']}", pooled=NOT_AVAILABLE,
        requires=REQUIRES, extra="image2struct", check=_check)
def image2struct_latex(x: MetricInput) -> dict[str, float]:
    """Render the LaTeX answer (sandboxed pdflatex) and compare it with the image; HELM pads the
    smaller image with white (``size_handling_method="padding"``) for LaTeX."""
    return _scored(x, _rendered(x, "latex", render.render_latex), "padding")


def page_assets(x: MetricInput) -> dict[str, bytes]:
    """The instance's assets (the dataset repository's images), read back from the media store by their
    checked keys, by the names the page links them with (HELM's ``WebpageCompilerAnnotator``)."""
    from helmflow.media import scoring_store
    from helmflow.records import ContentPart

    media = scoring_store()
    return {a["name"]: media.read(ContentPart(type="image", uri=a["uri"], sha256=a["sha256"], mime=a["mime"]))
            for a in x.instance.extra.get("assets", [])}


def _check_page(instance: Any) -> None:
    _check(instance)
    why = render.jekyll_missing()
    if why is not None:
        raise MetricError(f"instance {instance.id}: web pages are built with Jekyll in a jail; this machine {why}")


@metric("image2struct_webpage", version=f"2+render-webpage-{render.VERSIONS['webpage']}", pooled=NOT_AVAILABLE,
        requires=(*REQUIRES, "html2text", "playwright"), extra="image2struct", check=_check_page)
def image2struct_webpage(x: MetricInput) -> dict[str, float]:
    """Render the web page answer (built by Jekyll in the jail, screenshot by sandboxed Chromium at 1920x1080)
    with the dataset's assets in its folder and compare it with the screenshot; HELM resizes the render to
    the reference's size for web pages."""
    assets = page_assets(x)
    return _scored(x, _rendered(x, "webpage", lambda text: render.render_webpage(text, assets), assets), "resize")


def _check_music(instance: Any) -> None:
    _check(instance)
    why = render.lilypond_missing()
    if why is not None:
        raise MetricError(f"instance {instance.id}: music sheets render with LilyPond in a jail; this machine {why}")


@metric("image2struct_musicsheet", version=f"1+render-lilypond-{render.VERSIONS['lilypond']}", pooled=NOT_AVAILABLE,
        requires=REQUIRES, extra="image2struct", check=_check_music)
def image2struct_musicsheet(x: MetricInput) -> dict[str, float]:
    """Engrave the LilyPond answer (convert-ly, then lilypond --png, in a bubblewrap jail) and compare it with
    the image; HELM pads the smaller image with white and computes no edit similarity (no reference source)."""
    return _scored(x, _rendered(x, "lilypond", render.render_lilypond), "padding", with_text=False)
