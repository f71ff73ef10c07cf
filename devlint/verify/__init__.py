"""The runtime companion: run rule fixtures on the devices present (imports torch lazily)."""
