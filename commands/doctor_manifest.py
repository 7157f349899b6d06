"""`docsbot doctor`: the installed Slack app's manifest against what the code uses (bot/manifest.json).

With SLACK_CONFIG_TOKEN (an app configuration token) and SLACK_APP_ID, the app's manifest is
read from Slack (`apps.manifest.export`) and compared with the shipped one: the bot scopes, the
bot events, the view (`features.agent_view`, or the older `features.assistant_view`, whose
events are then the assistant_thread_* ones), the slash commands and shortcuts, interactivity,
and whether the docs site's domain is among the `unfurl_domains`. One finding says all of it.
"""
from __future__ import annotations

import json
import logging
from importlib.resources import files
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from commands.doctor_finding import Finding, Status

if TYPE_CHECKING:
    from foundation.settings import Settings

MANIFEST = files("bot") / "manifest.json"  # the Slack app manifest, shipped in the wheel
_CHECK = "slack manifest"
TIMEOUT_S = 10
AGENT_EVENTS = {"app_context_changed"}
ASSISTANT_EVENTS = {"assistant_thread_started", "assistant_thread_context_changed"}
DEPRECATED = ("the assistant panel (features.assistant_view), which Slack retires in February 2027 and a new "
              "app cannot use; docsbot answers there too")


def manifest_checks(settings: Settings) -> list[Finding]:
    if settings.slack_config_token is None:
        return []
    if not settings.slack_app_id:
        return [Finding(_CHECK, "warning", "SLACK_CONFIG_TOKEN is set but SLACK_APP_ID is not: manifest not read",
                        "set SLACK_APP_ID to the App ID on the app's Basic Information page")]
    installed = _export(settings)
    if isinstance(installed, Finding):
        return [installed]
    from foundation.links import site_of

    return [compare(installed, json.loads(MANIFEST.read_text()), site_of(settings)[0])]


def _export(settings: Settings) -> dict[str, Any] | Finding:
    from slack_sdk import WebClient
    from slack_sdk.errors import SlackApiError

    quiet = logging.getLogger("commands.doctor.slack")
    quiet.disabled = True
    client = WebClient(token=settings.slack_config_token.get_secret_value(),  # type: ignore[union-attr]
                       base_url=settings.slack_api_url, timeout=TIMEOUT_S, logger=quiet)
    try:
        manifest = client.apps_manifest_export(app_id=settings.slack_app_id).get("manifest")
    except SlackApiError as exc:
        return Finding(_CHECK, "failed", f"apps.manifest.export: {exc.response.get('error')}",
                       "make a new app configuration token (they last 12 hours: api.slack.com/apps, Your App "
                       "Configuration Tokens) for the workspace of SLACK_APP_ID")
    except Exception as exc:
        return Finding(_CHECK, "failed", f"cannot reach {settings.slack_api_url}: {type(exc).__name__}",
                       "check SLACK_API_URL and outbound network access")
    if not isinstance(manifest, dict):
        return Finding(_CHECK, "failed", "apps.manifest.export gave no manifest", "read it by hand in the app settings")
    return manifest


def compare(installed: dict[str, Any], ours: dict[str, Any], site_url: str = "") -> Finding:
    """What the installed manifest lacks of ours, worst first, in one finding."""
    features, settings = installed.get("features") or {}, installed.get("settings") or {}
    problems: list[tuple[Status, str]] = []
    events = set(_path(ours, "settings", "event_subscriptions", "bot_events"))
    if "agent_view" in features:
        view = "the agent view (features.agent_view)"
    elif "assistant_view" in features:
        view, events = DEPRECATED, events - AGENT_EVENTS | ASSISTANT_EVENTS
        problems.append(("warning", f"it uses {DEPRECATED}"))
    else:
        view = ""
        problems.append(("failed", "no features.agent_view: docsbot has no agent view there"))
    missing = {
        "bot scopes": set(_path(ours, "oauth_config", "scopes", "bot"))
        - set(_path(installed, "oauth_config", "scopes", "bot")),
        "bot events": events - set(_path(settings, "event_subscriptions", "bot_events")),
        "slash commands": _named(ours, "slash_commands", "command") - _named(installed, "slash_commands", "command"),
        "shortcuts": _named(ours, "shortcuts", "callback_id") - _named(installed, "shortcuts", "callback_id"),
    }
    problems += [("failed", f"missing {what}: {', '.join(sorted(names))}") for what, names in missing.items() if names]
    if not (settings.get("interactivity") or {}).get("is_enabled"):
        problems.append(("failed", "interactivity is off: no button, form or feedback works"))
    host = urlsplit(site_url).hostname if site_url else None
    if host and host not in features.get("unfurl_domains", []):
        problems.append(("warning", f"{host} is not among its unfurl_domains: docs links do not unfurl"))
    if not problems:
        return Finding(_CHECK, "ok", f"the installed app has everything bot/manifest.json uses, with {view}")
    status: Status = "failed" if any(s == "failed" for s, _ in problems) else "warning"
    return Finding(_CHECK, status, "; ".join(text for _, text in problems),
                   "update the app's manifest from bot/manifest.json (App Manifest page), reinstalling it if scopes "
                   "were added; for an app that keeps assistant_view, see docs/slack.md")


def _path(value: Any, *keys: str) -> list[str]:
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _named(manifest: dict[str, Any], feature: str, key: str) -> set[str]:
    items = (manifest.get("features") or {}).get(feature) or []
    return {str(item.get(key)) for item in items if isinstance(item, dict) and item.get(key)}
