"""host_tools/sim/rigs."""
