"""host_tools/qa."""
