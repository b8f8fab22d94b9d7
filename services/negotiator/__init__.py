"""The negotiator: accountant, group quotas, pie spin and the match cycle."""
