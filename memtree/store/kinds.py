"""Node and edge kinds, defined once: the writer checks against them, search
and neighbors filter by them, the walkers pick their work by them."""

NODE_KINDS = ("session", "file", "file_chunk", "tool_output", "summary", "note", "observation")
# Structure, not captured content: the roots of the tree, never tombstoned.
ROOT_KINDS = ("session", "file")
# What a capture stores (the disk budget removes these first).
CAPTURE_KINDS = ("tool_output", "file_chunk")
# Kinds that get a vector (roots have no text of their own).
EMBED_KINDS = ("file_chunk", "tool_output", "summary", "note", "observation")

EDGE_KINDS = ("derived_from", "references", "summarizes", "supersedes", "follows")
# The tree's own links, which neighbors walks like edges.
TREE_KINDS = ("parent", "child")

# The keys of recall's ``filters`` (memtree.recall.search checks them; the
# front folds them into opts): search and recent take FILTER_KEYS, neighbors
# also edge_kinds. Stdlib only, like this whole module: the front reads it
# before answering initialize.
FILTER_KEYS = ("status", "kind", "since", "until", "parent_id", "session_id")
NEIGHBOR_FILTER_KEYS = FILTER_KEYS + ("edge_kinds",)
