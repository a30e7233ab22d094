"""Shared-memory banking: how many wavefronts a warp's SMEM instruction takes.

The model (NVIDIA's, as its programming guide and Nsight Compute describe it):
SMEM has 32 banks of 4-byte words; word ``w`` is in bank ``w mod 32``. A warp's
request is served in phases: lanes moving 16 bytes each go 8 at a time (4
phases), 8 bytes 16 at a time (2 phases), 4 bytes or less all 32 at once;
``ldmatrix``/``stmatrix`` serve one 8x8 matrix (8 rows of 16 bytes, one row
address per lane) per phase, the same as 16-byte accesses. Within a phase a
bank delivers one word per wavefront, and lanes that access the same word
share it (a broadcast on loads); so a phase takes as many wavefronts as the
largest number of distinct words any one bank must deliver. Ideal: one
wavefront per phase (at most 32 words per phase are asked for). A phase that
takes ``n`` wavefronts has an ``n``-way bank conflict.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BANKS = 32
WORD_BYTES = 4
WARP_SIZE = 32
PHASE_BYTES = BANKS * WORD_BYTES  # 128: what one wavefront can deliver


@dataclass(frozen=True)
class Word:
    """One 4-byte word a phase asks for: its bank, the wavefront that serves it
    (0-based, within the phase) and the lanes that access it."""

    word: int
    bank: int
    wavefront: int
    lanes: tuple[int, ...]


@dataclass(frozen=True)
class Phase:
    lanes: tuple[int, ...]  # the active lanes served in this phase
    words: tuple[Word, ...]

    @property
    def wavefronts(self) -> int:
        return 1 + max((w.wavefront for w in self.words), default=-1)

    @property
    def ideal(self) -> int:
        return -(-len(self.words) // BANKS) if self.words else 0

    def busiest_banks(self) -> list[int]:
        """The banks that must deliver the most distinct words (as many as the wavefronts)."""
        counts: dict[int, int] = {}
        for word in self.words:
            counts[word.bank] = counts.get(word.bank, 0) + 1
        most = max(counts.values(), default=0)
        return sorted(b for b, n in counts.items() if n == most)

    def worst_bank(self) -> tuple[int, tuple[Word, ...]]:
        """The bank asked for the most distinct words, and those words."""
        by_bank: dict[int, list[Word]] = {}
        for word in self.words:
            by_bank.setdefault(word.bank, []).append(word)
        bank = max(sorted(by_bank), key=lambda b: len(by_bank[b]))
        return bank, tuple(by_bank[bank])


@dataclass(frozen=True)
class WarpRequest:
    """One SMEM instruction of one warp, phase by phase."""

    phases: tuple[Phase, ...]
    lane_bytes: int

    @property
    def wavefronts(self) -> int:
        return sum(p.wavefronts for p in self.phases)

    @property
    def ideal(self) -> int:
        return sum(p.ideal for p in self.phases)

    @property
    def conflict(self) -> int:
        """The worst phase's n in "n-way bank conflict" (1: none)."""
        return max((p.wavefronts // max(p.ideal, 1) for p in self.phases), default=1)


def lanes_per_phase(lane_bytes: int) -> int:
    """8 lanes for 16-byte accesses, 16 for 8-byte ones, 32 for 4 bytes or less."""
    if lane_bytes <= WORD_BYTES:
        return WARP_SIZE
    if lane_bytes not in (8, 16):
        raise ValueError(f"no SMEM access moves {lane_bytes} bytes per lane")
    return PHASE_BYTES // lane_bytes


def warp_request(
    address: np.ndarray, lane_bytes: int, active: np.ndarray | None = None
) -> WarpRequest:
    """Banks and wavefronts of one warp's instruction: ``address[l]`` is lane ``l``'s byte
    address, each active lane accessing ``lane_bytes`` bytes from it."""
    address = np.asarray(address, dtype=np.int64)
    if address.shape != (WARP_SIZE,):
        raise ValueError(f"expected {WARP_SIZE} lane addresses, got {address.shape}")
    if active is None:
        active = np.ones(WARP_SIZE, dtype=bool)
    if lane_bytes <= 0 or np.any(address[active] % lane_bytes):
        raise ValueError(
            f"SMEM accesses of {lane_bytes} bytes must be aligned to {lane_bytes} bytes"
        )
    per_phase = lanes_per_phase(lane_bytes)
    phases = []
    for first in range(0, WARP_SIZE, per_phase):
        lanes = [lane for lane in range(first, first + per_phase) if active[lane]]
        if lanes:
            phases.append(_phase(address, lane_bytes, lanes))
    return WarpRequest(tuple(phases), lane_bytes)


def _phase(address: np.ndarray, lane_bytes: int, lanes: list[int]) -> Phase:
    users: dict[int, list[int]] = {}  # word -> lanes
    for lane in lanes:
        start = int(address[lane])
        first_word = start // WORD_BYTES
        last_word = (start + lane_bytes - 1) // WORD_BYTES
        for word in range(first_word, last_word + 1):
            users.setdefault(word, []).append(lane)
    served: dict[int, int] = {}  # bank -> words served so far
    words = []
    for word in sorted(users):
        bank = word % BANKS
        wavefront = served.get(bank, 0)
        served[bank] = wavefront + 1
        words.append(Word(word, bank, wavefront, tuple(users[word])))
    return Phase(tuple(lanes), tuple(words))
