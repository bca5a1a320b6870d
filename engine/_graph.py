"""A workflow's step graph: validation when the class is defined, routing, Mermaid rendering.

Routing is by exact type first and then along the event's MRO, so a step that takes ``Base``
receives every subclass no other step claims; the answer is cached per type.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any

from ._errors import WorkflowDefinitionError
from ._events import Event, StartEvent, StopEvent, event_type_name
from ._step import StepSpec

__all__ = ["Graph"]


def _names(types: Iterable[type]) -> str:
    return ", ".join(sorted(t.__name__ for t in types))


class Graph:
    """The parsed, validated steps of one workflow class."""

    def __init__(self, workflow: str, steps: Mapping[str, StepSpec]) -> None:
        self.workflow = workflow
        self.steps = dict(steps)
        self.consumer: dict[type[Event], StepSpec] = {}
        for spec in self.steps.values():
            for tp in spec.accepts:
                other = self.consumer.get(tp)
                if other is not None:
                    raise WorkflowDefinitionError(
                        f"{workflow}: event type {tp.__name__} is taken by both step "
                        f"{other.name!r} and step {spec.name!r}; one event goes to one step"
                    )
                self.consumer[tp] = spec
        self.start_types: tuple[type[StartEvent], ...] = tuple(
            t for t in self.consumer if issubclass(t, StartEvent))
        self._route_cache: dict[type, StepSpec | None] = {}
        #: Idle per-run routing tables and step states, reused by later runs (see Runtime).
        self.runtime_pool: list[tuple[dict[type, Any], dict[str, Any]]] = []
        self.default_collector: dict[str, StepSpec | None] = {}
        self.types: dict[str, type[Event]] = {}
        self._validate()
        for spec in self.steps.values():
            for tp in (*spec.accepts, *spec.emits, *spec.fans_out):
                self.types[event_type_name(tp)] = tp
            if spec.fans_out:
                self.default_collector[spec.name] = self._find_collector(spec.fans_out)

    def route(self, tp: type) -> StepSpec | None:
        """The step that takes events of type ``tp`` (or ``None``: a stop event, or nobody)."""
        try:
            return self._route_cache[tp]
        except KeyError:
            pass
        found = None
        for base in tp.__mro__:
            found = self.consumer.get(base)
            if found is not None:
                break
        self._route_cache[tp] = found
        return found

    @property
    def start_type(self) -> type[StartEvent]:
        """The one start event type, for building it from keyword arguments.

        :raises WorkflowDefinitionError: the workflow takes several start event types.
        """
        if len(self.start_types) != 1:
            raise WorkflowDefinitionError(
                f"{self.workflow} takes several start events ({_names(self.start_types)}); "
                "pass the event itself"
            )
        return self.start_types[0]

    # --- validation ----------------------------------------------------------------------------

    def _produced(self) -> set[type[Event]]:
        produced: set[type[Event]] = set(self.start_types)
        for spec in self.steps.values():
            produced |= spec.emits | spec.fans_out
        return produced

    def _validate(self) -> None:
        wf = self.workflow
        if not self.start_types:
            raise WorkflowDefinitionError(
                f"{wf}: no step takes a StartEvent; "
                + "; ".join(f"step {s.name!r} takes {_names(s.accepts)}"
                            for s in self.steps.values())
            )
        produced = self._produced()
        for spec in self.steps.values():
            for tp in spec.accepts:
                if issubclass(tp, StartEvent):
                    continue
                if not any(issubclass(p, tp) for p in produced):
                    raise WorkflowDefinitionError(
                        f"{wf}: step {spec.name!r} takes {tp.__name__}, but no step emits it"
                    )
            for tp in spec.emits | spec.fans_out:
                if self.route(tp) is None and not issubclass(tp, StopEvent):
                    raise WorkflowDefinitionError(
                        f"{wf}: step {spec.name!r} emits {tp.__name__}, but no step takes it"
                    )
        reached = self._reachable()
        for spec in self.steps.values():
            if spec.name not in reached:
                raise WorkflowDefinitionError(
                    f"{wf}: step {spec.name!r} is unreachable from the start event "
                    f"(it takes {_names(spec.accepts)})"
                )
        if not any(
            issubclass(tp, StopEvent) and self.route(tp) is None
            for name in reached for tp in self.steps[name].emits
        ):
            raise WorkflowDefinitionError(
                f"{wf}: no step reachable from {_names(self.start_types)} emits a StopEvent"
            )

    def _reachable(self) -> set[str]:
        seen: set[str] = set()
        todo: deque[type[Event]] = deque(self.start_types)
        while todo:
            spec = self.route(todo.popleft())
            if spec is None or spec.name in seen:
                continue
            seen.add(spec.name)
            todo.extend(spec.emits | spec.fans_out)
        return seen

    def _find_collector(self, fanned: Iterable[type[Event]]) -> StepSpec | None:
        """The fan-in step a fan-out's branches lead to, if there is exactly one."""
        found: set[str] = set()
        seen: set[str] = set()
        todo: deque[type[Event]] = deque(fanned)
        while todo:
            spec = self.route(todo.popleft())
            if spec is None or spec.name in seen:
                continue
            seen.add(spec.name)
            if spec.mode != "one":
                found.add(spec.name)
                continue
            todo.extend(spec.emits)
        return self.steps[found.pop()] if len(found) == 1 else None

    # --- rendering -----------------------------------------------------------------------------

    def mermaid(self) -> str:
        """The graph as a Mermaid flowchart: steps as boxes, events as labelled edges."""
        lines = ["flowchart TD"]
        for tp in self.start_types:
            lines.append(f"    start_{tp.__name__}([{tp.__name__}])")
        stops: set[str] = set()
        for spec in self.steps.values():
            shape = f"[[{spec.name}]]" if spec.mode != "one" else f"[{spec.name}]"
            lines.append(f"    step_{spec.name}{shape}")
        for tp in self.start_types:
            target = self.route(tp)
            if target is not None:
                lines.append(f"    start_{tp.__name__} --> step_{target.name}")
        for spec in self.steps.values():
            edges: list[tuple[type[Event], bool]] = [(t, False) for t in spec.emits]
            edges += [(t, True) for t in spec.fans_out]
            for etp, fan in edges:
                label = f"list[{etp.__name__}]" if fan else etp.__name__
                target = self.route(etp)
                if target is None:
                    stops.add(etp.__name__)
                    lines.append(f'    step_{spec.name} -->|"{label}"| stop_{etp.__name__}')
                else:
                    lines.append(f'    step_{spec.name} -->|"{label}"| step_{target.name}')
        for name in sorted(stops):
            lines.append(f"    stop_{name}([{name}])")
        return "\n".join(lines) + "\n"
