"""People signed in through the SDK: the built-in provider's device flow, approved on its
form as a person would, the access token exchanged for a session."""

from __future__ import annotations

from starlette.testclient import TestClient

from strongroom.client import Client

PASSWORD = "correct horse battery staple"


def approve(http: TestClient | Client, user_code: str, email: str) -> None:
    """A person approves ``user_code`` on the provider's page (its form, as JSON)."""
    client = http.http if isinstance(http, Client) else http
    base = http.base_url if isinstance(http, Client) else ""
    answer = client.post(
        f"{base}/idp/device",
        data={"user_code": user_code, "email": email, "password": PASSWORD, "decision": "approve"},
        headers={"Accept": "application/json"},
    )
    assert answer.status_code == 200, answer.text


def sign_in(anonymous: Client, email: str) -> Client:
    """Sign ``email`` up and in through the device flow; a client holding its session."""
    anonymous.idp_signup(email, PASSWORD, email.split("@", maxsplit=1)[0])
    code = anonymous.idp_device_code()
    approve(anonymous, code.user_code, email)
    access = anonymous.idp_token(code.device_code)
    session = Client(anonymous.base_url, access.access_token, http=anonymous.http).create_session()
    return Client(anonymous.base_url, session.token, http=anonymous.http)


def admin_in_new_workspace(anonymous: Client, email: str, name: str = "Acme") -> Client:
    """A person signed in, admin of a new workspace, the session scoped to it."""
    person = sign_in(anonymous, email)
    workspace = person.create_workspace(name)
    person.token = person.switch_workspace(workspace.id).token
    return person
