"""Date and machine of a benchmark run, recorded beside its results (one JSON file per run)."""

from __future__ import annotations

import datetime
import os
import platform


def run_date() -> str:
    """The current time, to the minute, in UTC."""
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")


def machine() -> str:
    """CPU model, core count and platform of this machine."""
    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if "model name" in line)
    except (OSError, StopIteration):
        pass
    return f"{cpu}, {os.cpu_count()} cores, {platform.system()} {platform.machine()}"
