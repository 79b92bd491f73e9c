"""The integrity figure of ``/metrics``: artifacts whose bytes no longer match their
sha256 (contract 13: a mismatch fails loudly in ``/metrics``)."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

from strongroom.ports.driving import Strongroom


class VerificationFamilies(Collector):
    """``strongroom_artifact_verification_mismatches_total``: mismatches the background
    verifier of this process found since it started (alert on any increase)."""

    def __init__(self, facade: Strongroom) -> None:
        self._facade = facade

    def collect(self) -> Iterator[Metric]:
        yield CounterMetricFamily(
            "strongroom_artifact_verification_mismatches",
            "Artifacts found, on re-reading their bytes, to differ from their sha256.",
            value=self._facade.verification.mismatches,
        )
