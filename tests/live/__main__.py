"""``python -m tests.live --bench``: time the explorers' callbacks (see ``tests/live/latency.py``)."""

from .latency import main

raise SystemExit(main())
