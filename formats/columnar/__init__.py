"""The columnar decoder: whole commitlog ranges to Arrow columns through numba kernels, property-tested
against formats.message."""
