"""CUB-200-2011 (HEIM alignment; Wah et al. 2011, with AttnGAN's ten captions per photo, arXiv 1711.10485):
bird captions as prompts, each caption's photo the reference image.

As HELM's ``CUB200Scenario``: the photos of Caltech's ``CUB_200_2011.tgz`` and AttnGAN's caption archive on
Google Drive (HELM's URLs, unpinned upstream: pinned here by the sha256 recorded at first fetch). The test split
is the list in the archive's ``birds/test/filenames.pickle`` (read as pandas' ``read_pickle`` reads it, plain
data only: nothing in it runs), in its order; for each name, the non-empty lines of ``birds/text/<name>.txt``
(from ``birds/text.zip`` when the archive holds no ``text/`` folder, as HELM unzips it), right-stripped, are one
instance each, with the photo ``CUB_200_2011/images/<name>.jpg`` the one correct reference, decoded and stored
once under ``media/``. Ids ``id<n>`` count the captions (HELM's ids). HELM also asserts 2,933 test photos and ten
captions each; here the counts are not checked. One image per prompt (HELM's spec).
"""

from __future__ import annotations

import io
import tarfile
import zipfile
from typing import ClassVar

import fsspec

from helmflow.records import ContentPart, Input, Instance, Reference
from helmflow.scenarios import scenario
from helmflow.scenarios.base import DataSource, ScenarioError, plain_pickle, read_source
from helmflow.scenarios.text_to_image import CORE_METRICS, REFERENCE_METRICS, TextToImageScenario

IMAGES_URL = "https://data.caltech.edu/records/65de6-vp158/files/CUB_200_2011.tgz?download=1"
CAPTIONS_URL = "https://drive.google.com/uc?export=download&id=1O_LtUP9sch09QH3s_EBAgLEctBQ5JBSJ"
IMAGES, CAPTIONS = "CUB_200_2011.tgz", "birds.zip"
IMAGES_DIR = "CUB_200_2011/images/"


def _find(names: list[str], suffix: str) -> str | None:
    """The member whose path ends with ``suffix`` at a folder boundary (the archive's top folder may vary)."""
    return next((n for n in names if n == suffix or n.endswith("/" + suffix)), None)


@scenario("cub200")
class CUB200(TextToImageScenario):
    VERSION = "1"
    SOURCE_REVISION = "caltech-65de6-vp158"  # HELM's Caltech record (the mirror folder's name); pinned by sha256
    description = ("HEIM: CUB-200-2011 bird captions (AttnGAN's ten per photo) as prompts, each caption's photo the "
                   "reference image; mirrored (about 1.1 GB of photos).")
    metrics: ClassVar[list[str]] = [*REFERENCE_METRICS, *CORE_METRICS]
    num_images = 1  # HELM's get_cub200_spec asks for one image per prompt
    pin_unverified = "HELM's Caltech and Google Drive download URLs name no version of the files"
    helm_differences = ("cub200: HELM's Caltech photos archive and AttnGAN's Drive caption archive (unpinned "
                        "upstream) are pinned by the sha256 recorded at first fetch; HELM's checks of 2,933 test "
                        "photos and ten captions each are not made",)

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=IMAGES, url=self.web_url(IMAGES_URL), sha256_unknown=True),
                DataSource(filename=CAPTIONS, url=self.web_url(CAPTIONS_URL), sha256_unknown=True)]

    def _captions(self, url: str) -> list[tuple[str, list[str]]]:
        """(file name, its captions) for each test photo, in the pickle's order."""
        try:
            archive = zipfile.ZipFile(io.BytesIO(read_source(self.name, url)))
        except zipfile.BadZipFile as exc:
            raise ScenarioError(f"scenario {self.name!r}: {url} is not a zip ({exc})") from None
        names = archive.namelist()
        pickled = _find(names, "birds/test/filenames.pickle")
        if pickled is None:
            raise ScenarioError(f"scenario {self.name!r}: {url} has no birds/test/filenames.pickle")
        test = plain_pickle(self.name, f"{url}: {pickled}", archive.read(pickled), encoding="latin1")
        if not isinstance(test, list) or not all(isinstance(n, str) for n in test):
            raise ScenarioError(f"scenario {self.name!r}: {url}: {pickled} is not a list of file names")
        texts, where = archive, pickled.rpartition("birds/")[0] + "birds/text/"
        if not any(n.startswith(where) for n in names):  # HELM unzips birds/text.zip when there is no text folder
            inner = _find(names, "birds/text.zip")
            if inner is None:
                raise ScenarioError(f"scenario {self.name!r}: {url} has neither birds/text/ nor birds/text.zip")
            texts = zipfile.ZipFile(io.BytesIO(archive.read(inner)))
            where = "text/"
        available = set(texts.namelist())
        out = []
        for name in test:
            member = f"{where}{name}.txt"
            if member not in available:
                raise ScenarioError(f"scenario {self.name!r}: {url} has no captions {member!r}")
            try:
                text = texts.read(member).decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ScenarioError(f"scenario {self.name!r}: {url}: {member} is not UTF-8 text: {exc}") from None
            lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")  # HELM reads it in text mode
            out.append((name, [line.rstrip() for line in lines if line.rstrip()]))
        return out

    def load(self, files: dict[str, str]) -> list[Instance]:
        test = self._captions(files[CAPTIONS])
        wanted = {f"{IMAGES_DIR}{name}.jpg" for name, _ in test}
        photos: dict[str, ContentPart] = {}
        with fsspec.open(files[IMAGES], "rb") as fh:  # one pass over the archive: it is about 1.1 GB
            try:
                with tarfile.open(fileobj=fh, mode="r:*") as archive:
                    for member in archive:
                        path = member.name.removeprefix("./")
                        if member.isfile() and path in wanted:
                            data = archive.extractfile(member)
                            assert data is not None
                            photos[path] = self.image(data.read(), f"{IMAGES}: {path}")
            except tarfile.TarError as exc:
                raise ScenarioError(f"scenario {self.name!r}: {files[IMAGES]} is not a tar archive ({exc})") from None
        out: list[Instance] = []
        for name, captions in test:
            path = f"{IMAGES_DIR}{name}.jpg"
            if path not in photos:
                raise ScenarioError(f"scenario {self.name!r}: {files[IMAGES]} has no photo {path!r}")
            for caption in captions:
                out.append(Instance(id=f"id{len(out)}", split="test", input=Input(text=caption),
                                    references=[Reference(text=f"<image {name}.jpg>", correct=True,
                                                          image=photos[path])]))
        return out
