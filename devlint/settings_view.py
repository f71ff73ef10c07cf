"""``devlint check --show-settings``: the resolved settings as ``key = value`` lines.

Values are TOML (JSON strings, arrays and booleans read the same), so the output can be
pasted back into ``[tool.devlint]``; ``enabled`` and ``unfixable`` are the rule codes
the selections resolve to for the path shown.
"""

from __future__ import annotations

import json
from pathlib import Path

from devlint.api import Settings
from devlint.discovery import DEFAULT_EXCLUDES
from devlint.docs import DEFAULT_DOCS_URL


def settings_lines(settings: Settings, path: Path, output_format: str) -> list[str]:
    """What applies to ``path`` (a file or directory named on the command line)."""
    config = settings.config
    options = settings.options_for(path)
    values: dict[str, object] = {
        "config-file": str(config.path) if config.path is not None else None,
        "root": str(config.root),
        "enabled": sorted(options.codes),
        "unfixable": sorted(settings.unfixable),
        "per-file-ignores": {glob: list(codes) for glob, codes in config.per_file_ignores.items()},
        "exclude": list(DEFAULT_EXCLUDES if config.exclude is None else config.exclude),
        "extend-exclude": list(config.extend_exclude),
        "respect-gitignore": config.respect_gitignore,
        "force-exclude": config.force_exclude,
        "ignore-noqa": settings.ignore_noqa,
        "guard-functions": list(config.guard_functions),
        "accelerator-api": config.accelerator_api,
        "line-length": config.line_length,
        "target-torch": ".".join(map(str, settings.target_torch)),
        "cache-dir": str(config.cache_dir) if config.cache_dir is not None else None,
        "output-format": output_format,
        "docs-url": config.docs_url or DEFAULT_DOCS_URL,
    }
    lines = [f"# settings for {path}"]
    for key, value in values.items():
        if value is None:
            lines.append(f"# {key}: none")
        elif isinstance(value, dict):
            entries = ", ".join(f"{json.dumps(g)} = {json.dumps(c)}" for g, c in value.items())
            lines.append(f"{key} = {{ {entries} }}" if entries else f"{key} = {{}}")
        else:
            lines.append(f"{key} = {json.dumps(value)}")
    return lines
