"""The startd: machines and slots, claims, leases."""
