"""``python -m smalto``: the same as the ``smalto`` command."""

from smalto.cli.main import main

raise SystemExit(main())
