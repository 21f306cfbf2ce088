"""Capture side: what happens to a native tool output the hook hands to memtree."""
