"""Quality-assurance rigs: benchmarks (`shoe bench`), soaks and fuzzers
(`shoe soak`), heap probes. No product module imports them."""
