"""The schedd: persistent job queue, autoclusters, claims."""
