"""The virtual-time simulation kernel: one thread, one heap, the cores stepped directly
(see ``kernel.py``)."""

from .kernel import DEADLINE, Kernel, Node
from .network import ActorFaults

__all__ = ["DEADLINE", "ActorFaults", "Kernel", "Node"]
