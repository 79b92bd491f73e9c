"""The wire shapes of answers that are not the domain's: a use case's (a new session, a
claimed run), a driven port's (the CLI's configuration) and the built-in identity
provider's. ``adapters.wire`` imports only the domain, so they are bound here, on import
(the HTTP context imports this module)."""

from __future__ import annotations

from strongroom.adapters.identity import builtin
from strongroom.adapters.wire import bind
from strongroom.adapters.wire.claims import Claim
from strongroom.adapters.wire.idp import AccessToken, DeviceAuthorization
from strongroom.adapters.wire.sessions import CliConfig, Session
from strongroom.ports.driven.identity import CliConfig as PortCliConfig
from strongroom.ports.driving.claims import ClaimedRun
from strongroom.ports.driving.sessions import IssuedSession

for shown, model in (
    (IssuedSession, Session),
    (ClaimedRun, Claim),
    (PortCliConfig, CliConfig),
    (builtin.DeviceAuthorization, DeviceAuthorization),
    (builtin.AccessToken, AccessToken),
):
    bind(shown, model)
