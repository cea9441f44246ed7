"""What a framework provider is: the module behind one line of the registry. Typed as a Protocol
so that the solver, check and coverage call declared functions and constants (a missing REQUIRES
or a wrong signature is a type error, not a getattr default), while each provider stays a plain
module. frameworks/conformance.py holds every provider to it for the type checker."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Protocol

if TYPE_CHECKING:  # the registry imports this module on every run; annotations only need the names
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    from cudafit.answers import Candidate, Rejection
    from cudafit.records import Machine, Matrices, Policy


class Provider(Protocol):
    # Constants, read-only (a property here is a module-level constant there).
    @property
    def FAMILY(self) -> str:
        """The family's name (torch)."""
        ...

    @property
    def MEMBERS(self) -> tuple[str, ...]:
        """The distributions a spec may name, the family's own package first."""
        ...

    @property
    def REQUIRES(self) -> tuple[str, ...]:
        """The families it is built against (xformers: torch), solved with it."""
        ...

    @property
    def BRINGS(self) -> tuple[str, ...]:
        """Other families' distributions it pins exactly (vllm: torchvision)."""
        ...

    @property
    def COMPANIONS(self) -> tuple[str, ...]:
        """Members that are projects of their own, paired with the family's release by version
        (torch: torchvision, torchaudio); the other members are the family's own packages."""
        ...

    def known_extras(self, matrices: Matrices) -> set[str]:
        """The extras a spec may ask for."""
        ...

    def releases(self, matrices: Matrices) -> tuple[Any, ...]:
        """The family's release records (records.Release), newest first."""
        ...

    def implied(self, member_specs: dict[str, SpecifierSet]) -> dict[str, SpecifierSet]:
        """The members a spec brings along (torchvision brings torch)."""
        ...

    def check_extras(self, extras: frozenset[str]) -> Optional[str]:
        """Why a set of extras cannot go together, or None."""
        ...

    def pairs(self, member: str, version: Version, matrices: Matrices) -> list[Version]:
        """The family versions a member's version pairs with (torchvision 0.20.1: torch 2.5.1)."""
        ...

    def candidates(
        self, specs: dict[str, SpecifierSet], machine: Machine, matrices: Matrices, policy: Policy, extras: frozenset[str] = ...
    ) -> tuple[list[Candidate], list[Rejection]]:
        """The builds that run here, best first, and why the others do not."""
        ...
