"""Issue 24: the "looks like a Windows driver" note rests on the data's Linux toolkit drivers, which
are numbered in steps of 5 only from the oldest toolkit the data holds (R440, CUDA 10.2) on. Older
Linux branches were numbered otherwise (R367 and R384 are the Pascal and Volta floors in nvidia.toml;
R418 is CUDA 10.1's own driver, 418.39 in NVIDIA's release-notes driver table), so no note there."""

from __future__ import annotations

import pytest

from cudafit.machine_input import check_driver
from cudafit.records import Toolkit


@pytest.mark.parametrize(
    ("driver", "os_name", "notes"),
    [
        ("418.39", "linux", 0),  # CUDA 10.1 GA, Linux (release-notes driver table)
        ("418.67", "linux", 0),  # an R418 Linux update
        ("384.81", "linux", 0),  # CUDA 9.0 GA, Linux: nvidia.toml's Volta first_driver branch
        ("367.48", "linux", 0),  # CUDA 8.0 GA, Linux: nvidia.toml's Pascal first_driver branch
        ("440.33", "linux", 0),  # CUDA 10.2 GA, Linux: the data's oldest toolkit driver
        ("566.36", "linux", 1),  # a Windows driver inside the step-of-5 range
        ("551.61", "linux", 1),  # CUDA 12.4's Windows driver
        ("566.36", "wsl", 0),
        ("418.39", "windows", 0),
    ],
)
def test_windows_driver_note(matrices, driver, os_name, notes):
    warnings = check_driver(driver, os_name, matrices)
    assert len(warnings) == notes
    assert all("looks like a Windows driver" in w and "from R440 on" in w for w in warnings)


def test_step_rule_starts_at_the_datas_oldest_linux_toolkit(matrices):
    # Drop the toolkits before 12.0: the data then vouches for steps of 5 only from R525 on, so
    # a Windows-looking 516.94 below it is no longer judged, and 527.41 still is.
    newer = {k: tk for k, tk in matrices.toolkits.items() if k >= (12, 0)}
    trimmed = matrices._replace(toolkits=newer)
    assert check_driver("516.94", "linux", trimmed) == []
    (warning,) = check_driver("527.41", "linux", trimmed)
    assert "from R525 on" in warning


def test_a_non_step_linux_toolkit_driver_turns_the_note_off(matrices):
    # Should the data ever list a Linux toolkit driver off the step of 5 (CUDA 10.1's 418.39),
    # the data no longer supports the rule and the note is not given at all.
    base = matrices.toolkits[(10, 2)]
    assert isinstance(base, Toolkit)
    with_101 = {**matrices.toolkits, (10, 1): base._replace(linux_driver_min="418.39")}
    assert check_driver("566.36", "linux", matrices._replace(toolkits=with_101)) == []
