"""The answer an nvidia/cuda base image can carry. On such a base the NVIDIA Container Toolkit asks
the host for the driver of the image's own CUDA (its NVIDIA_REQUIRE_CUDA), not the minor-version
floor a wheel needs: where `docker run` would refuse the base the answer picks on the described
host, the builds whose CUDA that driver runs itself are taken, when there are some. Both
`resolve --format dockerfile` and the API's `Plan.render("dockerfile")` ask this."""

from __future__ import annotations

from collections.abc import Sequence

from cudafit import staleness
from cudafit.answers import Resolution
from cudafit.emit.dockerfile import refused_at_run
from cudafit.records import Machine, Matrices, Policy
from cudafit.resolution import resolve as solve


def for_cuda_image(specs: Sequence[str], machine: Machine, matrices: Matrices, policy: Policy, res: Resolution) -> Resolution:
    if not res.ok or not machine.driver or policy.strict_driver or not refused_at_run(res, matrices):
        return res
    strict = solve(list(specs), machine, matrices, policy._replace(strict_driver=True))
    if not strict.ok or [c.packages for c in strict.candidates] == [c.packages for c in res.candidates]:
        return res
    said = f"an nvidia/cuda image asks the host for its own CUDA's driver at docker run: chose builds whose CUDA driver {machine.driver} runs itself"
    return staleness.with_note(strict, matrices.data_date)._replace(warnings=(said, *strict.warnings))
