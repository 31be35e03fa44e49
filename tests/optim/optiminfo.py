"""OptimizerInfo registry: each optimizer with several configurations."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class OptimizerInfo:
    name: str
    configs: list = field(default_factory=list)   # kwargs dicts
    needs_closure: bool = False


OPTIMIZERS = [
    OptimizerInfo("SGD", [dict(lr=0.1), dict(lr=0.1, momentum=0.9), dict(lr=0.05, momentum=0.9, nesterov=True),
                          dict(lr=0.1, momentum=0.5, dampening=0.3, weight_decay=0.1),
                          dict(lr=0.01, momentum=0.5, maximize=True)]),
    OptimizerInfo("Adam", [dict(lr=0.01), dict(lr=0.01, weight_decay=0.1), dict(lr=0.01, amsgrad=True),
                           dict(lr=0.02, betas=(0.8, 0.9), eps=1e-6, maximize=True)]),
    OptimizerInfo("AdamW", [dict(lr=0.01), dict(lr=0.01, weight_decay=0.3, amsgrad=True)]),
    OptimizerInfo("Adamax", [dict(lr=0.01), dict(lr=0.01, weight_decay=0.1, maximize=True)]),
    OptimizerInfo("NAdam", [dict(lr=0.01), dict(lr=0.01, weight_decay=0.1),
                            dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)]),
    OptimizerInfo("RAdam", [dict(lr=0.01), dict(lr=0.01, weight_decay=0.1),
                            dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)]),
    OptimizerInfo("RMSprop", [dict(lr=0.01), dict(lr=0.01, momentum=0.9), dict(lr=0.01, centered=True),
                              dict(lr=0.01, centered=True, momentum=0.5, weight_decay=0.1, maximize=True)]),
    OptimizerInfo("Adagrad", [dict(lr=0.1), dict(lr=0.1, lr_decay=0.01, weight_decay=0.1,
                                                 initial_accumulator_value=0.1)]),
    OptimizerInfo("Adadelta", [dict(), dict(lr=0.5, rho=0.8, weight_decay=0.1)]),
    OptimizerInfo("Rprop", [dict(lr=0.01), dict(lr=0.02, etas=(0.4, 1.3), step_sizes=(1e-4, 1.0), maximize=True)]),
    OptimizerInfo("ASGD", [dict(lr=0.01), dict(lr=0.01, t0=5, weight_decay=0.1)]),
    OptimizerInfo("LBFGS", [dict(lr=0.5, max_iter=5), dict(lr=1, max_iter=4, line_search_fn="strong_wolfe",
                                                           history_size=3)], needs_closure=True),
]
