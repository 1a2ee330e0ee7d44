"""The repository's address, from its one written place.

``pyproject.toml``'s ``[project.urls] Repository`` holds it; ``blockcd.__url__`` reads it (the file
in a clone, the metadata of an installed wheel).  Jupyter Book would take the repository and launch
buttons' address from ``_config.yml`` (``repository.url``, else its own default, Jupyter Book's
repository): this extension sets it from ``blockcd.__url__`` instead, so ``_config.yml`` does not
hold a copy.  The chapters' first cells hold the install line as text (a chapter opened on Colab
cannot import the address before installing it); ``tests/test_repository.py`` checks them.
"""


def _set_repository_url(app, config):
    import blockcd

    config.html_theme_options = {**(config.html_theme_options or {}), "repository_url": blockcd.__url__}


def setup(app):
    app.connect("config-inited", _set_repository_url)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
