"""The permission catalog and the built-in roles (contract section 3, section 10)."""

from __future__ import annotations

import re
from uuid import uuid4

import pytest
from hypothesis import given
from hypothesis import strategies as st

from strongroom.domain.errors import (
    InvalidRequestError,
    MissingPermissionError,
    ValidationFailedError,
)
from strongroom.domain.permissions import (
    ADMIN,
    BUILTIN_ROLES,
    DESCRIPTIONS,
    MEMBER,
    VIEWER,
    WORKER_PERMISSIONS,
    Permission,
    check_role_slug,
    parse_permissions,
    requested_permissions,
)
from strongroom.domain.principals import Actor, Caller, PrincipalType
from support.catalog import CATALOG

READS = frozenset(slug for slug in CATALOG if slug.endswith(":read"))


def slugs(permissions: frozenset[Permission]) -> frozenset[str]:
    """The slugs of a set of permissions."""
    return frozenset(permission.value for permission in permissions)


class TestCatalog:
    """``GET /v1/permissions`` lists exactly the contract's 23 slugs."""

    def test_the_catalog_is_exactly_the_contracts_slugs(self) -> None:
        """No slug is missing and none is invented."""
        assert len(CATALOG) == 23
        assert {permission.value for permission in Permission} == CATALOG

    def test_every_slug_has_a_description(self) -> None:
        """The catalog endpoint can describe every slug."""
        assert set(DESCRIPTIONS) == set(Permission)
        assert all(text.strip() for text in DESCRIPTIONS.values())

    @given(st.sets(st.sampled_from(sorted(CATALOG))))
    def test_known_slugs_parse_to_their_permissions(self, chosen: set[str]) -> None:
        """Any set of catalog slugs is accepted as it is (API keys, custom roles)."""
        assert slugs(parse_permissions(sorted(chosen))) == chosen

    @given(
        st.lists(st.sampled_from(sorted(CATALOG))),
        st.lists(st.text(min_size=1, max_size=20).filter(lambda s: s not in CATALOG), min_size=1),
    )
    def test_unknown_slugs_are_refused_by_name(self, known: list[str], unknown: list[str]) -> None:
        """A slug outside the catalog is refused, and the refusal names every unknown one."""
        named = ", ".join(sorted(unknown))
        with pytest.raises(ValueError, match=re.escape(named)) as refused:
            parse_permissions(known + unknown)
        assert str(refused.value) == named


class TestRequestedPermissions:
    """Slugs a request names (API keys, custom roles): 422 outside the catalog."""

    @given(st.sets(st.sampled_from(sorted(CATALOG))))
    def test_catalog_slugs_are_the_permissions(self, chosen: set[str]) -> None:
        """Known slugs, in any order and repeated, give their permissions."""
        assert slugs(requested_permissions([*sorted(chosen), *sorted(chosen)])) == chosen

    def test_unknown_slug_like_names_are_named(self) -> None:
        """Every unknown slug shaped like one is named, sorted, each once."""
        with pytest.raises(ValidationFailedError) as refused:
            requested_permissions(["backups:read", "zz:top", "aa:b", "zz:top"])
        assert str(refused.value) == "unknown permissions: aa:b, zz:top"

    @given(st.text(min_size=1, max_size=40).filter(lambda s: re.fullmatch(r"[a-z_:]*", s) is None))
    def test_client_text_is_never_echoed(self, text: str) -> None:
        """A slug not shaped like one is refused without repeating it (nor its neighbours)."""
        with pytest.raises(ValidationFailedError) as refused:
            requested_permissions(["nope:nope", text])
        assert str(refused.value) == "unknown permissions"


class TestRoleSlugs:
    """Role slugs are ``^[a-z][a-z0-9-]{1,39}$``; anything else is 400."""

    @given(st.from_regex(r"[a-z][a-z0-9-]{1,39}", fullmatch=True))
    def test_well_formed_slugs_pass(self, slug: str) -> None:
        """A slug of the pattern is returned as it is."""
        assert check_role_slug(slug) == slug

    @pytest.mark.parametrize("slug", ["", "a", "1ops", "Ops", "ops_team", "o" * 41, "ops\n"])
    def test_malformed_slugs_are_invalid_requests_naming_the_field(self, slug: str) -> None:
        """The refusal names the field that carried the slug."""
        with pytest.raises(InvalidRequestError, match=r"^role must match"):
            check_role_slug(slug, "role")


class TestBuiltinRoles:
    """``admin``, ``member`` and ``viewer`` as contract section 3 defines them."""

    def test_admin_holds_every_permission(self) -> None:
        """An admin can do everything."""
        assert slugs(ADMIN.permissions) == CATALOG

    def test_member_holds_everything_but_six_writes(self) -> None:
        """A member cannot change the workspace, members, roles or API keys, nor delete
        artifacts or hold them (admins only, contract 15)."""
        excluded = {
            "workspaces:write",
            "members:write",
            "roles:write",
            "api_keys:write",
            "artifacts:delete",
            "artifacts:hold",
        }
        assert slugs(MEMBER.permissions) == CATALOG - excluded

    def test_viewer_holds_every_read_and_download(self) -> None:
        """A viewer reads everything and downloads artifacts, and writes nothing."""
        assert slugs(VIEWER.permissions) == READS | {"artifacts:download"}

    def test_builtin_roles_are_marked_immutable(self) -> None:
        """Exactly the three built-in roles exist, each flagged built-in (PATCH/DELETE: 409)."""
        assert set(BUILTIN_ROLES) == {"admin", "member", "viewer"}
        assert all(role.builtin and role.slug == slug for slug, role in BUILTIN_ROLES.items())

    def test_worker_credentials_hold_exactly_four_permissions(self) -> None:
        """A worker reads backups and runs, uploads and confirms, and nothing else."""
        assert slugs(WORKER_PERMISSIONS) == {
            "backups:read",
            "runs:read",
            "artifacts:upload",
            "artifacts:confirm",
        }


def _caller(held: frozenset[Permission]) -> Caller:
    """An API key caller holding ``held``."""
    key_id = uuid4()
    return Caller(
        actor=Actor(PrincipalType.API_KEY, key_id),
        credential_id=key_id,
        workspace_id=uuid4(),
        permissions=held,
    )


class TestEnsurePermission:
    """A call outside the credential's permissions is 403 naming the slug."""

    @given(
        st.frozensets(st.sampled_from(Permission)),
        st.lists(st.sampled_from(Permission), min_size=1, max_size=3),
    )
    def test_one_accepted_permission_is_enough(
        self, held: frozenset[Permission], accepted: list[Permission]
    ) -> None:
        """The caller passes iff it holds any accepted permission; otherwise the message
        names the first accepted slug (``missing permission <slug>``)."""
        caller = _caller(held)
        if held & set(accepted):
            caller.ensure_permission(*accepted)
            return
        with pytest.raises(MissingPermissionError) as refused:
            caller.ensure_permission(*accepted)
        assert refused.value.message == f"missing permission {accepted[0].value}"
        assert refused.value.code == "forbidden"
