"""blockcd.torch: independent block sparsification inside PyTorch DistributedDataParallel.

Imported only when used (``import blockcd`` never imports torch; install with
``pip install -e ".[torch]"`` from a clone).

What it holds:

* :mod:`blockcd.torch.hook`: :class:`SparsificationState` and :func:`sparsify_hook`, the DDP
  communication hook;
* ``blockcd.torch.launch``: :func:`spawn` and :class:`RankFailed`, K Gloo processes on 127.0.0.1
  with timeouts;
* :mod:`blockcd.torch.train`: ``python -m blockcd.torch.train``, a two-layer network on
  scikit-learn's digits, dense against shared and independent sparsification (book chapter 11).

Usage::

    from blockcd.torch import SparsificationState, sparsify_hook
    state = SparsificationState(m=32, tau=8, seed=0)
    ddp_model.register_comm_hook(state, sparsify_hook)
"""

from .hook import SparsificationState, allgather_bytes, allreduce_bytes, sparsify_hook
from .launch import RankFailed, spawn

__all__ = ["RankFailed", "SparsificationState", "allgather_bytes", "allreduce_bytes", "sparsify_hook", "spawn"]
