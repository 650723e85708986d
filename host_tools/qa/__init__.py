"""Quality-assurance rigs (benchmarks of statistical claims); no product module imports them."""
