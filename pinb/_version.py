"""pinb's version, read by the facade, the CLI and the HTTP client's user-agent alike."""

from __future__ import annotations

__version__ = "0.1.0"
