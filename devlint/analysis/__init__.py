"""The shared analysis: names and imports, guards, device flow."""
