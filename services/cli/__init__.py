"""The mockpool command line."""
