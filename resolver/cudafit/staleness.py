"""How old the data in use is, as a note on answers: never a network call, only the clock.

"Today" is $SOURCE_DATE_EPOCH where set (the reproducible-builds convention), so that CI jobs
and golden outputs do not change with the calendar. Every resolve asks, so the usual answer (fresh
data) is decided by comparing ISO dates as text; datetime is imported only to count the days of
stale data."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    import datetime

    from cudafit.answers import Resolution

STALE_AFTER_DAYS = 90
_DAY = 86400


def _now() -> float:
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "")
    return int(epoch) if epoch.isdigit() else time.time()


def today() -> datetime.date:
    import datetime

    return datetime.datetime.fromtimestamp(_now(), tz=datetime.timezone.utc).date()


def age_days(data_date: str, on: Optional[datetime.date] = None) -> int:
    import datetime

    return ((on or today()) - datetime.date.fromisoformat(data_date)).days


def note(data_date: str, on: Optional[datetime.date] = None) -> Optional[str]:
    """The note for answers given from data older than STALE_AFTER_DAYS, else None."""
    if on is None and data_date >= time.strftime("%Y-%m-%d", time.gmtime(_now() - STALE_AFTER_DAYS * _DAY)):
        return None  # fresh: ISO dates order as text
    days = age_days(data_date, on)
    if days <= STALE_AFTER_DAYS:
        return None
    return (
        f"cudafit's data is {days} days old (data of {data_date}): it does not know newer framework releases "
        "or drivers; `cudafit data update` fetches fresh data"
    )


def with_note(res: Resolution, data_date: str) -> Resolution:
    """The answer with the note of stale data: beside an answer a note; beside no answer a
    warning, which is what failures show."""
    stale = note(data_date)
    if not stale:
        return res
    return res._replace(notes=(*res.notes, stale)) if res.ok else res._replace(warnings=(*res.warnings, stale))
