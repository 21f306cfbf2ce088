"""``python -m memtree.supervisor`` is ``memtree serve``."""

import sys

from memtree.cli import main

sys.exit(main(["serve", *sys.argv[1:]]))
