"""Recall: what turns a query into ranked, budgeted memories (embeddings, search, compose)."""
