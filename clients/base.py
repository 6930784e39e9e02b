"""The contract every provider client implements, and the errors that steer retries."""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

from helmflow.records import Deployment, RequestBody
from helmflow.storage import Store


class ClientError(Exception):
    """A failed request. ``transient`` errors are retried; permanent ones stop the pair at once."""

    transient = True

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class TransientError(ClientError):
    transient = True


class PermanentError(ClientError):
    transient = False


@dataclass
class ClientResult:
    text: str
    finish_reason: str = "stop"
    prompt_tokens: int = 0
    output_tokens: int = 0
    tokens: list[str] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)


class Client(ABC):
    """One instance per deployment per process; ``complete`` is called concurrently from one event loop."""

    def __init__(self, deployment: Deployment, store: Store | None = None):
        self.deployment = deployment
        self.store = store

    def resolve_api_key(self) -> str | None:
        """The key, looked up by the credential's *name*; never stored on a record or returned upward."""
        d = self.deployment
        if d.api_key_env:
            value = os.environ.get(d.api_key_env)
            if not value:
                raise PermanentError(
                    f"deployment {d.name!r}: environment variable {d.api_key_env} is not set; export it or "
                    f"point api_key_env at the variable that holds the key"
                )
            return value
        if d.api_key_secret:
            from prefect.blocks.system import Secret

            try:
                return Secret.load(d.api_key_secret).get()
            except Exception as exc:  # noqa: BLE001 - any lookup failure is a missing credential
                raise PermanentError(
                    f"deployment {d.name!r}: Prefect Secret block {d.api_key_secret!r} could not be loaded "
                    f"({type(exc).__name__})"
                ) from None
        return None

    def check_credentials(self) -> None:
        """Raise :class:`PermanentError` before the first request if a credential is missing."""
        self.resolve_api_key()

    @abstractmethod
    async def complete(self, body: RequestBody) -> ClientResult: ...

    def flush_counters(self) -> None:  # noqa: B027 - optional hook
        """Called at the end of each query batch; offline clients persist their call counts here."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        pass
