"""All ``nn`` module classes; each family module appends its import line here."""
from __future__ import annotations

from .module import Module  # noqa: F401
from .activation import *  # noqa: F401,F403
from .distance import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .container import *  # noqa: F401,F403
from .linear import *  # noqa: F401,F403
from .flatten import *  # noqa: F401,F403
from .sparse import *  # noqa: F401,F403
from .dropout import *  # noqa: F401,F403
from .batchnorm import *  # noqa: F401,F403
from .instancenorm import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .padding import *  # noqa: F401,F403
from .pixelshuffle import *  # noqa: F401,F403
from .upsampling import *  # noqa: F401,F403
from .fold import *  # noqa: F401,F403
from .rnn import *  # noqa: F401,F403
from .attention import *  # noqa: F401,F403
from .transformer import *  # noqa: F401,F403
from .channelshuffle import *  # noqa: F401,F403
from .syncbatchnorm import *  # noqa: F401,F403
