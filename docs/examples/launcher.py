"""A launcher's install step with cudafit as a library: find the builds that run here, show why,
and install them into this Python (with --install) or only print the commands."""

import subprocess
import sys

import cudafit


def main(argv: list[str]) -> int:
    machine = cudafit.detect()
    try:
        plan = cudafit.resolve(["torch", "torchvision"], machine)
    except cudafit.NoSolution as exc:
        print("no build of torch runs here:", *exc.conflicts, sep="\n  ", file=sys.stderr)
        return 1
    for package in plan.packages:
        print(f"{package.requirement} from {package.index_url or 'PyPI'}")
    for warning in plan.warnings:
        print(f"note: {warning}")
    for command in plan.commands("pip", python=sys.executable):
        print("$", " ".join(command))
        if "--install" in argv:
            subprocess.run(command, check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
