"""``python -m benchmarks``: run the benchmark (``benchmarks.main``); the exit status is
``benchmarks.status`` of its rows (1 when a judged target was missed)."""

import sys

from . import main, status

sys.exit(status(main()))
