"""host_tools/central."""
