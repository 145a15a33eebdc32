"""The value types of the revive bodies' keys, as the body kernel (formats/pop/_kernels.py) and its caller
(formats/pop/columns.py) both name them, and the Java int range an int value must fit."""

LONG, INT, TEXT, INT_LIST, LONG_LIST, IGNORED_LONG = 0, 1, 2, 3, 4, 5
INT_MIN, INT_MAX = -(2**31), 2**31 - 1
