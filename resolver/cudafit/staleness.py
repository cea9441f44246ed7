"""How old the data in use is, as a note on answers: never a network call, only the clock.

"Today" is $SOURCE_DATE_EPOCH where set (the reproducible-builds convention), so that CI jobs
and golden outputs do not change with the calendar."""

from __future__ import annotations

import datetime
import os
from typing import Optional

STALE_AFTER_DAYS = 90


def today() -> datetime.date:
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "")
    if epoch.isdigit():
        return datetime.datetime.fromtimestamp(int(epoch), tz=datetime.timezone.utc).date()
    return datetime.date.today()


def age_days(data_date: str, on: Optional[datetime.date] = None) -> int:
    return ((on or today()) - datetime.date.fromisoformat(data_date)).days


def note(data_date: str, on: Optional[datetime.date] = None) -> Optional[str]:
    """The note for answers given from data older than STALE_AFTER_DAYS, else None."""
    days = age_days(data_date, on)
    if days <= STALE_AFTER_DAYS:
        return None
    return (
        f"cudafit's data is {days} days old (data of {data_date}): it does not know newer framework releases "
        "or drivers; `cudafit data update` fetches fresh data"
    )
