"""An offline toxicity classifier: ``alt-profanity-check`` (a scikit-learn model shipped in its wheel).

Like ``perspective``, a *classifier* kind: the prompt is the text to score, the completion a JSON
object ``{"TOXICITY": p}`` with p the model's probability that the text is offensive. No key and no
network: the model files are inside the installed package (install the ``safety`` extra). It
measures offensive language, not Perspective's calibrated toxicity, so its numbers are its own:
the scorer's name and version are part of metric_version and never mix with Perspective's.

Requests that arrive together are scored in one ``predict_prob`` call, off the I/O loop (a
micro-batch per event-loop turn), so throughput is the classifier's, not one call per text.
"""

from __future__ import annotations

import asyncio
import json
from importlib import metadata

from helmflow.clients import client_kind
from helmflow.clients.base import Client, ClientResult, PermanentError
from helmflow.errors import install_command
from helmflow.media import MediaStore
from helmflow.records import Deployment, RequestBody

PACKAGE = "alt-profanity-check"


def package_version() -> str:
    try:
        return metadata.version(PACKAGE)
    except metadata.PackageNotFoundError:
        return ""


def _model():
    try:
        from profanity_check import predict_prob
    except ImportError:
        raise PermanentError(f"the offline toxicity scorer needs {PACKAGE}: {install_command('safety')}") from None
    return predict_prob


@client_kind("profanity-check")
class ProfanityCheckClient(Client):
    classifier = True
    requires = ("profanity_check",)
    extra = "safety"

    def __init__(self, deployment: Deployment, media: MediaStore | None = None):
        super().__init__(deployment, media)
        self._pending: list[tuple[str, asyncio.Future]] = []

    def check_credentials(self) -> None:
        """No key; the checks are that the classifier is installed and is the version the deployment
        declares in ``revision`` (its model is part of metric_version), before any run."""
        _model()
        installed, declared = package_version(), self.deployment.revision
        if declared and installed != declared:
            raise PermanentError(f"deployment {self.deployment.name!r} declares {PACKAGE} {declared}, "
                                 f"but {installed} is installed: pip install {PACKAGE}=={declared}, "
                                 "or declare the installed revision")

    async def complete(self, body: RequestBody) -> ClientResult:
        future = asyncio.get_running_loop().create_future()
        self._pending.append((body.prompt or "", future))
        if len(self._pending) == 1:
            asyncio.get_running_loop().call_soon(lambda: asyncio.ensure_future(self._flush()))
        return ClientResult(text=json.dumps({"TOXICITY": await future}))

    async def _flush(self) -> None:
        batch, self._pending = self._pending, []
        try:
            probs = await asyncio.to_thread(_model(), [text for text, _ in batch])
        except Exception as exc:  # noqa: BLE001 - every waiting request gets the error
            for _, future in batch:
                future.set_exception(exc if isinstance(exc, PermanentError) else PermanentError(str(exc)))
            return
        for (_, future), p in zip(batch, probs, strict=True):
            future.set_result(float(p))
