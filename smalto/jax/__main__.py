"""``python -m smalto.jax run SCRIPT.py [ARGS...]`` / ``python -m smalto.jax capture ...``."""

import sys

from smalto.cli.capture import main

sys.exit(main())
