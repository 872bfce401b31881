"""benchmarks/phases.py: the eviction phase is one of the phases it times, and its report says how
many pods the cycle evicts and nominates (which no level and no gap counts)."""

from __future__ import annotations

from pathlib import Path

from scripts import load_script
from shape_files import shape_file

phases = load_script("benchmarks/phases.py", "phases_for_evictions")


def test_a_cycle_that_evicts_reports_the_phase_and_its_pods(tmp_path: Path) -> None:
    path = shape_file(tmp_path, "saturated", 40, 2)
    report = phases.run(path, 10.0, None)
    assert "evictions" not in report["skipped"]
    assert report["evictions"] > 0
    assert report["nominations"] > 0
    assert report["seconds"]["evictions"] > 0
    assert report["violations"] == 0
