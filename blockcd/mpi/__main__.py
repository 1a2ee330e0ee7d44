"""``mpiexec -n K python -m blockcd.mpi ...``: run the rank program (:func:`blockcd.mpi.ranks.main`)."""

import sys

from .ranks import main

sys.exit(main())
