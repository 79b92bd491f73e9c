"""``strongroom completion bash|zsh|fish``: click's completion script for the shell."""

from __future__ import annotations

import json

import click
from click.shell_completion import get_completion_class

SHELLS = ["bash", "zsh", "fish"]
COMPLETE_VAR = "_STRONGROOM_COMPLETE"


@click.command(
    help='print the shell\'s completion script: eval "$(strongroom completion bash)" '
    "in ~/.bashrc (zsh: ~/.zshrc; fish: strongroom completion fish | source)"
)
@click.argument("shell", type=click.Choice(SHELLS))
@click.option(
    "--json", "as_json", is_flag=True, help='print {"shell", "script"} as JSON (to install it)'
)
@click.pass_context
def completion(ctx: click.Context, shell: str, as_json: bool) -> None:
    """The script that completes commands, options and choices of ``strongroom``."""
    script_class = get_completion_class(shell)
    if script_class is None:  # click knows every shell of SHELLS
        raise click.BadParameter(f"no completion for {shell}")
    root = ctx.find_root().command
    script = script_class(root, {}, "strongroom", COMPLETE_VAR).source()
    click.echo(json.dumps({"shell": shell, "script": script}) if as_json else script)
