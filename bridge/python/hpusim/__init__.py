"""hpusim: a cycle-level simulator of a Gaudi-class accelerator. `hpusim.torch` is its PyTorch bridge."""
import os as _os
import sys as _sys


def _keep_python_mpi_in_step():
    # A process of a box split between mpirun's ranks keeps its program's own MPI calls in step with
    # the simulation through libhpusim-synapse.so (sim/distributed/README.md). A C program links it
    # before libmpi; a Python module calling MPI (mpi4py) binds libmpi's functions when it is loaded,
    # so the library goes into the global scope first, ahead of libmpi.
    if "OMPI_COMM_WORLD_SIZE" not in _os.environ:
        return
    if "mpi4py.MPI" in _sys.modules:
        _sys.stderr.write("hpusim: mpi4py was imported before hpusim (or habana_frameworks.torch): its MPI calls are "
                          "not kept in step with the simulation, and one that waits for a rank whose card must still "
                          "move waits for ever; import hpusim first\n")
    import ctypes

    from hpusim import _synapse_library
    ctypes.CDLL(_synapse_library.PATH, mode=_os.RTLD_NOW | _os.RTLD_GLOBAL)


_keep_python_mpi_in_step()
