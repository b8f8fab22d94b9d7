"""mockpool: a live, distributed mock of an HTCondor pool."""

import os as _os

# gRPC's fork handlers make ~1% of forked children (Ray's raylet among them) abort once
# gRPC has been used; it reads this at import, so set it before anything imports grpc.
_os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "0")

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    # The pool API pulls in gRPC and Ray glue; import it only when asked for.
    if name == "Pool":
        from .pool.api import Pool

        return Pool
    raise AttributeError(f"module 'mockpool' has no attribute {name!r}")
