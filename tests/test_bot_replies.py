"""Every reply path ends what it started: a placeholder that cannot be updated is deleted and the
asker told why; a DM offer whose DM cannot be opened says so."""
from __future__ import annotations

from bot.local import demo
from bot.answering import NO_DM
from bot.deliveries import buttons
from bot.local.harness import LocalSlack
from bot.local.standin import Failure
from tests.support.slack import BREAK_GLASS, VPN, answers, mention


async def test_a_placeholder_that_cannot_be_updated_is_deleted_and_the_asker_told(local: LocalSlack) -> None:
    local.standin.fail_next("chat.update", Failure("msg_too_long"))
    await mention(local, demo.BOB, demo.GENERAL, VPN)
    await local.settle()
    [placeholder] = local.standin.calls_to("chat.postMessage", ok_only=True)
    [deleted] = local.standin.calls_to("chat.delete", ok_only=True)
    assert deleted["channel"] == demo.GENERAL and not answers(local, demo.GENERAL)
    assert not [m for m in local.standin.messages[demo.GENERAL] if m.get("bot_id")]  # nothing left behind
    [note] = local.standin.calls_to("chat.postEphemeral", ok_only=True)
    assert note["user"] == demo.BOB and "couldn't post my answer" in note["text"] and "msg_too_long" in note["text"]
    assert placeholder["thread_ts"] == note["thread_ts"]


async def test_a_dm_offer_that_cannot_open_the_dm_tells_the_asker_why(local: LocalSlack) -> None:
    await mention(local, demo.ALICE, demo.GENERAL, BREAK_GLASS)
    await local.settle()
    [offer] = local.standin.calls_to("chat.postEphemeral", ok_only=True)
    local.standin.fail_next("conversations.open", Failure("cannot_dm_bot"))
    await local.slack.click(demo.ALICE, demo.GENERAL, buttons(offer)[0], offer)
    await local.settle()
    said = [r["text"] for r in local.standin.responses]
    assert NO_DM.format(error="cannot_dm_bot") in said
    assert all(r["response_type"] == "ephemeral" for r in local.standin.responses if r["text"] in said[-1:])
