"""mockpool: a live, distributed mock of an HTCondor pool."""

import os as _os

# gRPC's fork handlers make ~1% of forked children (Ray's raylet among them) abort once
# gRPC has been used; it reads this at import, so set it before anything imports grpc.
_os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "0")

__version__ = "0.1.0"
