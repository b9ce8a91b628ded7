"""Divergence analysis over two engines' scores on the same token ids (numpy, vectorised)."""

from runners.analysis.agreement import first_disagreement, percentiles
from runners.analysis.bootstrap import block_bootstrap_ci
from runners.analysis.clusters import Cluster, find_clusters
from runners.analysis.kl import PositionStats, position_stats, self_kl_floor

__all__ = [
    "Cluster", "PositionStats", "block_bootstrap_ci", "find_clusters", "first_disagreement",
    "percentiles", "position_stats", "self_kl_floor",
]
