"""``python -m pinb.cli``: the same as the ``pinb`` command."""

from .main import main

raise SystemExit(main())
