"""The one clock of what the package stores and compares: ``now()``, timezone-aware UTC.

Every moment a table holds (a score post's next try, a sync's lease) is written from it
and read back aware and in UTC (``types.UtcDateTime``), so moments from two replicas, two
engines or two versions compare as moments, never as text in two formats. The replicas'
clocks must agree (NTP): a claim's expiry is one replica's moment compared with another's.
"""

from __future__ import annotations

from datetime import UTC, datetime


def now() -> datetime:
    """This moment, aware, in UTC."""
    return datetime.now(UTC)
