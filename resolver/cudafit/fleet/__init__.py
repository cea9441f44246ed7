"""One answer for a cluster: nodes read from an inventory, grouped into machine classes, and the
best set that runs on every class (or per pool, with the classes that hold the fleet back named).

inventory.py reads the inventory formats into Node records; classes.py groups them; solve.py asks
the solver once per class and combines the answers; report.py words them. Nothing here imports
click."""
