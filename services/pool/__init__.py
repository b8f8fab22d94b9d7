"""Pool spec, launching on Ray, workload, pytest plugin."""
