"""Kubernetes' placement rules as the solver reads them: node predicates, inter-pod rules, topology
spread, volumes, isolation of rule-bound pod classes and their candidate nodes.
"""
