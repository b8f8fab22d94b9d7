"""mockpool: a live, distributed mock of an HTCondor pool."""

__version__ = "0.1.0"
