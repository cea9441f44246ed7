"""`python -m cudafit`: the same command as the console script, under the same name."""

from cudafit.cli import program

if __name__ == "__main__":
    program()
