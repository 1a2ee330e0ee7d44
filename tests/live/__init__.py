"""The project's own measurements of the explorers, outside the library.

``lab`` drives the explorers in a real JupyterLab through a browser (``tests/test_live.py``),
``latency`` times their callbacks: ``python -m tests.live --bench [--live]`` from the repository root.
"""
