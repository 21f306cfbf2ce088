"""The store: schema and migrations, the live predicate, connections, reads."""
