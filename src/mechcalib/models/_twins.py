"""Serial and threaded kernels compiled from one Python body.

A batch kernel loops over parameter sets with ``numba.prange``; compiled with ``parallel=True`` the sets run
on threads, compiled without it ``prange`` is a plain ``range``. Small batches take the serial one (the thread
pool's start-up costs more than it saves). Both come from the same loop body, so the two cannot drift apart.

The body is compiled as two renamed copies of the function: numba's on-disk cache names its files after the
function's qualified name and keys an entry by signature, not by the ``parallel`` flag, so two dispatchers of
one function would share cache files and load each other's machine code.
"""

from __future__ import annotations

import types
from collections.abc import Callable

import numba as nb


def _renamed(body: Callable, suffix: str) -> Callable:
    fn = types.FunctionType(
        body.__code__, body.__globals__, body.__name__ + suffix, body.__defaults__, body.__closure__
    )
    fn.__qualname__ = body.__qualname__ + suffix
    fn.__doc__ = body.__doc__
    fn.__kwdefaults__ = body.__kwdefaults__
    return fn


def twin_kernels(body: Callable) -> tuple[Callable, Callable]:
    """``(parallel, serial)``: ``body`` compiled with ``njit(parallel=True, cache=True)`` and with
    ``njit(cache=True)``, named ``<body>_parallel`` and ``<body>_serial``."""
    return (
        nb.njit(parallel=True, cache=True)(_renamed(body, "_parallel")),
        nb.njit(cache=True)(_renamed(body, "_serial")),
    )
