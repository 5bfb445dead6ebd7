"""Retrieval: pools built and grown (build, adaptive pooling, scheduling), the golden set
(freeze, export, load, diff, eval), judge-assisted run metrics and the demo project.
"""
