"""Models for the Queue Depth book.

* :mod:`models.analytic` -- closed-form results for the ring of pipeline stages (SymPy and numbers).
* :mod:`models.validation` -- the registry of model-versus-measurement comparisons shown in the book.

Other subpackages (the packet simulator, data loaders, controllers) are imported on demand.
"""

__version__ = "0.1.0"
