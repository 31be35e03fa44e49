"""``torch.distributed.optim``: :class:`ZeroRedundancyOptimizer` (optimizer state sharded over ranks)."""
from .zero_redundancy_optimizer import ZeroRedundancyOptimizer

__all__ = ["ZeroRedundancyOptimizer"]
