"""``python -m pinb``: the same as the ``pinb`` command."""

from .cli import main

raise SystemExit(main())
