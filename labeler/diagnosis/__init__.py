"""Diagnosis: which layer of a RAG system failed (stages, gold-context, diagnose), golden
answers, and the CI gate.
"""
