"""`python -m cudafit`: the same command as the console script, under the same name."""

from cudafit.cli import main

if __name__ == "__main__":
    main(prog_name="cudafit")
