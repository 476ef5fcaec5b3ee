"""The exceptions of flakeid, grouped by what the caller does next."""

from typing import Optional


class Error(Exception):
    """Every error flakeid raises."""


class LayoutError(Error, ValueError):
    """A layout, a field value or an ID that does not fit: fix the input or the settings."""


class MintError(Error):
    """No ID could be minted now. ``retry_after`` (seconds) says when a retry can succeed,
    ``None`` when it cannot (the layout's time ran out, the claim was lost)."""

    retry_after: Optional[float] = None


class ClaimError(Error):
    """A claim could not be taken, renewed or listed. ``kind`` says what to do:
    ``settings`` (fix them), ``unavailable`` (retry: the store cannot be reached),
    ``busy`` (retry later or widen the pool), ``not_owner`` (claim anew), ``access``
    (fix the credentials), ``corrupt`` (repair the store), ``cancelled``, ``released``
    (minting after ``release()``)."""

    kind: str = "other"


class ForkError(Error):
    """A generator or claim made before ``os.fork()`` used in the child, where it could
    mint IDs its parent mints too. Make a new one in the child."""
