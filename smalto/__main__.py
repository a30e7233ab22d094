"""``python -m smalto``: the same as the ``smalto`` command."""

from smalto.cli import main

raise SystemExit(main())
