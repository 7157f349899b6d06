"""The demo workspace of `docsbot console` (and the tests): people and channels at every level.

alice   restricted, admin (by user ID)       #general  public channel, everyone
bob     team (email domain example.com)      #eng      private: alice, bob, dan     -> team
dan     restricted (user group S_SRE)        #sre      private: alice, dan          -> restricted
eve     public (member default)              #partners shared with another org      -> public
guest   public (a guest, whatever else)      #random   public, the bot is not in it
"""
from __future__ import annotations

from pathlib import Path

from bot.local.standin import Workspace

ACCESS_FILE = Path(__file__).resolve().parent.parent / "access.example.toml"
TOKEN = "xoxb-demo-token"
SIGNING_SECRET = "demo-signing-secret"

ALICE, BOB, DAN, EVE, GUEST, OTHER_BOT = "U_ALICE", "U_BOB", "U_DAN", "U_EVE", "U_GUEST", "U_OTHERBOT"
GENERAL, ENG, SRE, PARTNERS, RANDOM = "C_GENERAL", "C_ENG", "C_SRE", "C_PARTNERS", "C_RANDOM"


def demo_workspace() -> Workspace:
    ws = Workspace()
    ws.add_user(ws.bot_user_id, "docsbot", is_bot=True)
    ws.add_user(ALICE, "alice", "alice@example.com")
    ws.add_user(BOB, "bob", "bob@example.com")
    ws.add_user(DAN, "dan", "dan@example.com")
    ws.add_user(EVE, "eve", "eve@contractor.invalid")
    ws.add_user(GUEST, "guest", "guest@example.com", is_restricted=True)
    ws.add_user(OTHER_BOT, "otherbot", is_bot=True)
    ws.usergroups["S_SRE"] = [DAN]
    bot = ws.bot_user_id
    ws.add_channel(GENERAL, "general", [ALICE, BOB, DAN, EVE, GUEST, bot])
    ws.add_channel(ENG, "eng", [ALICE, BOB, DAN, OTHER_BOT, bot], is_private=True)
    ws.add_channel(SRE, "sre", [ALICE, DAN, bot], is_private=True)
    ws.add_channel(PARTNERS, "partners", [ALICE, DAN, bot], is_shared=True, is_ext_shared=True)
    ws.add_channel(RANDOM, "random", [ALICE, BOB, DAN, EVE])
    return ws
