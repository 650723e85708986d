"""Quality-assurance rigs: benchmarks (`shoe bench`), soaks and fuzzers
(`shoe soak`), heap measurements. No product module imports them."""
