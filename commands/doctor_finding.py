"""What each `docsbot doctor` check reports (commands/doctor.py and the doctor_*.py checks)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Status = Literal["ok", "warning", "failed"]


@dataclass
class Finding:
    check: str
    status: Status
    detail: str
    fix: str = ""
