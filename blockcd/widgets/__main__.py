"""``python -m blockcd.widgets --bench``: time the explorers' callbacks (see :mod:`blockcd.widgets.latency`)."""

from .latency import main

raise SystemExit(main())
