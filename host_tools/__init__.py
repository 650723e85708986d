"""Pit-PC tools for the card-reading baccarat shoe (the `shoe` command)."""
