"""Handlers declared by their parameters: what they are given, and what is refused."""

from __future__ import annotations

from uuid import UUID

import pytest

from strongroom.adapters.webkit.declare import Routes
from strongroom.adapters.webkit.declared import path_parameters, target_of
from strongroom.adapters.wire.runs import Run
from strongroom.ports.driving import Strongroom
from strongroom.ports.driving.runs import READ_RUN


class TestTarget:
    """The object a denied action is audited against is the one its path names."""

    @pytest.mark.parametrize(
        ("path", "target"),
        [
            ("/v1/runs", None),
            ("/v1/workspaces/{wid}", "wid"),
            ("/v1/workspaces/{wid}/roles", None),
            ("/v1/workspaces/{wid}/roles/{slug}", "slug"),
            ("/v1/workspaces/{wid}/members/{id}", "id"),
            ("/v1/artifacts/{aid}/restores", "aid"),
            ("/v1/runs/{run_id}/cancel", "run_id"),
        ],
    )
    def test_the_last_path_id_unless_only_the_workspace_of_a_collection(
        self, path: str, target: str | None
    ) -> None:
        """A collection of the workspace has no target; an object or its action does."""
        assert target_of(path) == target

    def test_path_parameters_drop_converters(self) -> None:
        """``{key:path}`` is the parameter ``key``."""
        assert path_parameters("/storage/{key:path}") == ["key"]
        assert path_parameters("/v1/workspaces/{wid}/members/{id}") == ["wid", "id"]


class TestDeclaration:
    """A handler can only name values a route supplies."""

    def test_an_unknown_parameter_is_refused_when_declared(self) -> None:
        """A name that is neither a path id nor a known value stops the start-up."""
        routes = Routes("Runs and artifacts")

        async def get_run(facade: Strongroom, run: UUID) -> None:
            """Read a run"""

        with pytest.raises(TypeError, match="run"):
            routes.get("/v1/runs/{run_id}", Run, "The run.", READ_RUN)(get_run)

    def test_a_grant_needs_a_requirement(self) -> None:
        """``grant`` on a route that names no permission is refused."""
        routes = Routes("Runs and artifacts")

        async def get_run(facade: Strongroom, grant: object, run_id: UUID) -> None:
            """Read a run"""

        with pytest.raises(TypeError, match="grant"):
            routes.get("/v1/runs/{run_id}", Run, "The run.")(get_run)
