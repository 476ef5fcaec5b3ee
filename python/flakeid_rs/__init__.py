"""flakeid_rs (the package flakeid-rs): unique, time-ordered 64-bit IDs of the Snowflake family.

Mint them in process (``Generator``, or ``claim(url)`` for a node id a store hands out and
fences), and decode columns of them into numpy or Arrow with the SIMD batch decoder
(``Layout.decode``, ``Layout.decode_arrow``). Layouts: Twitter's Snowflake, Sonyflake,
Discord, Instagram, Mastodon, and custom ones, bit-exact.
"""

import asyncio
import atexit
import os
import weakref
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from . import _native
from ._errors import ClaimError, Error, ForkError, LayoutError, MintError

__all__ = [
    "Layout",
    "Generator",
    "ClaimedGenerator",
    "claim",
    "claims",
    "Error",
    "LayoutError",
    "MintError",
    "ClaimError",
    "ForkError",
    "__version__",
]

__version__ = _native.__version__

Layout = _native.Layout


async def _await_id(mint, try_next, max_wait: float) -> int:
    """Mints with ``try_next``, awaiting ``asyncio.sleep`` (never blocking the loop)
    while a tick runs out, within ``max_wait`` seconds in all."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max_wait
    while True:
        try:
            return try_next()
        except MintError as e:
            wait = e.retry_after
            if wait is None or loop.time() + wait > deadline:
                # Past the bound: the blocking call's answer (an ID or its error).
                return mint()
            await asyncio.sleep(wait)


class Generator(_native.Generator):
    """IDs on a node id you give: ``Generator(layout, node=3)`` or
    ``Generator(layout, datacenter=1, worker=7)``. Thread-safe; the GIL is released while a
    call waits. Each process needs its own node id: use ``claim(url)`` to have a store hand
    them out."""

    async def next_id_async(self) -> int:
        """The next ID, awaiting (not blocking the event loop) when a tick runs out."""
        return await _await_id(self.next_id, self.try_next_id, self.max_wait)

    async def next_ids_async(self, n: int) -> "np.ndarray[Any, np.dtype[np.uint64]]":
        """``n`` IDs as a numpy ``uint64`` array, awaiting between ticks."""
        return await _await_ids(self, n)


async def _await_ids(g: Any, n: int) -> "np.ndarray[Any, np.dtype[np.uint64]]":
    parts = []
    left = n
    while left > 0:
        try:
            got = g.try_next_ids(left)
        except MintError as e:
            if e.retry_after is None:
                raise
            await asyncio.sleep(e.retry_after)
            continue
        parts.append(got)
        left -= len(got)
    return np.concatenate(parts) if parts else np.empty(0, dtype=np.uint64)


_live_claims: "weakref.WeakSet[ClaimedGenerator]" = weakref.WeakSet()


class ClaimedGenerator(_native.ClaimedGenerator):
    """IDs on a node id claimed from a store and fenced (see ``claim``). Use it as a
    context manager, or call ``release()``; it is released when collected and at exit."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _live_claims.add(self)

    async def next_id_async(self) -> int:
        """The next ID, awaiting (not blocking the event loop) when a tick runs out."""
        return await _await_id(self.next_id, self.try_next_id, self.max_wait)

    async def next_ids_async(self, n: int) -> "np.ndarray[Any, np.dtype[np.uint64]]":
        """``n`` IDs as a numpy ``uint64`` array, awaiting between ticks."""
        return await _await_ids(self, n)



def claim(
    url: str,
    *,
    namespace: str = "default",
    nodes: Optional[Tuple[int, int]] = None,
    layout: Optional[Layout] = None,
    window: float = 5.0,
    ttl: Optional[float] = None,
    instance: Optional[str] = None,
    pool_wait: Optional[float] = None,
    password: Optional[str] = None,
    max_wait: float = 0.1,
) -> ClaimedGenerator:
    """Claims the lowest free node id of ``nodes`` (``(start, end)``, end excluded; the
    layout's whole node field by default) in ``namespace`` of the store ``url`` names, and
    returns a generator fenced by it: it mints only inside the ``window`` (seconds) the
    store accepted, renewed in the background, and fails closed (``MintError``) rather than
    mint past it. Stores: ``file:DIR``, ``etcd://HOST:PORT[,...]`` (``etcds://`` with TLS;
    ``ca=``, ``cert=``, ``key=``, ``user=`` in the query, the password here or by
    ``password-file=``), ``zookeeper://HOST:PORT[,...]`` (``user=`` for digest auth),
    ``static:N``, ``memory:``. Waits (the GIL released) for a free id up to ``pool_wait``
    seconds. Raises ``ClaimError``."""
    return ClaimedGenerator(
        url,
        namespace=namespace,
        nodes=nodes,
        layout=layout,
        window=window,
        ttl=ttl,
        instance=instance,
        pool_wait=pool_wait,
        password=password,
        max_wait=max_wait,
    )


def claims(
    url: str, namespace: Optional[str] = None, *, password: Optional[str] = None, ttl: Optional[float] = None
) -> List[Dict[str, Any]]:
    """What the store ``url`` holds: each node id of ``namespace`` (``node``, ``state``,
    ``holder``, ``reserved_until_unix_ns``, ``problem``), or each namespace with its
    layout."""
    return _native.claims(url, namespace, password=password, ttl=ttl)


@atexit.register
def _release_at_exit() -> None:
    for g in list(_live_claims):
        try:
            g.release()
        except Error:
            pass


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_native._after_fork_in_child)
