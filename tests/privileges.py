"""Make file permissions bite for root: drop the capabilities that let root ignore them.

Linux capabilities are per thread, so `permissions_enforced()` drops CAP_DAC_OVERRIDE and
CAP_DAC_READ_SEARCH from the calling thread's effective set and restores them on exit (they stay
in the permitted set). For other users permissions already apply and it does nothing.
"""

from __future__ import annotations

import contextlib
import ctypes
import os

import pytest

_VERSION_3 = 0x20080522
_DAC_CAPS = (1 << 1) | (1 << 2)  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH


class _Header(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _Data(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _capset(libc, data) -> None:
    if libc.capset(ctypes.byref(_Header(_VERSION_3, 0)), data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")


@contextlib.contextmanager
def permissions_enforced():
    if os.geteuid() != 0:
        yield
        return
    libc = ctypes.CDLL(None, use_errno=True)
    data = (_Data * 2)()
    if libc.capget(ctypes.byref(_Header(_VERSION_3, 0)), data) != 0:
        pytest.skip("running as root and cannot read this thread's capabilities")
    saved = data[0].effective
    data[0].effective &= ~_DAC_CAPS
    try:
        _capset(libc, data)
    except OSError:
        pytest.skip("running as root and cannot drop CAP_DAC_OVERRIDE")
    try:
        yield
    finally:
        data[0].effective = saved
        _capset(libc, data)
