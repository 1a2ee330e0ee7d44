"""``python -m blockcd.bench``: run the benchmark (:func:`blockcd.bench.main`)."""

from . import main

main()
