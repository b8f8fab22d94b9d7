"""Pools on Ray: the spec, the actor host, the launcher, the Python API and pytest plugin.

Public: ``Pool`` (``mockpool.Pool``), ``run_pool``, ``load_spec``/``parse_spec``,
``SpecError``; the pytest fixtures in :mod:`mockpool.pool.pytest_plugin`.
"""
