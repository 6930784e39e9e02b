"""Bringing HELM across: its output tree (:mod:`.tree`), ``import-helm`` (:mod:`.importer`),
``export --format helm`` (:mod:`.export`) and its model configuration (:mod:`.models`,
``import-helm-models``). Modules are imported by the command that needs them (``helmflow --help``
loads no Parquet code), so this package imports nothing."""
