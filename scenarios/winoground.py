"""Winoground (HEIM reasoning; Thrush et al., arXiv 2204.03162): pairs of captions with the same words in another
order, each with its photo; HEIM generates the first caption of each pair and scores the images against its photo.

As HELM's ``WinogroundScenario``: the Hub dataset ``facebook/winoground``, split test, in its order (the
loading script's: ``data/examples.jsonl``), one instance per row: the prompt is ``caption_0``, the one correct
reference its photo ``image_0`` (``data/images.zip``, ``<image_0>.png``), decoded and stored once under
``media/``. No other field is read; ids ``id<n>`` count the rows (HELM's ids).

The repository is gated (its terms are accepted on its Hub page; the photos are Getty Images'), and HELM loads it
unpinned: the two files run from a mirror only (``huggingface-cli download facebook/winoground --repo-type
dataset`` into ``$HELMFLOW_MIRROR/winoground/unpinned/``), pinned by the sha256 recorded when mirrored; without
them the board leaves Winoground out, naming what is missing.
"""

from __future__ import annotations

import json
from typing import ClassVar

from helmflow.records import Input, Instance, Reference
from helmflow.scenarios import scenario
from helmflow.scenarios.base import UNPINNED, DataSource, ScenarioError, read_jsonl_lines
from helmflow.scenarios.text_to_image import CORE_METRICS, REFERENCE_METRICS, TextToImageScenario, photo_archive

REPO = "facebook/winoground"
EXAMPLES, IMAGES = "examples.jsonl", "images.zip"
ACCESS = (f"accept the terms of the gated Hub dataset {REPO} on its page, then download data/{EXAMPLES} and "
          f"data/{IMAGES} (`huggingface-cli download {REPO} --repo-type dataset`, with HF_TOKEN)")


@scenario("winoground")
class Winoground(TextToImageScenario):
    VERSION = "1"
    HUB_REPO = REPO
    HUB_REVISION = UNPINNED  # gated, and HELM loads it unpinned: runs from a mirror only, pinned at first mirror
    description = ("HEIM: Winoground, the first caption of each pair of captions with the same words in another "
                   "order (reasoning), its photo the reference image; gated, mirrored.")
    metrics: ClassVar[list[str]] = [*REFERENCE_METRICS, *CORE_METRICS]
    gated = f"the Hub repository {REPO} is gated (Getty Images' photos): its terms are accepted on its page"
    helm_differences = (f"winoground: HELM loads the gated Hub dataset {REPO} unpinned through its loading script; "
                        f"here the script's two files (data/{EXAMPLES}, data/{IMAGES}) run from a mirror, pinned by "
                        "the sha256 recorded when mirrored (unverified against HELM's copy)",)

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=name, url=self.hub_url(f"data/{name}"), sha256_unknown=True, gated=ACCESS)
                for name in (EXAMPLES, IMAGES)]

    def load(self, files: dict[str, str]) -> list[Instance]:
        url = files[EXAMPLES]
        rows = []
        for number, line in read_jsonl_lines(self.name, url):
            try:
                row = json.loads(line)
                rows.append((number, str(row["caption_0"]), str(row["image_0"])))
            except (ValueError, KeyError, TypeError) as exc:
                raise ScenarioError(f"scenario {self.name!r}: {url} line {number} is not a Winoground example "
                                    f"with caption_0 and image_0 ({type(exc).__name__}: {exc})") from None
        out: list[Instance] = []
        with photo_archive(self.name, files[IMAGES]) as (archive, members):
            for number, caption, image in rows:
                name = f"{image}.png"
                if name not in members:
                    raise ScenarioError(f"scenario {self.name!r}: {files[IMAGES]} has no photo {name!r} "
                                        f"({url} line {number})")
                part = self.image(archive.read(members[name]), f"{IMAGES}: {name}")
                out.append(Instance(id=f"id{len(out)}", split="test", input=Input(text=caption),
                                    references=[Reference(text=f"<image {name}>", correct=True, image=part)]))
        return out
