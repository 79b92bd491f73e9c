"""Mailer adapters: one that logs each message (the default of a served instance), and
one that sends through an SMTP server with the standard library's ``smtplib`` (which
blocks, so it runs in a worker thread through ``asyncio.to_thread``)."""

from __future__ import annotations

import asyncio
import logging
import smtplib
import ssl
from email.message import EmailMessage

import attrs

logger = logging.getLogger(__name__)


class LoggingMailer:
    """Writes each message to the log (an operator forwards invitation links by hand)."""

    async def send(self, to: str, subject: str, body: str) -> None:
        """Log the message."""
        logger.info("mail to %s: %s\n%s", to, subject, body)


@attrs.frozen
class SmtpSettings:
    """Where and how to send mail."""

    host: str
    sender: str
    port: int = 587
    username: str | None = None
    password: str | None = attrs.field(default=None, repr=False)
    starttls: bool = True
    timeout: float = 10.0


class SmtpMailer:
    """Sends each message through an SMTP server (STARTTLS and login when configured)."""

    def __init__(self, settings: SmtpSettings) -> None:
        self._settings = settings

    async def send(self, to: str, subject: str, body: str) -> None:
        """Send one plain-text message; a failure raises (the caller logs it). The SMTP
        conversation runs in a worker thread, each step bounded by ``timeout``."""
        message = EmailMessage()
        message["From"] = self._settings.sender
        message["To"] = to
        message["Subject"] = subject
        message.set_content(body)
        await asyncio.to_thread(self._deliver, message)

    def _deliver(self, message: EmailMessage) -> None:
        settings = self._settings
        with smtplib.SMTP(settings.host, settings.port, timeout=settings.timeout) as smtp:
            if settings.starttls:
                smtp.starttls(context=ssl.create_default_context())
            if settings.username is not None and settings.password is not None:
                smtp.login(settings.username, settings.password)
            smtp.send_message(message)
