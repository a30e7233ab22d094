"""How straight the pass reads: ``python -m bench.trace_path [--list]``.

The trace itself is ``tests/helpers/path_trace.py`` (test support: the ceiling
test ``tests/codebase/test_trace_path.py`` holds its figures down); this is
its command line.
"""

from __future__ import annotations

from path_trace import main

import bench  # noqa: F401  (puts tests/helpers on sys.path)

if __name__ == "__main__":
    raise SystemExit(main())
