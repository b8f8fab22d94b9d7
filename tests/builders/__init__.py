"""Builders the tests share (plain functions; pytest fixtures stay in conftest.py files):

- :mod:`.cores`: static slot pools, resource requests, schedd cores and their jobs;
- :mod:`.cycle`: slot, p-slot and request ads for the negotiator's cycle;
- :mod:`.events`: a run's events by the saw-tooth's model;
- :mod:`.htcondor`: HTCondor's ``htcondor2`` bindings run in a child process;
- :mod:`.live`: a quiet live pool and the clients that attack it (wire, CLI, htcondor2).
"""
