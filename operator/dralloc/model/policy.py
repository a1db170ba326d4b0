"""policy/v1 PodDisruptionBudget: what priority preemption reads of it, as kube-scheduler does.

Its selector (which pods it covers; absent or empty: none, for the scheduler) and, from the
status kube-controller-manager's disruption controller writes, how many more disruptions it
allows and the pods already counted as disrupted. Every other field is kept as an unknown one.
"""

from pydantic import Field

from dralloc.model.base import ApiModel, Object
from dralloc.model.pods import LabelSelector


class PodDisruptionBudgetSpec(ApiModel):
    selector: LabelSelector | None = None


class PodDisruptionBudgetStatus(ApiModel):
    disruptions_allowed: int = 0
    disrupted_pods: dict[str, str] = Field(default_factory=dict)  # pod name -> when the API server counted it


class PodDisruptionBudget(Object):
    spec: PodDisruptionBudgetSpec = Field(default_factory=PodDisruptionBudgetSpec)
    status: PodDisruptionBudgetStatus = Field(default_factory=PodDisruptionBudgetStatus)
