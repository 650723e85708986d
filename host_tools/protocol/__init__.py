"""host_tools/protocol."""
