"""Graph passes over :mod:`fabric.fx` graphs (``shape_prop``)."""
from . import shape_prop  # noqa: F401
