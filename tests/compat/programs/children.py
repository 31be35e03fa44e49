"""Every kind of child process sees ``torch`` as the parent does: spawn,
forkserver and fork Process targets, mp.spawn ranks, DataLoader workers
under spawn; a shared tensor written by the children is seen by the parent."""
import multiprocessing

import torch
import torch.multiprocessing as mp
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


def describe():
    return torch.__name__, nn.Linear.__module__.split(".")[0]


def target(q, shared, k):
    shared[k] += k + 1
    q.put(describe())


def rank_fn(rank, shared):
    shared[3 + rank] = 10.0 * (rank + 1)


class Squares(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        info = torch.utils.data.get_worker_info()
        return torch.tensor([float(i * i), float(info.id)]), torch.__name__


if __name__ == "__main__":
    shared = torch.zeros(5).share_memory_()
    for k, method in enumerate(("spawn", "forkserver", "fork")):
        ctx = multiprocessing.get_context(method)
        q = ctx.SimpleQueue()
        p = ctx.Process(target=target, args=(q, shared, k))
        p.start()
        print(method, q.get() == describe())
        p.join()
    mp.spawn(rank_fn, args=(shared,), nprocs=2)
    print("shared writes", shared.tolist())
    loader = DataLoader(Squares(), batch_size=2, num_workers=2, multiprocessing_context="spawn")
    batches = list(loader)
    print("dataloader", [b[0][:, 0].tolist() for b in batches], sorted({n for b in batches for n in b[1]}) == [torch.__name__])
