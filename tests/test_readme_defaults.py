"""Every default the README's configuration table states is the settings object's default."""
from __future__ import annotations

import enum
import json
import os
import re
from pathlib import Path
from typing import Any

from pydantic import AliasChoices, SecretStr

from foundation.settings import Settings

README = Path(__file__).resolve().parent.parent / "README.md"
UNSET = (None, "", [], {})


def env_names() -> dict[str, str]:
    """Environment variable → settings field."""
    names = {}
    for name, info in Settings.model_fields.items():
        alias = info.validation_alias
        names[alias.choices[0] if isinstance(alias, AliasChoices) else f"DOCSBOT_{name.upper()}"] = name
    return names


def table_rows() -> list[tuple[list[str], list[str]]]:
    """(variables, stated defaults) of each row of the configuration table."""
    lines = README.read_text(encoding="utf-8").split("\n## Configuration", 1)[1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| variable | default"))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        variables = re.findall(r"`([A-Z][A-Z0-9_]+)`", cells[0])
        defaults = [d.strip().strip("`") for d in re.split(r"`\s*/\s*`|\s+/\s+", cells[1])]
        rows.append((variables, defaults * len(variables) if len(defaults) == 1 else defaults))
    return rows


def same(stated: str, value: Any) -> bool:
    if stated == "unset":
        return value in UNSET or isinstance(value, SecretStr) and not value.get_secret_value()
    if isinstance(value, enum.Enum):
        return stated == value.name
    if isinstance(value, str):
        return os.path.normpath(stated) == os.path.normpath(value) if value else stated == ""
    try:
        return json.loads(stated) == value
    except json.JSONDecodeError:
        return False


def test_readme_configuration_table_matches_the_settings_defaults() -> None:
    settings, names = Settings(_env_file=None), env_names()
    rows = table_rows()
    assert len(rows) > 20
    wrong = []
    for variables, defaults in rows:
        assert len(variables) == len(defaults), (
            f"row {variables}: {len(defaults)} defaults for {len(variables)} variables")
        for variable, stated in zip(variables, defaults):
            assert variable in names, f"{variable} in the README is no setting"
            value = getattr(settings, names[variable])
            if not same(stated, value):
                wrong.append(f"{variable}: README says {stated!r}, settings say {value!r}")
    assert not wrong, "\n".join(wrong)
