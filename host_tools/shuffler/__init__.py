"""Pit-side tools for the batch shuffler (`shoe shuffler`)."""
