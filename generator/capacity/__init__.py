"""The capacity planner behind ``gen plan``: search deployments for a workload and SLO."""

from .search import Candidate, PlanResult, plan

__all__ = ["Candidate", "PlanResult", "plan"]
