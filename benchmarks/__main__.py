"""``python -m benchmarks``: run the benchmark (``benchmarks.main``)."""

from . import main

main()
