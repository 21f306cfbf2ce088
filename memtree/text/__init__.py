"""Text handling shared by capture, tools and recall: chunking, symbol outlines, token budgets."""
