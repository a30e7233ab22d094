"""``python -m smalto.jax run SCRIPT.py [ARGS...]`` / ``python -m smalto.jax capture ...``."""

import sys

from smalto.jax.cli import main

sys.exit(main())
