"""The ``pinb`` command line: thin wrappers over the lower layers; never imports IPython.

One module per command group, as jupysql's ``cmd/`` does:

- :mod:`pinb.cli.main`: the parser and dispatch (``pinb.cli:main`` is the entry point);
- :mod:`pinb.cli.sessions`: ``ls``, ``tree``, ``context``, ``tokens``, ``compact``, ``goto``;
- :mod:`pinb.cli.analysis`: ``search``, ``export``, ``import``, ``frames``;
- :mod:`pinb.cli.memory`: ``memory ...``, ``rm``, ``restore``;
- :mod:`pinb.cli.output`: the one way it prints (any string, a closed pipe ends quietly).
"""

from __future__ import annotations

from .main import build_parser, main
from .sessions import open_session_file

__all__ = ["build_parser", "main", "open_session_file"]
