"""The names of the output formats (ruff's), apart from their renderers (``devlint.report``).

The command line builds its options from them; keeping them here lets `devlint --version`
and `--help` start without importing the renderers' package and the diagnostics' types.
``text`` is the name the first versions of devlint used for ``concise``.
"""

FORMATS = (
    "full",
    "concise",
    "grouped",
    "json",
    "json-lines",
    "sarif",
    "github",
    "gitlab",
    "pylint",
    "azure",
    "junit",
    "text",
)
DEFAULT_FORMAT = "full"  # as in ruff
# The formats that print for people: --statistics prints its table in them, and a summary.
TEXT_FORMATS = ("full", "concise", "grouped", "text")
STATISTICS_FORMATS = (*TEXT_FORMATS, "json")
