"""host_tools/demo."""
