"""Application layer, runs (predict, bench, simulate, load/speed benchmarks): may import everything below ui."""
