"""`cudafit doctor`: read an installed environment and the machine, say what will not work and the
commands that fix it. Nothing here imports a framework or changes the environment."""
