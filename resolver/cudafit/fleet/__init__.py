"""One answer for a cluster: nodes read from an inventory, grouped into machine classes, and the
best set that runs on every class (or per pool, with the classes that hold the fleet back named).

inventory.py recognises an inventory's format and hands it to that format's reader (read_*.py),
which turns it into Node records (node.py); classes.py groups them; solve.py asks the solver once
per class and combines the answers; report.py words them. Nothing here imports click."""
