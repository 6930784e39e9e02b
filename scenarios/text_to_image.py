"""What HEIM's text-to-image scenarios share: the image-generation adapter and the metrics.

HELM's ``get_image_generation_adapter_spec``: the instance's text is the whole prompt (empty
prefixes and suffixes), zero-shot, and ``ImageGenerationParameters`` left to each model's defaults;
``num_outputs`` images per prompt (4 on HEIM's normal runs, 1 for MS-COCO's FID and efficiency
runs). HELM asks for ``max_tokens=0``; helmflow's generation parameters take at least 1, which an
image request does not use.

``TextToImageScenario`` is the base of every HEIM scenario here: a prompt-only family lists its
prompts in :meth:`prompts` (no download); a scenario with reference images overrides :meth:`load`.
"""

from __future__ import annotations

import csv
import io
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import ClassVar

import fsspec

from helmflow.records import AdapterSpec, GenerationParams, ImageGenerationParams, Input, Instance
from helmflow.scenarios.base import Scenario, ScenarioError, read_source

#: HELM's core HEIM metrics every generated image is scored by (those with weights are not available without them)
CORE_METRICS = ["image_efficiency", "fractal_dimension", "clip_score", "aesthetics", "nudity", "watermark"]
#: HELM's bias metrics: skin tone needs no weights, gender imbalance CLIP's (not available without them)
BIAS_METRICS = ["skin_tone", "gender"]
#: HELM's reference-based metrics that need no weights (MS-COCO)
REFERENCE_METRICS = ["psnr", "multi_scale_ssim", "uiqi"]
#: HEIM's number of images per prompt on its normal runs
NUM_IMAGES = 4
#: HEIM's instance cap per entry (the ``heim_default`` run expander; MS-COCO FID takes 30,000, art styles 17)
HEIM_DEFAULT_INSTANCES = 100
#: the CLIP-based metric every generated image is scored by in HELM (not available without weights)
CLIP_METRICS = ["clip_score"]


def helm_csv_rows(scenario: str, url: str) -> list[list[str]]:
    """A CSV's rows as HEIM's loaders read them: the file opened in text mode (UTF-8, universal newlines, so a
    quoted line break is ``\\n``), then Python's csv reader."""
    try:
        text = read_source(scenario, url).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScenarioError(f"scenario {scenario!r}: {url} is not UTF-8 text: {exc}") from None
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return list(csv.reader(io.StringIO(text, newline="")))


@contextmanager
def photo_archive(scenario: str, url: str) -> Iterator[tuple[zipfile.ZipFile, dict[str, str]]]:
    """A zip of reference photos, open, and its members by file name (whatever folder holds them)."""
    with fsspec.open(url, "rb") as fh:
        try:
            archive = zipfile.ZipFile(fh)
        except zipfile.BadZipFile as exc:
            raise ScenarioError(f"scenario {scenario!r}: {url} is not a zip ({exc})") from None
        yield archive, {name.rpartition("/")[2]: name for name in archive.namelist()}


def image_adapter(num_outputs: int = NUM_IMAGES, max_eval_instances: int | None = None) -> AdapterSpec:
    """HELM's ``get_image_generation_adapter_spec(num_outputs)``, with an entry's instance cap."""
    return AdapterSpec(
        method="generation", instructions="", input_prefix="", input_suffix="", output_prefix="", output_suffix="",
        instance_prefix="", max_train_instances=0,
        generation=GenerationParams(max_tokens=1, temperature=0.0, num_outputs=num_outputs),
        image_generation=ImageGenerationParams(),
    ).override(max_eval_instances=max_eval_instances)


class TextToImageScenario(Scenario):
    """A HEIM scenario: prompts in, images out. Prompt-only families set :meth:`prompts`."""

    main_metric = "fractal_dimension_loss"
    metrics: ClassVar[list[str]] = CORE_METRICS
    num_images: ClassVar[int] = NUM_IMAGES
    max_instances: ClassVar[int] = HEIM_DEFAULT_INSTANCES
    helm_wording = "the prompt is the instance's text alone, as HELM's image-generation adapter sends it"

    @property
    def default_adapter(self) -> AdapterSpec:
        return image_adapter(self.num_images, self.max_instances)

    def prompts(self) -> list[tuple[str, str | None]]:
        """(prompt, sub_split) of each instance, in HELM's order."""
        raise NotImplementedError

    def load(self, files: dict[str, str]) -> list[Instance]:
        return [Instance(id=f"id{i}", input=Input(text=text), split="test", sub_split=sub)
                for i, (text, sub) in enumerate(self.prompts())]
