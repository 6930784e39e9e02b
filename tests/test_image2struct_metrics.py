"""Image2Struct's metrics on image pairs drawn here, against values worked out by hand or with the
libraries (OpenCV's EMD, scikit-image's SSIM) called directly."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw

cv2 = pytest.importorskip("cv2")
pytest.importorskip("skimage")

from helmflow.metrics import image2struct as m  # noqa: E402


def page(square_at: int | None, size: tuple[int, int] = (48, 32), fill=(0, 0, 0)) -> Image.Image:
    """A white page with a 12x12 square at x = square_at (no square when None)."""
    img = Image.new("RGB", size, (255, 255, 255))
    if square_at is not None:
        ImageDraw.Draw(img).rectangle([square_at, 10, square_at + 11, 21], fill=fill)
    return img


def test_identical_images_score_one_and_a_missing_render_scores_zero():
    ref = page(20)
    same = m.image_scores(ref.copy(), ref, "a b", "a b")
    assert same[m.BLOCK_EMD] == pytest.approx(0.0, abs=1e-6)
    assert same[m.EMS] == pytest.approx(1.0)
    assert same[m.SSIM] == pytest.approx(1.0)
    assert same[m.EDIT] == 1.0 and same[m.COMPILE] == 1.0
    failed = m.image_scores(None, ref, "", "a b")
    assert failed == {m.COMPILE: 0.0, m.EMS: 0.0, m.BLOCK_EMD: 0.0, m.PIXEL: 0.0, m.SSIM: 0.0, m.EDIT: 0.0}
    assert m.EDIT not in m.image_scores(None, ref)  # wild subsets: no reference text, no edit similarity


@pytest.mark.slow
def test_earth_mover_similarity_is_zero_for_the_baseline_and_falls_with_distance():
    ref = page(8)
    baseline = m.baseline_image(ref)  # white page: most frequent colour is light, so the baseline is black
    assert baseline.getpixel((0, 0)) == (0, 0, 0)
    assert m.baseline_image(page(None, fill=(0, 0, 0)).point(lambda v: 255 - v)).getpixel((0, 0)) == (255, 255, 255)
    assert m.earth_mover_similarity(baseline, ref) == pytest.approx(0.0, abs=1e-6)
    # squares aligned to the 8-pixel blocks: one block over, three blocks over
    near, far = m.earth_mover_similarity(page(16), ref), m.earth_mover_similarity(page(32), ref)
    assert 0 < far < near < 1


def test_block_emd_of_one_patch_is_opencvs_pixel_emd():
    """An 8x8 pair is one block, so HELM's block EMD is OpenCV's EMD between the two pixel signatures
    (weight 1 for a pixel unlike the reference's most frequent colour, 0.001 otherwise, normalised)."""
    a = np.full((8, 8, 3), 255, np.uint8)
    b = a.copy()
    a[2, 1] = 0  # one black pixel at row 2, column 1 of the generated image
    b[5, 6] = 0  # and at row 5, column 6 of the reference
    got = m.block_emd(Image.fromarray(a), Image.fromarray(b))

    def signature(img: np.ndarray) -> np.ndarray:
        grey = img[:, :, 0].astype(np.float32) / 255.0  # grey == any channel for grey pixels
        rows = []
        for y in range(8):
            for x in range(8):
                w = 1.0 if grey[y, x] != 1.0 else 0.001
                rows.append([w, grey[y, x], x / 8, y / 8])  # HELM pairs meshgrid (x, y) with row-major pixels
        sig = np.array(rows, np.float32)
        sig[:, 0] /= sig[:, 0].sum()
        return sig

    want, _, _ = cv2.EMD(signature(a), signature(b), cv2.DIST_L1)
    assert got == pytest.approx(want, rel=1e-5)
    assert got > 0


def test_pixel_similarity_keeps_helms_row_and_wraparound_quirks():
    a = np.array([[10, 10], [20, 20], [30, 30], [40, 40]], np.uint8)
    b = a.copy()
    b[3] = [200, 200]
    # rows are HELM's "colours": no row occurs more than 8 * 0.5 / 2 = 2 times, row 3 differs
    assert m.pixel_similarity(a, b) == pytest.approx(0.75)
    common = np.array([[10, 10], [10, 10], [10, 10], [40, 40]], np.uint8)
    # [10, 10] occurs 6 times in the pair (> 2): its rows are ignored, only the last row counts
    assert m.pixel_similarity(common, common.copy()) == pytest.approx(0.25)
    # uint8 subtraction wraps: 0 - 251 = 5, and 5 / 255 is within the 0.02 tolerance
    col = np.array([[0], [1], [2], [3]], np.uint8)
    other = col.copy()
    other[0] = 251
    assert m.pixel_similarity(col, other) == pytest.approx(1.0)


def test_ssim_similarity_is_the_shifted_skimage_value():
    from skimage.metrics import structural_similarity

    a, b = m.gray(page(20)), m.gray(page(26))
    assert m.ssim_similarity(a, b) == pytest.approx((structural_similarity(a, b) + 1) / 2)
    assert 0.5 < m.ssim_similarity(a, b) < 1


def test_edit_similarity_truncates_the_reference_to_the_completion():
    pytest.importorskip("nltk")
    assert m.edit_similarity("a b x d", "a b c d") == pytest.approx(0.75)  # one substitution in 4 tokens
    assert m.edit_similarity("a b", "a b c d e f") == 1.0  # the reference is cut to 3 characters, "a b"
    assert m.edit_similarity("", "a b") == 0.0


def test_rendered_image_of_another_size_is_resized_to_the_reference():
    ref = page(20)
    big = ref.resize((96, 64), Image.NEAREST)  # the same picture at twice the size
    scores = m.image_scores(big, ref)  # block_emd itself refuses images of different sizes
    assert scores[m.SSIM] > 0.95 > m.image_scores(page(30), ref)[m.SSIM]
