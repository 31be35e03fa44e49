"""Settings of ``fabric.compile`` (``torch._dynamo.config``'s names).

``recompile_limit`` (alias ``cache_size_limit``): how many graphs one compiled
function keeps (one per set of guards: input shapes, dtypes, devices,
requires_grad, training flags, grad mode); past it the function runs eagerly
with a warning, as PyTorch does.

``fuse_pointwise`` (fabric's own): the default backend replaces chains of
pointwise ops by one fused kernel (see ``fabric._dynamo.fusion``).

Example::

    >>> from fabric._dynamo import config
    >>> config.recompile_limit
    8
"""
recompile_limit = 8
cache_size_limit = 8          # the older name; the smaller of the two applies
accumulated_recompile_limit = 256
fuse_pointwise = True         # fabric's own: elementwise fusion in the default ("inductor") backend
