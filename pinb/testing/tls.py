"""A throwaway certificate authority and certificate for loopback TLS servers in tests.

Made with ``trustme`` (in ``pinb[dev]``), in Python: no ``openssl`` command is needed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["Certificate", "self_signed_certificate"]


@dataclass(frozen=True)
class Certificate:
    """A certificate for ``127.0.0.1`` and ``localhost``, its private key, and the throwaway
    authority that issued it (PEM files).

    A server loads ``cert`` and ``key``; a client trusts ``ca`` (``SSL_CERT_FILE``,
    ``verify=``), which vouches for nothing else.
    """

    cert: Path
    key: Path
    ca: Path


def self_signed_certificate(folder: Path) -> Certificate:
    """Make a new authority and a certificate it issued for the loopback, in ``folder``.

    Raises
    ------
    RuntimeError
        ``trustme`` is not installed (``pip install 'pinb[dev]'``).
    """
    try:
        import trustme
    except ImportError:
        raise RuntimeError(
            "a TLS test server needs trustme to make its certificate: pip install 'pinb[dev]'"
        ) from None
    folder.mkdir(parents=True, exist_ok=True)
    authority = trustme.CA()
    issued = authority.issue_cert("127.0.0.1", "localhost")
    cert, key, ca = (folder / f"loopback-{n}.pem" for n in ("cert", "key", "ca"))
    issued.cert_chain_pems[0].write_to_path(str(cert))
    for extra in issued.cert_chain_pems[1:]:
        extra.write_to_path(str(cert), append=True)
    issued.private_key_pem.write_to_path(str(key))
    authority.cert_pem.write_to_path(str(ca))
    return Certificate(cert, key, ca)
