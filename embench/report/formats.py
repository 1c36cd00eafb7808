"""The output formats every table renders to (light: the CLI reads it while building ``--help``)."""

FORMATS = ("table", "json", "csv", "markdown", "latex")
REPORT_FORMATS = ("latex", "markdown", "csv", "html")  # `embench report`: the formats papers and pages take
