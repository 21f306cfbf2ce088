"""The write side of the store: the only SQL that changes rows. Only the writer imports it."""
