"""The collector: ad store with lifetimes and columnar snapshots."""
