"""Errors raised by the LLM layer, all under ``pinb.errors.PinbError``.

The tree::

    PinbError
    └── LLMError                        something about a model call went wrong
        ├── ProviderHTTPError           a request failed (status_code); only when asked for
        ├── StreamProtocolError         a malformed or truncated stream
        ├── ProviderStreamError         an error event inside a stream (retryable, detail)
        ├── ContextOverflowError        the prompt does not fit the model's context window
        ├── MissingCredentialsError     no API key; names the variable to set (env_var)
        ├── InvalidCredentialsError     a key no header can carry; names its source, never it
        ├── UnknownProviderError        a provider name pinb does not know (also a ValueError)
        └── UnsupportedApiError         a wire protocol pinb does not speak

Provider failures never escape a stream: they end it with an assistant message whose
``stopReason`` is ``"error"``. The exceptions here are for configuration mistakes and for
callers that ask for them (``acomplete(..., raise_on_overflow=True)``).
"""

from __future__ import annotations

from typing import Any

from pinb.errors import PinbError

__all__ = [
    "ContextOverflowError",
    "InvalidCredentialsError",
    "LLMError",
    "MissingCredentialsError",
    "ProviderHTTPError",
    "ProviderStreamError",
    "StreamProtocolError",
    "UnknownProviderError",
    "UnsupportedApiError",
]


class LLMError(PinbError):
    """Something about a model call went wrong."""


class ProviderHTTPError(LLMError):
    """A request failed after its retries (raised only with ``raise_on_error=True``).

    Attributes
    ----------
    status_code:
        The provider's HTTP status, or ``None`` for connection failures, timeouts and
        broken streams.
    message:
        The Pi-shaped assistant message (``stopReason == "error"``) to persist.
    """

    def __init__(
        self, text: str, *, status_code: int | None, message: dict[str, Any] | None = None
    ):
        self.status_code = status_code
        self.message = message
        super().__init__(text)


class StreamProtocolError(LLMError):
    """The response stream was malformed (bad JSON, unknown framing) or ended too early."""


class ProviderStreamError(LLMError):
    """The provider sent an error event inside an otherwise healthy stream (Anthropic's
    ``overloaded_error``, an OpenAI-style ``{"error": ...}`` chunk).

    The stream decoders raise it and the HTTP client catches it: it ends the response
    with the provider's own words as ``errorMessage``, after a retry when ``retryable``.

    Attributes
    ----------
    detail:
        The provider's text, as it goes into ``errorMessage`` (what Pi records there).
    retryable:
        Whether the same request may well succeed when sent again (an overload, a
        server error) rather than fail the same way.
    """

    def __init__(self, detail: str, *, retryable: bool):
        self.detail = detail
        self.retryable = retryable
        said = " ".join(detail.split()) or "no details"
        advice = (
            "it is usually passing: pinb asks again after a pause; if it persists, try later"
            if retryable
            else "the same request would fail again: change the request or the model"
        )
        super().__init__(
            f"The provider reported an error in the middle of its reply ({said}); {advice}."
        )


class ContextOverflowError(LLMError):
    """The request did not fit the model's context window.

    Attributes
    ----------
    message:
        The Pi-shaped assistant message (``stopReason == "error"``) that reported the
        overflow, so the caller can persist it before compacting and retrying.
    """

    def __init__(self, text: str, *, message: dict[str, Any] | None = None):
        self.message = message
        super().__init__(text)


class MissingCredentialsError(LLMError):
    """No API key was found for a provider.

    Attributes
    ----------
    provider:
        The provider that needs a key.
    env_var:
        The environment variable to set, when the provider has one.
    """

    def __init__(self, provider: str, env_var: str | None, *, auth_path: str | None = None):
        self.provider = provider
        self.env_var = env_var
        where = f"set the {env_var} environment variable" if env_var else "pass api_key=..."
        extra = f" (or add a key for {provider!r} to {auth_path})" if auth_path else ""
        super().__init__(f"No API key for provider {provider!r}: {where}{extra}.")


class UnknownProviderError(LLMError, ValueError):
    """A model spec names a provider pinb does not know."""


class UnsupportedApiError(LLMError, ValueError):
    """A model is configured with a wire protocol pinb does not implement."""


class InvalidCredentialsError(LLMError, ValueError):
    """A key that cannot be sent as an HTTP header value.

    The message names where the key came from and never shows any part of it.

    Attributes
    ----------
    source:
        An environment variable's name, ``auth.json``, ``models.json`` or the argument.
    """

    def __init__(self, source: str, problem: str):
        self.source = source
        super().__init__(
            f"The API key from {source} cannot be used: it {problem}. "
            "Set it to the key alone (no quotes, spaces or line breaks)."
        )
